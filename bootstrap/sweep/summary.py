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

**Hostile files.** Every file comes in through the one way in: a report is a typed
:class:`bootstrap.doors.records.Report`, Hydra's ``overrides.yaml`` a list of strings
(:mod:`bootstrap.doors.inbound`). A report (or ``overrides.yaml``) that cannot be read, is not
JSON (YAML), or holds a field of the wrong type (``job: 5``, ``checks: "x"``,
``metrics: {"a": "b"}``, a number outside float range such as ``1e999`` or a 400-digit
integer) gives the row the status ``unreadable`` and a reason, listed under the markdown
table (``3: bootstrap.json: job.metrics.loss: not a finite number``). Such a row keeps what
is safely known (the job's directory name and Hydra's record of its overrides; with a
readable report and an unreadable ``overrides.yaml``, the report's name, overrides and
threads) but no metrics, so it is never ranked and never the best. Files that are not
reports (``bootstrap.rankX.json``) are ignored. Every text cell is masked
(:mod:`bootstrap.doors.masking`), one line in the markdown and no formula in the CSV, and both
files leave through :mod:`bootstrap.doors.outbound` (masked again, control characters escaped).
:func:`write` raises only :class:`SummaryError`.

**Scale.** Reading the files is the cost: one directory listing, one ``stat`` and the two
files per job, masking without Hydra's parser where an override holds nothing to mask
(``bench/bench_summary.py`` measures it against a bare ``json.load`` + ``yaml`` read).
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from bootstrap.core import facts
from bootstrap.core.report import JobStatus
from bootstrap.doors import inbound, outbound, records
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.masking import masked_line, masked_override
from bootstrap.doors.records import Report
from bootstrap.doors.textenum import TextEnum
from bootstrap.sweep import environments
from bootstrap.sweep.tables import CSV_NAME, MD_NAME, job_order, to_csv, to_markdown

MULTIRUN_NAME = "multirun.yaml"  # Hydra's basic sweeper writes it into the sweep directory when a sweep starts
MAX_REASONS = 20  # unreadable jobs named under the table; the rest are counted

# The objective when none is set: train_stub's throughput (higher is better), else a
# task's returned number, which sweepers such as Optuna minimise by default (a loss).
AUTO_OBJECTIVES: Tuple[Tuple[str, str], ...] = (("samples_per_s", "max"), ("return", "min"))
DEFAULT_MODES = dict(AUTO_OBJECTIVES)  # any other metric: min
MODES = ("max", "min")


