"""bootstrap/core/report.py: what a task returns becomes the report's metrics, and its error the report's text."""
import math

import numpy as np
import pytest
import torch

from bootstrap.core.metrics import MAX_DEPTH, MAX_METRICS, MAX_SKIPPED, metrics_from
from bootstrap.core.plan import make_plan
from bootstrap.core.report import (
    JobInfo,
    build,
    error_text,
    format_table,
)
from bootstrap.core.schema import load
from bootstrap.core.versions import Found
from bootstrap.distributed.launcher import Launch, Launcher
from bootstrap.variables import lint
from bootstrap.variables.lint import Machine
from bootstrap.variables.readers import ProcessState

FOUND = Found(python="3.11.7", torch="2.13.0+cpu", cuda=None, nccl=None, cudnn=None, compute_capability=None, gpus=0,
              gpu_names=(), cpus=2, cpus_usable=2, cpu_affinity="0-1")


def test_a_number_becomes_the_return_metric():
    assert metrics_from(0.25) == ({"return": 0.25}, [])
    assert metrics_from(3) == ({"return": 3.0}, [])
    assert metrics_from(torch.tensor(0.5)) == ({"return": 0.5}, [])


def test_a_mapping_is_flattened_and_tensors_become_floats():
    value = {"val/loss": torch.tensor(0.5), "train": {"loss": np.float32(0.25), "acc": np.int64(3)},
             "steps": 10, "name": "run-1", "flag": True, "hist": torch.tensor([1.0, 2.0]), "bad": math.nan}
    metrics, skipped = metrics_from(value)
    assert metrics == {"val/loss": 0.5, "train/loss": 0.25, "train/acc": 3.0, "steps": 10.0}
    assert all(isinstance(v, float) for v in metrics.values())
    assert skipped == ["name (str)", "flag (bool)", "hist (Tensor)", "bad (nan)"]


@pytest.mark.parametrize("value", [None, "text", object(), (), tuple(range(40))])
def test_anything_else_is_skipped_and_noted(value):
    metrics, skipped = metrics_from(value)
    assert metrics == {} and (skipped == [] if value is None else len(skipped) == 1)


def test_a_tuple_of_objectives_becomes_one_metric_each():
    assert metrics_from((0.5, 0.25)) == ({"return/0": 0.5, "return/1": 0.25}, [])  # Optuna's multi-objective
    assert metrics_from([1, "x"]) == ({"return/0": 1.0}, ["return/1 (str)"])


class Raising:
    """Whatever converts it raises: __float__, __index__, item()."""

    ndim = 0

    def __init__(self, error):
        self.error = error

    def __float__(self):
        raise self.error

    __index__ = __float__

    def item(self):
        raise self.error


class RaisingFloat(float):
    def __float__(self):
        raise SystemExit(3)  # not even an Exception


class Weird:
    def __str__(self):
        raise RuntimeError("no text")

    def __hash__(self):
        return 7


def test_values_that_cannot_become_floats_are_skipped_with_the_reason_never_raised():
    cycle = {"loss": 0.5, "inner": {"ok": 1}}
    cycle["self"] = cycle
    cycle["inner"]["up"] = cycle
    metrics, skipped = metrics_from(cycle)
    assert metrics == {"loss": 0.5, "inner/ok": 1.0}
    assert skipped == ["inner/up (a mapping that holds itself)", "self (a mapping that holds itself)"]
    assert metrics_from(10**400) == ({}, ["return (int too large for a float)"])
    assert metrics_from({"n": np.float64("inf"), "big": 10**400, "ok": 2**60}) == (
        {"ok": float(2**60)}, ["n (inf)", "big (int too large for a float)"])
    metrics, skipped = metrics_from({"a": Raising(ValueError()), "b": Raising(KeyError()), "c": RaisingFloat(1.0),
                                     "t": torch.tensor(1.0).expand(())})
    assert metrics == {"t": 1.0}
    assert skipped == ["a (Raising that could not be converted: ValueError)",
                       "b (Raising that could not be converted: KeyError)",
                       "c (RaisingFloat that could not be converted: SystemExit)"]


