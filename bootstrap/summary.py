"""The sweep summary: one row per job, gathered from the job directories on disk.

Hydra hands ``on_multirun_end`` no job results, and joblib and submitit jobs run
in other processes, so the per-job ``bootstrap.json`` files are the only record
that works under every launcher. A job directory without a report still gets a row.

Columns: the job, its overrides, status and threads, then every numeric metric the
jobs reported (in order of first appearance), then ``best``: the job that did best
on the objective (see :func:`objective_for`). Pure apart from reading and writing files.

**Only the latest sweep.** A reused ``hydra.sweep.dir`` still holds the job directories
of earlier sweeps. Hydra's basic sweeper writes ``<sweep_dir>/multirun.yaml`` when a
sweep starts, before its first job, and each job writes ``.hydra/overrides.yaml`` when
it starts; so a job belongs to the latest sweep when its ``overrides.yaml`` is no
older than the nearest ``multirun.yaml`` above it (:func:`scan`). Without a
``multirun.yaml`` (other sweepers, hand-made directories) every job is listed; so it
is when no job is newer than it (a directory copied without its timestamps: copy
sweeps with ``cp -p`` or ``rsync -a``). The markdown says how many were left out.

**Hostile files.** Every file is read as untrusted: a report (or ``overrides.yaml``)
that cannot be read, is not JSON (YAML), or holds a field this module reads in the
wrong shape (``job: 5``, ``checks: "x"``, ``metrics: {"a": "b"}``, a number outside
float range such as ``1e999`` or a 400-digit integer) gives the row the status
``unreadable``: it keeps what is safely known (the job's name, its overrides, its
thread counts) but no metrics, so it is never ranked and never the best. Files that
are not reports (``bootstrap.rankX.json``) are ignored. Every text cell is masked
(:func:`shown_override`, :func:`shown_text`) and made printable, one line in the
markdown and no formula in the CSV. :func:`write` raises only :class:`SummaryError`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

from bootstrap.masking import masked_line, masked_override
from bootstrap.report import REPORT_NAME, JobStatus, write_text_atomic
from bootstrap.textenum import TextEnum

CSV_NAME = "sweep_summary.csv"
MD_NAME = "sweep_summary.md"
MULTIRUN_NAME = "multirun.yaml"  # Hydra's basic sweeper writes it into the sweep directory when a sweep starts
OVERRIDES = Path(".hydra") / "overrides.yaml"
MAX_FILE_BYTES = 64 * 2**20  # a report is a few KiB; anything this large is not one

# The objective when none is set: train_stub's throughput (higher is better), else a
# task's returned number, which sweepers such as Optuna minimise by default (a loss).
AUTO_OBJECTIVES: Tuple[Tuple[str, str], ...] = (("samples_per_s", "max"), ("return", "min"))
DEFAULT_MODES = dict(AUTO_OBJECTIVES)  # any other metric: min
MODES = ("max", "min")


class RowStatus(TextEnum):
    """A row's status: the job's own (:class:`bootstrap.report.JobStatus`), or what the summary makes of its files.

    A report may hold any text as its status; an unexpected one is shown as it is, masked."""

    COMPLETED = JobStatus.COMPLETED.value
    FAILED = JobStatus.FAILED.value
    CHECK_FAILED = JobStatus.CHECK_FAILED.value
    INTERRUPTED = JobStatus.INTERRUPTED.value
    COMPLETED_CHECK_FAILED = "completed, check failed"  # ran with on_mismatch=warn
    INCOMPLETE = "incomplete"  # the report still says running: the job was killed (SIGKILL) or crashed hard
    UNREADABLE = "unreadable"  # a file that cannot be read, or holds the wrong shape of data
    NO_REPORT = "no report"
    UNKNOWN = "unknown"  # a report without a status


class SummaryError(Exception):
    """The summary files could not be written; the message is one line."""


@dataclass(frozen=True)
class Row:
    job: str
    overrides: str
    status: str
    intra_op: Optional[int]
    inter_op: Optional[int]
    metrics: Dict[str, float] = field(default_factory=dict)
    best: bool = False


@dataclass(frozen=True)
class Job:
    """What is safely known of one job directory."""

    directory: Path
    overrides: Optional[List[str]]  # .hydra/overrides.yaml as Hydra recorded it, unmasked; None: unreadable
    reports: List[dict]  # the shape-checked reports, rank order; empty when none or any is unreadable
    row: Row


_STATUS_ORDER = (RowStatus.FAILED, RowStatus.CHECK_FAILED, RowStatus.INTERRUPTED, RowStatus.INCOMPLETE,
                 RowStatus.UNREADABLE, RowStatus.UNKNOWN, RowStatus.COMPLETED)


def _severity(status: str) -> int:
    return _STATUS_ORDER.index(status) if status in _STATUS_ORDER else 0  # an unexpected status: show it


# Control characters (a terminal escape in a printed table), bidi controls and lone
# surrogates (which cannot be encoded, so the file could not be written) become U+FFFD.
# Tab, LF and CR stay: the CSV quotes them, the markdown folds them into spaces.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str) -> str:
    return _UNPRINTABLE.sub("\ufffd", text)


def one_line(text: Any) -> str:
    return " ".join(printable(str(text)).split())


# -- reading the files -------------------------------------------------------------------------
class _Unreadable(Exception):
    """A file that is absent-but-named, unreadable, not parseable, or of the wrong shape."""


def _read_text(path: Path) -> str:
    try:
        info = path.stat()  # follows a link; a dangling one is unreadable
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:  # a directory, a FIFO, a device
            raise _Unreadable(path.name)
        with open(path, "rb") as f:
            return f.read(MAX_FILE_BYTES + 1).decode("utf-8")
    except (OSError, ValueError) as error:  # ValueError: UnicodeDecodeError
        raise _Unreadable(path.name) from error


def _load_json(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except (ValueError, RecursionError) as error:  # ValueError: not JSON, or an int past Python's digit limit
        raise _Unreadable(path.name) from error


def read_overrides(job_dir: Path) -> Optional[List[str]]:
    """``.hydra/overrides.yaml``: a list of strings, or None when it is anything else."""
    try:
        value = yaml.safe_load(_read_text(Path(job_dir) / OVERRIDES))
    except _Unreadable:
        return None
    except Exception:  # noqa: BLE001 - untrusted YAML: YAMLError, a bad date's ValueError, RecursionError, ...
        return None
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(o, str) for o in value):
        return value
    return None


_RANK_FILE = re.compile(r"bootstrap\.rank([0-9]{1,9})\.json")


def report_paths(job_dir: Path) -> List[Path]:
    """``bootstrap.json`` if present, then ``bootstrap.rank<N>.json`` in rank order.

    Only names the bootstrap writes count: ``bootstrap.rankX.json`` is a stray file."""
    job_dir = Path(job_dir)
    try:
        names = os.listdir(job_dir)
    except OSError:
        return []
    ranks = sorted((int(m.group(1)), name) for name in names if (m := _RANK_FILE.fullmatch(name)))
    first = [job_dir / REPORT_NAME] if REPORT_NAME in names else []
    return first + [job_dir / name for _, name in ranks]


def read_reports(job_dir: Path) -> List[dict]:
    """The job's reports as parsed JSON, rank order; raises :class:`_Unreadable` if any cannot be read."""
    return [_load_json(path) for path in report_paths(job_dir)]


