"""Torch process settings: the env.torch rows (bootstrap.doors.torch_settings), threads and the distributed
debug level. Snapshot, apply, read back, restore. Touches the process."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import torch

from bootstrap.core import verdict
from bootstrap.doors.errors import ConfigError
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.torch_settings import SETTINGS


@lean_dataclass(frozen=True)
class TorchState:
    """Every torch setting the bootstrap may change. ``capture()`` reads, ``restore()`` writes back."""

    settings: Mapping[str, Any]  # each env.torch setting's state, by name (bootstrap.doors.torch_settings)
    # These two have their own apply paths (env.threads; env.vars through APPLY_NOW), not env.torch's.
    num_threads: int
    distributed_debug: Optional[str]  # torch.distributed.get_debug_level(); None without torch.distributed

    @classmethod
    def capture(cls) -> "TorchState":
        return cls({s.name: s.read(torch) for s in SETTINGS}, torch.get_num_threads(), debug_level())

    def restore(self) -> None:
        if torch.get_num_threads() != self.num_threads:
            torch.set_num_threads(self.num_threads)
        for setting in SETTINGS:
            (setting.restore or setting.set)(torch, self.settings[setting.name])
        if self.distributed_debug is not None and debug_level() != self.distributed_debug:
            import torch.distributed as dist

            dist.set_debug_level(getattr(dist.DebugLevel, self.distributed_debug))


def apply_settings(values: Mapping[str, Any], intra_op: int, inter_op: int) -> Tuple[int, int, str]:
    """``Plan.torch`` and the thread counts; returns the counts read back, and a note if inter-op could not be set."""
    for setting in SETTINGS:
        setting.set(torch, values[setting.name])
    torch.set_num_threads(intra_op)
    return (torch.get_num_threads(), *apply_inter_op(inter_op))  # read back: what the report shows


def intra_op_now() -> int:
    return torch.get_num_threads()


def apply_inter_op(threads: int) -> Tuple[int, str]:
    """Set inter-op threads if torch still allows it. Returns (read-back, note).

    torch allows this once per process, before any inter-op work; a later call raises RuntimeError.
    That is expected in a one-process sweep, so it becomes a note, not a crash.
    """
    current = torch.get_num_interop_threads()
    if current == threads:
        return current, ""
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        return current, (f"inter_op stays {current}: torch sets inter-op threads once per process "
                         f"and they were already fixed, so {threads} could not be applied")
    return torch.get_num_interop_threads(), ""


def debug_level() -> Optional[str]:
    import torch.distributed as dist

    return dist.get_debug_level().name if dist.is_available() else None


def _apply_distributed_debug() -> None:
    """TORCH_DISTRIBUTED_DEBUG is read when torch.distributed is imported, which ``import torch``
    does: re-read it, or this process runs at the old level while ranks it starts run at the new."""
    import torch.distributed as dist

    name = "TORCH_DISTRIBUTED_DEBUG"
    if name not in os.environ or not dist.is_available():
        return  # unset: leave a level the program chose through torch's API alone
    try:
        dist.set_debug_level_from_env()
    except ValueError:
        raise ConfigError(verdict.debug_level_problem(name, os.environ[name])) from None  # the doctor's words


# Reader.apply_now -> the call that gives the reader's variable, as it now stands in os.environ, its effect here.
APPLY_NOW: Dict[str, Callable[[], None]] = {"distributed_debug": _apply_distributed_debug}


def apply_late_values() -> None:
    """Give each variable torch read before the bootstrap ran (``Reader.apply_now``) its effect
    now, whoever set it: this process must run with the value its children will."""
    from bootstrap.variables.readers import READERS

    for name in sorted({r.apply_now for r in READERS if r.apply_now}):
        APPLY_NOW[name]()
