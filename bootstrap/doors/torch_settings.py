"""The torch settings a preset makes (``env.torch.*``), one row each. To add a setting, see CONTRIBUTING.

A row's name is the setting's field in the schema, its key in ``Plan.torch`` and its field in the report.
``core.runtime`` captures, applies and restores the rows; ``records.Torch`` and the doctor's rows are made
from them, hence its place with the doors. Torch is passed in: nothing here imports it."""

from typing import Any, Callable, List, Optional, Tuple

from bootstrap.doors.lean import lean_dataclass


@lean_dataclass(frozen=True)
class Setting:
    name: str
    kind: type  # the value's type in the report: str or bool
    label: str  # the doctor's row
    read: Callable[[Any], Any]  # torch -> what restoring needs: the value, unless `restore` is given
    set: Callable[[Any, Any], None]  # (torch, the plan's value)
    restore: Optional[Callable[[Any, Any], None]] = None  # (torch, what `read` gave); None: `set` does
    # What ranks that differ in it risk (bootstrap.core.comparison.kind_of): "numerics" (results differ, a warning)
    # or "speed" (only the time a step takes).
    difference_kind: str = "numerics"


def _set_deterministic(torch: Any, state: Tuple[bool, bool, bool]) -> None:
    algorithms, warn_only, cudnn = state
    torch.backends.cudnn.deterministic = cudnn
    # use_deterministic_algorithms imports torch._inductor (about a second): call it only when the setting changes.
    if (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()) != (
            algorithms, warn_only and algorithms):
        torch.use_deterministic_algorithms(algorithms, warn_only=warn_only)


SETTINGS: Tuple[Setting, ...] = (
    Setting("matmul_precision", str, "matmul precision", lambda torch: torch.get_float32_matmul_precision(),
            lambda torch, value: torch.set_float32_matmul_precision(value)),
    Setting("cudnn_allow_tf32", bool, "cuDNN allow_tf32", lambda torch: torch.backends.cudnn.allow_tf32,
            lambda torch, value: setattr(torch.backends.cudnn, "allow_tf32", value)),
    Setting("cudnn_benchmark", bool, "cuDNN benchmark", lambda torch: torch.backends.cudnn.benchmark,
            lambda torch, value: setattr(torch.backends.cudnn, "benchmark", value), difference_kind="speed"),
    Setting("deterministic", bool, "deterministic",
            lambda torch: (torch.are_deterministic_algorithms_enabled(),
                           torch.is_deterministic_algorithms_warn_only_enabled(), torch.backends.cudnn.deterministic),
            lambda torch, on: _set_deterministic(torch, (on, False, on)), restore=_set_deterministic),
    Setting("detect_anomaly", bool, "detect anomaly",
            lambda torch: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
            lambda torch, on: torch.autograd.set_detect_anomaly(on),
            restore=lambda torch, state: torch.autograd.set_detect_anomaly(*state), difference_kind="speed"),
)


def doctor_rows(section: object) -> List[Tuple[str, str]]:
    """The doctor's rows for a report's ``torch`` section (a ``records.Torch``, whose fields are made from
    :data:`SETTINGS`); a setting it lacks shows ``-``."""
    values = [(s.label, getattr(section, s.name)) for s in SETTINGS]
    return [(label, "-" if value is None else str(value)) for label, value in values]
