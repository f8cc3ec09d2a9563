"""The watch's verdict: each window's two scores per rank, and which ranks, nodes and links stayed slow. Pure.

The scores are NVRx's (nvidia-resiliency-ext, ``straggler/reporting.py``), on each rank's own work a step (its
step less its waits in collectives, :mod:`bootstrap.watch.steps`), each from 0 to 1:

- **relative**: the fastest rank's median own time over the window, against this rank's;
- **individual**: this rank's best window's median own time, against this window's.

A rank is named when a score stays under ``env.watch.threshold`` for ``env.watch.consecutive`` windows in a row
(:class:`Judge`); each rank and kind once a run. The kinds:

- ``slow``: its relative score: it does more work a step than the fastest rank (another process on its cores, a
  throttled GPU), and every rank waits for it;
- ``slowed``: its individual score alone: it works slower than it did, yet no slower than the others. When more
  than half of the ranks slowed at once, the workload or something they all share changed, not a node: the
  finding names no rank;
- ``slow_link``: a node whose link to the next node, timed once a window, is slower than the other links' median
  by more than 1 / threshold (the preflight's rule, :func:`bootstrap.preflight.links.slow_nodes`);
- ``absent``: a rank whose window did not reach rank 0 within ``env.distributed.timeout_s``: it left;
- ``invalid``: a rank whose header or record cannot be read as this version's.

Rank 0 judges every window, and every rank follows its verdict (:mod:`bootstrap.watch.exchange`): one rule, one
place, at a cost linear in the ranks.
"""

from __future__ import annotations

from collections import deque
from dataclasses import field
from typing import Deque, Dict, List, Optional, Sequence, Set, Tuple

from bootstrap.distributed.ranks import Ranks
from bootstrap.doors import outbound
from bootstrap.doors.errors import PRESET_KEY
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.watch_report import LAST_WINDOWS, MAX_FINDINGS, MAX_RANKS, WatchFinding, WatchRank, WatchWindow
from bootstrap.preflight import links as node_links
from bootstrap.preflight.verdict import MAX_NAMED, named
from bootstrap.watch.figures import WindowFigures

MIN_OWN_S = 1e-6  # an own time under a microsecond is read as this: no score divides by 0
WHY = {"slow": "another process on its CPUs or GPU, a throttled GPU (nvidia-smi -q -d PERFORMANCE,POWER), or its "
               "data loading",
       "slowed": "a GPU that throttles once hot, another job landed on its node, or its share of the work grew"}


@lean_dataclass
class Scored:
    """One rank in one window, with its scores (None: it measured no step)."""

    figures: WindowFigures
    relative: Optional[float] = None
    individual: Optional[float] = None


@lean_dataclass
class Streak:
    """Windows in a row under the threshold, from ``since`` (a window's number), which ended ``since_s`` into the
    watch."""

    count: int = 0
    since: int = 0
    since_s: float = 0.0


def _ms(seconds: Optional[float]) -> str:
    return "?" if seconds is None else f"{seconds * 1e3:.3g} ms"


def score(world: Sequence[WindowFigures], best: Dict[int, float]) -> List[Scored]:
    """Each rank's scores in one window; ``best``: each rank's lowest own time so far, updated here."""
    measured = [f.own_s is not None and f.steps > 0 and not f.invalid for f in world]
    fastest = min((max(MIN_OWN_S, f.own_s or 0.0) for f, seen in zip(world, measured, strict=True) if seen),
                  default=None)
    out = []
    for figures, seen in zip(world, measured, strict=True):
        if not seen:
            out.append(Scored(figures))
            continue
        own = max(MIN_OWN_S, figures.own_s or 0.0)
        best[figures.rank] = min(best.get(figures.rank, own), own)
        out.append(Scored(figures, fastest / own if fastest is not None else None, best[figures.rank] / own))
    return out


