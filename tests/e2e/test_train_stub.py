"""End to end: the real train_stub.py, the real Hydra callback, in a subprocess."""
import json
import os
import subprocess
import sys

import pytest

from bad_inputs import BAD_INPUTS, WORLD_WITHOUT_PORT, user_conf
from conftest import STUB, Run, clean_env

TRACEBACK = "Traceback (most recent call last)"
TRAINING_LOG = "step 0  loss"


def test_default_run_trains_and_writes_the_report(run_stub):
    run = run_stub()
    assert run.returncode == 0, run.output
    report = run.report
    assert report["preset"] == "cpu_debug"
    cpus = len(os.sched_getaffinity(0))
    assert report["threads"]["intra_op"] == cpus and report["threads"]["inter_op"] == cpus
    assert all(check["ok"] for check in report["checks"]) and report["checks"]
    job = report["job"]
    assert job["status"] == "completed"
    assert job["metrics"]["steps"] == 300
    assert job["metrics"]["samples_per_s"] > 0 and job["metrics"]["final_loss"] < 2.0
    assert 0 < report["timings"]["bootstrap_s"] < 5
    # where did my run go? the job's last line names its record, from the working directory (issue 45)
    assert run.stdout.rstrip("\n").splitlines()[-1].endswith("report: out/bootstrap.json"), run.stdout[-500:]
    job_log = (run.out_dir / "train_stub.log").read_text()  # the bootstrap's table, in the job's own log
    assert f"preset=cpu_debug  threads intra_op={cpus} inter_op={cpus}" in job_log and "all ok" in job_log


def test_h100_on_this_cpu_machine_stops_before_the_task(run_stub):
    run = run_stub("env=h100")
    assert run.returncode != 0
    assert "env=h100 needs CUDA >=11.8, but this torch" in run.stderr and "was built without CUDA" in run.stderr
    assert "run with env=cpu_debug, or with env.on_mismatch=warn to continue anyway" in run.stderr
    assert TRACEBACK not in run.output
    assert TRAINING_LOG not in run.output  # the task did not run
    job = run.report["job"]
    assert (job["status"], job["metrics"]) == ("check_failed", {}) and "needs CUDA" in job["error"]


# One run, read by three tests: a torch setting, one intra-op thread and two secrets, all given on the command line.
SECRET_OVERRIDES = ("+env.vars.HF_TOKEN=hf_planted_secret", "+env.vars.MY_API_KEY=planted_key")


@pytest.fixture(scope="module")
def given(tmp_path_factory):
    out = tmp_path_factory.mktemp("given")
    proc = subprocess.run([sys.executable, str(STUB), f"hydra.run.dir={out / 'out'}", "env.torch.detect_anomaly=true",
                           "env.threads.intra_op=1", "train.steps=3", *SECRET_OVERRIDES], capture_output=True,
                          text=True, cwd=out, env=clean_env(), timeout=120)
    return Run(proc.returncode, proc.stdout, proc.stderr, out / "out")


def test_a_torch_setting_given_on_the_command_line_is_applied_and_reported(given):
    assert given.returncode == 0, given.output
    assert given.report["torch"]["detect_anomaly"] is True and given.report["job"]["status"] == "completed"


def test_full_error_shows_the_traceback(run_stub):
    run = run_stub("env=h100", env=clean_env(HYDRA_FULL_ERROR="1"))
    assert run.returncode != 0 and TRACEBACK in run.stderr and "MismatchError" in run.stderr


def test_h100_with_warn_runs_the_task(run_stub):
    run = run_stub("env=h100", "env.on_mismatch=warn", "train.steps=3")
    assert run.returncode == 0, run.output
    assert "needs CUDA >=11.8" in run.output  # still warned
    assert run.report["job"]["status"] == "completed" and run.report["device"] == "cpu"
    assert [c["name"] for c in run.report["checks"] if not c["ok"]] == ["device", "cuda", "compute_capability", "gpus"]


def test_one_intra_op_thread_inside_the_task(given):
    run = given
    assert run.returncode == 0, run.output
    assert run.report["job"]["metrics"]["num_threads"] == 1  # read by the task itself
    assert run.report["threads"]["intra_op"] == 1
    assert run.report["vars"]["OMP_NUM_THREADS"]["value"] == "1"


@pytest.fixture(scope="module")
def layered(tmp_path_factory):
    """A job of a user's preset that sets variables the shell, env_set and the command line set too, with
    train.steps=0 (the bootstrap alone)."""
    tmp_path = tmp_path_factory.mktemp("layered")
    layered_conf = tmp_path / "precedence_conf"
    (layered_conf / "env").mkdir(parents=True)
    (layered_conf / "env" / "layered.yaml").write_text(
        "defaults:\n  - cpu_debug\n  - _self_\nvars:\n  FROM_SHELL: preset\n  FROM_ENV_SET: preset\n"
        "  FROM_COMMAND_LINE: preset\n  TORCH_DISTRIBUTED_DEBUG: DETAIL\n")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(STUB), f"hydra.run.dir={out}",
                           f"hydra.searchpath=[file://{layered_conf}]", "env=layered", "train.steps=0",
                           "+hydra.job.env_set.FROM_ENV_SET=env_set", "env.vars.FROM_COMMAND_LINE=command_line",
                           "env.vars.TORCH_DISTRIBUTED_DEBUG=INFO", "+env.vars.MY_FLAG=true"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120,
                          env=clean_env(FROM_SHELL="shell", FROM_COMMAND_LINE="shell", TORCH_DISTRIBUTED_DEBUG="OFF"))
    return Run(proc.returncode, proc.stdout, proc.stderr, out)


