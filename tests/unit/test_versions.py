"""The version check is pure: it is fed version strings, never the machine."""
import pytest

from bootstrap.core import versions
from bootstrap.core.schema import Requires
from bootstrap.core.versions import Found, check
from bootstrap.doors.errors import MismatchError


def mismatch_message(*args, **kwargs) -> str:
    """The message as an error outside a Session says it: the preset named ``env``."""
    return str(MismatchError(versions.mismatch_message(*args, **kwargs)))


CPU_BOX = Found(python="3.11.7", torch="2.13.0+cpu", cuda=None, nccl=None, cudnn=None, compute_capability=None, gpus=0)
H100_BOX = Found(python="3.11.7", torch="2.13.0+cu128", cuda="12.8", nccl="2.27.3", cudnn="91002",
                 compute_capability="9.0", gpus=8, gpu_names=("NVIDIA H100 80GB HBM3",) * 8)
A100_BOX = Found(python="3.10.12", torch="2.13.0+cu126", cuda="12.6", nccl="2.26.2", cudnn="90100",
                 compute_capability="8.0", gpus=4)


def by_name(checks):
    return {c.name: c for c in checks}


def test_null_requirements_produce_no_checks():
    assert check(Requires(), CPU_BOX) == []


@pytest.mark.parametrize("field, spec, found, ok", [
    ("python", ">=3.10", H100_BOX, True),
    ("python", ">=3.12", H100_BOX, False),
    ("torch", ">=2.1", CPU_BOX, True),          # local version "+cpu" still compares as 2.13.0
    ("torch", "<2.13", CPU_BOX, False),
    ("cuda", ">=11.8", H100_BOX, True),
    ("cuda", ">=12.9", H100_BOX, False),
    ("cuda", ">=11.8", CPU_BOX, False),         # a CPU build of torch has no CUDA at all
    ("nccl", ">=2.18", H100_BOX, True),
    ("nccl", ">=2.28", H100_BOX, False),
    ("nccl", ">=2.18", CPU_BOX, False),
])
def test_specifier_checks(field, spec, found, ok):
    (result,) = check(Requires(**{field: spec}), found)
    assert (result.name, result.required, result.found, result.ok) == (field, spec, getattr(found, field), ok)
    assert (result.fix == "") == ok


def test_nightly_torch_satisfies_a_lower_bound():
    nightly = Found(python="3.11.7", torch="2.14.0.dev20261201+cpu", cuda=None, nccl=None, cudnn=None,
                    compute_capability=None, gpus=0)
    assert check(Requires(torch=">=2.13"), nightly)[0].ok


@pytest.mark.parametrize("minimum, found, ok", [
    ("8.0", A100_BOX, True), ("8.0", H100_BOX, True), ("9.0", A100_BOX, False), ("9.0", H100_BOX, True),
    ("8.0", CPU_BOX, False),
])
def test_compute_capability_is_a_minimum(minimum, found, ok):
    (result,) = check(Requires(compute_capability=minimum), found)
    assert result.ok is ok


def test_gpu_count_and_device():
    assert by_name(check(Requires(gpus=8), H100_BOX))["gpus"].ok
    assert not by_name(check(Requires(gpus=8), A100_BOX))["gpus"].ok
    assert by_name(check(Requires(), A100_BOX, device="cuda"))["device"].ok
    assert not by_name(check(Requires(), CPU_BOX, device="cuda"))["device"].ok
    assert check(Requires(), CPU_BOX, device="cpu") == []


def test_h100_requirements_on_this_kind_of_machine_list_every_failure_with_its_fix():
    requires = Requires(python=">=3.10", cuda=">=11.8", compute_capability="9.0", gpus=1)
    checks = check(requires, CPU_BOX, device="cuda")
    assert [c.name for c in checks if not c.ok] == ["device", "cuda", "compute_capability", "gpus"]
    message = mismatch_message("h100", checks)
    assert "env=h100 needs CUDA >=11.8, but this torch (2.13.0+cpu) was built without CUDA" in message
    assert "compute capability >= 9.0" in message
    assert "run with env=cpu_debug, or with env.on_mismatch=warn to continue anyway" in message
    assert "Python" not in message  # the python check passed, so it is not listed


def test_a100_preset_on_h100_hardware_passes():
    checks = check(Requires(compute_capability="8.0", gpus=1), H100_BOX, device="cuda")
    assert all(c.ok for c in checks)


def test_mismatch_message_suggests_the_form_that_works_in_the_app():
    checks = check(Requires(gpus=1), CPU_BOX)
    assert "run with +env=cpu_debug, or with env.on_mismatch=warn" in mismatch_message("h100", checks,
                                                                                       cpu_override="+env=cpu_debug")
    warned = mismatch_message("h100", checks, warn=True)
    assert "Continuing because env.on_mismatch=warn." in warned and "to continue anyway" not in warned


@pytest.mark.parametrize("key, typed, fix", [
    ("env", ["env=h100"], "env=cpu_debug"), ("env", ["+env=h100"], "+env=cpu_debug"),
    ("hydra.callbacks.bootstrap.env", [], "+env@hydra.callbacks.bootstrap.env=cpu_debug")])
def test_a_session_suggests_the_cpu_preset_as_its_job_can_choose_it(key, typed, fix):
    from bootstrap.core.session import Session

    assert Session({}, key=key, job_overrides=typed).cpu_override == fix