# -- a report's fields, shape-checked ------------------------------------------------------------
_MAX_COUNT = 2**53  # a job number or thread count past this is not one (and would not survive a float)


def _shape(ok: bool, what: str) -> None:
    if not ok:
        raise _Unreadable(what)


def _count(value: Any, what: str) -> Optional[int]:
    if value is None:
        return None
    _shape(isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_COUNT, what)
    return value


def _number(value: Any, what: str) -> float:
    _shape(isinstance(value, (int, float)) and not isinstance(value, bool), what)
    try:
        number = float(value)
    except OverflowError as error:  # a 400-digit integer
        raise _Unreadable(what) from error
    _shape(math.isfinite(number), what)  # 1e999 parses to inf; JSON has no NaN but Python's parser takes it
    return number


def _mapping(value: Any, what: str) -> dict:
    if value is None:
        return {}
    _shape(isinstance(value, dict), what)
    return value


def _text(value: Any, what: str) -> Optional[str]:
    _shape(value is None or isinstance(value, str), what)
    return value


@dataclass(frozen=True)
class _Fields:
    num: Optional[int]
    status: str
    metrics: Dict[str, float]
    checks_ok: bool
    overrides: List[str]
    intra_op: Optional[int]
    inter_op: Optional[int]


def check_report(report: Any) -> _Fields:
    """The fields the summary and ``tune`` read, each of the shape the bootstrap writes;
    raises :class:`_Unreadable` naming the first that is not."""
    _shape(isinstance(report, dict), "the report")
    job = _mapping(report.get("job"), "job")
    status = _text(job.get("status"), "job.status") or RowStatus.UNKNOWN
    metrics = {}
    for name, value in _mapping(job.get("metrics"), "job.metrics").items():
        metrics[name] = _number(value, f"job.metrics.{name}")
    checks = report.get("checks") or []
    _shape(isinstance(checks, list) and all(isinstance(c, dict) and isinstance(c.get("ok"), bool) for c in checks),
           "checks")
    overrides = report.get("overrides") or []
    _shape(isinstance(overrides, list) and all(isinstance(o, str) for o in overrides), "overrides")
    threads = _mapping(report.get("threads"), "threads")
    _text(report.get("preset"), "preset")
    resolved = report.get("resolved")
    if resolved is not None:  # {"from": "auto", "preset": ..., "reason": ...}
        _text(_mapping(resolved, "resolved").get("preset"), "resolved.preset")
    _mapping(report.get("found"), "found")
    return _Fields(
        num=_count(job.get("num"), "job.num"),
        # "running": it ended without on_job_end (killed, crashed hard)
        status=RowStatus.INCOMPLETE if status == JobStatus.RUNNING else status,
        metrics=metrics,
        checks_ok=all(c["ok"] for c in checks),
        overrides=overrides,
        intra_op=_count(threads.get("intra_op"), "threads.intra_op"),
        inter_op=_count(threads.get("inter_op"), "threads.inter_op"),
    )


