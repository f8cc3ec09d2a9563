"""The world's start, phase by phase, as rank 0 learns it at the first step: each phase's min, median and max
across the ranks that had it, with its slowest rank and that rank's node; lanes of ranks for the picture; and the
phase the log line names. Pure.

Memory is one 4-byte figure a rank and phase (a rank's record is dropped once added), so 131,072 ranks of 16
phases take 8 MB, and a lane's figures are read from the same arrays.
"""

from __future__ import annotations

import math
import statistics
from array import array
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from bootstrap.doors import records
from bootstrap.doors.lean import lean_dataclass

MAX_LANES = 40  # the picture's bars at any world size: each a span of ranks
MAX_UNREADABLE = 16  # ranks whose record could not be read, named; the rest counted


@lean_dataclass(frozen=True)
class Lane:
    """One bar of the picture: a span of ranks, and each phase's median seconds over them (None: none had it)."""

    label: str  # "rank 3", "ranks 0-3276"
    seconds: Tuple[Optional[float], ...]  # in the world's order of phases


class World:
    """Every rank's phases, added one rank at a time (:meth:`add`), then summarised (:meth:`summary`)."""

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self.names: List[str] = []  # in order of first appearance, rank by rank
        self._seconds: Dict[str, array] = {}  # name -> one figure a rank, NaN where the rank had no such phase
        self._slowest: Dict[str, Tuple[float, int, str]] = {}  # name -> (seconds, rank, host)
        self.ranks = 0
        self.unreadable: List[str] = []  # "rank 3: why", the first MAX_UNREADABLE
        self.unreadable_count = 0

    def add(self, rank: int, host: str, phases: Sequence[Tuple[str, float]]) -> None:
        """Rank ``rank``'s phases (a name may come more than once: its durations are summed)."""
        summed: Dict[str, float] = {}
        for name, seconds in phases:
            summed[name] = summed.get(name, 0.0) + seconds
        for name, seconds in summed.items():
            if name not in self._seconds:
                self.names.append(name)
                self._seconds[name] = array("f", [math.nan]) * self.world_size
            self._seconds[name][rank] = seconds
            if seconds > self._slowest.get(name, (-1.0, 0, ""))[0]:
                self._slowest[name] = (seconds, rank, host)
        self.ranks += 1

    def refuse(self, rank: int, why: str) -> None:
        """Rank ``rank`` sent a record this version cannot read: left out, and named."""
        self.unreadable_count += 1
        if len(self.unreadable) < MAX_UNREADABLE:
            self.unreadable.append(f"rank {rank}: {why}")

    def _values(self, name: str, start: int = 0, stop: Optional[int] = None) -> List[float]:
        return [value for value in self._seconds[name][start:stop] if not math.isnan(value)]

    def summary(self) -> List[records.WorldPhase]:
        """Each phase's figures across the ranks that had it, in order of first appearance."""
        out = []
        for name in self.names:
            values = self._values(name)
            seconds, rank, host = self._slowest[name]
            out.append(records.WorldPhase(name=name, min_s=round(min(values), 6),
                                          median_s=round(statistics.median(values), 6), max_s=round(seconds, 6),
                                          slowest_rank=rank, slowest_host=host, ranks=len(values)))
        return out

    def lanes(self, most: int = MAX_LANES) -> List[Lane]:
        """At most ``most`` bars: spans of consecutive ranks of equal size (a node's ranks are consecutive
        under every launcher the bootstrap knows), each phase's median over the span."""
        size = max(1, -(-self.world_size // most))
        out = []
        for start in range(0, self.world_size, size):
            stop = min(self.world_size, start + size)
            medians = []
            for name in self.names:
                values = self._values(name, start, stop)
                medians.append(round(statistics.median(values), 6) if values else None)
            out.append(Lane(label=f"rank {start}" if stop - start == 1 else f"ranks {start}-{stop - 1}",
                            seconds=tuple(medians)))
        return out


def headline(summary: Sequence[records.WorldPhase], waits: Callable[[str], bool]) -> Optional[records.WorldPhase]:
    """The phase the first step's log line names: the one that cost the most. A phase that ends where the ranks
    meet (``waits``: the agreement, init_process_group, a DDP step) is as long on a rank that arrived early as
    the others were late, so its own cost is what even the last rank to arrive spent in it, its min; any other
    phase's is its max. So a rank slow in its own work is named in the phase that made it slow, not in the
    phase where the others waited for it."""
    def cost(phase: records.WorldPhase) -> float:
        return phase.min_s if waits(phase.name) else phase.max_s
    return max(summary, key=cost, default=None)
