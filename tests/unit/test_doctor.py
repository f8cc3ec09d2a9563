"""`python -m bootstrap doctor` and `bootstrap-doctor`: in this process (``doctor_here``), and for
real in subprocesses where the process itself matters (exit status, entry point, a closed pipe)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import clean_env

APP = Path(__file__).parents[1] / "third_party_app"
DOCTOR = [sys.executable, "-m", "bootstrap", "doctor"]


def doctor(*args, cwd=None, env=None, command=DOCTOR):
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=cwd,
                          env=env or clean_env(), timeout=120)


def _runs(numbers):
    """Consecutive runs of sorted integers as (first, last) pairs: [0, 1, 2, 5] -> (0, 2), (5, 5)."""
    runs = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


def test_passing_preset_prints_machine_checks_and_variables_and_exits_0(doctor_here, tmp_path):
    proc = doctor_here(cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for section in ("Machine", "Checks", "Variables", "Torch", "Result: every check passes"):
        assert section in out
    for fact in ("python", "torch", "CUDA", "cuDNN", "NCCL", "GPUs", "compute capability", "CPUs", "launcher"):
        assert f"\n  {fact} " in out, fact
    usable = sorted(os.sched_getaffinity(0))
    ranges = ",".join(f"{a}-{b}" if a != b else str(a) for a, b in _runs(usable))
    assert f"\n  CPUs                {os.cpu_count()} ({len(usable)} usable, affinity {ranges})\n" in out
    assert "PYTHONHASHSEED  0      preset  child processes (this process: through torch)" in out
    assert list(tmp_path.iterdir()) == []  # no output directory, nothing written


def test_failing_preset_exits_1_and_says_which_checks(doctor_here, tmp_path):
    proc = doctor_here("env=h100", cwd=tmp_path)
    assert proc.returncode == 1
    assert "Result: FAILED checks: device, cuda, compute_capability, gpus" in proc.stdout
    assert "  cuda                >=11.8    -           NO" in proc.stdout


def test_nothing_is_applied(doctor_here, tmp_path):
    # What it prints is the plan, not the result of applying it: this process stays as it was.
    import torch

    threads_before = torch.get_num_threads()
    proc = doctor_here("--json", "env.threads.intra_op=1", env=clean_env(OMP_NUM_THREADS="2"), cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert report["threads"]["intra_op"] == 1
    # a count on the command line is an override: OpenMP follows it over the shell's 2
    assert report["vars"]["OMP_NUM_THREADS"] | {"note": ""} == {
        "value": "1", "source": "override", "effective": False, "note": ""}
    assert report["job"]["status"] == "preview"
    assert torch.get_num_threads() == threads_before and "PYTHONHASHSEED" not in os.environ


def test_secret_values_are_masked(doctor_here, tmp_path):
    env = clean_env(HF_TOKEN="hf_shell_secret", WANDB_API_KEY="wandb_shell_secret")
    for args in (["+env.vars.HF_TOKEN=x", "+env.vars.WANDB_API_KEY=y", "+env.vars.DB_PASSWORD=cli_secret"], ):
        for fmt in ([], ["--json"]):
            proc = doctor_here(*args, *fmt, env=env, cwd=tmp_path)
            assert proc.returncode == 0, proc.stderr
            for secret in ("hf_shell_secret", "wandb_shell_secret", "cli_secret"):
                assert secret not in proc.stdout + proc.stderr
            assert "***" in proc.stdout


def test_secrets_are_masked_in_usage_errors_too(doctor_here, tmp_path):
    proc = doctor_here("+env.vars.HF_TOKEN=hf_se'cret_value", cwd=tmp_path)  # Hydra cannot parse it: the job stops
    assert proc.returncode == 1 and "hf_se" not in proc.stderr and "***" in proc.stderr


def test_another_apps_config(doctor_here, tmp_path):
    app = tmp_path / "app"
    shutil.copytree(APP, app)
    proc = doctor_here("--config-path", str(app / "conf"), "--config-name", "own_env_group", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["preset"] == "cpu_debug"
    proc = doctor_here("--config-path", "app/conf", "env=probe", "--json", cwd=tmp_path)  # relative to the cwd
    assert json.loads(proc.stdout)["vars"]["PROBE_VAR"]["value"] == "from_probe"


@pytest.mark.parametrize("args, fragment", [
    (["--config-path", "/no/such/dir"], "no such directory"),
    (["--no-such-flag"], "unrecognized arguments"),
])
def test_bad_usage_exits_2(doctor_here, tmp_path, args, fragment):
    proc = doctor_here(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert fragment in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, fragment", [
    (["env=nope"], "unknown preset 'nope'. Presets that exist: a100, auto, cpu_debug, cpu_debug_detail, h100."),
    (["env.threds=1"], "Did you mean env.threads?"),
])
def test_a_config_hydra_cannot_compose_stops_the_job_and_exits_1_as_the_jobs_own_hydra(doctor_here, tmp_path, args,
                                                                                       fragment):
    proc = doctor_here(*args, cwd=tmp_path)  # issue 45: it exited 2, where the job exits 1
    assert proc.returncode == 1 and "the job would stop: Hydra cannot compose its config: " in proc.stderr
    assert fragment in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, fragment", [
    (["env.threads.intra_op=abc"], "env.threads.intra_op='abc' is not a thread count"),
    (["+env.vars.TORCH_DISTRIBUTED_DEBUG=1"], "TORCH_DISTRIBUTED_DEBUG='1' is not a debug level torch accepts"),
    (["+env.vars.NCCL_NOT_A_SETTING=1", "env.lint=error"], "env.lint=error: the preset sets variables"),
])
def test_a_value_the_job_refuses_exits_1_with_the_jobs_reason(doctor_here, tmp_path, args, fragment):
    proc = doctor_here(*args, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.startswith("bootstrap doctor: the job would stop: ") and fragment in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_failed_check_under_on_mismatch_warn_is_shown_and_the_job_starts(doctor_here, tmp_path):
    proc = doctor_here("env=h100", "env.on_mismatch=warn", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Result: FAILED checks: device, cuda, compute_capability, gpus; the job starts anyway" in proc.stdout


def test_every_reason_is_listed_at_once(doctor_here, tmp_path):
    proc = doctor_here("env=h100", "+env.vars.TORCH_DISTRIBUTED_DEBUG=1", "+env.vars.NCCL_NOT_A_SETTING=1",
                       "env.lint=error", cwd=tmp_path)
    assert proc.returncode == 1
    result = proc.stdout[proc.stdout.index("Result: "):]
    for reason in ("env.lint=error: the preset sets variables", "TORCH_DISTRIBUTED_DEBUG='1' is not a debug level",
                   "env=h100 does not fit this machine"):
        assert reason in result and reason in proc.stderr


def test_a_value_holding_a_newline_stays_on_its_row(doctor_here, tmp_path):
    shell = "1\nResult: every check passes\x1b[2J"
    proc = doctor_here(env=clean_env(OMP_NUM_THREADS=shell), cwd=tmp_path)  # auto: the shell's value is shown
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stdout.splitlines() if line.startswith("Result: ")] == \
        ["Result: every check passes"] and "\x1b" not in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.startswith("  OMP_NUM_THREADS "))
    # set in this (the test's) process, not the shell it started from: its source is ``process``
    assert "1\\nResult: every check passes\\x1b[2J" in row and " process " in row


def test_env_auto_is_resolved_from_the_apps_own_search_path(doctor_here, tmp_path):
    app = tmp_path / "app"
    shutil.copytree(APP, app)
    # The app shadows cpu_debug with a preset of its own: auto must pick up the app's file.
    (app / "conf" / "env" / "cpu_debug.yaml").write_text(
        "defaults:\n  - /bootstrap/schema/env@_here_\n  - _self_\nvars:\n  APP_OWN_CPU_DEBUG: 1\n")
    proc = doctor_here("--config-path", str(app / "conf"), "env=auto", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["resolved"] == {"from": "auto", "preset": "cpu_debug", "reason": "no CUDA device"}
    assert "APP_OWN_CPU_DEBUG" in report["vars"]