def _joined(overrides: Sequence[str]) -> str:
    return " ".join(masked_override(o) for o in overrides)


def row_from_reports(job_dir: Path, reports: List[dict], overrides: Optional[List[str]] = None) -> Row:
    """One row per job; with several ranks, rank 0's numbers and the worst rank's status.

    A report of the wrong shape gives ``unreadable`` (see the module's docstring)."""
    try:
        fields = [check_report(r) for r in reports]
    except _Unreadable:
        return _unreadable_row(job_dir, reports, overrides)
    first = fields[0]
    status = min((f.status for f in fields), key=_severity)
    if status == RowStatus.COMPLETED and not first.checks_ok:
        status = RowStatus.COMPLETED_CHECK_FAILED
    return Row(
        job=str(first.num) if first.num is not None else masked_line(Path(job_dir).name),
        overrides=_joined(first.overrides if first.overrides or overrides is None else overrides),
        status=masked_line(status),
        intra_op=first.intra_op,
        inter_op=first.inter_op,
        metrics=first.metrics,
    )


def _unreadable_row(job_dir: Path, reports: List[Any], overrides: Optional[List[str]]) -> Row:
    """What can be said of a job some file of which is unreadable: never its metrics."""
    first = reports[0] if reports and isinstance(reports[0], dict) else {}

    def safely(read, default=None):
        try:
            return read()
        except _Unreadable:
            return default

    num = safely(lambda: _count(_mapping(first.get("job"), "job").get("num"), "job.num"))
    threads = safely(lambda: _mapping(first.get("threads"), "threads"), {})
    if overrides is None:
        listed = first.get("overrides")
        overrides = listed if isinstance(listed, list) and all(isinstance(o, str) for o in listed) else []
    return Row(
        job=str(num) if num is not None else masked_line(Path(job_dir).name),
        overrides=_joined(overrides),
        status=RowStatus.UNREADABLE,
        intra_op=safely(lambda: _count(threads.get("intra_op"), "threads.intra_op")),
        inter_op=safely(lambda: _count(threads.get("inter_op"), "threads.inter_op")),
    )


