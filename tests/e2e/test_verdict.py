"""The doctor agrees with the job (issue 20): on the same input, ``bootstrap doctor`` exits 1 exactly
where the real job stops, and 0 where it starts.

The job is train_stub.py run for real (``train.steps=0``: the bootstrap, then a task that only logs);
the doctor is ``doctor.main`` in this process with the same overrides and environment. Both take
their verdict from bootstrap.verdict; the test holds them to the real outcome, not to each other only.
"""
import pytest

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


def test_the_debug_level_in_the_shell_stops_the_apps_own_import_of_torch(run_stub, doctor_here, tmp_path):
    # issue 45: torch reads TORCH_DISTRIBUTED_DEBUG when torch.distributed is imported, in the app's own import, before
    # Hydra or any code of ours: the job cannot say one line of its own, and docs/errors.md says so
    job = run_stub("train.steps=0", env=clean_env(TORCH_DISTRIBUTED_DEBUG="1"))
    assert job.returncode != 0 and TASK_RAN not in job.output
    assert "ValueError: The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL." in job.stderr
    assert not job.out_dir.exists()  # nothing of ours ran
    doctor = doctor_here(env=clean_env(TORCH_DISTRIBUTED_DEBUG="1"), cwd=tmp_path)
    assert doctor.returncode == 1 and "in this shell: `import torch` raises ValueError" in doctor.stderr
