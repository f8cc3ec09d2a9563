"""What the ranks' flight-recorder dumps say about a hang (``bootstrap hang``: :mod:`bootstrap.cli.hang`).

Each rank's dump (:mod:`bootstrap.distributed.flightrec` writes ``<dir>/comm_lib_trace_rank_<rank>``, the
name torch itself uses; :mod:`bootstrap.distributed.dumps` reads it into a typed, bounded value) lists the
collectives the rank entered, per process group, by sequence id. :func:`diagnose` compares the
ranks and says, for each group, the last collective every rank entered, the ranks that never
entered the next one, and what the others were waiting in and for how long:

    rank 1 never entered collective #2 (all_reduce on default_pg); rank 0 waited in it for 600.0 s

It also names collectives whose ranks disagree on the operation, the sizes or the dtypes, by the
rules of torch's own analyser (``torch.distributed.flight_recorder``), which is not used: it
parses every rank's member list again (quadratic in ranks: minutes at 10,000) and ``eval``s
text found in a dump. Here each dump is read once and each (group, sequence id) compared once:
linear in ranks and entries.

Only this run's dumps are analysed: a dump older than the run's start (:func:`dumps.scan`) is
left in place and named as stale, and a rank without a dump of this run is named as missing,
as ranges (``ranks 2-9999``). Every line leaves through :func:`outbound.clean` as one line: a
dump's fields cannot move the cursor, retitle the terminal or forge a finding.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from bootstrap.distributed import dumps
from bootstrap.distributed.dumps import DUMP_PREFIX, Dump, Entry
from bootstrap.distributed.ranks import Ranks, ranks_text
from bootstrap.doors import outbound, records
from bootstrap.doors.lean import lean_dataclass

__all__ = ["DUMP_PREFIX", "Diagnosis", "Lane", "Timeline", "diagnose", "diagnose_dir", "findings"]

MAX_LISTED = 100  # stale and unreadable names kept in the report; the notes give the count
MAX_NOTED = 10  # lines of each kind of note
MAX_MISMATCHES = 10  # collectives named per group, as torch's analyser (its mismatch_cap)
MAX_SIDES = 6  # ways of disagreeing shown for one collective
MAX_LANES = 40  # rows of the timeline (``bootstrap hang --plot``), whatever the world's size


@lean_dataclass(frozen=True)
class Lane:
    """One row of the hang's timeline: the ranks of one process group (or of equally named groups, such as
    every ``tp`` group of a mesh) that are in the same state. Sequence numbers are the group's own."""

    group: str  # the group's description (default_pg, tp), or "group <name>" when it has none
    ranks: str  # as ranges: "ranks 2-9999"
    count: int
    completed: int  # the last collective every rank of the group entered, and agreed on (0: none)
    completed_op: str  # its operation ("" when none)
    entered: int  # the newest collective these ranks entered: ``completed``, or further on
    waiting_op: str  # their operation in collective completed + 1, which they entered ("" when they did not)
    waited_s: Optional[float] = None  # how long the lane's lowest rank had waited in it when it dumped

    @property
    def waiting(self) -> Optional[int]:
        """The collective these ranks wait in (entered, not entered or not agreed on by every rank); None: they
        are in none of the group's collectives past the last in common (stuck elsewhere, or done)."""
        return self.completed + 1 if self.entered > self.completed else None


@lean_dataclass(frozen=True)
class Timeline:
    """The timeline's rows, at most :data:`MAX_LANES`: the groups whose ranks diverge first, and in each
    the ranks furthest behind first; the rest are counted (``more``) and named as ranges (``more_ranks``)."""

    lanes: List[Lane]
    diverged: List[str] = field(default_factory=list)  # the groups whose ranks are not all in one state
    more: int = 0
    more_ranks: str = ""


@lean_dataclass
class Diagnosis:
    """What the dumps of one run show. Every text is one cleaned line."""

    ranks: List[int]  # ranks with a readable dump of this run
    world_size: Optional[int]
    findings: List[str] = field(default_factory=list)  # one sentence each; empty: no divergence
    groups: List[str] = field(default_factory=list)  # one line per process group: the last collective in common
    missing: Optional[str] = None  # ranks of the world without a dump of this run, as ranges
    stale: List[str] = field(default_factory=list)  # dumps from an earlier run (names): left in place, not analysed
    unreadable: List[str] = field(default_factory=list)  # "name: reason"
    notes: List[str] = field(default_factory=list)  # what was not analysed, and why
    run_started_ns: Optional[int] = None  # the run's start the dumps were judged by; None: unknown
    timeline: Optional[Timeline] = None  # made only when asked (``bootstrap hang --plot``)

    @property
    def hang(self) -> Optional[str]:
        """The findings as one line, for a report and torchrun's summary."""
        return "; ".join(self.findings) or None

    def record(self, dump_dir: Path, dumps: List[str]) -> records.Hang:
        """As the report's ``distributed.hang``."""
        return records.Hang(dump_dir=_line(str(dump_dir)), dumps=dumps, ranks=self.ranks, world_size=self.world_size,
                            finding=self.hang, findings=self.findings, groups=self.groups, missing=self.missing,
                            stale=self.stale[:MAX_LISTED], unreadable=self.unreadable[:MAX_LISTED], notes=self.notes,
                            run_started_ns=self.run_started_ns)


