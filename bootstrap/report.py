"""The job's record, ``bootstrap.json``: built from (plan, what was found, what happened). Pure,
apart from :func:`write_json_atomic`.

:func:`build` makes the report at job start; :func:`record_end` adds what the task did
(a group a framework made, a re-seed, its own thread count) and :func:`finish` how the
job ended. Like Hydra's ``JobReturn``, a job's end is a :class:`JobStatus`. Every value
shown goes through :mod:`bootstrap.masking`.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from bootstrap.auto import Choice
from bootstrap.masking import masked, masked_override
from bootstrap.plan import Plan
from bootstrap.textenum import TextEnum
from bootstrap.versions import Check, Found

SCHEMA_VERSION = 2
REPORT_NAME = "bootstrap.json"


class JobStatus(TextEnum):
    """``job.status``: how a job ended, or that it is still running."""

    RUNNING = "running"  # the job started; killed before it ended (SIGKILL), a report stays at this
    COMPLETED = "completed"
    FAILED = "failed"  # the task raised
    CHECK_FAILED = "check_failed"  # a requirement failed with on_mismatch=error: the task did not run
    INTERRUPTED = "interrupted"  # SIGTERM, Ctrl-C or exit before the job ended
    PREVIEW = "preview"  # bootstrap doctor: worked out, nothing applied


class GroupState(TextEnum):
    """``distributed.process_group``: the default process group when the job started."""

    CREATED = "created"  # the bootstrap made it (and destroys it at job end)
    EXISTING = "existing"  # someone else's (the app's, Ray's): used, left alone
    NONE = "none"


class Teardown(TextEnum):
    """``distributed.teardown``: what the bootstrap did with the group at job end."""

    DESTROYED = "destroyed"
    LEFT = "left"  # not the bootstrap's to destroy


def describe_resolved(resolved: Mapping[str, Any]) -> str:
    """A report's ``resolved`` as one phrase: ``auto -> cpu_debug (no CUDA device)``."""
    return f"{resolved['from']} -> {resolved['preset']} ({resolved['reason']})"


@dataclass(frozen=True)
class JobInfo:
    """What the report says of the job itself."""

    preset: str
    overrides: Sequence[str] = ()  # as typed; masked here
    num: Optional[int] = None
    resolved: Optional[Choice] = None  # what env=auto chose


@dataclass(frozen=True)
class Applied:
    """What ``Session.apply()`` did, read back from the process."""

    intra_op: int
    inter_op: int
    seeded: Tuple[str, ...]
    group: GroupState
    backend: Optional[str]
    mesh: bool  # a DeviceMesh was built


def report_name(rank: int, world_size: int) -> str:
    """``bootstrap.json`` for a single process; ``bootstrap.rank<N>.json`` for each rank of a group."""
    return REPORT_NAME if world_size == 1 else f"bootstrap.rank{rank}.json"


def build(job: JobInfo, plan: Plan, device: str, found: Found,
          checks: Sequence[Check], applied: Optional[Applied], warnings: Sequence[str], bootstrap_s: float,
          status: JobStatus = JobStatus.RUNNING, lint: Sequence[Any] = ()) -> Dict[str, Any]:
    """The report at job start. ``applied`` is None when nothing was applied (a preview, a failed check);
    ``lint`` holds the variable lint's findings (``bootstrap.lint.Finding``)."""
    launch = plan.launch
    return {
        "schema_version": SCHEMA_VERSION,
        "preset": job.preset,
        "resolved": {"from": "auto", "preset": job.resolved.preset, "reason": job.resolved.reason}
        if job.resolved else None,
        "overrides": [masked_override(o) for o in job.overrides],
        "device": device,
        "found": {
            "python": found.python, "torch": found.torch, "cuda": found.cuda, "nccl": found.nccl,
            "cudnn": found.cudnn, "compute_capability": found.compute_capability, "gpus": found.gpus,
            "gpu_names": list(found.gpu_names), "cpus": found.cpus, "cpus_usable": found.cpus_usable,
            "cpu_affinity": found.cpu_affinity,
        },
        "checks": [{"name": c.name, "required": c.required, "found": c.found, "ok": c.ok} for c in checks],
        "lint": [finding.as_dict() for finding in lint],
        "vars": {
            d.name: {"value": masked(d.name, d.value), "source": d.source, "effective": d.effective, "note": d.note,
                     **({"withheld": True} if d.withheld else {})}
            for d in plan.vars
        },
        "threads": {
            # In effect once applied; until then (a preview, a failed check) what would be.
            "intra_op": applied.intra_op if applied else plan.threads.intra_op,
            "inter_op": applied.inter_op if applied else plan.threads.inter_op,
            "requested": {"intra_op": plan.threads.intra_op, "inter_op": plan.threads.inter_op},
            "applied": applied is not None,
        },
        "torch": {
            "matmul_precision": plan.torch.matmul_precision.value,
            "cudnn_allow_tf32": plan.torch.cudnn_allow_tf32,
            "cudnn_benchmark": plan.torch.cudnn_benchmark and not plan.torch.deterministic,
            "deterministic": plan.torch.deterministic,
        },
        "distributed": {
            **launch.as_dict(),
            "backend": applied.backend if applied else None,
            "process_group": (applied.group if applied else GroupState.NONE).value,
            "teardown": None,  # set at job end
            "mesh": dict(plan.mesh) if applied and applied.mesh else None,
            "group_at_end": None,  # set at job end: the group in use then, whoever made it
            "hang": None,  # set when the job failed or was stopped under a group: the dumps, what they show
        },
        "seed": {"value": plan.seed, "global_seed": plan.global_seed,
                 "generators": list(applied.seeded) if applied else [], "data_seed": plan.data_seed,
                 "task_seed": None},
        "warnings": list(warnings),
        "timings": {"bootstrap_s": round(bootstrap_s, 6)},
        "job": {"num": job.num, "status": JobStatus(status).value, "metrics": None},
    }


