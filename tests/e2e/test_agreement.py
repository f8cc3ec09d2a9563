"""Ranks that disagree, for real: torchrun with 2 ranks on CPU, rank 1 started through a wrapper that
changes one variable (``torchrun --no-python wrapper.sh``), and the same under mpirun."""
import json
import subprocess
import sys
import time
from pathlib import Path

from e2e.test_engines import MPIRUN

from conftest import STUB, clean_env, trained_as_one

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "--no-python"]
TIMEOUT_S = 120  # the job's own: a check that waited for it would take this long


def _wrapper(tmp_path: Path, rank_var: str, export: str) -> Path:
    """A script that starts train_stub.py, with ``export`` (NAME=value) on the rank whose ``rank_var`` is 1."""
    script = tmp_path / "wrapper.sh"
    script.write_text(f'#!/bin/sh\nif [ "${rank_var}" = "1" ]; then export {export}; fi\n'
                      f'exec "{sys.executable}" "{STUB}" "$@"\n')
    script.chmod(0o755)
    return script


def _torchrun(tmp_path: Path, export: str, *overrides: str):
    wrapper = _wrapper(tmp_path, "RANK", export)
    started = time.monotonic()
    proc = subprocess.run([*TORCHRUN, str(wrapper), "train.steps=5", f"env.distributed.timeout_s={TIMEOUT_S}",
                           *overrides], capture_output=True, text=True, cwd=tmp_path, env=clean_env(),
                          timeout=TIMEOUT_S + 120)
    (run_dir,) = [p for p in (tmp_path / "outputs").glob("*/*") if p.is_dir()]
    reports = [json.loads((run_dir / f"bootstrap.rank{r}.json").read_text()) for r in (0, 1)]
    return proc, reports, time.monotonic() - started


def test_a_debug_level_on_one_rank_stops_both_quickly_naming_it(tmp_path):
    proc, reports, elapsed = _torchrun(tmp_path, "TORCH_DISTRIBUTED_DEBUG=INFO")
    assert proc.returncode != 0
    assert elapsed < TIMEOUT_S / 2  # compared before the group: nobody waited for a peer's timeout
    said = "rank 1 (" in proc.stderr and "TORCH_DISTRIBUTED_DEBUG=INFO; rank 0 (" in proc.stderr
    assert said and "): unset [collective]" in proc.stderr
    root_cause = proc.stderr.split("Root Cause (first observed failure):", 1)[1]
    assert "odd one out: rank 1" in root_cause  # torchrun's summary shows it
    assert proc.stderr.count("Traceback") == 1  # torchrun's own; the ranks print the message alone
    for report in reports:  # every rank stopped, with the same record
        agreement = report["distributed"]["agreement"]
        assert report["job"]["status"] == "check_failed" and agreement["status"] == "stopped"
        assert (agreement["via"], agreement["when"]) == ("store", "before the process group")
        assert report["distributed"]["process_group"] == "none"  # nothing was made that could hang
        by_name = {d["name"]: d for d in agreement["differences"]}
        assert set(by_name) == {"var.TORCH_DISTRIBUTED_DEBUG", "effective.distributed_debug"}  # torch's own level too
        assert [(g["value"], g["ranks"]) for g in by_name["var.TORCH_DISTRIBUTED_DEBUG"]["values"]] == \
            [("INFO", [1]), ("unset", [0])]
        assert "odd one out: rank 1" in agreement["message"] and agreement["message"] in report["job"]["error"]


def test_a_logging_variable_on_one_rank_warns_and_trains(tmp_path):
    proc, reports, _ = _torchrun(tmp_path, "NCCL_DEBUG=INFO")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert trained_as_one(reports)
    for report in reports:
        agreement = report["distributed"]["agreement"]
        assert agreement["status"] == "differs" and report["job"]["status"] == "completed"
        (difference,) = agreement["differences"]
        assert (difference["name"], difference["kind"], difference["stops"]) == ("var.NCCL_DEBUG", "logging", False)
        assert agreement["message"] in report["warnings"]
    assert "NCCL_DEBUG=INFO; rank 0 (" in proc.stdout + proc.stderr  # logged as a warning


def test_agree_off_skips_the_comparison(tmp_path):
    proc, reports, _ = _torchrun(tmp_path, "TORCH_DISTRIBUTED_DEBUG=INFO", "env.distributed.agree=off")
    assert proc.returncode == 0, proc.stderr[-3000:]  # INFO adds no collective: gloo trains as before
    assert [r["distributed"]["agreement"] for r in reports] == [{
        "status": "off", "policy": "off", "via": None, "when": None, "ranks": None, "host": None, "digest": None,
        "fingerprint": {}, "differences": [], "message": None, "note": None}] * 2
    assert "odd one out" not in proc.stderr


def test_agree_warn_lets_a_collective_difference_run_recorded(tmp_path):
    proc, reports, _ = _torchrun(tmp_path, "TORCH_DISTRIBUTED_DEBUG=INFO", "env.distributed.agree=warn")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for report in reports:
        agreement = report["distributed"]["agreement"]
        assert agreement["status"] == "differs" and not any(d["stops"] for d in agreement["differences"])


def test_ranks_that_agree_record_it_and_a_secret_never_leaves(tmp_path):
    token = "hf_" + "q" * 30
    proc, reports, _ = _torchrun(tmp_path, "PROBE=1", f"+env.vars.HF_TOKEN={token}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for report in reports:
        agreement = report["distributed"]["agreement"]
        assert agreement["status"] == "agreed" and agreement["ranks"] == 2
        assert agreement["fingerprint"]["version.torch"] == report["found"]["torch"]
    assert reports[0]["distributed"]["agreement"]["digest"] == reports[1]["distributed"]["agreement"]["digest"]
    ours = [*tmp_path.glob("outputs/*/*/bootstrap.rank*.json"), *tmp_path.glob("outputs/*/*/*.log")]  # not Hydra's
    everything = proc.stdout + proc.stderr + "".join(p.read_text(errors="replace") for p in ours)
    assert token not in everything


def test_under_mpirun_the_bootstrap_hosts_the_store_that_its_group_then_uses(tmp_path):
    wrapper = _wrapper(tmp_path, "OMPI_COMM_WORLD_RANK", "NCCL_ALGO=Ring")
    proc = subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2", str(wrapper),
                           "train.steps=5", "env.distributed.timeout_s=120"], capture_output=True, text=True,
                          cwd=tmp_path, env=clean_env(), timeout=300)
    assert proc.returncode != 0
    assert "NCCL_ALGO=Ring; rank 0 (" in proc.stdout + proc.stderr
    reports = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("outputs/mpi-*/bootstrap.rank*.json"))]
    assert [r["distributed"]["agreement"]["status"] for r in reports] == ["stopped", "stopped"]
    assert [r["distributed"]["launcher"] for r in reports] == ["mpi", "mpi"]
