"""The variables the job's process set for itself before the job started, told from the shell's.

``import lightning`` sets ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` in its own process. A job that found it
set would call it the shell's, and ``bootstrap diff RUN --here``, whose preview imports no app, would
count it as a difference of this machine. On Linux ``/proc/self/environ`` holds the environment the
process was started with (read by :func:`bootstrap.doors.inbound.read_start_environ`), which tells the
two apart; where it cannot be read (not Linux), nothing is told apart, as before.

A rank that Lightning's ``ddp`` strategy re-launched starts with rank 0's environment as it was then,
what rank 0's process set for itself included: in that rank's start environment it looks like the
shell's. Rank 0's report, in the run directory they share and written before Lightning starts any
rank, says which variables rank 0's process set: one that still holds the value rank 0 recorded is
recorded here as set by rank 0's process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Collection, Dict, Mapping, Optional

from bootstrap.doors import inbound, records
from bootstrap.doors.masking import MASK
from bootstrap.variables import environ

THIS_PROCESS = "set by this process before the job started (an import, or the app's own code), not by the shell"
RANK0 = "set by rank 0's process before it started this rank (an import, or the app's own code), not by the shell"


def set_by_process(environ_now: Mapping[str, str], env_set: Collection[str], launch: Any,
                   output_dir: Optional[os.PathLike], start: Path = inbound.START_ENVIRON) -> Dict[str, str]:
    """name -> who set it (:data:`THIS_PROCESS`, :data:`RANK0`), for each variable the process set for itself.
    ``start``: where to read the environment it was started with (``inbound.read_start_environ``)."""
    found = dict.fromkeys(environ.set_by_process(environ_now, inbound.read_start_environ(start), env_set), THIS_PROCESS)
    if launch.row.started_by_rank0 and output_dir is not None:
        for name in rank0s(Path(output_dir) / records.REPORT_NAME, environ_now):
            found.setdefault(name, RANK0)
    return found


def rank0s(report_path: Path, environ_now: Mapping[str, str]) -> Collection[str]:
    """The variables rank 0's report records as its process's own that still hold the value it recorded here.
    A value masked there (a secret's) cannot be matched: it stays the shell's (or the launcher's)."""
    try:
        reference = records.read_report(report_path)
    except records.Unreadable:  # no rank 0 report (rank 0 ran without the bootstrap): nothing to tell
        return ()
    return [name for name, var in reference.vars.items()
            if var.source == environ.PROCESS and environ_now.get(name) == var.value and MASK not in var.value]