def _line(text: str) -> str:
    return outbound.clean(text, one_line=True)


# -- the analysis (pure) ------------------------------------------------------------------------
@lean_dataclass
class _Group:
    """One process group, folded from every dump: linear in entries."""

    desc: str
    last: Dict[int, int] = field(default_factory=dict)  # rank -> the highest sequence id it entered (0: none)
    first: Dict[int, Tuple[int, Entry]] = field(default_factory=dict)  # seq -> (lowest rank, its entry)
    # seq -> what must agree (_signature) -> (the first entry with it, the ranks with it)
    sides: Dict[int, Dict[tuple, Tuple[Entry, List[int]]]] = field(default_factory=dict)


def _label(name: str, group: _Group) -> str:
    return group.desc if group.desc and group.desc != "undefined" else f"group {name}"


def _signature(entry: Entry) -> tuple:
    """What must agree between ranks in one collective, by torch's analyser's rules (Op.match): the
    operation; input sizes (not for all_to_all, scatter); output sizes (not all_to_all, gather);
    input dtypes (not scatter, broadcast); output dtypes (not gather)."""
    op = entry.op
    return (op,
            None if op in ("all_to_all", "scatter") else entry.input_sizes,
            None if op in ("all_to_all", "gather") else entry.output_sizes,
            None if op in ("scatter", "broadcast") else frozenset(entry.input_dtypes),
            None if op == "gather" else frozenset(entry.output_dtypes))


def _fold(by_rank: Dict[int, Dump]) -> Dict[str, _Group]:
    groups: Dict[str, _Group] = {}
    signatures: Dict[tuple, tuple] = {}  # one copy of each
    member_lists: Dict[str, Dict[int, Ranks]] = {}  # group -> distinct member lists (shared by the reader)
    for rank, dump in by_rank.items():  # by rank: the first rank seen with a collective is its lowest
        mine: Dict[Tuple[str, int], Entry] = {}
        for entry in dump.entries:
            if not entry.is_p2p:  # torch's gloo records none; p2p sequence ids are per pair
                mine[(entry.group, entry.seq)] = entry  # a coalesced group's last entry stands for it
        for (name, seq), entry in mine.items():
            group = groups.get(name)
            if group is None:
                group = groups[name] = _Group(entry.group_desc)
            if seq > group.last.get(rank, 0):
                group.last[rank] = seq
            group.first.setdefault(seq, (rank, entry))
            signature = _signature(entry)
            signature = signatures.setdefault(signature, signature)
            sides = group.sides.setdefault(seq, {})
            side = sides.get(signature)
            if side is None:
                sides[signature] = (entry, [rank])
            else:
                side[1].append(rank)
        for name, members in dump.pg_config.items():
            member_lists.setdefault(name, {})[id(members)] = members
    # A member that entered none of a group's collectives is in it too (torch's NCCL lists a group in a
    # rank's pg_config only once the rank used it). Each distinct list once: linear in what was read.
    for name, lists in member_lists.items():
        group = groups.get(name)
        if group is None:
            continue  # no rank entered a collective on it: nothing to compare
        for members in lists.values():
            found = (r for r in members if r in by_rank) if len(members) <= len(by_rank) else \
                (r for r in by_rank if r in members)
            for rank in found:
                group.last.setdefault(rank, 0)
    return groups


def _waited(dump: Dump, entry: Entry) -> Optional[float]:
    """How long the rank had been in ``entry`` when it dumped (gloo records no end)."""
    created, dumped = entry.created_ns, dump.dump_time_ns
    if created is not None and dumped is not None and dumped >= created:
        return (dumped - created) / 1e9
    return None


