"""The flight recorder's dumps on disk, read into typed values: :class:`Dump`, :class:`Entry`.

A dump is a pickle that anyone may have left in a run directory: torch's NCCL watchdog, the
bootstrap (:mod:`bootstrap.distributed.flightrec`), an earlier run, a teammate, an attacker. So it is
read once, through :func:`bootstrap.doors.inbound.read_pickled_data` (plain data only, size-bounded),
and its shape is checked field by field (:mod:`bootstrap.doors.typed`). Anything unexpected (entries
that are not a list, a sequence id that is not an int, a member list that is not a list of ranks,
text where a number belongs, numbers past any real value) makes the whole file one
:class:`inbound.Unreadable` with a one-line reason, never another exception.

Bounds, so that a few hundred hostile bytes cannot cost more than a real dump:

- file bytes: :data:`inbound.MAX_DUMP_BYTES`;
- ranks: below :data:`MAX_WORLD_SIZE`; a larger claimed world size is not believed (a remark
  says so), and no code here builds a set or list of every rank of a world: ranks are kept as
  spans (:class:`Ranks`) and missing ones named as ranges;
- entries: the newest :data:`MAX_ENTRIES` of a dump;
- texts: group names, descriptions and operation names of at most :data:`MAX_TEXT` characters;
  sizes and dtypes are kept as short text (:data:`MAX_SHOWN` tensors and dimensions);
- time and memory: each group's member list is parsed once per distinct text (torch writes the
  whole world's list into every rank's dump), and an entry shared many times inside one pickle
  (its memo) is checked once.

Which run a dump belongs to (:func:`scan`): its time (the bootstrap's ``dump_time_ns``, else its
newest entry's ``time_created_ns``, else the file's mtime) against the run's start, which the
run's reports record (:func:`run_started_ns`). torch's own dumps cannot carry a field of ours, and
keep their names (``comm_lib_trace_rank_<rank>``), so time is what tells runs apart.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from bootstrap.distributed.ranks import Ranks
from bootstrap.doors import inbound, typed
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.typed import WrongShape

DUMP_PREFIX = "comm_lib_trace_rank_"  # torch's own, so its analyser (torchfrtrace) reads a run directory too
MAX_WORLD_SIZE = 1 << 20  # ranks believed: 1,048,576, some 10x the largest jobs run today
MAX_RANK_DIGITS = len(str(MAX_WORLD_SIZE - 1))
# Entries kept per dump: 5x the largest shipped buffer (a100/h100: 20,000). A hang shows in the newest
# entries; a buffer set larger (up to 10**6) keeps its newest 100,000 here.
MAX_ENTRIES = 100_000
MAX_GROUPS = 1 << 16  # process groups per dump: far beyond any mesh's
MAX_TEXT = 256  # characters of a group name, description or operation name
MAX_SHOWN = 8  # tensors and dimensions (or dtypes) kept of an entry's sizes
MAX_NS = 2**63  # times and sequence ids are int64 in torch
_DISTINCT_MEMBER_LISTS = 8  # per group name, member lists remembered (beyond: parsed each time, still linear)
_NAME = re.compile(rf"{DUMP_PREFIX}(0|[1-9][0-9]{{0,{MAX_RANK_DIGITS - 1}}})", re.ASCII)
_RANK_ITEM = re.compile(r"\s*([0-9]{1,%d})\s*(?:,|$)" % MAX_RANK_DIGITS, re.ASCII)


# -- the typed values ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Entry:
    """One collective a rank entered, as its flight recorder kept it."""

    group: str  # the process group's name ("0" for the default group)
    group_desc: str  # its description ("default_pg", "tp"; "undefined" when none was given)
    seq: int  # collective_seq_id: the collective's number within its group
    profiling_name: str  # "gloo:all_reduce", "nccl:send 0->1"
    is_p2p: bool
    created_ns: Optional[int]  # wall clock, when the rank entered it
    input_sizes: str  # short text: "[[8]]"
    output_sizes: str
    input_dtypes: Tuple[str, ...]  # ("Float",)
    output_dtypes: Tuple[str, ...]

    @property
    def op(self) -> str:
        """The operation without its backend: "gloo:all_reduce" -> "all_reduce"."""
        return self.profiling_name.split(":", 1)[-1]


@dataclass(frozen=True)
class Dump:
    """One rank's dump (``comm_lib_trace_rank_<rank>``): its collectives and its groups' members."""

    name: str  # the file's name
    rank: int  # from the file's name; a dump that records another rank is unreadable
    world_size: Optional[int]  # as the dump claims it, when believed (below MAX_WORLD_SIZE)
    reason: Optional[str]  # why the bootstrap dumped ("job failed: RuntimeError"); None in torch's own
    dump_time_ns: Optional[int]  # when the bootstrap dumped (wall clock); None in torch's own
    entries: Tuple[Entry, ...]  # oldest first, the newest MAX_ENTRIES at most
    pg_config: Mapping[str, Ranks]  # group name -> its member ranks, as this rank knew them
    mtime_ns: Optional[int] = None  # the file's mtime, read only when the dump holds no time of its own
    remarks: Tuple[str, ...] = ()  # what the reader did not believe or kept only in part, one line each

    @property
    def time_ns(self) -> Optional[int]:
        """When the dump was made: the bootstrap's time, else its newest entry's, else the file's."""
        if self.dump_time_ns is not None:
            return self.dump_time_ns
        newest = max((e.created_ns for e in self.entries if e.created_ns is not None), default=None)
        return newest if newest is not None else self.mtime_ns


