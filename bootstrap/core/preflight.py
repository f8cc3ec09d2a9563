"""The preflight check as a step of a job's start: its request from the preset and the plan, and whether its
record stops the job. The check itself is :mod:`bootstrap.preflight.check`, loaded only when a check runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from bootstrap.core.plan import Plan
from bootstrap.core.schema import EnvConfig
from bootstrap.doors import records
from bootstrap.doors.errors import ConfigError
from bootstrap.preflight.request import (PICTURE, PREFIX, Floors, Request, capped, message, planned, skipped_because,
                                         stops)

if TYPE_CHECKING:  # (it imports torch's helpers: imported where used)
    from bootstrap.distributed.group import ProcessGroup
    from bootstrap.distributed.launcher import Launch

Session = Any  # bootstrap.core.session.Session, which calls now() and never_ran(): not imported, imports point one way

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
    from bootstrap.distributed.nodename import node as host
    from bootstrap.distributed.store_keys import run_key
    from bootstrap.distributed.group import GroupState

    wanted, launch = preset.preflight, plan.launch
    backend = group.backend if group is not None and group.state is not GroupState.NONE else None
    _checks[0] += 1
    floors, network, note = Floors(wanted.min_tflops, wanted.min_busbw_gbps, wanted.min_node_busbw_gbps), \
        wanted.network.value if wanted.network else None, None
    fabric = preset.fabric
    if fabric.min_busbw_gbps is not None and launch.world_size > max(1, launch.local_world_size):  # several nodes
        floors = Floors(wanted.min_tflops, max(wanted.min_busbw_gbps or 0.0, fabric.min_busbw_gbps),
                        wanted.min_node_busbw_gbps)  # the fabric's published floor, for a job across nodes
    if device.split(":")[0] != preset.device.value:  # on_mismatch=warn let a GPU preset run on the CPU
        floors, network = Floors(), None
        note = f"the floors are for {preset.device.value}, and this job runs on {device}: the ranks compared only"
    return Request(
        mode=wanted.mode.value, seconds=_budget(preset), max_skew=wanted.max_skew, floors=floors, note=note,
        sizes_mb=tuple(wanted.sizes_mb), network=network, device=device, fabric=fabric.name.value,
        fabric_gdr=fabric.gdr,
        backend=backend, rank=launch.rank, world_size=launch.world_size, node_rank=launch.node_rank, host=host(),
        ranks_here=1 if device.startswith("cuda") else launch.local_world_size,
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


def warnings(record: records.Preflight) -> List[str]:
    """What the job warns of, besides the findings: the sizes the check did not measure (budget, memory)."""
    return [f"preflight: {line}" for line in capped(record)]


def refusal(record: records.Preflight, key: str) -> Optional[str]:
    """The message the job stops with, or None when the record lets it train."""
    return message(record, key) if stops(record) else None



def _waits(record: Optional[records.Preflight], group: Optional[ProcessGroup]) -> bool:
    """Whether a check that was asked for (``mode=error|warn``) has compared no ranks for want of a process group at
    the job's start: one that a framework makes later (Lightning's DDP) is checked then (:func:`now`)."""
    from bootstrap.distributed.group import GroupState

    return record is not None and record.mode in ("error", "warn") and (record.world_size or 1) < 2 and (
        group is None or group.state is GroupState.NONE)


def now(session: Session) -> Optional[records.Preflight]:
    """``session.preflight_now()``: the check of a job whose framework made the process group after the job started
    (Lightning's DDP makes it in ``Trainer.fit``; :class:`bootstrap.integrations.lightning.BootstrapLogging` calls
    this at the trainer's setup). It runs once, where it was asked for and found no group at the start, on the
    default group, and every rank of that group must call it. Returns its record (None: nothing ran, or still no
    group of several ranks). The nodes its findings name take the same step as at the start
    (:func:`bootstrap.core.nodes.after_preflight`). A finding that stops the job ends it as at the start: recorded
    ``check_failed``, the process restored, and :class:`~bootstrap.doors.errors.PreflightError` (or, requeued,
    ``RequeuedError``) raised; under ``warn`` the findings are warnings, in the report as it is written again."""
    from bootstrap.core import nodes, report
    from bootstrap.core.report import JobEnd, JobStatus

    record, plan = session.report, session.plan
    if record is None or plan is None or not _waits(record.preflight, session._group):
        return None
    grouped = once_grouped(session.preset, plan, session.device, session.key)
    if grouped is None:
        return None
    checked, plan_now = grouped
    record.preflight, record.timings.preflight_s = checked, checked.seconds
    # the same step after the preflight as at the start: the bad nodes observed, recorded, excluded on evidence
    stopped = nodes.after_preflight(session.preset, plan_now, checked, refusal(checked, session.key), session.key,
                                    record.warnings)
    if stopped:
        session.close(JobStatus.CHECK_FAILED, error=str(stopped.args[0]))
        raise stopped
    for finding in checked.findings:
        report.warn(record.warnings, f"preflight: {finding.message}")
    session._end(JobEnd(JobStatus.RUNNING))  # written again, with the check
    return checked


def once_grouped(preset: EnvConfig, plan: Plan, device: str, key: str) -> Optional[Tuple[records.Preflight, Plan]]:
    """The check on the default process group as it is now, and the plan it ran with (the group's rank and world);
    None where there is none of more than one rank."""
    import dataclasses

    import torch.distributed as dist

    from bootstrap.distributed.group import GroupState, ProcessGroup

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    launch = grouped_launch(preset, plan)
    group = ProcessGroup(GroupState.EXISTING, backend=str(dist.get_backend()))
    plan_now = dataclasses.replace(plan, launch=launch)
    checked = run(preset, plan_now, device, group, key)
    checked.note = "; ".join(filter(None, [checked.note, "checked once the framework had made its process group"]))
    return checked, plan_now


def grouped_launch(preset: EnvConfig, plan: Plan) -> Launch:
    """This rank's launch as the default process group has it now, for a check or a watch that starts once a
    framework made the group after the job started: the framework's variables as they are now (Lightning's rank 0
    has them once it has started its ranks), or, where they do not give the group's rank and size, one node of the
    group's ranks (every rank assumes the same)."""
    import dataclasses

    import torch.distributed as dist

    from bootstrap.distributed import launcher

    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        launch = launcher.detect_running(os.environ, preset.distributed.master_addr, preset.distributed.master_port,
                                         group_exists=True)
    except ConfigError:  # variables that contradict each other: the group's own numbers below
        launch = plan.launch
    if (launch.rank, launch.world_size) != (rank, world):
        launch = dataclasses.replace(plan.launch, rank=rank, world_size=world, local_rank=rank, local_world_size=world,
                                     node_rank=0)
    return launch


def never_ran(session: Session, group_at_end: Optional[dict]) -> None:
    """At the job's end: a warning, on every rank, for a check that was asked for and never compared the ranks,
    because a framework made a group of several after the job started and nothing ran the check once it existed."""
    from bootstrap.core import report

    record = session.report
    checked = record.preflight if record is not None else None
    if record is None or checked is None or group_at_end is None or group_at_end.get("world_size", 1) < 2 or \
            not _waits(checked, session._group):
        return
    report.warn(record.warnings, (
        f"preflight: {session.key}.preflight.mode={checked.mode} was asked for, but the ranks were never "
        f"compared: a framework made the process group of {group_at_end['world_size']} ranks after the job started, "
        "and nothing ran the check once it existed (Lightning: add bootstrap.integrations.lightning.BootstrapLogging "
        "to the trainer's callbacks; any other framework: call bootstrap.current().preflight_now() on every rank "
        "once its group exists)"))
