"""The report's ``watch`` section (docs/watch.md): what the watch saw while the job trained, as typed values, in the
report's style (:mod:`bootstrap.doors.records`). Pure.

Bounded at any world size and any length of job: a window lists at most :data:`MAX_RANKS` ranks (the lowest scores
and those named), and the section keeps the first window, the worst, each one that made a finding and the last
:data:`LAST_WINDOWS`.
"""

from dataclasses import field
from typing import List, Optional

from bootstrap.doors.statuses import WatchStatus
from bootstrap.doors.typed import Count, Section, section

MAX_RANKS = 64  # ranks a window lists
LAST_WINDOWS = 8  # the last windows kept, besides the first, the worst and those that made a finding
MAX_FINDINGS = 16


@section
class WatchRank(Section):
    """One rank in one window: its two scores and the figures they come from."""

    rank: Count
    host: str = ""  # its node, as the scheduler names it
    relative: Optional[float] = None  # the fastest rank's own time a step over this rank's: 1 is the fastest
    individual: Optional[float] = None  # this rank's best window's own time a step over this window's
    own_s: Optional[float] = None  # the median of its steps' own time: a step's time less its waits in collectives
    step_s: Optional[float] = None  # the median of its steps' wall time (alike on every rank under DDP)
    steps: Count = 0  # steps it marked in the window


@section
class WatchWindow(Section):
    """One window as rank 0 judged it."""

    window: Count  # its number, from 0
    end_s: Optional[float] = None  # when rank 0 judged it, in seconds since the watch started
    ranks: List[WatchRank] = field(default_factory=list)  # the lowest relative scores first, at most MAX_RANKS
    more_ranks: Count = 0  # ranks judged and not listed


@section
class WatchFinding(Section):
    """One entry of ``watch.findings``: what stayed slow, on which ranks and nodes."""

    kind: str  # slow | slowed | slow_link | absent | invalid
    message: str  # one line: the ranks, their nodes, both scores, the figure against the others', since when, why
    ranks: List[Count] = field(default_factory=list)
    hosts: List[str] = field(default_factory=list)  # the ranks' nodes, in the same order
    window: Optional[Count] = None  # the window that made it a finding
    since_window: Optional[Count] = None  # the first window of the run under the threshold


@section
class WatchLink(Section):
    """One link between two nodes in ``watch.links``: the first ranks that timed it, their nodes, its speed one way."""

    ranks: List[Count] = field(default_factory=list)
    hosts: List[str] = field(default_factory=list)
    gbps: Optional[float] = None  # null: not timed in that window


@section
class Watch(Section):
    """``watch``: while the job trained, was any rank, node or link slow (docs/watch.md)."""

    status: WatchStatus = WatchStatus.SKIPPED
    mode: Optional[str] = None  # env.watch.mode
    window_s: Optional[float] = None
    threshold: Optional[float] = None
    consecutive: Optional[Count] = None
    note: Optional[str] = None  # why nothing was judged, or what was not measured
    measured: Optional[str] = None  # flight_recorder: a step less its waits in collectives; steps: whole steps
    steps: Count = 0  # steps this rank marked
    windows: Count = 0  # windows this rank measured
    judged: Count = 0  # windows rank 0 judged (rank 0's report)
    findings: List[WatchFinding] = field(default_factory=list)
    kept: List[WatchWindow] = field(default_factory=list)  # rank 0: the first, the worst, each finding's, the last
    links: List[WatchLink] = field(default_factory=list)  # rank 0: the last window's links between nodes
    bad_nodes: List[str] = field(default_factory=list)  # the nodes the findings name, as bad_nodes.jsonl has them
    on_bad: Optional[str] = None  # what was done about them: recorded, stopped
    exchange_bytes: Optional[Count] = None  # what one window's exchange moved through the store, at this rank
    seconds: Optional[float] = None  # the watch's own time on this rank (its thread's work)
