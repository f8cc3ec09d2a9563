"""Rank 0 of a framework that starts the other ranks from its own process (Lightning's ``ddp``): one process at the
job's start, rank 0 of a world once the framework has made its group.

At the job's start nothing says that rank 0's process will start others: its report said ``single``, world 1,
and ``threads.intra_op=auto`` gave it every CPU, while each rank it started took its share (two ranks on two CPUs
ran three intra-op threads). Once the framework's group exists (:func:`now`, from
:class:`bootstrap.integrations.lightning.BootstrapLogging` at the trainer's setup) rank 0's report says the world it
is rank 0 of, as the other ranks' reports say from their start, and under ``auto`` its threads become the node's
share. Where nothing called :func:`now`, the job's end (:func:`at_end`) records the world, and warns when the
node's ranks ran more threads than it has CPUs.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional

from bootstrap.core import plan as plans
from bootstrap.core import report, versions
from bootstrap.core.schema import AUTO
from bootstrap.distributed import launcher
from bootstrap.doors.errors import ConfigError

if TYPE_CHECKING:
    from bootstrap.distributed.launcher import Launch


def _world(session: Any, world_size: int) -> Optional[Launch]:
    """The launch of rank 0 of the framework's world of ``world_size``, where the session started as one process
    and a framework that starts its ranks from rank 0's process made that world since; else None."""
    record, plan = session.report, session.plan
    if record is None or plan is None or plan.launch.world_size != 1 or record.distributed.world_size != 1 \
            or world_size < 2:
        return None
    wanted = session.preset.distributed
    # the variables the framework set in rank 0's own environment before it started the others; at the job's end
    # Lightning's teardown has taken WORLD_SIZE away again, and the group says it
    environ = {"WORLD_SIZE": str(world_size), **os.environ}
    try:
        launch = launcher.detect_running(environ, wanted.master_addr, wanted.master_port, group_exists=True)
    except ConfigError:
        return None
    if not launch.row.started_by_rank0 or launch.rank != 0 or launch.world_size != world_size:
        return None
    return launch


def _share(session: Any, launch: Launch) -> Optional[int]:
    """Rank 0's intra-op threads as ``auto`` gives a rank of this world (CPUs / the node's ranks); None where the
    count is the user's (an explicit count, or their OMP_NUM_THREADS)."""
    plan = session.plan
    assert plan is not None
    users = ("override", "shell", "env_set", "process")
    if session.preset.threads.intra_op != AUTO or any(
            d.name == "OMP_NUM_THREADS" and d.source in users for d in plan.vars):
        return None
    cpus = versions.usable_cpus()
    return max(1, cpus // plans.ranks_sharing_cpus(launch, cpus, versions.launcher_cpus() or cpus))


def _record(session: Any, launch: Launch) -> None:
    assert session.report is not None
    distributed = session.report.distributed
    for name, value in launch.as_dict().items():
        setattr(distributed, name, value)


def now(session: Any) -> bool:
    """At the trainer's setup, on every rank: rank 0, which started as one process, becomes rank 0 of the framework's
    world in its report, and takes its share of the node's CPUs (under ``auto``); written at once. False where there
    is nothing to do (any other rank, no group yet, or done already)."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    launch = _world(session, world)
    if launch is None:
        return False
    _record(session, launch)
    share, record = _share(session, launch), session.report
    assert record is not None
    if share is not None and share < torch.get_num_threads():
        torch.set_num_threads(share)  # put back at the job's end, as every setting the session made
        record.threads.intra_op = record.threads.requested.intra_op = torch.get_num_threads()
    session._end(report.JobEnd(report.JobStatus.RUNNING))  # written again, as rank 0 of the world
    return True


def at_end(session: Any, group_at_end: Optional[dict]) -> None:
    """At the job's end, where :func:`now` was not called: the report says the world rank 0 ended in, and warns when
    rank 0's threads under ``auto`` were more than its share of the node."""
    record = session.report
    launch = _world(session, (group_at_end or {}).get("world_size", 1)) if group_at_end else None
    if launch is None or record is None:
        return
    _record(session, launch)
    share = _share(session, launch)
    if share is not None and share < (record.threads.intra_op or 0):
        report.warn(record.warnings, (
            f"threads: rank 0 ran {record.threads.intra_op} intra-op threads, all this node's, and its framework "
            f"started {launch.local_world_size - 1} more rank{'s' if launch.local_world_size > 2 else ''} on it, each "
            f"with its share ({share}): more threads than CPUs. Add bootstrap.integrations.lightning.BootstrapLogging "
            "to the trainer's callbacks (rank 0 then takes its share once the world exists), or set "
            f"{session.key}.threads.intra_op={share}"))