class RowStatus(TextEnum):
    """A row's status: the job's own (:class:`bootstrap.core.report.JobStatus`), or what the summary makes of its files.

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
    reason: str = ""  # why the row is unreadable: "bootstrap.json: job.num: not a whole number ..."
    preflight: str = ""  # the preflight check's status (ok | slow | faulty | skipped); "" in a report without one
    slowest_tflops: Optional[float] = None  # the slowest rank's matmul TFLOP/s, where the check measured
    environment: Dict[str, str] = field(default_factory=dict, compare=False)  # rank 0's (facts.environment)


@dataclass(frozen=True)
class Job:
    """What is safely known of one job directory."""

    directory: Path
    overrides: Optional[List[str]]  # .hydra/overrides.yaml as Hydra recorded it, unmasked; None: unreadable
    reports: List[Report]  # the reports, rank order; empty when none or any is unreadable
    row: Row


_STATUS_ORDER = (RowStatus.FAILED, RowStatus.CHECK_FAILED, RowStatus.INTERRUPTED, RowStatus.INCOMPLETE,
                 RowStatus.UNREADABLE, RowStatus.UNKNOWN, RowStatus.COMPLETED)


def _severity(status: str) -> int:
    return _STATUS_ORDER.index(status) if status in _STATUS_ORDER else 0  # an unexpected status: show it


printable = outbound.printable  # control characters escaped; the files are cleaned again on the way out


def one_line(text: object) -> str:
    return " ".join(printable(str(text)).split())


# -- reading the files -------------------------------------------------------------------------
def _overrides_in(job_dir: str) -> Tuple[Optional[List[str]], str]:
    """``.hydra/overrides.yaml``, or None and why it cannot be read."""
    try:
        return inbound.read_string_list(os.path.join(job_dir, ".hydra", "overrides.yaml")), ""
    except Unreadable as error:  # "overrides.yaml: not YAML"
        return None, f".hydra/{error}"


def _joined(overrides: Sequence[str]) -> str:
    return " ".join(masked_override(o) for o in overrides)


def _status(report: Report) -> str:
    status = report.job.status
    if not status:
        return RowStatus.UNKNOWN
    return RowStatus.INCOMPLETE if status == JobStatus.RUNNING else status  # ended without on_job_end


def row_from_reports(job_dir: "os.PathLike[str] | str", reports: List[Report],
                     overrides: Optional[List[str]] = None) -> Row:
    """One row per job; with several ranks, rank 0's numbers and the worst rank's status."""
    first = reports[0]
    status = _status(first) if len(reports) == 1 else min((_status(r) for r in reports), key=_severity)
    if status == RowStatus.COMPLETED and not first.checks_ok:
        status = RowStatus.COMPLETED_CHECK_FAILED
    return Row(
        job=str(first.job.num) if first.job.num is not None else masked_line(os.path.basename(job_dir)),
        overrides=_joined(first.overrides if first.overrides or overrides is None else overrides),
        status=masked_line(status),
        intra_op=first.threads.intra_op,
        inter_op=first.threads.inter_op,
        metrics=first.job.metrics or {},
        environment=facts.environment(first),
        preflight=first.preflight.status if first.preflight else "",
        slowest_tflops=first.preflight.slowest.tflops if first.preflight and first.preflight.slowest else None,
    )


def _bare_row(job_dir: str, overrides: Optional[List[str]], status: str, reason: str) -> Row:
    """A job without a readable report: its directory's name and Hydra's record, never metrics."""
    return Row(masked_line(os.path.basename(job_dir)), _joined(overrides or []), status, None, None, reason=reason)


def _read_job(job_dir: str, names: Sequence[str]) -> Job:
    """What is safely known of the job in ``job_dir``, whose entries are ``names``; never raises for what
    is in it."""
    overrides, why = _overrides_in(job_dir)
    reports = []
    for name in records.report_names(names):
        try:
            reports.append(records.read_report(os.path.join(job_dir, name)))
        except Unreadable as error:  # a directory named bootstrap.json, binary garbage, a field of the wrong type
            return Job(Path(job_dir), overrides, [], _bare_row(job_dir, overrides, RowStatus.UNREADABLE, str(error)))
    if not reports:
        status = RowStatus.NO_REPORT if overrides is not None else RowStatus.UNREADABLE
        return Job(Path(job_dir), overrides, [], _bare_row(job_dir, overrides, status, why))
    row = row_from_reports(job_dir, reports, overrides)
    if overrides is None:  # a report, but Hydra's record of the job is garbage
        return Job(Path(job_dir), None, [], replace(row, status=RowStatus.UNREADABLE, metrics={}, reason=why))
    return Job(Path(job_dir), overrides, reports, row)


# -- which job directories: the latest sweep's ----------------------------------------------------
def _walk(sweep_dir: str) -> Tuple[List[Tuple[str, List[str], Optional[int]]], Dict[str, int]]:
    """Every directory under ``sweep_dir`` (itself included) holding ``.hydra/overrides.yaml``, whatever
    that is, with its entry names and that file's modification time; and the modification time of each
    ``multirun.yaml`` (a regular file) found on the way. Links to directories are not followed, unreadable
    directories skipped, and no ``.hydra`` directory is entered (Hydra's own files)."""
    found, multiruns, pending = [], {}, [sweep_dir]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as entries:
                names, below = [], []
                for entry in entries:
                    names.append(entry.name)
                    try:
                        if entry.is_dir(follow_symlinks=False) and entry.name != ".hydra":
                            below.append(entry.path)
                    except OSError:
                        pass
        except OSError:
            continue
        pending.extend(below)
        if MULTIRUN_NAME in names:
            try:
                info = os.stat(os.path.join(directory, MULTIRUN_NAME))
                if stat.S_ISREG(info.st_mode):
                    multiruns[directory] = info.st_mtime_ns
            except (OSError, ValueError):
                pass
        if ".hydra" in names:
            path = os.path.join(directory, ".hydra", "overrides.yaml")
            try:
                info = os.lstat(path)  # a dangling link still marks a job directory
            except (OSError, ValueError):
                continue
            written: Optional[int] = info.st_mtime_ns
            if stat.S_ISLNK(info.st_mode):
                try:
                    written = os.stat(path).st_mtime_ns
                except (OSError, ValueError):
                    written = None
            found.append((directory, names, written))
    found.sort(key=lambda job: job[0].split(os.sep))  # as paths sort: by their parts
    return found, multiruns


def _sweep_start(job_dir: str, sweep_dir: str, multiruns: Dict[str, int]) -> Optional[int]:
    """When the sweep that wrote ``job_dir`` started: the nearest ``multirun.yaml`` at or above it."""
    directory = job_dir
    while True:
        if directory in multiruns:
            return multiruns[directory]
        parent = os.path.dirname(directory)
        if directory == sweep_dir or parent == directory:
            return None
        directory = parent


def _scan(sweep_dir: Path) -> Tuple[List[Tuple[str, List[str]]], int]:
    root = str(Path(sweep_dir))
    every, multiruns = _walk(root)
    latest = []
    for job_dir, names, written in every:
        started = _sweep_start(job_dir, root, multiruns) if multiruns else None
        if started is None or written is None or written >= started:
            latest.append((job_dir, names))
    if not latest:  # copied without timestamps, or a sweep none of whose jobs started: show what there is
        return [(job_dir, names) for job_dir, names, _ in every], 0
    return latest, len(every) - len(latest)


def scan(sweep_dir: Path) -> Tuple[List[Path], int]:
    """The job directories of the latest sweep in ``sweep_dir``, and how many older ones were left out."""
    found, older = _scan(sweep_dir)
    return [Path(job_dir) for job_dir, _ in found], older


def jobs(sweep_dir: Path) -> Tuple[List[Job], int]:
    """The latest sweep's jobs, and how many job directories of earlier sweeps were left out."""
    found, older = _scan(sweep_dir)
    return [_read_job(job_dir, names) for job_dir, names in found], older


# -- ranking --------------------------------------------------------------------------------------
def objective_for(rows: Sequence[Row], objective: Optional[str] = None, mode: Optional[str] = None,
                  directions: Optional[Sequence[str]] = None) -> Optional[Tuple[str, str]]:
    """The metric to rank by and its direction.

    ``objective`` None picks the first of :data:`AUTO_OBJECTIVES` that a job reported; a sweep
    of several objectives (``directions`` has more than one) then has no single best: None.
    ``mode`` None follows the sweeper's own direction for the returned value (``directions``,
    :mod:`bootstrap.sweep.sweepers`: ``return`` for one objective, ``return/<i>`` for several), else
    :data:`DEFAULT_MODES`' direction, else ``min`` (a loss).
    """
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode {mode!r}: use max or min")
    if objective is None:
        if directions and len(directions) > 1:
            return None
        reported = {name for row in rows for name in row.metrics}
        objective = next((name for name, _ in AUTO_OBJECTIVES if name in reported), None)
        if objective is None:
            return None
    return objective, mode or _sweepers_mode(objective, directions) or DEFAULT_MODES.get(objective, "min")


def _sweepers_mode(objective: str, directions: Optional[Sequence[str]]) -> Optional[str]:
    """The sweeper's direction for a returned value: ``return`` (one objective) or ``return/<i>``."""
    if not directions:
        return None
    if objective == "return":
        return directions[0] if len(directions) == 1 else None
    index = objective[len("return/"):] if objective.startswith("return/") else ""
    return directions[int(index)] if index.isdigit() and int(index) < len(directions) else None


def no_best_note(rows: Sequence[Row], objective: Optional[str], directions: Optional[Sequence[str]]) -> str:
    """Why no job is marked best when the sweep optimised several objectives, or ''."""
    if objective is not None or not directions or len(directions) <= 1:
        return ""
    return (f"\nNo single best: the sweeper optimises {len(directions)} objectives ({', '.join(directions)}); the "
            "jobs' returns are return/0, return/1, .... Name one to rank by: "
            "hydra.callbacks.bootstrap.objective=return/0.\n")


def score(row: Row, objective: Tuple[str, str]) -> Optional[float]:
    """The row's objective value, oriented so that higher is better; None when it has none."""
    value = row.metrics.get(objective[0])
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return None
    return value if objective[1] == "max" else -value


def rank(rows: List[Row], objective: Optional[str] = None, mode: Optional[str] = None,
         directions: Optional[Sequence[str]] = None) -> List[Row]:
    """Best first; jobs without the objective's metric last, in job order. Marks the best."""
    chosen = objective_for(rows, objective, mode, directions)

    def key(row: Row) -> Tuple[bool, float, Tuple[int, int, str]]:
        value = score(row, chosen) if chosen else None
        return (value is None, -(value or 0.0), job_order(row.job))

    ordered = sorted(rows, key=key)
    if ordered and chosen and score(ordered[0], chosen) is not None:
        ordered[0] = replace(ordered[0], best=True)
    return ordered


def _reasons(rows: Sequence[Row]) -> str:
    """The unreadable jobs and why, under the table: never ranked, so say what is wrong with them."""
    unreadable = sorted((row for row in rows if row.reason), key=lambda r: job_order(r.job))
    if not unreadable:
        return ""
    lines = [f"\nUnreadable, so never ranked ({len(unreadable)}):"]
    lines += [f"- {one_line(row.job)}: {one_line(masked_line(row.reason))}" for row in unreadable[:MAX_REASONS]]
    if len(unreadable) > MAX_REASONS:
        lines.append(f"- and {len(unreadable) - MAX_REASONS} more")
    return "\n".join(lines) + "\n"


def write(sweep_dir: Path, objective: Optional[str] = None, mode: Optional[str] = None,
          directions: Optional[Sequence[str]] = None) -> str:
    """Write both summary files into ``sweep_dir`` (through :mod:`bootstrap.doors.outbound`); return the markdown.
    ``directions``: the sweeper's own, per objective (:func:`bootstrap.sweep.sweepers.directions`).

    A sweep with no job (its first failed to compose) gets a one-line note, not an empty table.
    Raises only :class:`SummaryError` (the files could not be written)."""
    sweep_dir = Path(sweep_dir)
    found, older = _scan(sweep_dir)
    # Each job's reports are dropped once its row is made: a sweep of 10,000 jobs need not hold 10,000 reports.
    rows = rank([_read_job(job_dir, names).row for job_dir, names in found], objective, mode, directions)
    if rows:
        chosen = objective_for(rows, objective, mode, directions)
        markdown = to_markdown(rows, chosen[0] if chosen else None) + _reasons(rows) + \
            no_best_note(rows, objective, directions)
        markdown += environments.note([(r.job, r.environment) for r in sorted(rows, key=lambda r: job_order(r.job))])
    else:
        markdown = f"No job of this sweep left a directory in {sweep_dir}: nothing to compare.\n"
    if older:
        markdown += (f"\n{older} job director{'y' if older == 1 else 'ies'} of an earlier sweep into this "
                     f"directory (older than its {MULTIRUN_NAME}) not listed.\n")
    try:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        outbound.write_text(sweep_dir / CSV_NAME, to_csv(rows))
        outbound.write_text(sweep_dir / MD_NAME, markdown)
    except (OSError, ValueError) as error:  # ValueError: a path with a NUL, say
        reason = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
        raise SummaryError(one_line(f"cannot write the sweep summary into {sweep_dir}: {reason}")) from None
    return markdown
