"""What is safely known of one job directory of a sweep: its reports and Hydra's record of its overrides,
read through the one way in (:mod:`bootstrap.doors.inbound`), made into the summary's :class:`Row`.

**Hostile files.** A report is read as a typed :class:`bootstrap.doors.records.Report`, Hydra's
``overrides.yaml`` as a list of strings. A report (or ``overrides.yaml``) that cannot be read, is not
JSON (YAML), or holds a field of the wrong type (``job: 5``, ``checks: "x"``,
``metrics: {"a": "b"}``, a number outside float range such as ``1e999`` or a 400-digit
integer) gives the row the status ``unreadable`` and a reason (``bootstrap.json: job.metrics.loss: not a
finite number``). Such a row keeps what is safely known (the job's directory name and Hydra's record of its
overrides; with a readable report and an unreadable ``overrides.yaml``, the report's name, overrides and
threads) but no metrics, so it is never ranked and never the best. Files that are not
reports (``bootstrap.rankX.json``) are ignored. Every text cell is masked (:mod:`bootstrap.doors.masking`),
without Hydra's parser where an override holds nothing to mask.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from bootstrap.core import facts
from bootstrap.core.report import JobStatus
from bootstrap.distributed.ranks import ranks_on_hosts
from bootstrap.doors import inbound, records
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.masking import masked_line, masked_override
from bootstrap.doors.records import Report
from bootstrap.doors.textenum import TextEnum
from bootstrap.sweep import sweepers, walk


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


@dataclass(frozen=True)
class Row:
    """One job's line in the summary: its cells, masked."""

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
    bad_nodes: str = ""  # the nodes the preflight named, with why (facts.bad_nodes); "" when none
    watch: str = ""  # what the watch named while the job trained (facts.watch_findings); "" when nothing
    environment: Dict[str, str] = field(default_factory=dict, compare=False)  # rank 0's (facts.environment)
    override_list: Optional[Tuple[str, ...]] = None  # each override, masked, as typed; None: not known
    ranks_apart: str = ""  # the ranks of this job whose packages differ from rank 0's ("rank 1 (node2)"); "" when none
    first_step_s: Optional[float] = None  # rank 0's time to its first step (timings.first_step_s); None: not reached


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


def _overrides_in(job_dir: str) -> Tuple[Optional[List[str]], str]:
    """``.hydra/overrides.yaml``, or None and why it cannot be read."""
    try:
        return inbound.read_string_list(os.path.join(job_dir, ".hydra", "overrides.yaml")), ""
    except Unreadable as error:  # "overrides.yaml: not YAML"
        return None, f".hydra/{error}"


def job_order(job: str) -> Tuple[int, int, str]:
    """Job numbers in numeric order, then any other name."""
    if job.isascii() and job.isdigit() and len(job) < 19:
        return (0, int(job), "")
    return (1, 0, job)


def _masked(overrides: Sequence[str]) -> Tuple[str, ...]:
    return tuple(masked_override(o) for o in overrides)


def _status(report: Report) -> str:
    status = report.job.status
    if not status:
        return RowStatus.UNKNOWN
    return RowStatus.INCOMPLETE if status == JobStatus.RUNNING else status  # ended without on_job_end


def row_from_reports(job_dir: "os.PathLike[str] | str", reports: List[Report],
                     overrides: Optional[List[str]] = None) -> Row:
    """One row per job; with several ranks, rank 0's numbers and the worst rank's status."""
    first = reports[0]
    shown = _masked(first.overrides if first.overrides or overrides is None else overrides)
    status = _status(first) if len(reports) == 1 else min((_status(r) for r in reports), key=_severity)
    if status == RowStatus.COMPLETED and not first.checks_ok:
        status = RowStatus.COMPLETED_CHECK_FAILED
    return Row(
        job=str(first.job.num) if first.job.num is not None else masked_line(os.path.basename(job_dir)),
        overrides=" ".join(shown),
        override_list=shown,
        status=masked_line(status),
        intra_op=first.threads.intra_op,
        inter_op=first.threads.inter_op,
        metrics=first.job.metrics or {},
        environment=facts.environment(first),
        preflight=first.preflight.status if first.preflight else "",
        slowest_tflops=first.preflight.slowest.tflops if first.preflight and first.preflight.slowest else None,
        bad_nodes=masked_line(facts.bad_nodes(first.preflight)),
        watch=masked_line(facts.watch_findings(first.watch)),
        ranks_apart=_ranks_apart(reports),
        first_step_s=first.timings.first_step_s,
    )


def _ranks_apart(reports: List[Report]) -> str:
    """The ranks whose packages differ from rank 0's, by their digests where both are known ("ranks 2-3")."""
    digests = [(r.distributed.rank, r.provenance.packages_digest if r.provenance else None,
                r.provenance.host if r.provenance else None) for r in reports]
    first = digests[0][1]
    apart = [(rank, host) for rank, digest, host in digests[1:]
             if first is not None and digest is not None and digest != first]
    return ranks_on_hosts(apart) if apart else ""


def _bare_row(job_dir: str, overrides: Optional[List[str]], status: str, reason: str) -> Row:
    """A job without a readable report: its directory's name and Hydra's record, never metrics."""
    shown = _masked(overrides) if overrides is not None else None
    return Row(masked_line(os.path.basename(job_dir)), " ".join(shown or ()), status, None, None, reason=reason,
               override_list=shown)