def record_end(report: Dict[str, Any], *, group_at_end: Optional[dict], intra_op_now: Optional[int],
               task_seed: Optional[int]) -> None:
    """What the task did that the report must show: the group in use at the end (a framework's too),
    the task's own thread count and a re-seed (``None``: it did not)."""
    report["distributed"]["group_at_end"] = group_at_end
    if intra_op_now is not None and intra_op_now != report["threads"]["intra_op"]:
        report["threads"]["intra_op_at_end"] = intra_op_now  # e.g. Lightning set its own count
    if task_seed is not None:
        report["seed"]["task_seed"] = task_seed


def finish(report: Dict[str, Any], status: JobStatus, metrics: Any = None, error: Any = None) -> None:
    """How the job ended; ``metrics`` is the task's return value (see :func:`metrics_from`)."""
    values, skipped = metrics_from(metrics)
    job: Dict[str, Any] = {"num": report["job"]["num"], "status": JobStatus(status).value, "metrics": values}
    if skipped:
        job["metrics_skipped"] = skipped
    if error is not None:
        job["error"] = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    report["job"] = job


def metrics_from(value: Any) -> Tuple[Dict[str, float], List[str]]:
    """A task's return value as ``{name: float}``, and what was skipped (``"name (type)"``).

    A number becomes ``{"return": value}``; a mapping is flattened with ``/`` between
    nested keys; 0-d tensors and numpy scalars (anything with ``.item()`` giving a
    number) become floats. Non-finite numbers are skipped: JSON has no NaN.
    """
    metrics: Dict[str, float] = {}
    skipped: List[str] = []

    def visit(name: str, item: Any) -> None:
        if isinstance(item, Mapping):
            for key, inner in item.items():
                visit(f"{name}/{key}" if name else str(key), inner)
            return
        number = _as_number(item)
        if number is None:
            skipped.append(f"{name} ({type(item).__name__})")
        elif not math.isfinite(number):
            skipped.append(f"{name} ({number})")
        else:
            metrics[name] = number

    if value is None:
        return metrics, skipped
    visit("" if isinstance(value, Mapping) else "return", value)
    return metrics, skipped


def _as_number(item: Any) -> Optional[float]:
    if isinstance(item, bool):
        return None  # a flag, not a measurement
    if isinstance(item, numbers.Real):  # numpy registers its scalar types here too
        return float(item)
    if getattr(item, "ndim", None) == 0 and callable(getattr(item, "item", None)):  # a 0-d tensor or array
        try:
            inner = item.item()
        except (ValueError, RuntimeError, TypeError):
            return None
        return _as_number(inner) if not hasattr(inner, "ndim") else None
    return None


def format_table(report: Dict[str, Any]) -> str:
    """A short, aligned summary for the job log."""
    rows = [("variable", "value", "source", "effective")]
    for name, v in report["vars"].items():
        rows.append((name, v["value"], v["source"], "yes" if v["effective"] else "children only"))
    widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    failed = [c["name"] for c in report["checks"] if not c["ok"]]
    checks = f"{len(report['checks'])} checks, " + (f"FAILED: {', '.join(failed)}" if failed else "all ok")
    threads, resolved = report["threads"], report.get("resolved")
    lines.append(
        f"preset={report['preset']}" + (f" (resolved: {describe_resolved(resolved)})" if resolved else "")
        + f"  threads intra_op={threads['intra_op']} inter_op={threads['inter_op']}  "
        f"seed={report['seed']['value']}  {checks}  bootstrap {report['timings']['bootstrap_s'] * 1000:.1f} ms"
    )
    return "\n".join(lines)


# -- files ------------------------------------------------------------------------------------
def _file_mode() -> int:
    """0666 less the umask, as open() would give: mkstemp's 0600 would hide reports from teammates."""
    try:
        with open("/proc/self/status") as status:  # reads the umask without changing it (Linux 4.7+)
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_text_atomic(path: Path, text: str) -> None:
    """Write to a temporary file beside ``path``, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            os.fchmod(f.fileno(), _file_mode())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json_atomic(path: Path, data: Dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")
