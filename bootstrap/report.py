"""The job's record: ``bootstrap.json`` and the log table, with secrets masked (``bootstrap.masking``)."""

from __future__ import annotations

import json
import math
import numbers
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple

from bootstrap.masking import MASK, is_secret, masked, masked_override, masked_text  # noqa: F401  (re-exported)

REPORT_NAME = "bootstrap.json"


def report_name(rank: int, world_size: int) -> str:
    """``bootstrap.json`` for a single process; ``bootstrap.rank<N>.json`` for each rank of a group."""
    return REPORT_NAME if world_size == 1 else f"bootstrap.rank{rank}.json"


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


def _as_number(item: Any):
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


def format_table(report: Dict[str, Any]) -> str:
    """A short, aligned summary for the job log."""
    rows = [("variable", "value", "source", "effective")]
    for name, v in report["vars"].items():
        rows.append((name, v["value"], v["source"], "yes" if v["effective"] else "children only"))
    widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    failed = [c["name"] for c in report["checks"] if not c["ok"]]
    checks = f"{len(report['checks'])} checks, " + (f"FAILED: {', '.join(failed)}" if failed else "all ok")
    threads = report["threads"]
    lines.append(
        f"preset={report['preset']}" + (f" (resolved: {report['resolved']})" if report.get("resolved") else "")
        + f"  threads intra_op={threads['intra_op']} inter_op={threads['inter_op']}  "
        f"seed={report['seed']['value']}  {checks}  bootstrap {report['timings']['bootstrap_s'] * 1000:.1f} ms"
    )
    return "\n".join(lines)