def read_job(job_dir: Path) -> Job:
    """Everything safely known of one job directory; never raises for what is in it."""
    job_dir = Path(job_dir)
    overrides = read_overrides(job_dir)
    reports, broken = [], False
    for path in report_paths(job_dir):
        try:
            reports.append(_load_json(path))
        except _Unreadable:  # a directory named bootstrap.json, binary garbage, 1e999999 digits, ...
            broken = True
    if broken:
        return Job(job_dir, overrides, [], _unreadable_row(job_dir, reports, overrides))
    if not reports:
        status = RowStatus.NO_REPORT if overrides is not None else RowStatus.UNREADABLE
        return Job(job_dir, overrides, [], Row(masked_line(job_dir.name), _joined(overrides or []), status, None, None))
    row = row_from_reports(job_dir, reports, overrides)
    if overrides is None and row.status != RowStatus.UNREADABLE:  # a report, but Hydra's record of the job is garbage
        row = replace(row, status=RowStatus.UNREADABLE, metrics={})
    return Job(job_dir, overrides, reports if row.status != RowStatus.UNREADABLE else [], row)


# -- which job directories: the latest sweep's ----------------------------------------------------
def _all_job_dirs(sweep_dir: Path) -> List[Path]:
    """Every directory under ``sweep_dir`` (itself included) holding ``.hydra/overrides.yaml``,
    whatever that is; links to directories are not followed, unreadable directories skipped."""
    found = []
    for parent, dirs, files in os.walk(sweep_dir):  # errors are ignored; links not followed
        if ".hydra" in dirs or ".hydra" in files:
            job_dir = Path(parent)
            if os.path.lexists(job_dir / OVERRIDES):
                found.append(job_dir)
    return sorted(found)


def _mtime_ns(path: Path) -> Optional[int]:
    try:
        return path.stat().st_mtime_ns
    except (OSError, ValueError):
        return None


def _sweep_start(job_dir: Path, sweep_dir: Path) -> Optional[int]:
    """When the sweep that wrote ``job_dir`` started: the nearest ``multirun.yaml`` at or above it."""
    for directory in (job_dir, *job_dir.parents):
        path = directory / MULTIRUN_NAME
        try:
            if path.is_file():
                return _mtime_ns(path)
        except OSError:
            pass
        if directory == sweep_dir:
            break
    return None


def scan(sweep_dir: Path) -> Tuple[List[Path], int]:
    """The job directories of the latest sweep in ``sweep_dir``, and how many older ones were left out."""
    sweep_dir = Path(sweep_dir)
    every = _all_job_dirs(sweep_dir)
    latest = []
    for job_dir in every:
        started = _sweep_start(job_dir, sweep_dir)
        written = _mtime_ns(job_dir / OVERRIDES)
        if started is None or written is None or written >= started:
            latest.append(job_dir)
    if not latest:  # copied without timestamps, or a sweep none of whose jobs started: show what there is
        return every, 0
    return latest, len(every) - len(latest)


def job_dirs(sweep_dir: Path) -> List[Path]:
    """The job directories of the latest sweep in ``sweep_dir`` (see :func:`scan`)."""
    return scan(sweep_dir)[0]


def jobs(sweep_dir: Path) -> Tuple[List[Job], int]:
    """The latest sweep's jobs, and how many job directories of earlier sweeps were left out."""
    directories, older = scan(sweep_dir)
    return [read_job(d) for d in directories], older


def collect(sweep_dir: Path, objective: Optional[str] = None, mode: Optional[str] = None) -> List[Row]:
    return rank([job.row for job in jobs(sweep_dir)[0]], objective, mode)


# -- ranking --------------------------------------------------------------------------------------
def objective_for(rows: Sequence[Row], objective: Optional[str] = None,
                  mode: Optional[str] = None) -> Optional[Tuple[str, str]]:
    """The metric to rank by and its direction.

    ``objective`` None picks the first of :data:`AUTO_OBJECTIVES` that a job reported.
    ``mode`` None is :data:`DEFAULT_MODES`' direction, else ``min`` (a loss).
    """
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode {mode!r}: use max or min")
    if objective is None:
        reported = {name for row in rows for name in row.metrics}
        auto = next(((name, auto_mode) for name, auto_mode in AUTO_OBJECTIVES if name in reported), None)
        return (auto[0], mode or auto[1]) if auto else None
    return objective, mode or DEFAULT_MODES.get(objective, "min")