def test_precedence_in_a_real_job_shell_and_env_set_beat_the_preset_and_the_command_line_beats_both(layered):
    run = layered
    assert run.returncode == 0, run.output
    seen = {name: (v["source"], v["value"]) for name, v in run.report["vars"].items()}
    assert seen["FROM_SHELL"] == ("shell", "shell")
    assert seen["FROM_ENV_SET"] == ("env_set", "env_set")
    assert seen["FROM_COMMAND_LINE"] == ("override", "command_line")
    # A variable torch read at import: applied through its API, so it takes effect here too.
    assert seen["TORCH_DISTRIBUTED_DEBUG"] == ("override", "INFO")
    assert run.report["vars"]["TORCH_DISTRIBUTED_DEBUG"]["effective"] is True
    assert seen["MY_FLAG"] == ("override", "1")  # a bool normalised to 1


def test_secret_values_never_reach_the_report_or_the_log(given):
    run = given
    assert run.returncode == 0, run.output
    assert run.report["vars"]["HF_TOKEN"]["value"] == "***"
    for path in run.out_dir.rglob("*"):
        if path.is_file() and path.parent.name != ".hydra":  # .hydra/ holds the command line itself
            text = path.read_text()
            assert "hf_planted_secret" not in text and "planted_key" not in text, path
    assert "hf_planted_secret" not in run.output


def test_steps_zero_runs_the_bootstrap_only(layered):
    run = layered
    assert run.returncode == 0, run.output
    assert TRAINING_LOG not in run.output
    assert run.report["job"] == {"num": None, "status": "completed", "metrics": {"steps": 0}}


# End to end, one input of each kind: Hydra refuses it, the job start does, the launcher's variables do.
@pytest.mark.parametrize("overrides, launcher_vars, fragment", [
    BAD_INPUTS[0], BAD_INPUTS[2], next(case for case in BAD_INPUTS if case[1]),
    next(case for case in BAD_INPUTS if case[1] == WORLD_WITHOUT_PORT)],
    ids=["compose", "job start", "launcher variables", "a world without a port"])
def test_bad_input_exits_non_zero_naming_the_key_without_traceback(run_stub, tmp_path, overrides, launcher_vars,
                                                                   fragment):
    run = run_stub(f"hydra.searchpath=[file://{user_conf(tmp_path)}]", "train.steps=0", *overrides,
                   env=clean_env(**launcher_vars))
    assert run.returncode != 0
    assert fragment in run.stderr, run.stderr
    assert TRACEBACK not in run.output
    assert TRAINING_LOG not in run.output
    written = {p.name for p in run.out_dir.iterdir()} if run.out_dir.exists() else set()
    if overrides == BAD_INPUTS[0][0]:  # Hydra refused it: nothing beyond what Hydra itself writes
        assert written <= {".hydra", "train_stub.log"}
    else:  # refused at job start: Hydra's files and the record (issue 45; rank N's where its rank can be read)
        (name,) = written - {".hydra", "train_stub.log"}
        assert name in ("bootstrap.json", "bootstrap.rank0.json")
        record = json.loads((run.out_dir / name).read_text())["job"]
        assert fragment in record["error"] and record["status"] == "check_failed"


def run_multirun(tmp_path, *overrides):
    import json
    import subprocess
    import sys

    from conftest import STUB

    sweep_dir = tmp_path / "sweep"
    proc = subprocess.run([sys.executable, str(STUB), "-m", f"hydra.sweep.dir={sweep_dir}", *overrides],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=120)
    reports = {p.parent.name: json.loads(p.read_text()) for p in sweep_dir.glob("*/bootstrap.json")}
    return proc, reports


def test_each_job_of_a_multirun_reads_its_own_preset(tmp_path):
    proc, reports = run_multirun(tmp_path, "env=cpu_debug,h100", "env.on_mismatch=warn", "train.steps=0")
    assert proc.returncode == 0, proc.stderr
    assert {r["preset"] for r in reports.values()} == {"cpu_debug", "h100"}
    by_preset = {r["preset"]: r for r in reports.values()}
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING" in by_preset["h100"]["vars"]
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING" not in by_preset["cpu_debug"]["vars"]


def test_a_failed_check_in_a_multirun_names_the_job_overrides(tmp_path):
    proc, reports = run_multirun(tmp_path, "env=h100,cpu_debug", "train.steps=0")
    assert proc.returncode != 0
    assert "(in the multirun job with overrides: env=h100 train.steps=0)" in proc.stderr
    assert TRACEBACK not in proc.stderr
    assert [r["job"]["status"] for r in reports.values()] == ["check_failed"]  # the sweep stopped there
