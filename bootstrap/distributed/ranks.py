"""A set of ranks, kept as spans so that no code builds a list of every rank of a world, and its text
for a message (``ranks 2-9999``). Pure."""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Iterable, Iterator, List, Optional, Tuple

MAX_SPANS_SHOWN = 12  # a list of ranks longer than this many spans is cut short in a message


@dataclass(frozen=True, eq=False)
class Ranks:
    """A set of ranks as sorted, disjoint half-open spans ``[start, stop)``: 10,000 consecutive ranks
    cost two numbers, and membership is a binary search."""

    starts: array = field(default_factory=lambda: array("q"))
    stops: array = field(default_factory=lambda: array("q"))
    count: int = 0

    @classmethod
    def of(cls, ranks: Iterable[int]) -> "Ranks":
        """From ranks in any order (duplicates allowed); linear when they come sorted."""
        starts, stops, count, ordered = array("q"), array("q"), 0, True
        for rank in ranks:
            if stops and rank == stops[-1]:
                stops[-1] += 1
            else:
                ordered = ordered and (not stops or rank > stops[-1])
                starts.append(rank)
                stops.append(rank + 1)
            count += 1
        if not ordered:
            return cls._merged(sorted(zip(starts, stops, strict=True)))
        return cls(starts, stops, count)

    @classmethod
    def span(cls, start: int, stop: int) -> "Ranks":
        return cls(array("q", [start]), array("q", [stop]), stop - start) if stop > start else cls()

    @classmethod
    def _merged(cls, spans: List[Tuple[int, int]]) -> "Ranks":
        starts, stops = array("q"), array("q")
        for start, stop in spans:
            if stops and start <= stops[-1]:
                stops[-1] = max(stops[-1], stop)
            else:
                starts.append(start)
                stops.append(stop)
        return cls(starts, stops, sum(b - a for a, b in zip(starts, stops, strict=True)))

    def __contains__(self, rank: object) -> bool:
        if not isinstance(rank, int):
            return False
        i = bisect_right(self.starts, rank) - 1
        return i >= 0 and rank < self.stops[i]

    def __iter__(self) -> Iterator[int]:
        for start, stop in zip(self.starts, self.stops, strict=True):
            yield from range(start, stop)

    def __len__(self) -> int:
        return self.count

    def spans(self) -> Iterator[Tuple[int, int]]:
        return zip(self.starts, self.stops, strict=True)

    def minus(self, other: "Ranks") -> "Ranks":
        """These ranks less ``other``'s: linear in both lists of spans, whatever the count of ranks."""
        out_starts, out_stops = array("q"), array("q")
        j, theirs = 0, list(other.spans())
        for start, stop in self.spans():
            while j < len(theirs) and theirs[j][1] <= start:
                j += 1
            k, cursor = j, start
            while k < len(theirs) and theirs[k][0] < stop:
                if theirs[k][0] > cursor:
                    out_starts.append(cursor)
                    out_stops.append(theirs[k][0])
                cursor = max(cursor, theirs[k][1])
                k += 1
            if cursor < stop:
                out_starts.append(cursor)
                out_stops.append(stop)
        return Ranks(out_starts, out_stops, sum(b - a for a, b in zip(out_starts, out_stops, strict=True)))

    def text(self) -> str:
        """``rank 3``, ``ranks 0, 1``, ``ranks 2-9999``, ``ranks 1, 3, 5-9``; cut short past a dozen spans."""
        if self.count == 1:
            return f"rank {self.starts[0]}"
        parts: List[str] = []
        for start, stop in self.spans():
            if len(parts) >= MAX_SPANS_SHOWN:
                return f"ranks {', '.join(parts)}, ... ({self.count} ranks in all)"
            parts.append(str(start) if stop - start == 1 else f"{start}, {start + 1}" if stop - start == 2
                         else f"{start}-{stop - 1}")
        return "ranks " + ", ".join(parts)


def ranks_text(ranks: Iterable[int]) -> str:
    """:meth:`Ranks.text` of ranks given one by one."""
    return Ranks.of(ranks).text()


MAX_HOSTS_SHOWN = 4


def ranks_on_hosts(ranks: Iterable[Tuple[int, Optional[str]]]) -> str:
    """``rank 2 (node3)``, ``ranks 2-5 (node3, node4)``: ranks with the distinct hosts they ran on (a host not
    known is left out), at most :data:`MAX_HOSTS_SHOWN` named. Hosts as reports hold them (already cleaned)."""
    pairs = list(ranks)
    hosts = list(dict.fromkeys(host for _, host in pairs if host))
    text = Ranks.of(rank for rank, _ in pairs).text()
    if not hosts:
        return text
    shown = ", ".join(hosts[:MAX_HOSTS_SHOWN]) + (f", ... ({len(hosts)} hosts)" if len(hosts) > MAX_HOSTS_SHOWN else "")
    return f"{text} ({shown})"
