"""End to end: the real train_stub.py, the real Hydra callback, in a subprocess."""

import os
from pathlib import Path

import pytest
import torch

from conftest import ROOT, clean_env

TRACEBACK = "Traceback (most recent call last)"
TRAINING_LOG = "step 0  loss"


def torch_settings():
    return (torch.get_num_threads(), torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark,
            torch.are_deterministic_algorithms_enabled())


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


def test_full_error_shows_the_traceback(run_stub):
    run = run_stub("env=h100", env=clean_env(HYDRA_FULL_ERROR="1"))
    assert run.returncode != 0 and TRACEBACK in run.stderr and "MismatchError" in run.stderr


def test_h100_with_warn_runs_the_task(run_stub):
    run = run_stub("env=h100", "env.on_mismatch=warn", "train.steps=3")
    assert run.returncode == 0, run.output
    assert "needs CUDA >=11.8" in run.output  # still warned
    assert run.report["job"]["status"] == "completed" and run.report["device"] == "cpu"
    assert [c["name"] for c in run.report["checks"] if not c["ok"]] == ["device", "cuda", "compute_capability", "gpus"]


def test_one_intra_op_thread_inside_the_task(run_stub):
    run = run_stub("env.threads.intra_op=1", "train.steps=3")
    assert run.returncode == 0, run.output
    assert run.report["job"]["metrics"]["num_threads"] == 1  # read by the task itself
    assert run.report["threads"]["intra_op"] == 1
    assert run.report["vars"]["OMP_NUM_THREADS"]["value"] == "1"


def test_precedence_in_a_real_job_shell_and_env_set_beat_the_preset_and_the_command_line_beats_both(
        run_stub, tmp_path):
    user_conf = tmp_path / "precedence_conf"
    (user_conf / "env").mkdir(parents=True)
    (user_conf / "env" / "layered.yaml").write_text(
        "defaults:\n  - cpu_debug\n  - _self_\nvars:\n  FROM_SHELL: preset\n  FROM_ENV_SET: preset\n"
        "  FROM_COMMAND_LINE: preset\n  TORCH_DISTRIBUTED_DEBUG: DETAIL\n")
    run = run_stub(f"hydra.searchpath=[file://{user_conf}]", "env=layered", "train.steps=0",
                   "+hydra.job.env_set.FROM_ENV_SET=env_set", "env.vars.FROM_COMMAND_LINE=command_line",
                   "env.vars.TORCH_DISTRIBUTED_DEBUG=INFO", "+env.vars.MY_FLAG=true",
                   env=clean_env(FROM_SHELL="shell", FROM_COMMAND_LINE="shell", TORCH_DISTRIBUTED_DEBUG="OFF"))
    assert run.returncode == 0, run.output
    seen = {name: (v["source"], v["value"]) for name, v in run.report["vars"].items()}
    assert seen["FROM_SHELL"] == ("shell", "shell")
    assert seen["FROM_ENV_SET"] == ("env_set", "env_set")
    assert seen["FROM_COMMAND_LINE"] == ("override", "command_line")
    # A variable torch read at import: applied through its API, so it takes effect here too.
    assert seen["TORCH_DISTRIBUTED_DEBUG"] == ("override", "INFO")
    assert run.report["vars"]["TORCH_DISTRIBUTED_DEBUG"]["effective"] is True
    assert seen["MY_FLAG"] == ("override", "1")  # a bool normalised to 1


def test_secret_values_never_reach_the_report_or_the_log(run_stub):
    run = run_stub("train.steps=0", "+env.vars.HF_TOKEN=hf_planted_secret", "+env.vars.MY_API_KEY=planted_key")
    assert run.returncode == 0, run.output
    assert run.report["vars"]["HF_TOKEN"]["value"] == "***"
    for path in run.out_dir.rglob("*"):
        if path.is_file() and path.parent.name != ".hydra":  # .hydra/ holds the command line itself
            text = path.read_text()
            assert "hf_planted_secret" not in text and "planted_key" not in text, path
    assert "hf_planted_secret" not in run.output


def test_steps_zero_runs_the_bootstrap_only(run_stub):
    run = run_stub("train.steps=0")
    assert run.returncode == 0, run.output
    assert TRAINING_LOG not in run.output
    assert run.report["job"] == {"num": None, "status": "completed", "metrics": {"steps": 0}}


BAD_PRESET_FILES = {
    "bad_name_equals": ('vars:\n  "BAD=NAME": 1\n', "env.vars.BAD=NAME"),
    "bad_name_space": ('vars:\n  "BAD NAME": 1\n', "env.vars.BAD NAME"),
    "nul_byte": ('vars:\n  HAS_NUL: "a\\0b"\n', "env.vars.HAS_NUL contains a NUL byte"),
}