def _stalls(name: str, group: _Group, by_rank: Dict[int, Dump]) -> Tuple[str, Optional[str]]:
    """The group's line (last collective in common) and its finding, if some ranks went further."""
    label = _label(name, group)
    ranks = sorted(group.last)
    common = min(group.last.values())
    first = group.first.get(common)
    line = (f"{label} ({ranks_text(ranks)}): last collective every rank entered: #{common}"
            + (f" ({first[1].op})" if first else ""))
    ahead = [r for r in ranks if group.last[r] > common]
    if not ahead:
        return line, None
    behind = [r for r in ranks if group.last[r] == common]
    following = group.first.get(common + 1)  # the lowest rank that entered it, and its entry
    waited = _waited(by_rank[following[0]], following[1]) if following else None
    return line, (f"{ranks_text(behind)} never entered collective #{common + 1} "
                  f"({following[1].op if following else '?'} on {label}); {ranks_text(ahead)} "
                  f"waited in it{f' for {waited:.1f} s' if waited is not None else ''}")


def _mismatches(name: str, group: _Group) -> List[str]:
    """Collectives whose ranks disagree on the operation, the sizes or the dtypes."""
    label = _label(name, group)
    found = [seq for seq in sorted(group.sides) if len(group.sides[seq]) > 1]
    lines = []
    for seq in found[:MAX_MISMATCHES]:
        sides = group.sides[seq]
        signatures = list(sides)
        what = "operation" if len({s[0] for s in signatures}) > 1 else \
            "sizes" if len({s[1:3] for s in signatures}) > 1 else "dtypes"
        shown = sorted(sides.values(), key=lambda side: side[1][0])
        parts = [f"{ranks_text(ranks)} {entry.op} {entry.input_sizes} {list(entry.input_dtypes)}"
                 for entry, ranks in shown[:MAX_SIDES]]
        if len(shown) > MAX_SIDES:
            parts.append(f"and {len(shown) - MAX_SIDES} more ways")
        lines.append(f"collective #{seq} on {label}: the ranks disagree on the {what}: {', '.join(parts)}")
    if len(found) > MAX_MISMATCHES:
        lines.append(f"and {len(found) - MAX_MISMATCHES} more collectives on {label} whose ranks disagree")
    return lines


def _lane_states(name: str, group: _Group, into: Dict[tuple, List[int]], first: Dict[tuple, Tuple[int, str]]) -> bool:
    """Add each rank of ``group`` to the list of its state in ``into`` (``first``: the state's lowest rank seen
    and its group's name). Returns whether the group's ranks are in more than one state."""
    label = _label(name, group)
    common = min(group.last.values())
    disagreed = [seq for seq, sides in group.sides.items() if len(sides) > 1 and seq <= common]
    completed = min(disagreed) - 1 if disagreed else common  # a collective the ranks disagree on never completes
    completed_op = group.first[completed][1].op if completed in group.first else ""
    next_ops: Dict[int, str] = {}  # rank -> its operation in collective completed + 1
    for entry, ranks in group.sides.get(completed + 1, {}).values():
        for rank in ranks:
            next_ops[rank] = entry.op
    states = set()
    for rank, last in group.last.items():
        state = (label, completed, completed_op, last, next_ops.get(rank, "") if last > completed else "")
        states.add(state)
        into.setdefault(state, []).append(rank)
        if state not in first or rank < first[state][0]:
            first[state] = (rank, name)
    return len(states) > 1 or bool(disagreed)


def _waited_in(dump: Dump, group: str, seq: int) -> Optional[float]:
    for entry in reversed(dump.entries):
        if entry.group == group and entry.seq == seq and not entry.is_p2p:
            return _waited(dump, entry)
    return None


def _timeline(folded: Dict[str, _Group], by_rank: Dict[int, Dump]) -> Timeline:
    """Every rank's state in each group, the ranks of one state folded into one lane: linear in the groups'
    members, and at most :data:`MAX_LANES` lanes whatever the world's size."""
    states: Dict[tuple, List[int]] = {}
    first: Dict[tuple, Tuple[int, str]] = {}
    diverged = {_label(name, folded[name]) for name in sorted(folded)
                if _lane_states(name, folded[name], states, first)}
    # diverging groups first; in each, the ranks furthest behind first (the likely culprits), then by operation
    order = sorted(states, key=lambda s: (s[0] not in diverged, s[0], s[3], s[4], first[s][0]))
    lanes = []
    for state in order[:MAX_LANES]:
        label, completed, completed_op, entered, waiting_op = state
        ranks = Ranks.of(states[state])
        lowest, name = first[state]
        waited = _waited_in(by_rank[lowest], name, completed + 1) if waiting_op and lowest in by_rank else None
        lanes.append(Lane(group=_line(label), ranks=ranks.text(), count=len(ranks), completed=completed,
                          completed_op=_line(completed_op), entered=entered, waiting_op=_line(waiting_op),
                          waited_s=waited))
    rest = order[MAX_LANES:]
    more_ranks = Ranks.of(rank for state in rest for rank in states[state]).text() if rest else ""
    return Timeline(lanes=lanes, diverged=[_line(label) for label in sorted(diverged)], more=len(rest),
                    more_ranks=more_ranks)


