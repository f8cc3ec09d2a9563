"""A rank's own work in each step: the step's wall time less the time it spent waiting in collectives. Pure.

Under DDP every rank's step takes the same wall time: the gradient all_reduce makes the fast ranks wait inside it
for the slowest (docs/watch.md, "the trap"). What differs is how long each waited. The flight recorder
(:mod:`bootstrap.watch.recorder`) gives each collective the time this rank issued it, its arrival, and where the
backend records it, its end:

- **an end known** (NCCL: the watchdog saw its end event; with ``TORCH_NCCL_ENABLE_TIMING=1``, its kernel's
  duration before that end): the rank waited from its arrival (or the kernel's start) to the end;
- **no end** (gloo, torch 2.13: its entries stay ``scheduled``, measured in docs/watch.md): the rank waited from its
  arrival at the step's last *large* collective (DDP's last gradient bucket: at least :data:`LARGE_SHARE` of the
  step's largest) to the step's end. Its own work is then the step up to that arrival: its forward and backward,
  its data loading, what the slowest rank has most of; what follows the gradients' sync (the optimizer, a
  framework's small collectives such as Lightning's stop decision each batch under ``max_time``) counts as
  waiting, on every rank alike.

The union of a step's waits is its waiting; the rest is the rank's own work. Collectives that overlap the backward
pass (DDP's earlier buckets) count from their start when their end is known: a rank's own time is then its work
outside any collective in flight, which a slow rank still has more of, by its slowness.
"""

from __future__ import annotations

import statistics
from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple

Interval = Tuple[int, int]  # [start, end) in nanoseconds, on the clock the marks are on


LARGE_SHARE = 1 / 8  # of a step's largest collective: a gradient bucket, not a metric's or a decision's few bytes


class Collective(NamedTuple):
    arrived: int  # when this rank issued it (ns)
    ended: Optional[int] = None  # when it completed, where the backend records it
    began: Optional[int] = None  # when its kernel started, where known (arrived otherwise)
    size: int = 1  # its elements (the recorder's input sizes)


class Step(NamedTuple):
    wall_s: float
    own_s: float


def merged(intervals: Iterable[Interval]) -> List[Interval]:
    """The union of ``intervals``, as sorted disjoint intervals."""
    out: List[Interval] = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def steps(marks: Sequence[int], collectives: Sequence[Collective], covered_from: Optional[int] = None) -> List[Step]:
    """Each step between two consecutive ``marks`` (the ends of steps, sorted), with its own time: its wall time less
    its waits (see the module's docstring). ``covered_from``: the earliest moment the collectives are known from
    (the recorder keeps its last N): a step that began before it is left out, its waits unknown."""
    ended = merged((c.began or c.arrived, c.ended) for c in collectives if c.ended is not None)
    open_ = sorted((c.arrived, c.size) for c in collectives if c.ended is None)
    out: List[Step] = []
    first, next_open = 0, 0
    for begin, end in zip(marks, marks[1:], strict=False):
        if end <= begin or (covered_from is not None and begin < covered_from):
            continue
        while first < len(ended) and ended[first][1] <= begin:
            first += 1
        waits, index = [], first
        while index < len(ended) and ended[index][0] < end:
            waits.append((max(begin, ended[index][0]), min(end, ended[index][1])))
            index += 1
        in_step = []
        while next_open < len(open_) and open_[next_open][0] < end:
            if open_[next_open][0] >= begin:
                in_step.append(open_[next_open])
            next_open += 1
        if in_step:  # no end recorded: waited from its arrival at its last large collective
            largest = max(size for _, size in in_step)
            waits.append((max(arrived for arrived, size in in_step if size >= largest * LARGE_SHARE), end))
        waited = sum(stop - start for start, stop in merged(waits))
        out.append(Step((end - begin) / 1e9, (end - begin - waited) / 1e9))
    return out


def medians(measured: Sequence[Step]) -> Tuple[Optional[float], Optional[float]]:
    """The median wall time and the median own time of ``measured`` (None, None: no step)."""
    if not measured:
        return None, None
    return statistics.median(s.wall_s for s in measured), statistics.median(s.own_s for s in measured)