def _read(job_dir: str, names: Sequence[str]) -> Tuple[Optional[List[str]], List[Report], Row]:
    """The job's overrides, reports and row (see :class:`Job`); never raises for what is in ``job_dir``."""
    overrides, why = _overrides_in(job_dir)
    reports = []
    for name in records.report_names(names):
        try:
            reports.append(records.read_report(os.path.join(job_dir, name)))
        except Unreadable as error:  # a directory named bootstrap.json, binary garbage, a field of the wrong type
            return overrides, [], _bare_row(job_dir, overrides, RowStatus.UNREADABLE, str(error))
    if not reports:
        status = RowStatus.NO_REPORT if overrides is not None else RowStatus.UNREADABLE
        return overrides, [], _bare_row(job_dir, overrides, status, why)
    row = row_from_reports(job_dir, reports, overrides)
    if overrides is None:  # a report, but Hydra's record of the job is garbage
        return None, [], replace(row, status=RowStatus.UNREADABLE, metrics={}, reason=why)
    return overrides, reports, row


def read_job(job_dir: str, names: Sequence[str]) -> Job:
    """What is safely known of the job in ``job_dir``, whose entries are ``names``; never raises for what
    is in it."""
    return Job(Path(job_dir), *_read(job_dir, names))


def row_of(job_dir: str, names: Sequence[str]) -> Row:
    """The job's row alone (:func:`read_job`): a summary of 10,000 jobs need hold no report."""
    return _read(job_dir, names)[2]


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while a sweep's files are read. Parsed JSON, reports and rows hold no
    reference cycle, so it would find nothing; but the many containers made trigger its runs, and each full
    run walks every object alive (the rows read so far, and Hydra's and torch's own in the process that ends a
    sweep): about a tenth of a summary's time at 10,000 jobs, growing with the sweep."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def sweepers_directions(job_dirs: Iterable[Path]) -> Optional[Tuple[str, ...]]:
    """The sweeper's own direction per objective (Optuna's ``direction``...), from the first readable
    ``.hydra/hydra.yaml`` of ``job_dirs``: every job of a sweep records the same sweeper. Never shown."""
    for job_dir in job_dirs:
        try:
            hydra_cfg = inbound.read_yaml_mapping(Path(job_dir) / ".hydra" / "hydra.yaml").get("hydra")
        except Unreadable:
            continue
        return sweepers.directions(hydra_cfg.get("sweeper")) if isinstance(hydra_cfg, dict) else None
    return None


_MODE = re.compile(r"^  mode: (\w{1,16})$", re.MULTILINE)  # hydra.yaml's ``hydra.mode``: RUN or MULTIRUN


def not_a_sweep(sweep_dir: Path, job_dirs: Sequence[str]) -> Optional[str]:
    """Why ``bootstrap summary`` must not sum these up as one sweep, told from what Hydra recorded, where no
    ``multirun.yaml`` says it (:func:`bootstrap.sweep.walk.not_one_sweep`; another sweeper, Optuna's, writes none):
    ``sweep_dir`` is a single run's own directory; jobs Hydra recorded as single runs (``hydra.mode: RUN`` in their
    ``.hydra/hydra.yaml``, as lightning-hydra-template's ``logs/train/runs/<time>``) beside a sweep's; or sweep jobs
    below more than one directory (each sweep's jobs are its directory's children). None: one sweep, single runs
    gathered by hand alone, or nothing recorded says otherwise."""
    if (Path(sweep_dir) / ".hydra").is_dir():
        return f"{sweep_dir} is a single run's directory (it holds Hydra's .hydra itself), not a sweep's"
    single, parents = 0, set()
    for job_dir in job_dirs:
        try:
            mode = _MODE.search(inbound.read_text(Path(job_dir) / ".hydra" / "hydra.yaml", MAX_HYDRA_BYTES))
        except Unreadable:
            continue
        if mode and mode.group(1) == "RUN":
            single += 1
        elif mode:
            parents.add(os.path.dirname(job_dir))
    if (not single or not parents) and len(parents) < 2:  # one sweep; or single runs alone (gathered by hand)
        return None
    shown = ", ".join(os.path.relpath(p, sweep_dir) for p in sorted(parents)[:3]) + \
        (", ..." if len(parents) > 3 else "")
    sweeps = f"the jobs of {len(parents)} sweeps ({shown})" if len(parents) > 1 else "a sweep's jobs"
    return f"{sweep_dir} is not one sweep's directory: it holds {sweeps}" + (
        f" and {single} single run{'s' if single != 1 else ''} (hydra.mode RUN)" if single else "")


MAX_HYDRA_BYTES = 1 << 20  # Hydra's record of a job's config (hydra.yaml): a few KiB


def jobs(sweep_dir: Path) -> Tuple[List[Job], int]:
    """The latest sweep's jobs (:func:`bootstrap.sweep.walk.latest`), and how many job directories of earlier
    sweeps were left out."""
    found, older = walk.latest(sweep_dir)
    with no_cycle_collection():
        return [read_job(job_dir, names) for job_dir, names in found], older
