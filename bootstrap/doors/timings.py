"""The report's ``timings`` section: what the bootstrap cost, and the start's phases up to the first step, on
this rank and across the world (docs/report.md#the-start-phase-by-phase). Pure: sections of
:class:`bootstrap.doors.records.Report`."""

from dataclasses import field
from typing import List, Optional

from bootstrap.doors.typed import Count
from bootstrap.doors.typed import Section as _Section
from bootstrap.doors.typed import section as _section
from bootstrap.doors.typed import when_set as _when_set


@_section
class Phase(_Section):
    """One entry of ``timings.phases``: a phase of this rank's start, in order, on one clock from the process's
    start (``bootstrap.doors.timeline``)."""

    name: str
    start_s: float  # seconds from the process's start; negative before it (the launcher's own phase)
    seconds: float
    store_ops: Count = _when_set(0)  # the bootstrap's own store operations in it (bootstrap dryrun predicts them)


@_section
class WorldPhase(_Section):
    """One entry of ``timings.world_phases`` (rank 0): a phase across the ranks that had it."""

    name: str
    min_s: float
    median_s: float
    max_s: float
    slowest_rank: Count  # the rank of max_s
    slowest_host: str  # its node, as the scheduler names it
    ranks: Count = 0  # the ranks that had the phase


@_section
class Timings(_Section):
    """``timings``: what the bootstrap cost, apart from the checks it ran, and the start's phases."""

    bootstrap_s: Optional[float] = None  # the bootstrap's own time at job start, the preflight's apart
    preflight_s: Optional[float] = _when_set()  # the preflight check's (preflight.seconds)
    provenance_s: Optional[float] = _when_set()  # collecting the provenance, in a thread after the start
    started_ns: Optional[int] = None  # time.time_ns() when the job's bootstrap started; null in a preview
    phases: List[Phase] = _when_set(factory=list)  # this rank's, from its process's start, as far as it got
    first_step_s: Optional[float] = _when_set()  # the end of the first step, from the process's start
    world_phases: List[WorldPhase] = _when_set(factory=list)  # rank 0: every rank's, gathered at the first step
    world_phases_note: Optional[str] = _when_set()  # rank 0: why some ranks' phases are not in world_phases
