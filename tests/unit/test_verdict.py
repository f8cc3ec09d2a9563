"""The doctor agrees with the job (issue 20): on the same input, ``bootstrap doctor`` exits 1 exactly
where the real job stops, and 0 where it starts.

The job is train_stub.py run for real (``train.steps=0``: the bootstrap, then a task that only logs);
the doctor is ``doctor.main`` in this process with the same overrides and environment. Both take
their verdict from bootstrap.verdict; the test holds them to the real outcome, not to each other only.
"""
import pytest

from bootstrap.core import verdict


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
    assert (verdict.debug_level_problem("TORCH_DISTRIBUTED_DEBUG", value) is None) == accepted


def test_every_variable_torch_is_made_to_reread_has_a_value_check():
    from bootstrap.core.runtime import APPLY_NOW

    assert set(APPLY_NOW) <= set(verdict.LATE_VALUE_CHECKS)


def test_the_value_that_counts_is_the_one_in_place_after_the_plan():
    from bootstrap.variables.environ import plan_vars
    from bootstrap.variables.readers import ProcessState

    state = ProcessState(cuda_initialized=False, process_group_initialized=False)
    shell = {"TORCH_DISTRIBUTED_DEBUG": "LOUD"}
    overridden = plan_vars({"TORCH_DISTRIBUTED_DEBUG": "INFO"}, shell, {}, {"TORCH_DISTRIBUTED_DEBUG"}, state)
    assert verdict.late_value_problems(overridden, shell) == []  # the command line replaces LOUD
    kept = plan_vars({"TORCH_DISTRIBUTED_DEBUG": "INFO"}, shell, {}, set(), state)  # the shell's LOUD wins
    assert [p.split(" is ")[0] for p in verdict.late_value_problems(kept, shell)] == \
        ["TORCH_DISTRIBUTED_DEBUG='LOUD'"]
    assert verdict.late_value_problems([], shell) and not verdict.late_value_problems([], {})
