"""Ranks that disagree, for real: torchrun with 2 ranks on CPU, rank 1 started through a wrapper that
changes one variable (``torchrun --no-python wrapper.sh``), and the same under mpirun."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.test_engines import MPIRUN

from conftest import STUB, clean_env, trained_as_one

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "--no-python"]
TIMEOUT_S = 600  # the job's own: a check that waited for a peer's timeout would wait this long...
HARNESS_S = 300  # ...and the job is killed, and the test fails, long before


def _wrapper(tmp_path: Path, rank_var: str, export: str, rank1_args: str = "") -> Path:
    """A script that starts train_stub.py, with ``export`` (NAME=value, shell syntax) and ``rank1_args`` (more
    overrides) on the rank whose ``rank_var`` is 1."""
    script = tmp_path / "wrapper.sh"
    script.write_text(f'#!/bin/sh\nmore=""\nif [ "${rank_var}" = "1" ]; then export {export}; more="{rank1_args}"; fi\n'
                      f'exec "{sys.executable}" "{STUB}" "$@" $more\n')
    script.chmod(0o755)
    return script


def _torchrun(tmp_path: Path, export: str, *overrides: str, rank1_args: str = "", environ=None, sweep=None):
    """The stub under torchrun, rank 1 through the wrapper. ``sweep``: a one-process multirun on each rank, its jobs
    in this directory; returns the finished process and each job's two reports (one run: a list of one)."""
    wrapper = _wrapper(tmp_path, "RANK", export, rank1_args)
    proc = subprocess.run([*TORCHRUN, str(wrapper), *(["-m", f"hydra.sweep.dir={sweep}"] if sweep else []),
                           "train.steps=5", f"env.distributed.timeout_s={TIMEOUT_S}", *overrides], capture_output=True,
                          text=True, cwd=tmp_path, env=clean_env(**(environ or {})), timeout=HARNESS_S)
    if sweep:
        jobs = sorted((p for p in sweep.iterdir() if p.is_dir()), key=lambda p: int(p.name))
        return proc, [[json.loads((job / f"bootstrap.rank{r}.json").read_text()) for r in (0, 1)] for job in jobs]
    (run_dir,) = [p for p in (tmp_path / "outputs").glob("*/*") if p.is_dir()]
    return proc, [json.loads((run_dir / f"bootstrap.rank{r}.json").read_text()) for r in (0, 1)]


def test_a_debug_level_on_one_rank_stops_both_quickly_naming_it(tmp_path):
    proc, reports = _torchrun(tmp_path, "TORCH_DISTRIBUTED_DEBUG=INFO")
    assert proc.returncode != 0  # within HARNESS_S: compared before the group, nobody waited for a peer's timeout
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


# One run: rank 1 differs only in a logging variable, and both ranks carry a secret the comparison must not leak.
TOKEN = "hf_" + "q" * 30


@pytest.fixture(scope="module")
def logging_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("logging")
    proc, reports = _torchrun(tmp_path, "NCCL_DEBUG=INFO", f"+env.vars.HF_TOKEN={TOKEN}")
    return tmp_path, proc, reports


def test_a_logging_variable_on_one_rank_warns_and_trains(logging_run):
    _, proc, reports = logging_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert trained_as_one(reports)
    for report in reports:
        agreement = report["distributed"]["agreement"]
        assert agreement["status"] == "differs" and report["job"]["status"] == "completed"
        (difference,) = agreement["differences"]
        assert (difference["name"], difference["kind"], difference["stops"]) == ("var.NCCL_DEBUG", "logging", False)
        assert agreement["message"] in report["warnings"]
    assert "NCCL_DEBUG=INFO; rank 0 (" in proc.stdout + proc.stderr  # logged as a warning


# One torchrun world, one job per policy, rank 1 at another debug level: off compares nothing, warn records it.
@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("policies")
    proc, jobs = _torchrun(tmp_path, "TORCH_DISTRIBUTED_DEBUG=INFO", "env.distributed.agree=off,warn",
                           sweep=tmp_path / "sweep")
    assert proc.returncode == 0, proc.stderr[-3000:]  # INFO adds no collective: gloo trains as before
    return proc, dict(zip(("off", "warn"), jobs, strict=True))


