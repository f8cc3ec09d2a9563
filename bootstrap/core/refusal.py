"""A job's start refused before it has a plan, recorded all the same: every refused input leaves a record.

A preset that does not validate (a thread count of ``abc``), launcher variables that do not add up
(``MASTER_PORT=abc`` in a world, ``SLURM_RESTART_COUNT=x`` under SLURM), a plan that cannot hold (a mesh that
does not divide the world): each stops the job before there is a plan to report, and each still leaves
``bootstrap.json`` (``bootstrap.rank<N>.json`` where the launcher's rank can be read) with ``job.status:
check_failed``, the message in ``job.error``, the preset's name, the overrides and the machine. A refusal
after the plan is recorded by the session itself, with the plan (:mod:`bootstrap.core.session`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

from bootstrap.core import report, versions
from bootstrap.distributed import launcher
from bootstrap.doors import outbound, records
from bootstrap.doors.errors import BootstrapError
from bootstrap.doors.masking import masked_override
from bootstrap.doors.statuses import JobStatus


def record(output_dir: Optional[os.PathLike], job: report.JobInfo, error: BaseException,
           environ: Mapping[str, str] = os.environ) -> Optional[records.Report]:
    """Write the record of a start refused with ``error`` into ``output_dir`` (None: nowhere), and return it."""
    if output_dir is None:
        return None
    launch = launcher.peek(environ)  # variables that do not add up: one process, whose report is bootstrap.json
    refused = records.Report(preset=job.preset, preset_digest=job.digest,
                             overrides=[masked_override(o) for o in job.overrides],
                             found=report.found_record(versions.detect()),
                             distributed=records.Distributed(**launch.as_dict()),
                             job=records.Job(num=job.num, status=JobStatus.CHECK_FAILED,
                                             error=report.error_text(str(error))))
    try:
        outbound.write_json(Path(output_dir) / records.report_name(launch.rank, launch.world_size), refused.to_json())
    except OSError:  # a directory that cannot be written: the refusal itself is what the user must see
        return None
    return refused


@contextlib.contextmanager
def recorded(session: Any) -> Iterator[None]:
    """The block's refusal (a BootstrapError) is recorded where the session has no record yet, then raised."""
    try:
        yield
    except BootstrapError as error:
        if session.report is None:
            session.report = record(session.output_dir, session._job(), error.under(session.key))
        raise
