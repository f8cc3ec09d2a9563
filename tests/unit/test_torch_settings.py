"""The torch settings table (bootstrap.doors.torch_settings) drives the runtime, the report and the doctor's rows.
Each row is tried against real torch: applied, read back, restored."""
import typing

import pytest
import torch

import bootstrap
from bootstrap.core import runtime
from bootstrap.core.plan import torch_values
from bootstrap.core.runtime import TorchState
from bootstrap.core.schema import TorchSettings
from bootstrap.doors import records
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.torch_settings import SETTINGS, doctor_rows

DEFAULTS = torch_values(TorchSettings())  # the schema's defaults, as the plan gives them


@pytest.fixture
def restored():
    """Whatever a test does to torch, the next test finds torch as this one did."""
    before = TorchState.capture()
    yield before
    before.restore()


def apply_only(values):
    """The env.torch values, with the thread counts left as they are."""
    runtime.apply_settings(values, torch.get_num_threads(), torch.get_num_interop_threads())


def two_values(setting):
    """Two values of the setting, from its type in the schema: on and off, or an enum's first two members."""
    kind = typing.get_type_hints(TorchSettings)[setting.name]
    return (True, False) if kind is bool else tuple(member.value for member in kind)[:2]


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda setting: setting.name)
def test_each_setting_reaches_torch_and_is_restored(setting, restored):
    states = []
    for value in two_values(setting):
        apply_only({**DEFAULTS, setting.name: value})
        states.append(TorchState.capture().settings[setting.name])
    assert states[0] != states[1]  # torch holds what was applied
    restored.restore()
    assert TorchState.capture() == restored


def test_restore_puts_back_exactly_what_the_program_had_set(restored):
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.autograd.set_detect_anomaly(True, check_nan=False)
    torch.set_float32_matmul_precision("medium")
    programs = TorchState.capture()
    apply_only(DEFAULTS)
    assert not torch.are_deterministic_algorithms_enabled() and not torch.is_anomaly_enabled()
    programs.restore()
    assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
    assert torch.is_anomaly_enabled() and not torch.is_anomaly_check_nan_enabled()
    assert torch.get_float32_matmul_precision() == "medium"


def nan_in_backward():
    torch.sqrt(torch.tensor([-1.0], requires_grad=True)).backward()  # sqrt(-1) is NaN, and so is its gradient


def test_detect_anomaly_names_the_op_whose_backward_made_a_nan(restored):
    apply_only({**DEFAULTS, "detect_anomaly": False})
    nan_in_backward()  # off: the NaN passes silently
    apply_only({**DEFAULTS, "detect_anomaly": True})
    with pytest.raises(RuntimeError, match="'SqrtBackward0' returned nan"), pytest.warns(UserWarning):
        nan_in_backward()


def test_the_report_section_has_a_typed_field_per_setting_and_reads_strictly():
    section = records.Torch(**torch_values(TorchSettings(detect_anomaly=True)))
    written = section.to_json()
    assert list(written) == [setting.name for setting in SETTINGS] and written["detect_anomaly"] is True
    assert list(written)[:4] == ["matmul_precision", "cudnn_allow_tf32", "cudnn_benchmark", "deterministic"]
    assert records.Torch.from_json(written) == section
    assert records.Torch.from_json({}).detect_anomaly is None  # a report written before the setting still reads
    for setting in SETTINGS:
        wrong = 1 if setting.kind is str else "yes"
        with pytest.raises(Unreadable, match=rf"^torch\.{setting.name}: not "):
            records.Report.from_json({"torch": {setting.name: wrong}})


def test_the_doctor_shows_each_setting_as_the_plan_decided_it():
    preview = bootstrap.initialize({"torch": {"detect_anomaly": True, "deterministic": True,
                                              "cudnn_benchmark": True}}).preview()
    rows = dict(doctor_rows(preview.torch))
    assert rows["detect anomaly"] == "True" and rows["deterministic"] == "True"
    assert rows["cuDNN benchmark"] == "False"  # no autotuning in deterministic mode
    assert doctor_rows(records.Torch()) == [(setting.label, "-") for setting in SETTINGS]  # an older report
