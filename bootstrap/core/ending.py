"""How a job's session ends beyond the undo: what the task changed (the group in use, its thread count, a
re-seed), and after a failure under a process group the flight recorder's dumps and which rank failed first."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any, Optional

from bootstrap.core import joined, preflight, report, runtime
from bootstrap.core.report import JobEnd, JobStatus
from bootstrap.distributed import seeding
from bootstrap.distributed.group import GroupState
from bootstrap.doors import records
from bootstrap.variables import readers


def failure(session: Any, job_end: JobEnd) -> None:
    """On a failure under a group: the dumps, and which rank failed first (the error becomes the failing
    rank's, when a peer failed first)."""
    status, error = job_end.status, job_end.error
    first = None
    if status is JobStatus.FAILED and error is not None and session._group is not None \
            and session._group.state is GroupState.CREATED and session.world_size > 1:
        from bootstrap.distributed import group

        first = group.claim_first_failure(session.rank, report.error_line(error))  # at once: peers read it
    job_end.hang = forensics(session, status, error)
    if first is not None:
        job_end.error = group.attribute_failure(session.rank, report.error_line(error), first,
                                                job_end.hang.finding if job_end.hang else None)


def forensics(session: Any, status: JobStatus, error: Any) -> Optional[records.Hang]:
    """A job that did not complete under a process group: every rank's flight-recorder dump, and
    what they show (the report's ``distributed.hang``)."""
    recorder = session._changes.recorder if session._changes is not None else None
    if status in (JobStatus.COMPLETED, JobStatus.CHECK_FAILED) or recorder is None or session.report is None:
        return None
    reason = f"job {status.value}" + (f": {type(error).__name__}" if isinstance(error, BaseException) else "")
    return recorder.collect(reason)


def end_stuck(session: Any, signum: int) -> None:
    """In the watcher thread: SIGTERM came while the main thread is blocked in a collective, and its
    handler never ran. Record the job as interrupted, with what the dumps show, and exit."""
    try:
        hang = forensics(session, JobStatus.INTERRUPTED, None)
        message = f"rank {session.rank} stopped by {signal.Signals(signum).name} while blocked in a collective" + \
            (f": {hang.finding}" if hang and hang.finding else "")
        from bootstrap.distributed import group

        group.write_elastic_error_file(message, int(time.time()))
        if session.report is not None:
            session._end(JobEnd(JobStatus.INTERRUPTED, error=message, hang=hang))
    finally:
        os._exit(128 + signum)


def task_effects(session: Any, job_end: JobEnd) -> None:
    """What the task changed: the group in use now (a framework's too), its own thread count, a re-seed."""
    if session.report is None:
        return
    from bootstrap.distributed import group

    readers.current_state()  # remembers a live group: some variables are read at the first one only
    made_here = session._group is not None and session._group.state is GroupState.CREATED
    seed_now = seeding.torch_seed()
    job_end.group_at_end = group.group_in_use(made_here)
    preflight.never_ran(session, job_end.group_at_end)  # a check asked for that a framework's group came too late for
    joined.at_end(session, job_end.group_at_end)  # rank 0 of a world its framework started from its own process
    job_end.intra_op_now = runtime.intra_op_now()
    job_end.task_seed = seed_now if session._torch_seed is not None and seed_now != session._torch_seed else None


def shown_path(path: Path) -> str:
    """A path as the job's last line names it: from the working directory where it lies below it
    (``outputs/<date>/<time>/bootstrap.json``), else whole."""
    try:
        return str(Path(path).absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