def rank_of(name: str) -> Optional[int]:
    """The rank in a dump's file name: ``comm_lib_trace_rank_<r>``, ``r`` a plain decimal (ASCII
    digits, no leading zero, below :data:`MAX_WORLD_SIZE`); None for any other name."""
    match = _NAME.fullmatch(name)
    rank = int(match.group(1)) if match else None
    return rank if rank is not None and rank < MAX_WORLD_SIZE else None


# -- reading ------------------------------------------------------------------------------------
class Reader:
    """Reads dumps, sharing what repeats between them: each group's member list is parsed once per
    distinct text, and equal short texts are kept once. One per directory read."""

    def __init__(self) -> None:
        self._members: Dict[str, List[Tuple[Any, Ranks]]] = {}
        self._texts: Dict[str, str] = {}

    def read(self, path: "os.PathLike[str] | str") -> Dump:
        """The dump at ``path``; :class:`inbound.Unreadable` with a one-line reason otherwise."""
        name = os.path.basename(path)
        if rank_of(name) is None:
            raise Unreadable(f"{name}: not a dump's name ({DUMP_PREFIX}<rank>)")
        dump = self.from_data(inbound.read_pickled_data(path), name)
        if dump.time_ns is None:  # no time of its own: the file's
            try:
                dump = replace(dump, mtime_ns=os.stat(path).st_mtime_ns)
            except OSError as error:
                raise Unreadable(f"{name}: {error.strerror or type(error).__name__}") from None
        return dump

    def from_data(self, data: Any, name: str) -> Dump:
        """A dump from the plain data a pickle held, its shape checked; ``name`` is the file's name."""
        rank = rank_of(name)
        if rank is None:
            raise Unreadable(f"{name}: not a dump's name ({DUMP_PREFIX}<rank>)")
        try:
            return self._dump(data, name, rank)
        except WrongShape as error:
            raise Unreadable(f"{name}: {error}") from None
        except (RecursionError, MemoryError):  # not reached by the checks below; a last guard, not a path
            raise Unreadable(f"{name}: too deeply nested or too large") from None

    # The checks. Each raises WrongShape with what is wrong; from_data names the file.
    def _dump(self, data: Any, name: str, rank: int) -> Dump:
        if not isinstance(data, dict):
            raise WrongShape(f"holds a {typed.kind(data)}, not a dump's dict")
        remarks: List[str] = []
        ours = data.get("bootstrap")
        world_size = reason = dump_time_ns = None
        if ours is not None:
            if not isinstance(ours, dict):
                raise WrongShape(f"'bootstrap' is a {typed.kind(ours)}, not a dict")
            recorded = typed.whole(ours.get("rank", rank), "'bootstrap.rank'", MAX_NS)
            if recorded != rank:
                # Renamed or copied: under either rank it could blame the wrong one.
                raise WrongShape(f"records rank {typed.shown(recorded)}, not the {rank} of its name: a renamed or "
                             "copied dump")
            claimed = ours.get("world_size")
            if claimed is not None:
                claimed = typed.whole(claimed, "'bootstrap.world_size'", None)
                if claimed > MAX_WORLD_SIZE:
                    remarks.append(f"claims a world of {typed.shown(claimed)} ranks, more than the {MAX_WORLD_SIZE} "
                                   "believed: the claim is ignored")
                elif claimed <= rank:
                    raise WrongShape(f"claims rank {rank} of a world of {claimed}")
                else:
                    world_size = claimed
            reason = typed.text(ours.get("reason"), "bootstrap.reason", MAX_TEXT, optional=True, cut=True)
            dump_time_ns = typed.whole(ours.get("dump_time_ns"), "'bootstrap.dump_time_ns'", MAX_NS, optional=True)
        pg_config = self._pg_config(data.get("pg_config"))
        if "entries" not in data:
            raise WrongShape("has no 'entries'")
        raw = data["entries"]
        if not isinstance(raw, list):
            raise WrongShape(f"'entries' is a {typed.kind(raw)}, not a list")
        if len(raw) > MAX_ENTRIES:
            remarks.append(f"holds {len(raw)} entries: the newest {MAX_ENTRIES} are read")
            raw = raw[-MAX_ENTRIES:]
        seen: Dict[int, Entry] = {}  # id of a raw entry -> its Entry: a pickle's memo can repeat one many times
        entries = []
        for index, item in enumerate(raw):
            entry = seen.get(id(item))
            if entry is None:
                try:
                    entry = seen[id(item)] = self._entry(item)
                except WrongShape as error:
                    raise WrongShape(f"entry {index}: {error}") from None
            entries.append(entry)
        return Dump(name, rank, world_size, reason, dump_time_ns, tuple(entries), MappingProxyType(pg_config), None,
                    tuple(remarks))

    def _pg_config(self, config: Any) -> Dict[str, Ranks]:
        if config is None:
            return {}
        if not isinstance(config, dict):
            raise WrongShape(f"'pg_config' is a {typed.kind(config)}, not a dict")
        if len(config) > MAX_GROUPS:
            raise WrongShape(f"'pg_config' lists {len(config)} groups, more than {MAX_GROUPS}")
        groups = {}
        for group, about in config.items():
            group = self._short(group, "a pg_config group name")
            if not isinstance(about, dict):
                raise WrongShape(f"pg_config[{group!r}] is a {typed.kind(about)}, not a dict")
            if "ranks" in about:
                groups[group] = self._member_list(group, about["ranks"])
        return groups

    def _member_list(self, group: str, members: Any) -> Ranks:
        """A group's members, from torch's text (``"[0, 1, 2]"``) or a list of ints; parsed once per
        distinct text (compared, not hashed: an equal text of 60 KB costs a memcmp)."""
        known = self._members.setdefault(group, [])
        for text, ranks in known:
            if type(text) is type(members) and text == members:
                return ranks
        ranks = _parse_members(members, group)
        if len(known) < _DISTINCT_MEMBER_LISTS:
            known.append((members, ranks))
        return ranks

    def _entry(self, item: Any) -> Entry:
        if not isinstance(item, dict):
            raise WrongShape(f"a {typed.kind(item)}, not a dict")
        seq = typed.whole(item.get("collective_seq_id"), "'collective_seq_id'", MAX_NS)
        group = item.get("process_group")
        if not isinstance(group, (tuple, list)) or len(group) != 2:
            raise WrongShape(f"'process_group' is a {typed.kind(group)}, not a (name, description) pair")
        return Entry(
            group=self._short(group[0], "the process group's name"),
            group_desc=self._short(group[1], "the process group's description"),
            seq=seq,
            profiling_name=self._short(item.get("profiling_name"), "'profiling_name'"),
            is_p2p=typed.boolean(item.get("is_p2p", False), "'is_p2p'"),
            created_ns=typed.whole(item.get("time_created_ns"), "'time_created_ns'", MAX_NS, optional=True),
            input_sizes=self._intern(_sizes(item.get("input_sizes"), "input_sizes")),
            output_sizes=self._intern(_sizes(item.get("output_sizes"), "output_sizes")),
            input_dtypes=self._dtypes(item.get("input_dtypes"), "input_dtypes"),
            output_dtypes=self._dtypes(item.get("output_dtypes"), "output_dtypes"),
        )

    def _short(self, value: Any, what: str) -> str:
        return self._intern(typed.text(value, what, MAX_TEXT))

    def _dtypes(self, value: Any, what: str) -> Tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise WrongShape(f"'{what}' is a {typed.kind(value)}, not a list")
        return tuple(self._intern(typed.text(v, what, 32)) for v in value[:MAX_SHOWN])

    def _intern(self, text: str) -> str:
        return self._texts.setdefault(text, text)


