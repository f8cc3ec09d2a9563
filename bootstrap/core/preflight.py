"""The preflight check as a step of a job's start: its request from the preset and the plan, and whether its
record stops the job. The check itself is :mod:`bootstrap.preflight.check`, loaded only when a check runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from bootstrap.core.plan import Plan
from bootstrap.core.schema import EnvConfig
from bootstrap.doors import records
from bootstrap.preflight.request import PICTURE, PREFIX, Floors, Request, message, planned, skipped_because, stops

if TYPE_CHECKING:  # (it imports torch's helpers: imported where used)
    from bootstrap.distributed.group import ProcessGroup

_checks = [0]  # checks made by this process: each job of a one-process sweep checks again, in the same order


def expected(preset: EnvConfig) -> records.Preflight:
    """What the check expects, before it runs (a preview: ``bootstrap doctor``)."""
    wanted = preset.preflight
    return records.Preflight(mode=wanted.mode.value, budget_s=_budget(preset), max_skew=wanted.max_skew,
                             min_tflops=wanted.min_tflops, min_busbw_gbps=wanted.min_busbw_gbps,
                             min_node_busbw_gbps=wanted.min_node_busbw_gbps,
                             network_expected=wanted.network.value if wanted.network else None,
                             note="not run: a preview (bootstrap doctor --preflight measures)")


def _budget(preset: EnvConfig) -> float:
    return min(preset.preflight.seconds, preset.distributed.timeout_s)


def request(preset: EnvConfig, plan: Plan, device: str, group: Optional[ProcessGroup], key: str,
            always: bool = False) -> Request:
    from bootstrap.core.agreement import host, run_key
    from bootstrap.distributed.group import GroupState

    wanted, launch = preset.preflight, plan.launch
    backend = group.backend if group is not None and group.state is not GroupState.NONE else None
    _checks[0] += 1
    floors, network, note = Floors(wanted.min_tflops, wanted.min_busbw_gbps, wanted.min_node_busbw_gbps), \
        wanted.network.value if wanted.network else None, None
    if device.split(":")[0] != preset.device.value:  # on_mismatch=warn let a GPU preset run on the CPU
        floors, network = Floors(), None
        note = f"the floors are for {preset.device.value}, and this job runs on {device}: the ranks compared only"
    return Request(
        mode=wanted.mode.value, seconds=_budget(preset), max_skew=wanted.max_skew, floors=floors, note=note,
        sizes_mb=tuple(wanted.sizes_mb), network=network, device=device,
        backend=backend, rank=launch.rank, world_size=launch.world_size, node_rank=launch.node_rank, host=host(),
        nccl_log_dir=Path(plan.nccl_log_dir) if plan.nccl_log_dir else None,
        store_key=run_key(os.environ, launch, _checks[0], PREFIX), key=key, always=always,
        # rank 0 draws the world's figures, into the job's directory (the doctor measures and writes nothing)
        picture=Path(plan.output_dir) / PICTURE if plan.output_dir and launch.rank == 0 and not always else None)


def run(preset: EnvConfig, plan: Plan, device: str, group: Optional[ProcessGroup], key: str, always: bool = False
        ) -> records.Preflight:
    """This rank's check (see :mod:`bootstrap.preflight.check`); a skipped one loads none of it."""
    wanted = request(preset, plan, device, group, key, always)
    if skipped_because(wanted):
        return planned(wanted)
    from bootstrap.preflight import check

    return check.run(wanted)


def refusal(record: records.Preflight, key: str) -> Optional[str]:
    """The message the job stops with, or None when the record lets it train."""
    return message(record, key) if stops(record) else None