def score(row: Row, objective: Tuple[str, str]) -> Optional[float]:
    """The row's objective value, oriented so that higher is better; None when it has none."""
    value = row.metrics.get(objective[0])
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return None
    return value if objective[1] == "max" else -value


def job_order(job: str):
    """Job numbers in numeric order, then any other name."""
    if job.isascii() and job.isdigit() and len(job) < 19:
        return (0, int(job), "")
    return (1, 0, job)


def rank(rows: List[Row], objective: Optional[str] = None, mode: Optional[str] = None) -> List[Row]:
    """Best first; jobs without the objective's metric last, in job order. Marks the best."""
    chosen = objective_for(rows, objective, mode)

    def key(row: Row):
        value = score(row, chosen) if chosen else None
        return (value is None, -(value or 0.0), job_order(row.job))

    ordered = sorted(rows, key=key)
    if ordered and chosen and score(ordered[0], chosen) is not None:
        ordered[0] = replace(ordered[0], best=True)
    return ordered


def metric_names(rows: Sequence[Row]) -> List[str]:
    """Every metric any job reported, in order of first appearance by job number."""
    names: Dict[str, None] = {}
    for row in sorted(rows, key=lambda r: job_order(r.job)):
        names.update(dict.fromkeys(row.metrics))
    return list(names)


# -- the files -----------------------------------------------------------------------------------
def _table(rows: Sequence[Row]) -> Tuple[List[str], List[list]]:
    names = metric_names(rows)
    header = ["job", "overrides", "status", "intra_op", "inter_op", *(masked_line(n) for n in names), "best"]
    body = [[r.job, r.overrides, r.status, r.intra_op, r.inter_op, *(r.metrics.get(n) for n in names), r.best]
            for r in rows]
    return header, body


def _plain(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else ""
    return "" if value is None else printable(str(value))


def _csv_cell(value) -> str:
    # OWASP's CSV-injection guidance: a spreadsheet runs a text cell starting with one
    # of these as a formula (some after leading spaces). Numbers stay numbers (a negative
    # loss is not a formula).
    text = _plain(value)
    if isinstance(value, str) and text.lstrip(" ").startswith(("=", "+", "-", "@", "\t", "\r", "\n")):
        return "'" + text
    return text


def _md_cell(value) -> str:
    if isinstance(value, float) and not isinstance(value, bool):
        text = f"{value:.0f}" if 1000 <= abs(value) < 1e15 else f"{value:.4g}"
    else:
        text = _plain(value)
    return " ".join(text.split()).replace("|", "\\|")  # one line, no stray column breaks


def to_csv(rows: List[Row]) -> str:
    header, body = _table(rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([_csv_cell(v) for v in header])
    writer.writerows([[_csv_cell(v) for v in line] for line in body])
    return out.getvalue()


def to_markdown(rows: List[Row]) -> str:
    header, body = _table(rows)
    lines = ["| " + " | ".join(_md_cell(v) for v in header) + " |", "|" + "---|" * len(header)]
    for row, line in zip(rows, body, strict=True):
        cells = [_md_cell(v) for v in line]
        if row.best:
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write(sweep_dir: Path, objective: Optional[str] = None, mode: Optional[str] = None) -> str:
    """Write both summary files into ``sweep_dir``; return the markdown table.

    Raises only :class:`SummaryError` (the files could not be written)."""
    sweep_dir = Path(sweep_dir)
    found, older = jobs(sweep_dir)
    rows = rank([job.row for job in found], objective, mode)
    markdown = to_markdown(rows)
    if older:
        markdown += (f"\n{older} job director{'y' if older == 1 else 'ies'} of an earlier sweep into this "
                     f"directory (older than its {MULTIRUN_NAME}) not listed.\n")
    try:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(sweep_dir / CSV_NAME, to_csv(rows))
        write_text_atomic(sweep_dir / MD_NAME, markdown)
    except (OSError, ValueError) as error:  # ValueError: a path with a NUL, say
        reason = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
        raise SummaryError(one_line(f"cannot write the sweep summary into {sweep_dir}: {reason}")) from None
    return markdown
