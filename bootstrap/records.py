"""The job's record, ``bootstrap.json``, as a typed value: :class:`Report`. Pure, apart from :func:`read_report`.

Every section is a dataclass whose fields carry the JSON names (``from`` is ``Resolved.from_``),
in the order they are written. :meth:`Report.to_json` gives the JSON the bootstrap has always
written; :meth:`Report.from_json` reads it back strictly:

- a field of the wrong type raises :class:`bootstrap.inbound.Unreadable` naming it
  (``job.metrics.loss: not a finite number``, ``checks[1].ok: not true or false``);
- numbers must fit what the bootstrap writes: counts are whole numbers from 0 to 2**53,
  metrics finite floats, any other whole number within 64 bits (a 400-digit integer is not one);
- an absent field takes its default, so reports written before a field existed still read;
  a key this version does not know is ignored, so reports of a later version read too.

:func:`read_report` reads a file through :mod:`bootstrap.inbound` (bounded size, strict JSON,
no NaN, bounded nesting) and raises only ``Unreadable``. The report's fields are documented in
docs/report.md.
"""

import dataclasses
import math
import os
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, NewType, Optional, Tuple

from bootstrap import inbound
from bootstrap.inbound import Unreadable

SCHEMA_VERSION = 2
REPORT_NAME = "bootstrap.json"

# A whole number from 0 to 2**53: a job number, a rank, a thread count. Past 2**53 it would not
# survive a float in another reader, and none of these is ever that large.
Count = NewType("Count", int)
_MAX_COUNT = 2**53
_MAX_INT = 2**63  # seeds, ports, nanoseconds: within 64 bits


# -- reading one value ------------------------------------------------------------------------
class _Wrong(Exception):
    """A value of the wrong shape; ``path`` grows (from the inside out) on its way up to the report."""

    def __init__(self, reason: str, path: Tuple[Any, ...] = ()):
        super().__init__(reason)
        self.reason, self.path = reason, path

    def at(self, key: Any) -> "_Wrong":
        return _Wrong(self.reason, (key, *self.path))

    def where(self, whole: str) -> str:
        parts = []
        for key in self.path:
            if isinstance(key, int):
                parts.append(f"[{key}]")
            else:
                shown = key if key.isprintable() else repr(key)[1:-1]  # the message is one line
                shown = shown if len(shown) <= 40 else shown[:40] + "..."  # a hostile key may be a megabyte long
                parts.append(f".{shown}" if parts else shown)
        return "".join(parts) or whole


# JSON parses to exactly these types, so ``type(v) is`` is both strict and fast (bool is not an int here).
def _text(value: Any) -> str:
    if type(value) is str:
        return value
    raise _Wrong("not text")


def _text_or_none(value: Any) -> Optional[str]:
    if value is None or type(value) is str:
        return value
    raise _Wrong("not text or null")


def _int(value: Any) -> int:
    if type(value) is int and -_MAX_INT <= value < _MAX_INT:
        return value
    raise _Wrong("not a whole number within 64 bits")


def _count(value: Any) -> int:
    if type(value) is int and 0 <= value < _MAX_COUNT:
        return value
    raise _Wrong("not a whole number from 0 to 2**53")


def _flag(value: Any) -> bool:
    if value is True or value is False:
        return value
    raise _Wrong("not true or false")


def _number(value: Any) -> float:
    if type(value) is float:
        if math.isfinite(value):  # 1e999 parses to inf
            return value
    elif type(value) is int:
        try:
            return float(value)
        except OverflowError:  # a 400-digit integer
            pass
    raise _Wrong("not a finite number")


def _object(value: Any) -> dict:
    if type(value) is dict:
        return value
    raise _Wrong("not an object")


def _any(value: Any) -> Any:
    return value


def _texts(value: Any) -> List[str]:
    if type(value) is list:
        for index, item in enumerate(value):
            if type(item) is not str:
                raise _Wrong("not text", (index,))
        return list(value)
    raise _Wrong("not a list")


