"""The job's record, ``bootstrap.json``: built from (plan, what was found, what happened). Pure.

:func:`build` makes the typed :class:`~bootstrap.doors.records.Report` at job start (the ranks'
agreement and the preflight check included); :func:`end` writes, in one call, everything a
:class:`JobEnd` holds: how the job ended (like Hydra's ``JobReturn``, a
:class:`~bootstrap.doors.statuses.JobStatus`), the task's metrics and error, what the task did (a group
a framework made, a re-seed, its own thread count), the flight recorder's findings and the group's teardown.
Variable values and overrides are masked here (:mod:`bootstrap.doors.masking`);
the session writes the report through :mod:`bootstrap.doors.outbound`, which cleans every text
again on its way out (the task's own error included).

**Whatever the task returns, the job ends recorded**: its return value becomes metrics through
:func:`bootstrap.core.metrics.metrics_from`, which never raises.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence, Set, Tuple

from bootstrap.core.metrics import metrics_from
from bootstrap.core.plan import Plan
from bootstrap.core.versions import Check, Found
from bootstrap.doors import outbound, records
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.masking import masked, masked_override
from bootstrap.doors.records import SCHEMA_VERSION, Report
from bootstrap.doors.statuses import GroupState, JobStatus, Teardown

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # env=auto's module (and the compose it needs) loads only in a job that chose env=auto
    from bootstrap.core.auto import Choice
    from bootstrap.variables.lint import Machine


@lean_dataclass(frozen=True)
class JobInfo:
    """What the report says of the job itself."""

    preset: str
    overrides: Sequence[str] = ()  # as typed; masked here
    num: Optional[int] = None
    resolved: Optional[Choice] = None  # what env=auto chose
    digest: Optional[str] = None  # schema.digest of the validated preset


@lean_dataclass(frozen=True)
class Applied:
    """What ``Session.apply()`` did, read back from the process."""

    intra_op: int
    inter_op: int
    seeded: Tuple[str, ...]
    group: GroupState
    backend: Optional[str]
    mesh: bool  # a DeviceMesh was built


def build(job: JobInfo, plan: Plan, device: str, found: Found,
          checks: Sequence[Check], applied: Optional[Applied], warnings: Sequence[str], bootstrap_s: float,
          status: JobStatus = JobStatus.RUNNING, lint: Sequence[Any] = (), started_ns: Optional[int] = None,
          agreement: Optional[records.Agreement] = None, preflight: Optional[records.Preflight] = None,
          machine: Optional[Machine] = None, provenance: Optional[records.Provenance] = None) -> Report:
    """The report at job start. ``applied`` is None when nothing was applied (a preview, a failed check);
    ``lint`` holds the variable lint's findings (``bootstrap.variables.lint.Finding``); ``started_ns`` is
    ``time.time_ns()`` when the job's bootstrap started (None in a preview). The preflight check's time is
    reported apart from the bootstrap's own (``timings.preflight_s``). ``machine``: a variable for hardware it
    lacks is not ``effective``, by the verdict that makes the lint's ``hardware`` finding; None: not judged."""
    launch = plan.launch
    preflight_s = preflight.seconds if preflight is not None else None
    if preflight_s is not None:
        bootstrap_s = max(0.0, bootstrap_s - preflight_s)
    return Report(
        schema_version=SCHEMA_VERSION,
        preset=job.preset,
        preset_digest=job.digest,
        resolved=records.Resolved(from_="auto", preset=job.resolved.preset, reason=job.resolved.reason)
        if job.resolved else None,
        overrides=[masked_override(o) for o in job.overrides],
        device=device,
        found=found_record(found),
        checks=[records.Check(name=c.name, required=c.required, found=c.found, ok=c.ok) for c in checks],
        lint=[records.LintFinding(**finding.as_dict()) for finding in lint],
        vars={d.name: _var(d, machine) for d in plan.vars},
        threads=records.Threads(
            # In effect once applied; until then (a preview, a failed check) what would be.
            intra_op=applied.intra_op if applied else plan.threads.intra_op,
            inter_op=applied.inter_op if applied else plan.threads.inter_op,
            requested=records.ThreadCounts(intra_op=plan.threads.intra_op, inter_op=plan.threads.inter_op),
            applied=applied is not None),
        torch=records.Torch(**plan.torch),
        distributed=records.Distributed(
            **launch.as_dict(),
            backend=applied.backend if applied else None,
            process_group=applied.group if applied else GroupState.NONE,
            teardown=None,  # set at job end
            mesh=dict(plan.mesh) if applied and applied.mesh else None,
            group_at_end=None,  # set at job end: the group in use then, whoever made it
            hang=None,  # set when the job failed or was stopped under a group: the dumps, what they show
            agreement=agreement),
        seed=records.Seed(value=plan.seed, global_seed=plan.global_seed,
                          generators=list(applied.seeded) if applied else [], data_seed=plan.data_seed,
                          task_seed=None),
        preflight=preflight,
        provenance=provenance,  # collected in a thread once the job has started: set at its end (end, JobEnd)
        warnings=list(warnings),
        timings=records.Timings(bootstrap_s=round(bootstrap_s, 6), started_ns=started_ns,
                                preflight_s=round(preflight_s, 4) if preflight_s is not None else None),
        job=records.Job(num=job.num, status=JobStatus(status), metrics=None),
    )


def found_record(found: Found) -> records.Found:
    """The report's ``found``: what this machine has."""
    return records.Found(python=found.python, torch=found.torch, cuda=found.cuda, nccl=found.nccl, cudnn=found.cudnn,
                         bootstrap=found.bootstrap, compute_capability=found.compute_capability, gpus=found.gpus,
                         gpu_names=list(found.gpu_names), cpus=found.cpus, cpus_usable=found.cpus_usable,
                         cpu_affinity=found.cpu_affinity)


