"""Issue 40 end to end: gcp_tcpxo's profile script run for real in its subshell, a job whose variables came from it
(their source: `fabric profile`), and `bootstrap doctor --nccl-log` as a process: its exit status is the logs'
verdict alone, whatever this machine is."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import clean_env

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl"
DOCTOR = [sys.executable, "-m", "bootstrap", "doctor"]
PROFILE = "nccl-env-profile.sh"


def _doctor(*args, env=None):
    return subprocess.run([*DOCTOR, *args], capture_output=True, text=True, env=env or clean_env(), timeout=120)


def _root_owned_profile(folder: Path, body: str) -> Path:
    if os.geteuid() != 0:
        pytest.skip("a root-owned profile needs root to make (the test suite runs as root in CI)")
    script = folder / PROFILE
    script.write_text(body)
    script.chmod(0o755)
    return script


def test_the_profile_s_exports_are_taken_and_nothing_else(tmp_path):
    from bootstrap.fabric import profile as fabric_profile

    _root_owned_profile(tmp_path, ': "${NCCL_LIB_DIR:?Must set NCCL_LIB_DIR}"\nexport NCCL_FASTRAK_IFNAME=eth1,eth2\n'
                                  'export NCCL_NET_GDR_LEVEL=PIX\nexport OTHER=1\necho noise\necho err >&2\n')
    found = fabric_profile.exports(PROFILE, {"NCCL_LIB_DIR": str(tmp_path), "PATH": os.environ["PATH"]}, 10)
    assert found == {"NCCL_FASTRAK_IFNAME": "eth1,eth2", "NCCL_NET_GDR_LEVEL": "PIX"}


def test_a_profile_that_does_not_finish_is_bounded(tmp_path):
    from bootstrap.doors.errors import ConfigError
    from bootstrap.fabric import profile as fabric_profile

    _root_owned_profile(tmp_path, "sleep 30\n")
    with pytest.raises(ConfigError, match="did not finish"):
        fabric_profile.exports(PROFILE, {"NCCL_LIB_DIR": str(tmp_path), "PATH": os.environ["PATH"]}, 0.5)


def test_a_job_s_variables_from_the_profile_show_their_source_and_the_user_s_win(run_stub, tmp_path):
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    _root_owned_profile(plugin, "export NCCL_FASTRAK_IFNAME=eth1,eth2\nexport NCCL_FASTRAK_NUM_FLOWS=2\n")
    env = clean_env(NCCL_LIB_DIR=str(plugin), NCCL_FASTRAK_NUM_FLOWS="8")
    run = run_stub("env/fabric=gcp_tcpxo", "train.steps=0", env=env)
    assert run.returncode == 0, run.stderr
    report = json.loads((run.out_dir / "bootstrap.json").read_text())
    assert report["vars"]["NCCL_FASTRAK_IFNAME"]["source"] == "fabric profile"
    assert report["vars"]["NCCL_FASTRAK_IFNAME"]["value"] == "eth1,eth2"
    assert report["vars"]["NCCL_FASTRAK_NUM_FLOWS"]["value"] == "8"  # the user's, as everywhere


def test_a_job_with_a_stale_variable_is_warned_before_the_group(run_stub):
    run = run_stub("env/fabric=aws_efa", "train.steps=0", env=clean_env(FI_EFA_USE_DEVICE_RDMA="1"))
    assert run.returncode == 0, run.stderr
    assert "WARNING] - FI_EFA_USE_DEVICE_RDMA=1 is stale for env/fabric=aws_efa" in run.stdout  # Hydra's log
    assert "aws-ofi-nccl doc/efa-env-var.md" in run.stdout
    report = json.loads((run.out_dir / "bootstrap.json").read_text())
    assert any("FI_EFA_USE_DEVICE_RDMA=1 is stale" in warning for warning in report["warnings"])


def test_the_doctor_judges_logs_and_its_exit_status_is_theirs_alone():
    stopped = _doctor("env=h100", "env/fabric=aws_efa", "--nccl-log", str(DATA / "efa_devices_not_visible.log"),
                      str(DATA / "efa_1.log"))
    assert stopped.returncode == 1, stopped.stderr  # h100 does not fit this CPU machine: shown, not judged
    assert "this machine is shown, not judged" in stopped.stdout
    assert "fabric: rank ? on ip-172-31-3-90 (pid 1929): NCCL said 'NET/OFI OFI fi_getinfo() call failed" in \
        stopped.stdout
    assert "the logs hold a finding that would have stopped the job" in stopped.stderr
    fine = _doctor("env=h100", "env/fabric=aws_efa", "--nccl-log", str(DATA / "efa_1.log"), str(DATA / "efa_2.log"))
    assert fine.returncode == 0, fine.stdout + fine.stderr
    assert "no finding: every process that named its network chose" in fine.stdout
    warned = _doctor("env=h100", "env/fabric=ib", "env.preflight.mode=warn", "--nccl-log",
                     str(DATA / "socket_1.log"))
    assert warned.returncode == 0 and "fabric: rank ? on zkti" in warned.stdout  # shown; under warn, no stop
    absent = _doctor("env=h100", "env/fabric=ib", "--nccl-log", "/nonexistent/nccl.log")
    assert absent.returncode == 2 and "not read" in absent.stderr


def test_the_doctor_suggests_a_fabric_from_a_fake_sys_tree(tmp_path):
    port = tmp_path / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    port.mkdir(parents=True)
    (port / "link_layer").write_text("Ethernet\n")
    proc = _doctor("env=h100", "--sys-root", str(tmp_path), "--nccl-log", str(DATA / "plugin_1.log"))
    assert "this machine suggests env/fabric=roce (mlx5_0: link layer Ethernet)" in proc.stdout


def test_every_rank_receives_every_rank_s_fabric_findings_alike(tmp_path):
    import socket

    script = Path(__file__).parents[1] / "fabric_app" / "gather.py"
    with socket.socket() as probe:  # a free port: other test runs share this machine
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                           f"--master_port={port}", str(script), str(tmp_path)],
                          capture_output=True, text=True, env=clean_env(), timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    received = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in (0, 1)]
    assert received[0] == received[1] == [
        ["fabric", "rank 1 on node1: NCCL said 'Using network Socket'; expected IB", [1]]]