def _sizes(value: Any, what: str) -> str:
    """``[[8], [2, 3]]``: at most MAX_SHOWN tensors of MAX_SHOWN dimensions are read and shown."""
    if value is None:
        return "?"
    if not isinstance(value, list):
        raise WrongShape(f"'{what}' is a {typed.kind(value)}, not a list")
    tensors = []
    for tensor in value[:MAX_SHOWN]:
        if not isinstance(tensor, list):
            raise WrongShape(f"'{what}' holds a {typed.kind(tensor)}, not a list of dimensions")
        dims = [str(typed.whole(d, f"'{what}'", MAX_NS)) for d in tensor[:MAX_SHOWN]]
        if len(tensor) > MAX_SHOWN:
            dims.append(f"...{len(tensor)} dims")
        tensors.append("[" + ", ".join(dims) + "]")
    if len(value) > MAX_SHOWN:
        tensors.append(f"...{len(value)} tensors")
    return "[" + ", ".join(tensors) + "]"


def _parse_members(members: Any, group: str) -> Ranks:
    """torch's ``"[0, 1, 2]"`` (or a list of ints) as Ranks: linear, without ``ast`` or ``eval``, and
    refused past MAX_WORLD_SIZE ranks before any is read."""
    where = f"pg_config[{group!r}]['ranks']"
    if isinstance(members, list):
        if len(members) > MAX_WORLD_SIZE:
            raise WrongShape(f"{where} lists {len(members)} ranks, more than {MAX_WORLD_SIZE}")
        return Ranks.of(typed.whole(r, where, MAX_WORLD_SIZE) for r in members)
    if not isinstance(members, str):
        raise WrongShape(f"{where} is a {typed.kind(members)}, not a list of ranks")
    # Each rank takes at most MAX_RANK_DIGITS digits and ", ": anything longer lists too many or is not a list.
    if len(members) > (MAX_RANK_DIGITS + 2) * MAX_WORLD_SIZE + 2:
        raise WrongShape(f"{where} is {len(members)} characters long, longer than any list of {MAX_WORLD_SIZE} ranks")
    text = members.strip()
    if len(text) < 2 or text[0] != "[" or text[-1] != "]":
        raise WrongShape(f"{where} is not a list of ranks such as [0, 1]")
    body = text[1:-1]
    if not body.strip():
        return Ranks()

    def ranks() -> Iterator[int]:
        position = 0
        for match in _RANK_ITEM.finditer(body):
            if match.start() != position:
                break
            position = match.end()
            rank = int(match.group(1))
            if rank >= MAX_WORLD_SIZE:
                raise WrongShape(f"{where} lists rank {rank}, beyond the {MAX_WORLD_SIZE} believed")
            yield rank
        if position != len(body):
            raise WrongShape(f"{where} is not a list of ranks such as [0, 1]")

    return Ranks.of(ranks())


