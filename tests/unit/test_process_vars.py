"""bootstrap/core/process_vars.py and the plan's record of them: the variables the job's process set for itself
before the job started (``import lightning`` sets PYTORCH_NVML_BASED_CUDA_CHECK), told from the shell's; a rank
that Lightning re-launched learns them from rank 0's report."""
import json
from pathlib import Path

import pytest

from bootstrap.core import process_vars
from bootstrap.core.plan import make_plan
from bootstrap.core.schema import load
from bootstrap.distributed.launcher import Launch, Launcher
from bootstrap.variables.readers import ProcessState

FRESH = ProcessState(cuda_initialized=False, process_group_initialized=False)
NVML = "PYTORCH_NVML_BASED_CUDA_CHECK"
RANK1 = Launch(Launcher.lightning, rank=1, local_rank=1, world_size=2, local_world_size=2)


def started_with(tmp_path, environ) -> Path:
    """A start environment as /proc/self/environ holds one."""
    path = tmp_path / "environ"
    path.write_bytes(b"".join(f"{name}={value}".encode() + b"\0" for name, value in environ.items()))
    return path


def rank0_report(directory, **variables):
    (directory / "bootstrap.json").write_text(json.dumps({"schema_version": 3, "vars": {
        name: {"value": value, "source": source, "effective": True} for name, (value, source) in variables.items()}}))
    return directory


def test_rank_1_learns_from_rank_0s_report_which_values_rank_0s_process_set(tmp_path):
    run_dir = rank0_report(tmp_path, **{NVML: ("1", "process"), "NCCL_ALGO": ("Ring", "process"),
                                        "NCCL_PROTO": ("Simple", "shell"), "HF_TOKEN": ("***", "process")})
    environ = {NVML: "1", "NCCL_ALGO": "Tree", "NCCL_PROTO": "Simple", "HF_TOKEN": "***"}
    # NCCL_ALGO changed since rank 0 recorded it (the task's export before fit): the shell's, and compared
    assert process_vars.rank0s(run_dir / "bootstrap.json", environ) == [NVML]  # a masked secret matches nothing
    found = process_vars.set_by_process(environ, {}, RANK1, run_dir, started_with(tmp_path, environ))
    assert found == {NVML: process_vars.RANK0}  # in its start environment: rank 0's report alone tells


@pytest.mark.parametrize("content", [None, "not json", '{"vars": {"X": 1}}'])
def test_a_missing_or_unreadable_rank_0_report_tells_nothing(tmp_path, content):
    if content is not None:
        (tmp_path / "bootstrap.json").write_text(content)
    assert process_vars.rank0s(tmp_path / "bootstrap.json", {NVML: "1"}) == ()


def test_rank_0s_report_is_read_only_by_a_rank_that_rank_0_started(tmp_path):
    run_dir = rank0_report(tmp_path, **{NVML: ("1", "process")})
    torchrun = Launch(Launcher.torchrun, rank=1, local_rank=1, world_size=2, local_world_size=2, master_port=29500)
    start = started_with(tmp_path, {NVML: "1"})
    assert process_vars.set_by_process({NVML: "1"}, {}, torchrun, run_dir, start) == {}  # the shell's


def test_this_process_own_values_are_found_by_its_start_environment(tmp_path):
    start = started_with(tmp_path, {"NCCL_PROTO": "Simple", "NCCL_ALGO": "Tree"})
    now = {"NCCL_PROTO": "Simple", "NCCL_ALGO": "Ring", NVML: "1", "HYDRA_SET": "1"}
    assert process_vars.set_by_process(now, {"HYDRA_SET": 1}, Launch(Launcher.single), None, start) == {
        "NCCL_ALGO": process_vars.THIS_PROCESS, NVML: process_vars.THIS_PROCESS}  # Hydra's env_set: the job's own
    absent = tmp_path / "absent"  # not Linux: nothing is told apart, as before
    assert process_vars.set_by_process(now, {}, Launch(Launcher.single), None, absent) == {}


def test_the_plan_records_a_known_variable_the_process_set_that_the_preset_does_not():
    environ = {NVML: "1", "MY_APP_FLAG": "1", "CUDA_VISIBLE_DEVICES": "0", "NCCL_ALGO": "Ring"}
    by_process = dict.fromkeys(environ, process_vars.THIS_PROCESS)
    plan = make_plan(load({"vars": {"NCCL_ALGO": "Tree"}}), environ_now=environ, env_set={}, explicit_vars=(),
                     state=FRESH, cpus=2, machine_cpus=2, launch=Launch(Launcher.single), by_process=by_process)
    decided = {d.name: d for d in plan.vars}
    # an unknown name and a per-rank one (compared by no rank) are not recorded; the preset's own is the process's
    assert NVML in decided and "MY_APP_FLAG" not in decided and "CUDA_VISIBLE_DEVICES" not in decided
    assert (decided[NVML].source, decided[NVML].changes_environ, decided[NVML].note) == (
        "process", False, process_vars.THIS_PROCESS)
    assert (decided["NCCL_ALGO"].source, decided["NCCL_ALGO"].value) == ("process", "Ring")
    plain = make_plan(load({}), environ_now=environ, env_set={}, explicit_vars=(), state=FRESH, cpus=2,
                      machine_cpus=2, launch=Launch(Launcher.single))
    assert NVML not in {d.name for d in plain.vars}  # nothing set by the process: nothing recorded, as before