def _capped(lines: List[str], kind: str) -> List[str]:
    return lines[:MAX_NOTED] + ([f"and {len(lines) - MAX_NOTED} more {kind}"] if len(lines) > MAX_NOTED else [])


def diagnose(found: Iterable[Dump], world_size: Optional[int] = None, timeline: bool = False) -> Diagnosis:
    """Compare this run's dumps, process group by process group. ``world_size``: the job's, when
    known (the recorder's); else the largest a dump claims and is believed. ``timeline``: also fold every
    rank's state into the timeline's lanes (:class:`Timeline`)."""
    by_rank = {dump.rank: dump for dump in sorted(found, key=lambda d: d.rank)}
    claims = [d.world_size for d in by_rank.values() if d.world_size is not None]
    world_size = world_size or max(claims, default=None)
    result = Diagnosis(ranks=list(by_rank), world_size=world_size)
    findings, groups = [], []
    if world_size:
        absent = Ranks.span(0, world_size).minus(Ranks.of(by_rank))
        if absent:
            result.missing = absent.text()
            findings.append(f"no dump from {absent.text()}: {'it' if len(absent) == 1 else 'they'} ended without "
                            "one (killed with SIGKILL, or crashed inside a collective)")
    folded = _fold(by_rank)
    mismatches = []
    for name in sorted(folded):
        line, stall = _stalls(name, folded[name], by_rank)
        groups.append(line)
        findings.extend([stall] if stall else [])
        mismatches.extend(_mismatches(name, folded[name]))
    result.findings = [_line(text) for text in findings + mismatches]
    result.groups = [_line(text) for text in groups]
    remarks = [f"{dump.name}: {remark}" for dump in by_rank.values() for remark in dump.remarks]
    result.notes = [_line(text) for text in _capped(remarks, "remarks")]
    if timeline:
        result.timeline = _timeline(folded, by_rank)
    return result


# -- a run directory ----------------------------------------------------------------------------
def diagnose_dir(run_dir: Path, since_ns: Optional[int] = None, world_size: Optional[int] = None,
                 timeline: bool = False) -> Tuple[Diagnosis, Dict[int, Path]]:
    """The diagnosis of the dumps in ``run_dir`` made at or after ``since_ns`` (None: every dump),
    and where this run's dumps are (``timeline``: with the timeline's lanes)."""
    run_dir = Path(run_dir)
    scanned = dumps.scan(run_dir, since_ns)
    result = diagnose(scanned.current, world_size, timeline)
    result.run_started_ns = since_ns
    result.stale = [_line(name) for name in scanned.stale]
    result.unreadable = [_line(reason) for reason in scanned.unreadable]
    notes = []
    if scanned.stale:
        names = ", ".join(scanned.stale[:MAX_NOTED]) + (f" and {len(scanned.stale) - MAX_NOTED} more"
                                                        if len(scanned.stale) > MAX_NOTED else "")
        notes.append(f"{len(scanned.stale)} stale dump{'s' if len(scanned.stale) > 1 else ''}, from an earlier run "
                     f"(older than this run's start; left in place, not analysed): {names}")
    notes += _capped([f"unreadable, not analysed: {reason}" for reason in scanned.unreadable], "unreadable dumps")
    if since_ns is None and scanned.current:
        notes.append(f"no report in {run_dir} records when this run started: every dump was analysed, whichever "
                     "run made it")
    result.notes = [_line(text) for text in notes] + result.notes
    return result, {dump.rank: run_dir / dump.name for dump in scanned.current}


def findings(run_dir: Path, since_ns: Optional[int] = None, world_size: Optional[int] = None) -> records.Hang:
    """What this run's dumps in ``run_dir`` show, as the report's ``distributed.hang`` (``dumps``: their
    names). ``since_ns``: the run's start (the recorder knows it); None: from the run's reports."""
    run_dir = Path(run_dir)
    try:
        if since_ns is None:
            since_ns = dumps.run_started_ns(run_dir)
        diagnosis, paths = diagnose_dir(run_dir, since_ns, world_size)
    except Exception as error:  # noqa: BLE001 - a bug here must not cost the report or the doctor's answer
        diagnosis, paths = Diagnosis(ranks=[], world_size=world_size, run_started_ns=since_ns), {}
        diagnosis.notes = [_line(f"the dumps could not be analysed: {type(error).__name__}: {error}")]
    return diagnosis.record(run_dir, [p.name for p in paths.values()])

