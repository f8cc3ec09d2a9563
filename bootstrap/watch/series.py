"""The scores over time that the watch's picture draws, bounded at any world size and any length of job. Pure.

At most :data:`MAX_LANES` lanes: one a rank up to that many ranks, else contiguous spans of ranks, each showing its
lowest score (a slow rank pulls its lane down). At most :data:`MAX_POINTS` windows: past that, two neighbouring
points become one (their lower scores), so a week-long job keeps the shape of its whole run.
"""

from __future__ import annotations

from dataclasses import field
from typing import List, Optional, Sequence

from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.watch_report import WatchFinding
from bootstrap.pictures.watch import MAX_LANES
from bootstrap.pictures.watch import Picture as WatchPicture

MAX_POINTS = 512


def lane_of(rank: int, world_size: int) -> int:
    """The lane rank ``rank`` is drawn in."""
    return rank * min(world_size, MAX_LANES) // max(1, world_size)


def lane_label(lane: int, world_size: int) -> str:
    lanes = min(world_size, MAX_LANES)
    first = -(-lane * world_size // lanes)
    last = -(-(lane + 1) * world_size // lanes) - 1
    return f"rank {first}" if first == last else f"ranks {first}-{last}"


def _lower(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return b if a is None else a if b is None else min(a, b)


Lanes = List[Optional[float]]


def _merged(a: Lanes, b: Lanes) -> Lanes:
    return [_lower(x, y) for x, y in zip(a, b, strict=True)]


@lean_dataclass
class Series:
    """Each lane's lowest relative and individual score per point (``None``: not measured there); a point holds
    ``stride`` windows (``filled`` of them so far, for the last)."""

    world_size: int
    ends_s: List[float] = field(default_factory=list)  # when each point's last window ended
    relative: List[Lanes] = field(default_factory=list)  # [point][lane]
    individual: List[Lanes] = field(default_factory=list)
    stride: int = 1
    filled: int = 0  # windows in the last point

    def add(self, end_s: float, scores: Sequence[tuple]) -> None:
        """One window: ``scores`` holds (rank, relative, individual) for each rank scored."""
        lanes = min(self.world_size, MAX_LANES)
        relative: Lanes = [None] * lanes
        individual: Lanes = [None] * lanes
        for rank, rel, ind in scores:
            lane = lane_of(rank, self.world_size)
            relative[lane], individual[lane] = _lower(relative[lane], rel), _lower(individual[lane], ind)
        if self.ends_s and self.filled < self.stride:  # the last point still takes windows
            self.ends_s[-1] = end_s
            self.relative[-1] = _merged(self.relative[-1], relative)
            self.individual[-1] = _merged(self.individual[-1], individual)
            self.filled += 1
            return
        self.ends_s.append(end_s)
        self.relative.append(relative)
        self.individual.append(individual)
        self.filled = 1
        if len(self.ends_s) >= MAX_POINTS:  # every two points become one
            self.ends_s = self.ends_s[1::2]
            self.relative = [_merged(a, b) for a, b in zip(self.relative[::2], self.relative[1::2], strict=True)]
            self.individual = [_merged(a, b) for a, b in zip(self.individual[::2], self.individual[1::2], strict=True)]
            self.stride *= 2
            self.filled = self.stride


def picture(series: Series, findings: Sequence[WatchFinding], threshold: float, device: str) -> WatchPicture:
    """What the watch's picture shows (:mod:`bootstrap.pictures.watch`), from rank 0's series and its findings."""
    lanes = min(series.world_size, MAX_LANES)
    named = sorted({lane_of(rank, series.world_size) for finding in findings for rank in finding.ranks})
    kinds = ", ".join(dict.fromkeys(finding.kind for finding in findings))
    ranks = series.world_size
    return WatchPicture(title=f"watch: {ranks} rank{'s' if ranks != 1 else ''} on {device}: {kinds or 'nothing found'}",
                        lanes=[lane_label(lane, series.world_size) for lane in range(lanes)],
                        ends_s=[round(end, 3) for end in series.ends_s], relative=series.relative,
                        individual=series.individual, threshold=threshold, named=named,
                        notes=[finding.message for finding in findings[:4]])