class Judge:
    """Rank 0's verdict over the windows of one run (see the module's docstring)."""

    def __init__(self, threshold: float, consecutive: int, key: str = "env"):
        self.threshold, self.consecutive, self.key = threshold, consecutive, key
        self.best: Dict[int, float] = {}
        self.streaks: Dict[Tuple[str, object], Streak] = {}  # (kind, rank or node) -> its streak
        self.named: Set[Tuple[str, object]] = set()
        self.findings: List[WatchFinding] = []
        self.kept = Kept()
        self.scored: List[Scored] = []  # the last window's, every rank

    # -- one window ---------------------------------------------------------------------------
    def window(self, number: int, end_s: float, world: Sequence[WindowFigures]) -> List[WatchFinding]:
        """Judge window ``number`` (every rank's figures, in rank order, a placeholder for one not read); returns
        the findings it made."""
        scored = self.scored = score(world, self.best)
        found = [*self._slow(number, end_s, scored), *self._slowed(number, end_s, scored),
                 *self._links(number, end_s, world)]
        before = len(self.findings)
        made = self._keep(found)
        self.kept.add(_window_record(number, end_s, scored, {r for f in found for r in f.ranks}),
                      named=len(self.findings) > before)
        return made

    def _streak(self, kind: str, who: object, under: Optional[bool], number: int, end_s: float) -> Optional[Streak]:
        """Count one window for ``who`` (``under``: None when it was not measured there, which leaves its streak as
        it was); the streak once it reaches ``consecutive`` and was not named before."""
        if under is None:
            return None
        if not under:
            self.streaks.pop((kind, who), None)
            return None
        streak = self.streaks.setdefault((kind, who), Streak(0, number, end_s))
        streak.count += 1
        if streak.count >= self.consecutive and (kind, who) not in self.named:
            self.named.add((kind, who))
            return streak
        return None

    def _under(self, value: Optional[float]) -> Optional[bool]:
        return None if value is None else value < self.threshold

    def _since(self, streaks: Sequence[Streak]) -> str:
        first = min(streaks, key=lambda s: s.since)
        return (f"since window {first.since}, which ended {first.since_s:.0f} s into training, under "
                f"{PRESET_KEY}.watch.threshold={self.threshold:g} for {self.consecutive} windows")

    def _slow(self, number: int, end_s: float, scored: Sequence[Scored]) -> List[WatchFinding]:
        hits = [(s, streak) for s in scored
                if (streak := self._streak("slow", s.figures.rank, self._under(s.relative), number, end_s))]
        if not hits:
            return []
        fastest = min((s for s in scored if s.relative is not None), key=lambda s: s.figures.own_s or 0.0)
        step = max((s.figures.step_s or 0.0 for s in scored), default=0.0)
        by_rank = {s.figures.rank: s for s, _ in hits}
        text = named([s.figures for s, _ in hits], lambda f: (
            f" is slow: its own work takes {1 / (by_rank[f.rank].relative or 1):.1f}x the fastest rank's "
            f"({_ms(f.own_s)} a step against rank {fastest.figures.rank}'s {_ms(fastest.figures.own_s)}; relative "
            f"{by_rank[f.rank].relative:.2f}, individual {by_rank[f.rank].individual or 0:.2f})"))
        return [self._finding("slow", f"{text}, and every rank's step takes up to {_ms(step)} waiting for it; "
                                      f"{self._since([s for _, s in hits])}: {WHY['slow']}?", [s for s, _ in hits],
                              number, [s for _, s in hits])]

    def _slowed(self, number: int, end_s: float, scored: Sequence[Scored]) -> List[WatchFinding]:
        judged = [s for s in scored if s.individual is not None]
        together = sum(bool(self._under(s.individual)) for s in judged)
        if judged and together * 2 > len(judged):  # the workload, or what every rank shares: named once, no rank
            if self._streak("slowed", "all", True, number, end_s) is None:
                return []
            return [self._finding("slowed", f"{together} of {len(judged)} ranks work slower than in their best "
                                            f"window at once ({self._since([self.streaks[('slowed', 'all')]])}): "
                                            "the workload changed, or something every rank shares (a filesystem, the "
                                            "network), not a node", [], number, [])]
        self.streaks.pop(("slowed", "all"), None)
        hits = [(s, streak) for s in judged if (streak := self._streak(
            "slowed", s.figures.rank, bool(self._under(s.individual)) and not self._under(s.relative), number,
            end_s))]
        if not hits:
            return []
        by_rank = {s.figures.rank: s for s, _ in hits}
        text = named([s.figures for s, _ in hits], lambda f: (
            f" has slowed: its own work takes {1 / (by_rank[f.rank].individual or 1):.1f}x its best window's "
            f"({_ms(f.own_s)} a step against {_ms(self.best.get(f.rank))}; individual "
            f"{by_rank[f.rank].individual:.2f}, relative {by_rank[f.rank].relative or 0:.2f})"))
        return [self._finding("slowed", f"{text}, {self._since([s for _, s in hits])}: {WHY['slowed']}?",
                              [s for s, _ in hits], number, [s for _, s in hits])]

    def _links(self, number: int, end_s: float, world: Sequence[WindowFigures]) -> List[WatchFinding]:
        if not node_links.measured_any(world):  # type: ignore[arg-type]  # WindowFigures has the link fields
            return []
        skew = 1 / self.threshold
        slow = {s.node.number: s for s in node_links.slow_nodes(node_links.links(world), skew)}  # type: ignore[arg-type]
        nodes = node_links.nodes_of([f.node for f in world], [f.host for f in world])
        hits = [(slow[node.number], streak) for node in nodes if (streak := self._streak(
            "slow_link", node.host, node.number in slow, number, end_s))]
        if not hits:
            return []
        text = "; ".join(f"node {s.node.host} ({Ranks.of(s.node.ranks).text()}): its links carry {s.gbps:.3g} GB/s "
                         f"against the other links' {s.others_gbps:.3g} GB/s ({s.others_gbps / s.gbps:.1f}x slower)"
                         for s, _ in hits[:MAX_NAMED])
        ranks = [rank for s, _ in hits[:MAX_NAMED] for rank in s.node.ranks][:MAX_NAMED]
        return [WatchFinding(kind="slow_link", message=self._said(
            f"{text}, {self._since([streak for _, streak in hits])} (a link 1/threshold = {skew:.2g}x slower than "
            "the others'): its network link is slow (a NIC at a lower speed or its cable, a shaped or shared link, "
            "another job's traffic): check the link's speed (ethtool, ibstat) and counters"),
            ranks=ranks, hosts=[world[rank].host for rank in ranks], window=number,
            since_window=min(streak.since for _, streak in hits))]

    # -- ranks that left, or send what cannot be read -------------------------------------------
    def absent(self, number: int, ranks: Sequence[Tuple[int, str]], timeout_s: float) -> List[WatchFinding]:
        """Ranks (with their nodes) whose window ``number`` did not come within ``timeout_s``: named once."""
        new = [(rank, host) for rank, host in ranks if ("absent", rank) not in self.named]
        self.named.update(("absent", rank) for rank, _ in new)
        if not new:
            return []
        shown = ", ".join(f"rank {rank} ({host})" for rank, host in new[:MAX_NAMED])
        more = f" and {len(new) - MAX_NAMED} more" if len(new) > MAX_NAMED else ""
        return self._keep([WatchFinding(kind="absent", message=self._said(
            f"{shown}{more} sent no figures for window {number} within {PRESET_KEY}.distributed.timeout_s="
            f"{timeout_s:g}: the rank left (crashed, killed or stopped) or is stuck; the others are judged without "
            "it"), ranks=[rank for rank, _ in new[:MAX_NAMED]], hosts=[host for _, host in new[:MAX_NAMED]],
            window=number)])

    def invalid(self, number: int, ranks: Sequence[Tuple[int, str, str]]) -> List[WatchFinding]:
        """Ranks (with their nodes and why) whose header or record cannot be read: named once, left out."""
        new = [(rank, host, why) for rank, host, why in ranks if ("invalid", rank) not in self.named]
        self.named.update(("invalid", rank) for rank, _, _ in new)
        if not new:
            return []
        shown = ", ".join(f"rank {rank} ({host}) {why}" for rank, host, why in new[:MAX_NAMED])
        return self._keep([WatchFinding(kind="invalid", message=self._said(
            f"{shown}: left out of the watch's verdict: a different build of hydra-train-bootstrap, or a rank with a "
            "broken clock or memory"), ranks=[r for r, _, _ in new[:MAX_NAMED]],
            hosts=[h for _, h, _ in new[:MAX_NAMED]], window=number)])

    # -- records -------------------------------------------------------------------------------
    def _said(self, text: str) -> str:
        return outbound.finding(text.replace(PRESET_KEY, self.key))

    def _finding(self, kind: str, text: str, hits: Sequence[Scored], number: int,
                 streaks: Sequence[Streak]) -> WatchFinding:
        shown = list(hits[:MAX_NAMED])
        return WatchFinding(kind=kind, message=self._said(text), ranks=[s.figures.rank for s in shown],
                            hosts=[s.figures.host for s in shown], window=number,
                            since_window=min((s.since for s in streaks), default=number))

    def _keep(self, found: List[WatchFinding]) -> List[WatchFinding]:
        room = MAX_FINDINGS - len(self.findings)
        self.findings.extend(found[:max(0, room)])
        return found


