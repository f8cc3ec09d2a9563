"""env=auto (the mapping is pure; end to end on this CPU machine) and `bootstrap tune`."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.core.versions import Found

from conftest import STUB, clean_env

APP = Path(__file__).parents[1] / "third_party_app"


def machine(capability=None, name="NVIDIA Test GPU"):
    return Found(python="3.11.7", torch="2.13.0", cuda="12.8" if capability else None, nccl=None, cudnn=None,
                 compute_capability=capability, gpus=1 if capability else 0,
                 gpu_names=(name,) if capability else ())


def run(cmd, cwd, env=None):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env or clean_env(), timeout=300)


def test_env_auto_resolves_to_cpu_debug_here_and_keeps_the_users_overrides(tmp_path):
    proc = run([sys.executable, str(STUB), "env=auto", "env.threads.intra_op=1", "+env.vars.MY_FLAG=1",
                "train.steps=2", f"hydra.run.dir={tmp_path}/out"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "out" / "bootstrap.json").read_text())
    resolved = {"from": "auto", "preset": "cpu_debug", "reason": "no CUDA device"}
    assert (report["preset"], report["resolved"]) == ("auto", resolved)
    assert report["threads"]["intra_op"] == 1 and report["job"]["metrics"]["num_threads"] == 1
    assert report["torch"]["matmul_precision"] == "highest"  # cpu_debug's own setting
    assert report["vars"]["MY_FLAG"]["source"] == "override"
    assert "resolved: auto -> cpu_debug (no CUDA device)" in proc.stdout + proc.stderr  # the log table


def test_env_auto_in_a_multirun_beside_other_presets(tmp_path):
    proc = run([sys.executable, str(STUB), "-m", "env=auto,cpu_debug,h100", "env.on_mismatch=warn", "train.steps=0",
                f"hydra.sweep.dir={tmp_path}/sweep"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    reports = {json.loads(p.read_text())["preset"]: json.loads(p.read_text())
               for p in (tmp_path / "sweep").glob("*/bootstrap.json")}
    assert reports["auto"]["resolved"] == {"from": "auto", "preset": "cpu_debug", "reason": "no CUDA device"}
    assert reports["auto"]["vars"].keys() == reports["cpu_debug"]["vars"].keys()
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING" in reports["h100"]["vars"]  # the next job is not stuck on auto


def test_sweep_tune_run(tmp_path):
    sweep = tmp_path / "sweep"
    proc = run([sys.executable, str(STUB), "-m", "env=auto", "env.threads.intra_op=1,2", "train.steps=40",
                f"hydra.sweep.dir={sweep}"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = (sweep / "sweep_summary.csv").read_text().splitlines()
    winner_threads = int(rows[1].split(",")[3])

    proc = run([sys.executable, "-m", "bootstrap", "tune", str(sweep), "--name", "my_node", "--out",
                str(tmp_path / "conf")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "conf" / "env" / "my_node.yaml").read_text()
    assert "defaults:\n- cpu_debug\n- _self_\n" in text  # the winner's base preset (auto resolved to it)
    assert f"threads:\n  intra_op: {winner_threads}\n" in text
    assert "train" not in text.split("defaults:")[1]  # only env keys the sweep varied
    for fact in (f"from {sweep}", "machine: ", "objective: samples_per_s, higher is better", "winner:", "runner-up:"):
        assert fact in text, fact

    out = tmp_path / "run"
    proc = run([sys.executable, str(STUB), "env=my_node", f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
                "train.steps=0", f"hydra.run.dir={out}"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "bootstrap.json").read_text())
    assert report["preset"] == "my_node" and report["threads"]["intra_op"] == winner_threads


def app_sweep(tmp_path, *overrides):
    app = tmp_path / "app"
    if not app.exists():
        shutil.copytree(APP, app)
    sweep = tmp_path / f"sweep{len(list(tmp_path.glob('sweep*')))}"
    run([sys.executable, str(app / "app.py"), "-m", f"hydra.sweep.dir={sweep}", *overrides], app)
    return sweep


@pytest.fixture
def tune(tune_here):
    def run_tune(tmp_path, sweep, *extra):
        return tune_here(str(sweep), "--name", "mine", "--out", str(tmp_path / "conf"), *extra, cwd=tmp_path)
    return run_tune


def test_tune_refuses_a_sweep_without_a_completed_job(tune, tmp_path):
    sweep = app_sweep(tmp_path, "fail=true", "env.seed=1,2")
    proc = tune(tmp_path, sweep)
    assert proc.returncode == 1 and "no job of" in proc.stderr and "failed: 2" in proc.stderr


def test_tune_refuses_a_winner_that_failed_its_checks(tune, tmp_path):
    sweep = app_sweep(tmp_path, "env=cpu_debug,h100_probe", "env.on_mismatch=warn")
    proc = tune(tmp_path, sweep)
    assert proc.returncode == 1
    best = "the best job by samples_per_s (env=h100_probe env.on_mismatch=warn)"
    assert f"{best} has status 'completed, check failed'" in proc.stderr


def test_tune_does_not_overwrite_without_force(tune, tmp_path):
    sweep = app_sweep(tmp_path, "env.threads.intra_op=1,2")
    assert tune(tmp_path, sweep).returncode == 0
    target = tmp_path / "conf" / "env" / "mine.yaml"
    target.write_text("# hand-edited\n")
    proc = tune(tmp_path, sweep)
    assert proc.returncode == 1 and "exists; pass --force" in proc.stderr
    assert target.read_text() == "# hand-edited\n"
    assert tune(tmp_path, sweep, "--force").returncode == 0 and "intra_op: 2" in target.read_text()


def test_tune_never_writes_a_secret(tune, tmp_path):
    sweep = app_sweep(tmp_path, "+env.vars.HF_TOKEN=hf_first_secret,hf_second_secret")
    proc = tune(tmp_path, sweep)
    assert proc.returncode == 1 and "looks like a secret" in proc.stderr
    assert "hf_first_secret" not in proc.stdout + proc.stderr and "hf_second_secret" not in proc.stdout + proc.stderr
    assert not (tmp_path / "conf" / "env" / "mine.yaml").exists()