TORCHRUN_RANK2_OF_2 = {"TORCHELASTIC_RUN_ID": "demo", "RANK": "2", "WORLD_SIZE": "2", "LOCAL_RANK": "0",
                       "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
MULTI_NODE_NO_MASTER = {"RANK": "0", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2",
                        "MASTER_PORT": "29500"}
MPI_RANK2_OF_2 = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
                  "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
MPI_TWO_NODES_NO_MASTER = {"PMI_RANK": "0", "PMI_SIZE": "4", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2"}
KUBEFLOW_POD_OF_TWO = {"RANK": "1", "WORLD_SIZE": "4", "MASTER_ADDR": "job-master-0", "MASTER_PORT": "23456",
                       "PET_NNODES": "2", "PET_NPROC_PER_NODE": "2", "PET_NODE_RANK": "1"}


NO_ENV = {}
BAD_INPUTS = [  # (overrides, launcher variables, what the message must contain)
    (["env=nope"], NO_ENV, "env/nope"),
    (["env.threds.intra_op=2"], NO_ENV, "env.threds"),
    (["env.threads.intra_op=abc"], NO_ENV, "env.threads.intra_op"),
    (["env.threads.intra_op=0"], NO_ENV, "env.threads.intra_op"),
    (["env.threads.inter_op=-1"], NO_ENV, "env.threads.inter_op"),
    (["env.seed=-1"], NO_ENV, "env.seed"),
    (["env.seed=abc"], NO_ENV, "env.seed"),
    (["env.on_mismatch=maybe"], NO_ENV, "env.on_mismatch"),
    (["env.requires.torch='>>2'"], NO_ENV, "env.requires.torch"),
    (["+env.vars.LISTED=[1,2]"], NO_ENV, "env.vars.LISTED"),
    (["+env.vars.NESTED={a:1}"], NO_ENV, "env.vars.NESTED"),
    (["env.distributed.mesh={dp:2}", "env.distributed.init=always"], NO_ENV,
     "env.distributed.mesh: dp(2) = 2 != WORLD_SIZE(1)"),
    (["env.distributed.timeout_s=0"], NO_ENV, "env.distributed.timeout_s"),
    ([], TORCHRUN_RANK2_OF_2, "env.distributed: torchrun: rank 2 is outside world size 2"),
    ([], MULTI_NODE_NO_MASTER, "needs MASTER_ADDR"),
    ([], MPI_RANK2_OF_2, "env.distributed: mpi: rank 2 is outside world size 2"),
    ([], MPI_TWO_NODES_NO_MASTER, "MPI gives no master address; pass it with mpirun -x MASTER_ADDR"),
    ([], KUBEFLOW_POD_OF_TWO, "RANK=1 is the pod's index, not a process rank. Start the processes with torchrun"),
] + [([f"env={name}"], NO_ENV, fragment) for name, (_, fragment) in BAD_PRESET_FILES.items()]


def _user_conf(tmp_path: Path) -> Path:
    """A config directory holding the broken presets of BAD_PRESET_FILES, each extending cpu_debug."""
    user_conf = tmp_path / "user_conf"
    (user_conf / "env").mkdir(parents=True)
    for name, (body, _) in BAD_PRESET_FILES.items():
        (user_conf / "env" / f"{name}.yaml").write_text("defaults:\n  - cpu_debug\n  - _self_\n" + body)
    return user_conf


def _refusal(tmp_path: Path, overrides) -> str:
    """What refuses the job: Hydra while composing train_stub's config, else the real callback at job start."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from bootstrap.callback import BootstrapCallback

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        try:
            cfg = compose(config_name="config", return_hydra_config=True, overrides=[
                f"hydra.searchpath=[file://{_user_conf(tmp_path)}]", f"hydra.runtime.output_dir={tmp_path / 'out'}",
                *overrides])
        except (HydraException, OmegaConfBaseException) as error:
            return f"compose: {error}"
        with pytest.raises(SystemExit) as stopped:
            BootstrapCallback().on_job_start(config=cfg)
    return f"job start: {stopped.value.code}"


@pytest.mark.parametrize("overrides, launcher_vars, fragment", BAD_INPUTS,
                         ids=[" ".join(o) or " ".join(f"{k}={v}" for k, v in e.items()) for o, e, _ in BAD_INPUTS])
def test_each_bad_input_is_refused_naming_the_key_and_changing_nothing(tmp_path, monkeypatch, overrides,
                                                                        launcher_vars, fragment):
    for name, value in launcher_vars.items():
        monkeypatch.setenv(name, value)
    environ_before, torch_before = dict(os.environ), torch_settings()
    message = _refusal(tmp_path, overrides)
    assert fragment in message, message
    assert dict(os.environ) == environ_before and torch_settings() == torch_before
    assert not (tmp_path / "out").exists()  # refused before the checks: no report


# End to end, one input of each kind: Hydra refuses it, the job start does, the launcher's variables do.
@pytest.mark.parametrize("overrides, launcher_vars, fragment", [BAD_INPUTS[0], BAD_INPUTS[2], BAD_INPUTS[13]],
                         ids=["compose", "job start", "launcher variables"])
def test_bad_input_exits_non_zero_naming_the_key_without_traceback(run_stub, tmp_path, overrides, launcher_vars,
                                                                   fragment):
    run = run_stub(f"hydra.searchpath=[file://{_user_conf(tmp_path)}]", "train.steps=0", *overrides,
                   env=clean_env(**launcher_vars))
    assert run.returncode != 0
    assert fragment in run.stderr, run.stderr
    assert TRACEBACK not in run.output
    assert TRAINING_LOG not in run.output
    written = {p.name for p in run.out_dir.iterdir()} if run.out_dir.exists() else set()
    assert written <= {".hydra", "train_stub.log"}  # nothing beyond what Hydra itself writes


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


def test_the_callback_pickles_for_joblib_and_submitit():
    import pickle

    from bootstrap import BootstrapCallback

    clone = pickle.loads(pickle.dumps(BootstrapCallback(config_key="bootstrap_env")))
    assert clone.config_key == "bootstrap_env"


def test_the_pickled_callback_carries_no_environment(tmp_path, monkeypatch):
    import pickle

    from omegaconf import OmegaConf

    from bootstrap import BootstrapCallback

    monkeypatch.setenv("HTB_PLANTED_TOKEN", "planted_secret_value")
    callback = BootstrapCallback()
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}})
    callback.on_multirun_start(config=config)  # snapshots the launching environment
    try:
        assert b"planted_secret_value" not in pickle.dumps(callback)  # what submitit writes to disk
    finally:
        callback.on_multirun_end(config=config)