def read(path: Path) -> Dump:
    """One dump, on its own (:meth:`Reader.read`)."""
    return Reader().read(path)


# -- a run directory ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Scan:
    """What a directory's dumps are: this run's (read), earlier runs' (stale: left in place, not
    analysed) and those that could not be read."""

    current: Tuple[Dump, ...]  # by rank
    stale: Tuple[str, ...]  # file names, by rank
    unreadable: Tuple[str, ...]  # "name: reason", by rank
    since_ns: Optional[int]  # the run's start they were judged by; None: every dump counted as this run's


def dump_paths(run_dir: Path) -> Dict[int, Path]:
    """``{rank: path}`` of the files directly in ``run_dir`` named like a dump; any other name is ignored."""
    found = {}
    try:
        with os.scandir(run_dir) as listing:
            for item in listing:
                if item.name.startswith(DUMP_PREFIX) and (rank := rank_of(item.name)) is not None:
                    found[rank] = Path(item.path)
    except OSError:  # gone, or not a directory: no dumps
        return {}
    return dict(sorted(found.items()))


def is_current(dump: Dump, since_ns: Optional[int]) -> bool:
    """Whether the dump is this run's: made at or after the run's start (unknown start: yes).

    Every rank's dump comes after the rendezvous, which waits for every rank's start: so no dump of
    this run is older than the start of any of its ranks, on one clock."""
    if since_ns is None:
        return True
    made = dump.time_ns
    return made is not None and made >= since_ns


def scan(run_dir: Path, since_ns: Optional[int]) -> Scan:
    """Read every dump in ``run_dir`` and sort them by run. Memory: the typed dumps of this run (no
    stack frames, shared texts) and one dump's raw data at a time."""
    reader, current, stale, unreadable = Reader(), [], [], []
    for path in dump_paths(run_dir).values():
        try:
            dump = reader.read(path)
        except Unreadable as error:
            unreadable.append(str(error))
            continue
        if is_current(dump, since_ns):
            current.append(dump)
        else:
            stale.append(dump.name)
    return Scan(tuple(current), tuple(stale), tuple(unreadable), since_ns)


def run_started_ns(run_dir: Path) -> Optional[int]:
    """When this run started (wall-clock ns), from the reports in ``run_dir``: the latest start any of
    them records. The latest, because a report left by an earlier run with more ranks is older, and
    no rank of this run dumps before every rank has started (the rendezvous waits for all). None when
    no report records one: every dump then counts as this run's."""
    from bootstrap.doors import records  # only here: the job's recorder and its dumps need no report reader

    starts = []
    for path in records.report_paths(Path(run_dir)):
        try:
            started = records.read_report(path).timings.started_ns
        except Unreadable:
            continue
        if isinstance(started, int) and not isinstance(started, bool):
            starts.append(started)
    return max(starts, default=None)
