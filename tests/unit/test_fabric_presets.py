"""Issue 40: every fabric preset (conf/env/fabric) composes and plans in every form the env preset works in: `env`,
`bootstrap_env` and beneath the callback, each with its own override spelling (docs/fabrics.md), and under env=auto.
The plan is the doctor's, in this process: what the job would set and expect."""
import json
from pathlib import Path

import pytest

from bootstrap.core import fabric, presets, schema

FABRICS = sorted(p.stem for p in (presets.PRESET_DIR / presets.FABRIC_GROUP).glob("*.yaml"))
NETWORK = {"none": "any", "socket": "socket", "ib": "ib", "roce": "roce", "aws_efa": "efa", "gcp_tcpxo": "fastrak",
           "gcp_tcpx": "tcpx"}
FORMS = {  # the preset's node -> how the preset itself is chosen
    presets.GROUP: "+env=h100", presets.ALIAS_GROUP: "+bootstrap_env=h100",
    presets.CALLBACK_KEY: "+env@hydra.callbacks.bootstrap.env=h100",
}


def test_the_group_holds_the_fabrics_the_issue_names():
    assert FABRICS == ["aws_efa", "gcp_tcpx", "gcp_tcpxo", "ib", "none", "roce", "socket"]


@pytest.fixture
def app(tmp_path) -> Path:
    (tmp_path / "app.yaml").write_text("defaults:\n  - _self_\nx: 1\n")
    return tmp_path


@pytest.mark.parametrize("key", FORMS)
@pytest.mark.parametrize("name", [n for n in FABRICS if n != "gcp_tcpxo"])
def test_each_fabric_composes_and_plans_in_each_form(doctor_here, app, key, name):
    arguments = ["--config-path", str(app), "--config-name", "app", "hydra/callbacks=bootstrap", FORMS[key],
                 fabric.override(key, name), f"{key}.on_mismatch=warn", "--json"]
    proc = doctor_here(*arguments)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["preflight"]["network_expected"] == NETWORK[name]
    wanted = schema.load({"fabric": {"name": name}})  # the fabric's own file, read by the schema
    assert set(schema.load(_fabric_file(name)).vars) <= set(report["vars"])
    assert wanted.fabric.name.value == name


def _fabric_file(name: str) -> dict:
    import yaml

    return {"fabric": yaml.safe_load((presets.PRESET_DIR / presets.FABRIC_GROUP / f"{name}.yaml").read_text())}


@pytest.mark.parametrize("key", FORMS)
def test_gcp_tcpxo_without_its_profile_stops_with_the_fix_in_each_form(doctor_here, app, key, monkeypatch):
    from bootstrap.fabric import profile as fabric_profile

    monkeypatch.setattr(fabric_profile, "DIRECTORIES", (str(app / "nowhere"),))
    monkeypatch.delenv("NCCL_LIB_DIR", raising=False)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(app))
    proc = doctor_here("--config-path", str(app), "--config-name", "app", "hydra/callbacks=bootstrap", FORMS[key],
                       fabric.override(key, "gcp_tcpxo"), f"{key}.on_mismatch=warn")
    assert proc.returncode == 1
    assert "nccl-env-profile.sh was not found" in proc.stderr and "set NCCL_LIB_DIR" in proc.stderr


def test_the_preset_s_own_variables_and_network_win_over_the_fabric_s():
    preset = schema.load({"vars": {"NCCL_SOCKET_IFNAME": "ens5"}, "preflight": {"network": "socket"},
                          "fabric": {"name": "gcp_tcpx", "network": "tcpx",
                                     "vars": {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_CROSS_NIC": 0}}})
    assert preset.vars == {"NCCL_SOCKET_IFNAME": "ens5", "NCCL_CROSS_NIC": 0}
    assert preset.preflight.network.value == "socket"
    dropped = schema.load({"vars": {"NCCL_CROSS_NIC": None}, "fabric": {"name": "gcp_tcpx", "vars": {"NCCL_CROSS_NIC": 0}}})
    assert dropped.vars == {"NCCL_CROSS_NIC": None}  # null drops the fabric's entry, as it drops a parent preset's


def test_env_auto_keeps_the_fabric_the_job_named():
    chosen = schema.load({"preflight": {"network": "any"}})
    job = schema.load({"auto": True, "fabric": {"name": "ib", "network": "ib", "gdr": True}})
    carried = fabric.carried(chosen, job.fabric)
    assert carried.fabric.name.value == "ib" and carried.preflight.network.value == "ib"
    assert fabric.carried(chosen, schema.load({}).fabric) is chosen


@pytest.mark.parametrize("key, spelled", [
    ("env", "env/fabric=ib"), ("bootstrap_env", "bootstrap_env/fabric=ib"),
    ("hydra.callbacks.bootstrap.env", "env/fabric@hydra.callbacks.bootstrap.env.fabric=ib"),
])
def test_each_form_s_override_spelling(key, spelled):
    assert fabric.override(key, "ib") == spelled