def _window_record(number: int, end_s: float, scored: Sequence[Scored], named_ranks: Set[int]) -> WatchWindow:
    """The window as the report keeps it: the ranks named first, then the lowest relative scores, at most
    MAX_RANKS."""
    order = sorted(scored, key=lambda s: (s.figures.rank not in named_ranks, s.relative is None,
                                          s.relative if s.relative is not None else 1.0, s.figures.rank))
    shown = order[:MAX_RANKS]
    return WatchWindow(window=number, end_s=round(end_s, 3), more_ranks=len(scored) - len(shown), ranks=[
        WatchRank(rank=s.figures.rank, host=s.figures.host, steps=s.figures.steps,
                  relative=None if s.relative is None else round(s.relative, 4),
                  individual=None if s.individual is None else round(s.individual, 4),
                  own_s=s.figures.own_s, step_s=s.figures.step_s) for s in shown])


def lowest(window: WatchWindow) -> float:
    """A window's lowest score, of any rank and kind (1: nothing measured)."""
    return min((value for rank in window.ranks for value in (rank.relative, rank.individual) if value is not None),
               default=1.0)


@lean_dataclass
class Kept:
    """The windows the report keeps, whatever the run's length: the first, the worst (its lowest score), each one
    that made a finding (its evidence: at most MAX_FINDINGS, as the findings are), and the last LAST_WINDOWS."""

    first: Optional[WatchWindow] = None
    worst: Optional[WatchWindow] = None
    named: List[WatchWindow] = field(default_factory=list)
    last: Deque[WatchWindow] = field(default_factory=lambda: deque(maxlen=LAST_WINDOWS))

    def add(self, window: WatchWindow, named: bool = False) -> None:
        """``named``: the window made a finding the report keeps."""
        if self.first is None:
            self.first = window
        if self.worst is None or lowest(window) < lowest(self.worst):
            self.worst = window
        if named and len(self.named) < MAX_FINDINGS:
            self.named.append(window)
        self.last.append(window)

    def windows(self) -> List[WatchWindow]:
        """In the order they were judged, each once."""
        seen = {id(w): w for w in [self.first, self.worst, *self.named, *self.last] if w is not None}
        return sorted(seen.values(), key=lambda w: w.window)