def _or_none(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def read_or_none(value: Any) -> Any:
        return None if value is None else read(value)

    return read_or_none


def _list_of(read: Callable[[Any], Any]) -> Callable[[Any], list]:
    def read_list(value: Any) -> list:
        if type(value) is not list:
            raise _Wrong("not a list")
        items = []
        for index, item in enumerate(value):
            try:
                items.append(read(item))
            except _Wrong as wrong:
                raise wrong.at(index) from None
        return items

    return read_list


def _mapping_of(read: Callable[[Any], Any]) -> Callable[[Any], dict]:
    def read_mapping(value: Any) -> dict:
        if type(value) is not dict:
            raise _Wrong("not an object")
        items = {}
        for key, item in value.items():
            try:
                items[key] = read(item)
            except _Wrong as wrong:
                raise wrong.at(key) from None
        return items

    return read_mapping


_READERS: Dict[Any, Callable[[Any], Any]] = {
    str: _text, int: _int, Count: _count, bool: _flag, float: _number, Any: _any,
    Optional[str]: _text_or_none, List[str]: _texts, Dict[str, Any]: _object,
}


# Types whose check is the type alone, the value kept as it is: checked in the section's loop, no call.
_SIMPLE: Dict[Any, Tuple[type, ...]] = {
    str: (str,), Optional[str]: (str, type(None)), bool: (bool,), Optional[bool]: (bool, type(None)),
    Dict[str, Any]: (dict,), Optional[Dict[str, Any]]: (dict, type(None)),
    Optional[int]: (type(None),), Optional[Count]: (type(None),),  # and a whole number within _RANGE
}
# Whole numbers checked in the loop too: [low, high).
_RANGE: Dict[Any, Tuple[int, int]] = {
    int: (-_MAX_INT, _MAX_INT), Optional[int]: (-_MAX_INT, _MAX_INT), Count: (0, _MAX_COUNT),
    Optional[Count]: (0, _MAX_COUNT),
}


def _reader(hint: Any) -> Callable[[Any], Any]:
    """The reader for a field's type, made once when its section is defined."""
    if hint in _READERS:
        return _READERS[hint]
    if isinstance(hint, type) and hasattr(hint, "_read"):  # a section
        return hint._read
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union and len(args) == 2 and type(None) in args:
        return _or_none(_reader(next(a for a in args if a is not type(None))))
    if origin is list:
        return _list_of(_reader(args[0]))
    if origin is dict and args[0] is str:
        return _mapping_of(_reader(args[1]))
    raise TypeError(f"no reader for {hint!r}")  # a programming error, at import


# -- sections ---------------------------------------------------------------------------------
_REQUIRED = object()


def _when_set(default: Any = None, factory: Optional[Callable[[], Any]] = None) -> Any:
    """A field written only when it differs from its default (``withheld``, ``error``)."""
    if factory is not None:
        return field(default_factory=factory, metadata={"omit_default": True})
    return field(default=default, metadata={"omit_default": True})


def _constant(value: Any) -> Callable[[], Any]:
    def default() -> Any:
        return value

    return default


def _section(cls: type) -> type:
    """Make ``cls`` a dataclass that reads itself from JSON (``_read``) and writes itself (``to_json``)."""
    cls = dataclass(cls, kw_only=True)  # fields in the order the JSON holds them, defaults or not
    hints = {f.name: f.type for f in dataclasses.fields(cls)}  # evaluated types: no __future__ annotations here
    spec = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default: Any = _constant(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory
        else:
            default = _REQUIRED
        spec.append((f.metadata.get("json", f.name), f.name, _reader(hints[f.name]), default,
                     f.metadata.get("omit_default", False), _SIMPLE.get(hints[f.name], ()),
                     *_RANGE.get(hints[f.name], (0, 0))))
    cls._spec = spec = tuple(spec)
    new = object.__new__

    def _read(value: Any) -> Any:
        if type(value) is not dict:
            raise _Wrong("not an object")
        section = new(cls)  # the values are checked here: no __init__ to run them through again
        values = section.__dict__
        get = value.get
        for key, attribute, read, default, _, simple, low, high in spec:
            item = get(key, _REQUIRED)
            # Most fields are text, a flag, null or a count: checked here, without a call (a summary reads
            # 10,000 reports); anything else, and any value of the wrong type, goes to the field's reader.
            if type(item) in simple or type(item) is int and low <= item < high:
                values[attribute] = item
            elif item is not _REQUIRED:
                try:
                    values[attribute] = read(item)
                except _Wrong as wrong:
                    raise wrong.at(key) from None
            elif default is _REQUIRED:
                raise _Wrong("missing", (key,))
            else:
                values[attribute] = default()
        return section

    cls._read = staticmethod(_read)
    return cls


def _to_json(value: Any) -> Any:
    if hasattr(value, "_spec"):
        written = {}
        for key, attribute, _, default, omit_default, *_ in value._spec:
            item = getattr(value, attribute)
            if omit_default and item == default():
                continue
            written[key] = _to_json(item)
        return written
    if isinstance(value, (list, tuple)):
        return [_to_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _to_json(item) for key, item in value.items()}
    if isinstance(value, str):
        return str(value)  # a TextEnum as its plain value
    return value


class _Section:
    _read: Callable[[Any], Any]  # made by @_section

    @classmethod
    def from_json(cls, data: Any) -> Any:
        """The section from parsed JSON; raises :class:`~bootstrap.inbound.Unreadable` naming the first wrong
        field (``job.metrics.loss: not a finite number``)."""
        try:
            return cls._read(data)
        except _Wrong as wrong:
            raise Unreadable(f"{wrong.where('the ' + cls.__name__)}: {wrong.reason}") from None

    def to_json(self) -> Dict[str, Any]:
        """This section as the report's JSON holds it."""
        return _to_json(self)

    def __getitem__(self, key: str) -> Any:
        """Read-only, as before the report was typed: ``session.report["threads"]["intra_op"]``."""
        return self.to_json()[key]


@_section
class Resolved(_Section):
    """``resolved``: what ``env=auto`` chose (shown as ``auto -> cpu_debug (no CUDA device)``)."""

    from_: str = field(metadata={"json": "from"})
    preset: str
    reason: str

    def describe(self) -> str:
        return f"{self.from_} -> {self.preset} ({self.reason})"


@_section
class Found(_Section):
    """``found``: the machine."""

    python: Optional[str] = None
    torch: Optional[str] = None
    cuda: Optional[str] = None
    nccl: Optional[str] = None
    cudnn: Optional[str] = None
    compute_capability: Optional[str] = None
    gpus: Count = 0
    gpu_names: List[str] = field(default_factory=list)
    cpus: Optional[Count] = None
    cpus_usable: Optional[Count] = None
    cpu_affinity: Optional[str] = None


@_section
class Check(_Section):
    """One entry of ``checks``: a requirement and what was found."""

    name: str
    required: str = ""
    found: Optional[str] = None
    ok: bool


@_section
class LintFinding(_Section):
    """One entry of ``lint`` (docs/lint.md)."""

    name: str
    kind: str
    message: str


@_section
class Var(_Section):
    """One entry of ``vars``: a variable's value (masked if secret), where it came from, whether it took effect."""

    value: str
    source: str
    effective: bool
    note: str = ""
    withheld: bool = _when_set(False)


@_section
class ThreadCounts(_Section):
    intra_op: Optional[Count] = None
    inter_op: Optional[Count] = None


@_section
class Threads(_Section):
    """``threads``: in effect once applied (else planned), as requested, and whether applied."""

    intra_op: Optional[Count] = None
    inter_op: Optional[Count] = None
    requested: ThreadCounts = field(default_factory=ThreadCounts)
    applied: bool = False
    intra_op_at_end: Optional[Count] = _when_set()  # the task changed the count (Lightning does)


@_section
class Torch(_Section):
    """``torch``: numerics."""

    matmul_precision: Optional[str] = None
    cudnn_allow_tf32: Optional[bool] = None
    cudnn_benchmark: Optional[bool] = None
    deterministic: Optional[bool] = None


@_section
class GroupAtEnd(_Section):
    """``distributed.group_at_end``: the process group in use when the job ended, whoever made it."""

    owner: Optional[str] = None  # bootstrap | framework
    backend: Optional[str] = None
    world_size: Optional[Count] = None
    rank: Optional[Count] = None


@_section
class Distributed(_Section):
    """``distributed``: how the process was launched, the group, and after a failure under a group the dumps."""

    launcher: str = "single"
    rank: Count = 0
    local_rank: Count = 0
    world_size: Count = 1
    local_world_size: Count = 1
    node_rank: Count = 0
    master_addr: Optional[str] = None
    master_port: Optional[int] = None
    job_id: Optional[str] = None
    backend: Optional[str] = None
    process_group: str = "none"  # created | existing | none, when the job started
    teardown: Optional[str] = None  # destroyed | left, at job end
    mesh: Optional[Dict[str, Count]] = None
    group_at_end: Optional[GroupAtEnd] = None
    hang: Optional[Dict[str, Any]] = None  # bootstrap.hang's findings, as it writes them


@_section
class Seed(_Section):
    value: Optional[int] = None
    global_seed: Optional[int] = None
    generators: List[str] = field(default_factory=list)
    data_seed: Optional[int] = None
    task_seed: Optional[int] = None


@_section
class Timings(_Section):
    bootstrap_s: Optional[float] = None  # the bootstrap's own time at job start
    started_ns: Optional[int] = None  # time.time_ns() when the job's bootstrap started; null in a preview


@_section
class Job(_Section):
    """``job``: how the job ended (``status``: a ``bootstrap.report.JobStatus`` value) and the task's metrics."""

    num: Optional[Count] = None
    status: Optional[str] = None
    metrics: Optional[Dict[str, float]] = None
    metrics_skipped: List[str] = _when_set(factory=list)
    error: Optional[str] = _when_set()


@_section
class Report(_Section):
    """``bootstrap.json`` (docs/report.md)."""

    schema_version: int = SCHEMA_VERSION
    preset: Optional[str] = None
    resolved: Optional[Resolved] = None
    overrides: List[str] = field(default_factory=list)
    device: Optional[str] = None
    found: Found = field(default_factory=Found)
    checks: List[Check] = field(default_factory=list)
    lint: List[LintFinding] = field(default_factory=list)
    vars: Dict[str, Var] = field(default_factory=dict)
    threads: Threads = field(default_factory=Threads)
    torch: Torch = field(default_factory=Torch)
    distributed: Distributed = field(default_factory=Distributed)
    seed: Seed = field(default_factory=Seed)
    warnings: List[str] = field(default_factory=list)
    timings: Timings = field(default_factory=Timings)
    job: Job = field(default_factory=Job)

    @classmethod
    def from_json(cls, data: Any) -> "Report":
        """A report from parsed JSON; raises :class:`~bootstrap.inbound.Unreadable` naming the first wrong field."""
        try:
            return cls._read(data)
        except _Wrong as wrong:
            raise Unreadable(f"{wrong.where('the report')}: {wrong.reason}") from None

    @property
    def checks_ok(self) -> bool:
        return all(check.ok for check in self.checks)


# -- files ------------------------------------------------------------------------------------
_RANK_FILE = re.compile(r"bootstrap\.rank([0-9]{1,9})\.json")


def report_name(rank: int, world_size: int) -> str:
    """``bootstrap.json`` for a single process; ``bootstrap.rank<N>.json`` for each rank of a group."""
    return REPORT_NAME if world_size == 1 else f"bootstrap.rank{rank}.json"


def report_names(names: Iterable[str]) -> List[str]:
    """Of a directory's entry names, the reports': ``bootstrap.json``, then ``bootstrap.rank<N>.json`` in
    rank order. Only names the bootstrap writes count: ``bootstrap.rankX.json`` is a stray file."""
    names = list(names)
    ranks = sorted((int(m.group(1)), name) for name in names
                   if name.startswith("bootstrap.rank") and (m := _RANK_FILE.fullmatch(name)))
    return ([REPORT_NAME] if REPORT_NAME in names else []) + [name for _, name in ranks]


def report_paths(job_dir: os.PathLike) -> List[Path]:
    """The reports in ``job_dir`` (see :func:`report_names`); none when it cannot be listed."""
    try:
        names = os.listdir(job_dir)
    except OSError:
        return []
    return [Path(job_dir) / name for name in report_names(names)]


def read_report(path: os.PathLike) -> Report:
    """The report in ``path``; raises only :class:`~bootstrap.inbound.Unreadable` (``bootstrap.json: job.num: ...``)."""
    data = inbound.read_json(path)
    try:
        return Report.from_json(data)
    except Unreadable as error:
        raise Unreadable(f"{os.path.basename(path)}: {error}") from None