def _var(decision: Any, machine: Any) -> records.Var:
    """One entry of ``vars``: the plan's decision, and whether it matters on this machine's hardware at all."""
    gap = None
    if machine is not None:
        from bootstrap.variables.lint import hardware_gap

        gap = hardware_gap(decision.name, machine)
    idle = gap.why if gap is not None and gap.does_nothing else ""
    return records.Var(value=masked(decision.name, decision.value), source=decision.source,
                       effective=decision.effective and not idle, note=decision.note, withheld=decision.withheld,
                       does_nothing_here=idle)


@lean_dataclass
class JobEnd:
    """Everything the record's end holds, written by :func:`end` in one call. ``None``: not known (a start
    refused before the task ran knows only its status and error)."""

    status: JobStatus
    metrics: Any = None  # the task's return value (see metrics_from)
    error: Any = None  # the task's exception or message
    group_at_end: Optional[Mapping[str, Any]] = None  # as bootstrap.distributed.group_in_use gives it
    intra_op_now: Optional[int] = None  # the task's own thread count (Lightning sets one)
    task_seed: Optional[int] = None  # torch's seed at the end, when the task re-seeded
    hang: Optional[records.Hang] = None  # what the flight recorder's dumps show, after a failure under a group
    teardown: Optional[Teardown] = None  # what became of the group
    provenance: Optional[records.Provenance] = None  # the job's provenance as collected so far
    provenance_s: Optional[float] = None  # what collecting it took, once done


MAX_ERROR_CHARS = 20_000  # the task's message in job.error; a longer one is cut (reports are read by every summary)


def end(report: Report, job_end: JobEnd) -> None:
    """How the job ended, and what the task did that the report must show. Never raises for what the task
    returned or raised: the record must end."""
    values, skipped = metrics_from(job_end.metrics)
    error = job_end.error
    report.job = records.Job(num=report.job.num, status=JobStatus(job_end.status), metrics=values,
                             metrics_skipped=skipped, error=None if error is None else error_text(error))
    group_at_end = job_end.group_at_end
    report.distributed.group_at_end = records.GroupAtEnd.from_json(group_at_end) if group_at_end else None
    if job_end.intra_op_now is not None and job_end.intra_op_now != report.threads.intra_op:
        report.threads.intra_op_at_end = job_end.intra_op_now  # e.g. Lightning set its own count
    if job_end.task_seed is not None:
        report.seed.task_seed = job_end.task_seed
    if job_end.hang is not None:
        report.distributed.hang = job_end.hang
    if job_end.teardown is not None:
        report.distributed.teardown = job_end.teardown
    if job_end.provenance is not None:
        report.provenance = job_end.provenance
        report.timings.provenance_s = round(job_end.provenance_s, 4) if job_end.provenance_s is not None else None


def error_line(error: Any) -> str:
    """The error as one line, cleaned: it travels to the other ranks through the store."""
    return outbound.clean(error_text(error), one_line=True)  # error_text: even when its __str__ raises


_warned: Set[str] = set()


def warn(warnings: List[str], message: Optional[str], once: bool = False) -> None:
    """A warning into the report (``warnings``) and the log (``once``: logged once per process, not once per
    job of a sweep)."""
    if message:
        warnings.append(message)
        if not (once and message in _warned):
            _warned.add(message)
            log.warning("%s", message)


def error_text(error: Any) -> str:
    """The error as the report says it: ``TypeName: message``, or the text as given, masked, then cut
    past :data:`MAX_ERROR_CHARS` (in that order: a cut through a secret would leave its start
    unrecognisable). An exception whose message cannot be read still gives its type."""
    from bootstrap.doors import outbound

    if isinstance(error, str):
        text = error
    else:
        try:
            text = f"{type(error).__name__}: {error}"
        except Exception as inner:  # noqa: BLE001 - the task's exception: its __str__ may raise anything
            text = f"{type(error).__name__} (its message could not be read: {type(inner).__name__})"
    text = outbound.clean(text)
    if len(text) > MAX_ERROR_CHARS:
        text = f"{text[:MAX_ERROR_CHARS]}... ({len(text) - MAX_ERROR_CHARS} more characters)"
    return text


def effect(var: records.Var) -> str:
    """The log table's ``effective`` column: yes, children only, not set (withheld), or why it does nothing here."""
    if var.does_nothing_here:
        return outbound.shown(f"no: {var.does_nothing_here}")
    if var.withheld:
        return "not set"
    return "yes" if var.effective else "children only"


def format_table(report: Report) -> str:
    """A short, aligned summary for the job log."""
    rows = [("variable", "value", "source", "effective")]
    for name, v in report.vars.items():  # each row one line, whatever a value holds
        rows.append((outbound.shown(name, limit=80), outbound.shown(v.value, name=name), outbound.shown(v.source),
                     effect(v)))
    widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    failed = [c.name for c in report.checks if not c.ok]
    checks = f"{len(report.checks)} checks, " + (f"FAILED: {', '.join(failed)}" if failed else "all ok")
    threads, resolved = report.threads, report.resolved
    bootstrap_ms = (report.timings.bootstrap_s or 0.0) * 1000
    lines.append(
        f"preset={report.preset}" + (f" (resolved: {resolved.describe()})" if resolved else "")
        + f"  threads intra_op={threads.intra_op} inter_op={threads.inter_op}  "
        f"seed={report.seed.value}  {checks}  bootstrap {bootstrap_ms:.1f} ms"
    )
    return "\n".join(lines)