def test_keys_that_are_not_text_are_named_or_skipped():
    metrics, skipped = metrics_from({1: 1.0, 2.5: 2.0, (1, 2): 3.0, 10**5000: 4.0, Weird(): 5.0, None: 6.0})
    assert metrics == {"1": 1.0, "2.5": 2.0, "(1, 2)": 3.0, "None": 6.0}
    assert skipped == ["? (a key of type int that cannot be shown: ValueError)",
                       "? (a key of type Weird that cannot be shown: RuntimeError)"]


def test_depth_size_and_name_length_are_bounded():
    deep = inner = {}
    for _ in range(100_000):  # far past the recursion limit
        inner["a"] = inner = {}
    inner["v"] = 1.0
    metrics, skipped = metrics_from(deep)
    assert metrics == {} and skipped == ["/".join(["a"] * MAX_DEPTH) + f" (nested deeper than {MAX_DEPTH} levels)"]
    metrics, skipped = metrics_from({f"m{i}": float(i) for i in range(MAX_METRICS + 500)})
    assert len(metrics) == MAX_METRICS and len(skipped) == MAX_SKIPPED + 1
    assert skipped[0] == f"m{MAX_METRICS} (past the limit of {MAX_METRICS} metrics in a report)"
    assert skipped[-1] == f"{500 - MAX_SKIPPED} more values not recorded (at most {MAX_SKIPPED} are named)"
    metrics, skipped = metrics_from({"x" * 10_000: 1.0})
    assert metrics == {} and skipped == ["x" * 200 + "... (a name longer than 200 characters)"]


def test_an_error_whose_message_cannot_be_read_still_gives_its_type():
    class Broken(Exception):
        def __str__(self):
            raise RuntimeError("no")

    assert error_text(Broken()) == "Broken (its message could not be read: RuntimeError)"
    assert error_text(ValueError("x" * 30_000)).endswith("x... (10012 more characters)")  # "ValueError: " + 30,000


# -- one truth per variable: the lint's hardware finding and the report's ``effective`` -----------------
@pytest.mark.parametrize("machine", [
    Machine(nvidia_gpu=False, x86_64=True, intel_openmp=False),
    Machine(nvidia_gpu=True, compute_capability=9.0, x86_64=True),
    Machine(nvidia_gpu=True, compute_capability=10.0, x86_64=True),
], ids=["no GPU", "Hopper", "Blackwell"])
def test_a_variable_the_lint_says_does_nothing_here_is_not_effective_in_the_report_or_its_table(machine):
    preset = load({"device": "cuda", "on_mismatch": "warn", "vars": {
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": 3, "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "CUDA_DEVICE_MAX_CONNECTIONS": 1, "NCCL_NVLS_ENABLE": 0, "KMP_AFFINITY": "compact", "MY_SETTING": 1}})
    plan = make_plan(preset, environ_now={}, env_set={}, explicit_vars=(), cpus=2, machine_cpus=2,
                     state=ProcessState(cuda_initialized=False, process_group_initialized=False),
                     launch=Launch(Launcher.single))
    findings = lint.for_preset(preset, machine)
    record = build(JobInfo("test"), plan, "cpu", FOUND, [], None, [], 0.0, lint=findings, machine=machine)
    said = {f.name: f.message for f in findings if f.kind is lint.Kind.hardware and "does nothing here" in f.message}
    idle = {name: var for name, var in record.vars.items() if not var.effective and var.does_nothing_here}
    assert set(idle) == set(said) and (said or machine.nvidia_gpu), (said, idle)
    for name, var in record.vars.items():
        planned = next(d for d in plan.vars if d.name == name)
        assert var.effective == (planned.effective and name not in said), name
    for name, var in idle.items():
        assert f"but {var.does_nothing_here}: it does nothing here" in said[name]
        row = next(line for line in format_table(record).splitlines() if line.startswith(name + " "))
        assert row.endswith(f"no: {var.does_nothing_here}"), row