def test_agree_off_skips_the_comparison(policies):
    proc, jobs = policies
    reports = jobs["off"]
    # Nothing compared (no fingerprint, no digest, no difference): each rank only said its policy in the store.
    assert [{k: v for k, v in r["distributed"]["agreement"].items() if k != "host"} for r in reports] == [{
        "status": "off", "policy": "off", "via": "store", "when": "before the process group", "ranks": 2,
        "digest": None, "fingerprint": {}, "differences": [], "message": None, "note": None}] * 2
    assert "odd one out" not in proc.stderr


def test_ranks_under_different_agree_policies_stop_at_once_naming_the_rank(tmp_path):
    """Rank 1 runs agree=off, rank 0 error. Before, rank 0 waited the whole timeout for rank 1, then blamed a
    rank that had started; now both stop at once, naming rank 1 and its policy."""
    proc, reports = _torchrun(tmp_path, "PROBE=1", rank1_args="env.distributed.agree=off")
    assert proc.returncode != 0  # within HARNESS_S: nobody waited for the timeout
    assert "rank 1 (" in proc.stderr and "env.distributed.agree=off; rank 0 (" in proc.stderr
    assert "[policy]" in proc.stderr and "did not reach" not in proc.stderr
    for report in reports:
        agreement = report["distributed"]["agreement"]
        assert report["job"]["status"] == "check_failed" and agreement["status"] == "stopped"
        (difference,) = agreement["differences"]
        assert (difference["name"], difference["kind"], difference["stops"]) == ("agree.policy", "policy", True)


def test_a_value_with_a_line_break_forges_no_line_and_white_space_shows(tmp_path):
    """Rank 1's NCCL_PROTO holds a line break and its NCCL_ALGO a trailing space: every line both ranks and
    torchrun print stays one line per finding, and the two ALGO values look different."""
    export = 'NCCL_ALGO="Ring " NCCL_PROTO="$(printf \'Simple\\nFORGED line\')"'
    proc, reports = _torchrun(tmp_path, export, environ={"NCCL_ALGO": "Ring"})
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert not [line for line in output.splitlines() if line.startswith("FORGED")], output[-3000:]
    assert "NCCL_ALGO='Ring '; rank 0 (" in output and "): Ring [collective]" in output
    assert "NCCL_PROTO='Simple\\nFORGED line'" in output
    for report in reports:
        assert "\n" not in report["distributed"]["agreement"]["message"]


def test_agree_warn_lets_a_collective_difference_run_recorded(policies):
    _, jobs = policies
    for report in jobs["warn"]:
        agreement = report["distributed"]["agreement"]
        assert agreement["status"] == "differs" and not any(d["stops"] for d in agreement["differences"])


def test_the_ranks_fingerprints_hold_what_they_compared_and_a_secret_never_leaves(logging_run):
    tmp_path, proc, reports = logging_run
    for report in reports:  # both compared every fingerprint entry, the secret's as a salted digest
        agreement = report["distributed"]["agreement"]
        assert agreement["ranks"] == 2 and agreement["fingerprint"]["version.torch"] == report["found"]["torch"]
    ours = [*tmp_path.glob("outputs/*/*/bootstrap.rank*.json"), *tmp_path.glob("outputs/*/*/*.log")]  # not Hydra's
    everything = proc.stdout + proc.stderr + "".join(p.read_text(errors="replace") for p in ours)
    assert TOKEN not in everything


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


def test_a_stray_agent_store_variable_stops_every_rank_at_once(tmp_path):
    """TORCHELASTIC_USE_AGENT_STORE=True leaked into a world torchrun did not start: every rank used to be a
    client of a store no rank hosts, and waited out two 300 s timeouts with no output and no run directory."""
    stray = dict(WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT="29533", TORCHELASTIC_USE_AGENT_STORE="True")
    ranks = [subprocess.Popen([sys.executable, str(STUB), "train.steps=1", f"env.distributed.timeout_s={TIMEOUT_S}"],
                              cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=clean_env(RANK=str(rank), LOCAL_RANK=str(rank), **stray))
             for rank in (0, 1)]
    outputs = [rank.communicate(timeout=HARNESS_S) for rank in ranks]  # at once: no store was waited for
    for rank, (_, err) in zip(ranks, outputs, strict=True):
        assert rank.returncode != 0
        assert "TORCHELASTIC_USE_AGENT_STORE=True says torchrun's agent hosts the ranks' store, but torchrun did " \
               "not start this process" in err and "Traceback" not in err
