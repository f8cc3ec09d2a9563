"""The doctor agrees with the job (issue 20): on the same input, ``bootstrap doctor`` exits 1 exactly
where the real job stops, and 0 where it starts.

The job is train_stub.py run for real (``train.steps=0``: the bootstrap, then a task that only logs);
the doctor is ``doctor.main`` in this process with the same overrides and environment. Both take
their verdict from bootstrap.verdict; the test holds them to the real outcome, not to each other only.
"""

import pytest

from bootstrap import verdict

from conftest import clean_env

TASK_RAN = "train.steps=0: bootstrap only"
A_RENDEZVOUS = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}

# (id, overrides, extra environment, does the job stop?)
CASES = [
    ("plain", [], {}, False),
    ("debug level 1", ["+env.vars.TORCH_DISTRIBUTED_DEBUG=1"], {}, True),
    ("debug level 1, lint off", ["+env.vars.TORCH_DISTRIBUTED_DEBUG=1", "env.lint=off"], {}, True),
    ("debug level from env_set", ["+hydra.job.env_set.TORCH_DISTRIBUTED_DEBUG=LOUD"], {}, True),
    ("debug level info", ["+env.vars.TORCH_DISTRIBUTED_DEBUG=info"], {}, False),
    ("unknown variable, lint warn", ["+env.vars.NCCL_NOT_A_SETTING=1"], {}, False),
    ("unknown variable, lint error", ["+env.vars.NCCL_NOT_A_SETTING=1", "env.lint=error"], {}, True),
    ("thread count abc", ["env.threads.intra_op=abc"], {}, True),
    ("thread count 0", ["env.threads.intra_op=0"], {}, True),
    ("absurd thread count", ["env.threads.intra_op=99999"], {}, True),
    ("failed check, on_mismatch=error", ["env=h100"], {}, True),
    ("failed check, on_mismatch=warn", ["env=h100", "env.on_mismatch=warn"], {}, False),
    ("MASTER_PORT=abc in one process that makes no group", [], {"MASTER_PORT": "abc"}, False),
    ("MASTER_PORT=abc in one process that makes a group", ["env.distributed.init=always"], {"MASTER_PORT": "abc"},
     True),
    ("MASTER_PORT=29500", [], {"MASTER_PORT": "29500"}, False),
    ("MASTER_PORT=70000 in a world of two", [], {**A_RENDEZVOUS, "MASTER_PORT": "70000"}, True),
    ("Kubeflow pod of 2 without torchrun", [],
     {**A_RENDEZVOUS, "MASTER_PORT": "29500", "PET_NNODES": "1", "PET_NPROC_PER_NODE": "2"}, True),
]


@pytest.mark.parametrize("overrides, extra, stops", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_doctor_exits_1_exactly_where_the_job_stops(run_stub, doctor_here, tmp_path, overrides, extra, stops):
    job = run_stub("train.steps=0", *overrides, env=clean_env(**extra))
    assert "Traceback" not in job.output, job.output
    assert (job.returncode != 0) == stops, job.output
    assert (TASK_RAN in job.output) != stops  # a stop is before the task

    doctor = doctor_here(*overrides, cwd=tmp_path, env=clean_env(**extra))
    assert doctor.returncode == (1 if stops else 0), doctor.stdout + doctor.stderr
    assert "Traceback" not in doctor.stderr
    if stops:
        # the doctor says the job's own reason: its first line is in the job's message
        reason = doctor.stderr.removeprefix("bootstrap doctor: the job would stop: ").splitlines()[0]
        assert reason.split(";")[0].split(" (")[0][:60] in job.output


def test_a_bad_master_port_is_named_by_the_job_with_its_value_and_the_fix(run_stub):
    job = run_stub("train.steps=0", env=clean_env(**A_RENDEZVOUS, MASTER_PORT="29500x"))
    assert job.returncode == 1 and "Traceback" not in job.output
    assert "MASTER_PORT='29500x' is not a TCP port from 1 to 65535" in job.stderr
    assert "MASTER_PORT=29500" in job.stderr and TASK_RAN not in job.output


def test_the_json_verdict_keeps_the_report_schema_and_holds_the_reason(doctor_here, tmp_path):
    import json

    plain = json.loads(doctor_here("--json", cwd=tmp_path).stdout)
    answer = doctor_here("--json", "+env.vars.TORCH_DISTRIBUTED_DEBUG=1", cwd=tmp_path)
    stopped = json.loads(answer.stdout)
    assert answer.returncode == 1 and set(stopped) == set(plain)
    assert stopped["job"]["status"] == "preview"
    assert stopped["job"]["error"].startswith("TORCH_DISTRIBUTED_DEBUG='1' is not a debug level torch accepts")


# -- the pieces the verdict is made of ---------------------------------------------------------
@pytest.mark.parametrize("value", ["OFF", "off", "Info", "DETAIL", "detail", "1", "0", "", " INFO", "INFO ",
                                   "LOUD", "\u0131nfo", "INFO\n", "DETAILS"])
def test_the_debug_level_check_agrees_with_torch(monkeypatch, value):
    import torch.distributed as dist

    before = dist.get_debug_level()
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", value)
    try:
        dist.set_debug_level_from_env()
        accepted = True
    except ValueError:
        accepted = False
    finally:
        dist.set_debug_level(before)
    assert (verdict.debug_level_problem("TORCH_DISTRIBUTED_DEBUG", value, "env") is None) == accepted


def test_every_variable_torch_is_made_to_reread_has_a_value_check():
    from bootstrap.runtime import APPLY_NOW

    assert set(APPLY_NOW) <= set(verdict.LATE_VALUE_CHECKS)


def test_the_value_that_counts_is_the_one_in_place_after_the_plan():
    from bootstrap.environ import plan_vars
    from bootstrap.readers import ProcessState

    state = ProcessState(cuda_initialized=False, process_group_initialized=False)
    shell = {"TORCH_DISTRIBUTED_DEBUG": "LOUD"}
    overridden = plan_vars({"TORCH_DISTRIBUTED_DEBUG": "INFO"}, shell, {}, {"TORCH_DISTRIBUTED_DEBUG"}, state)
    assert verdict.late_value_problems(overridden, shell, "env") == []  # the command line replaces LOUD
    kept = plan_vars({"TORCH_DISTRIBUTED_DEBUG": "INFO"}, shell, {}, set(), state)  # the shell's LOUD wins
    assert [p.split(" is ")[0] for p in verdict.late_value_problems(kept, shell, "env")] == \
        ["TORCH_DISTRIBUTED_DEBUG='LOUD'"]
    assert verdict.late_value_problems([], shell, "key") and not verdict.late_value_problems([], {}, "key")
