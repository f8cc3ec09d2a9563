"""Torch process settings: threads, numerics and the distributed debug level.
Snapshot, apply, read back, restore. Touches the process."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Callable, Dict, Optional, Tuple

import torch

from bootstrap.errors import ConfigError
from bootstrap.schema import TorchSettings


@dataclass(frozen=True)
class TorchState:
    """Every torch setting the bootstrap may change. ``capture()`` reads, ``restore()`` writes back."""

    num_threads: int
    matmul_precision: str
    cudnn_allow_tf32: bool
    cudnn_benchmark: bool
    cudnn_deterministic: bool
    deterministic_algorithms: bool
    deterministic_warn_only: bool
    distributed_debug: Optional[str]  # torch.distributed.get_debug_level(); None without torch.distributed

    @classmethod
    def capture(cls) -> "TorchState":
        return cls(
            num_threads=torch.get_num_threads(),
            matmul_precision=torch.get_float32_matmul_precision(),
            cudnn_allow_tf32=torch.backends.cudnn.allow_tf32,
            cudnn_benchmark=torch.backends.cudnn.benchmark,
            cudnn_deterministic=torch.backends.cudnn.deterministic,
            deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
            deterministic_warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
            distributed_debug=_debug_level(),
        )

    def restore(self) -> None:
        if torch.get_num_threads() != self.num_threads:
            torch.set_num_threads(self.num_threads)
        torch.set_float32_matmul_precision(self.matmul_precision)
        torch.backends.cudnn.allow_tf32 = self.cudnn_allow_tf32
        torch.backends.cudnn.benchmark = self.cudnn_benchmark
        torch.backends.cudnn.deterministic = self.cudnn_deterministic
        _set_deterministic(self.deterministic_algorithms, self.deterministic_warn_only)
        if self.distributed_debug is not None and _debug_level() != self.distributed_debug:
            import torch.distributed as dist

            dist.set_debug_level(getattr(dist.DebugLevel, self.distributed_debug))

    def as_dict(self) -> dict:
        return asdict(self)


def apply_settings(settings: TorchSettings, intra_op: int, inter_op: int) -> Tuple[int, int, str]:
    """Numerics and thread counts; returns the counts read back, and a note if inter-op could not be set."""
    apply_torch_settings(settings)
    return (apply_intra_op(intra_op), *apply_inter_op(inter_op))


def apply_torch_settings(settings: TorchSettings) -> None:
    torch.set_float32_matmul_precision(settings.matmul_precision.value)
    torch.backends.cudnn.allow_tf32 = settings.cudnn_allow_tf32
    torch.backends.cudnn.benchmark = settings.cudnn_benchmark and not settings.deterministic
    torch.backends.cudnn.deterministic = settings.deterministic
    _set_deterministic(settings.deterministic, warn_only=False)


def _set_deterministic(enabled: bool, warn_only: bool) -> None:
    # use_deterministic_algorithms imports torch._inductor (about a second): call it
    # only when the setting really changes.
    if (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()) != (
        enabled, warn_only and enabled
    ):
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)


def apply_intra_op(threads: int) -> int:
    """Set and read back; the read-back is what the report shows."""
    torch.set_num_threads(threads)
    return torch.get_num_threads()


def intra_op_now() -> int:
    return torch.get_num_threads()


def apply_inter_op(threads: int) -> Tuple[int, str]:
    """Set inter-op threads if torch still allows it. Returns (read-back, note).

    torch allows this once per process, before any inter-op work; a later call
    raises RuntimeError. That is expected in a one-process sweep, so it becomes
    a note, not a crash.
    """
    current = torch.get_num_interop_threads()
    if current == threads:
        return current, ""
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        return current, (
            f"inter_op stays {current}: torch sets inter-op threads once per process "
            f"and they were already fixed, so {threads} could not be applied"
        )
    return torch.get_num_interop_threads(), ""


def _debug_level() -> Optional[str]:
    import torch.distributed as dist

    return dist.get_debug_level().name if dist.is_available() else None


def _apply_distributed_debug(key: str) -> None:
    """TORCH_DISTRIBUTED_DEBUG is read when torch.distributed is imported, which ``import torch``
    does: re-read it, or this process runs at the old level while ranks it starts run at the new."""
    import torch.distributed as dist

    name = "TORCH_DISTRIBUTED_DEBUG"
    if name not in os.environ or not dist.is_available():
        return  # unset: leave a level the program chose through torch's API alone
    try:
        dist.set_debug_level_from_env()
    except ValueError:
        raise ConfigError(f"{name}={os.environ[name]!r} is not a debug level torch accepts. "
                          f"Use OFF, INFO or DETAIL ({key}.vars.{name}=INFO, or in the shell), "
                          "or null to leave it unset.") from None


# Reader.apply_now -> the call (given the config key, for messages) that gives the
# reader's variable, as it now stands in os.environ, its effect in this process.
APPLY_NOW: Dict[str, Callable[[str], None]] = {
    "distributed_debug": _apply_distributed_debug,
}


def apply_late_values(key: str) -> None:
    """Give each variable torch read before the bootstrap ran (``Reader.apply_now``) its effect
    now, whoever set it: this process must run with the value its children will."""
    from bootstrap.readers import READERS

    for name in sorted({r.apply_now for r in READERS if r.apply_now}):
        APPLY_NOW[name](key)
