"""The job's record, ``bootstrap.json``: built from (plan, what was found, what happened). Pure.

:func:`build` makes the typed :class:`~bootstrap.doors.records.Report` at job start;
:func:`record_end` adds what the task did (a group a framework made, a re-seed, its own
thread count) and :func:`finish` how the job ended. Like Hydra's ``JobReturn``, a job's end
is a :class:`JobStatus`. Variable values and overrides are masked here (:mod:`bootstrap.doors.masking`);
the session writes the report through :mod:`bootstrap.doors.outbound`, which cleans every text
again on its way out (the task's own error included).

**Whatever the task returns, the job ends recorded**: its return value becomes metrics through
:func:`bootstrap.core.metrics.metrics_from`, which never raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Tuple

from bootstrap.core.auto import Choice
from bootstrap.core.metrics import metrics_from
from bootstrap.core.plan import Plan
from bootstrap.core.versions import Check, Found
from bootstrap.distributed.group import GroupState
from bootstrap.doors import outbound, records
from bootstrap.doors.masking import masked, masked_override
from bootstrap.doors.records import SCHEMA_VERSION, Report
from bootstrap.doors.textenum import TextEnum


class JobStatus(TextEnum):
    """``job.status``: how a job ended, or that it is still running."""

    RUNNING = "running"  # the job started; killed before it ended (SIGKILL), a report stays at this
    COMPLETED = "completed"
    FAILED = "failed"  # the task raised
    CHECK_FAILED = "check_failed"  # a requirement failed with on_mismatch=error: the task did not run
    INTERRUPTED = "interrupted"  # SIGTERM, Ctrl-C or exit before the job ended
    PREVIEW = "preview"  # bootstrap doctor: worked out, nothing applied


@dataclass(frozen=True)
class JobInfo:
    """What the report says of the job itself."""

    preset: str
    overrides: Sequence[str] = ()  # as typed; masked here
    num: Optional[int] = None
    resolved: Optional[Choice] = None  # what env=auto chose
    digest: Optional[str] = None  # presets.digest of the validated preset


@dataclass(frozen=True)
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
          status: JobStatus = JobStatus.RUNNING, lint: Sequence[Any] = (), started_ns: Optional[int] = None) -> Report:
    """The report at job start. ``applied`` is None when nothing was applied (a preview, a failed check);
    ``lint`` holds the variable lint's findings (``bootstrap.variables.lint.Finding``); ``started_ns`` is
    ``time.time_ns()`` when the job's bootstrap started (None in a preview)."""
    launch = plan.launch
    return Report(
        schema_version=SCHEMA_VERSION,
        preset=job.preset,
        preset_digest=job.digest,
        resolved=records.Resolved(from_="auto", preset=job.resolved.preset, reason=job.resolved.reason)
        if job.resolved else None,
        overrides=[masked_override(o) for o in job.overrides],
        device=device,
        found=records.Found(
            python=found.python, torch=found.torch, cuda=found.cuda, nccl=found.nccl, cudnn=found.cudnn,
            bootstrap=found.bootstrap,
            compute_capability=found.compute_capability, gpus=found.gpus, gpu_names=list(found.gpu_names),
            cpus=found.cpus, cpus_usable=found.cpus_usable, cpu_affinity=found.cpu_affinity),
        checks=[records.Check(name=c.name, required=c.required, found=c.found, ok=c.ok) for c in checks],
        lint=[records.LintFinding(**finding.as_dict()) for finding in lint],
        vars={d.name: records.Var(value=masked(d.name, d.value), source=d.source, effective=d.effective, note=d.note,
                                  withheld=d.withheld)
              for d in plan.vars},
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
            process_group=(applied.group if applied else GroupState.NONE).value,
            teardown=None,  # set at job end
            mesh=dict(plan.mesh) if applied and applied.mesh else None,
            group_at_end=None,  # set at job end: the group in use then, whoever made it
            hang=None),  # set when the job failed or was stopped under a group: the dumps, what they show
        seed=records.Seed(value=plan.seed, global_seed=plan.global_seed,
                          generators=list(applied.seeded) if applied else [], data_seed=plan.data_seed,
                          task_seed=None),
        warnings=list(warnings),
        timings=records.Timings(bootstrap_s=round(bootstrap_s, 6), started_ns=started_ns),
        job=records.Job(num=job.num, status=JobStatus(status).value, metrics=None),
    )


def record_end(report: Report, *, group_at_end: Optional[Mapping[str, Any]], intra_op_now: Optional[int],
               task_seed: Optional[int]) -> None:
    """What the task did that the report must show: the group in use at the end (a framework's too,
    as ``bootstrap.distributed.group_in_use`` gives it), the task's own thread count and a re-seed
    (``None``: it did not)."""
    report.distributed.group_at_end = records.GroupAtEnd.from_json(group_at_end) if group_at_end else None
    if intra_op_now is not None and intra_op_now != report.threads.intra_op:
        report.threads.intra_op_at_end = intra_op_now  # e.g. Lightning set its own count
    if task_seed is not None:
        report.seed.task_seed = task_seed


MAX_ERROR_CHARS = 20_000  # the task's message in job.error; a longer one is cut (reports are read by every summary)


def finish(report: Report, status: JobStatus, metrics: Any = None, error: Any = None) -> None:
    """How the job ended; ``metrics`` is the task's return value (:func:`bootstrap.core.metrics.metrics_from`).
    Never raises for what the task returned or raised: the record must end."""
    values, skipped = metrics_from(metrics)
    report.job = records.Job(num=report.job.num, status=JobStatus(status).value, metrics=values,
                             metrics_skipped=skipped, error=None if error is None else error_text(error))


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


def format_table(report: Report) -> str:
    """A short, aligned summary for the job log."""
    rows = [("variable", "value", "source", "effective")]
    for name, v in report.vars.items():  # each row one line, whatever a value holds
        rows.append((outbound.shown(name, limit=80), outbound.shown(v.value, name=name), outbound.shown(v.source),
                     "yes" if v.effective else "children only"))
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
