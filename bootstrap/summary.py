"""The sweep summary: one row per job, gathered from the job directories on disk.

Hydra hands ``on_multirun_end`` no job results, and joblib and submitit jobs run
in other processes, so the per-job ``bootstrap.json`` files are the only record
that works under every launcher. A job directory without a report still gets a row.

Columns: the job, its overrides, status and threads, then every numeric metric the
jobs reported (in order of first appearance), then ``best``: the job that did best
on the objective (see :func:`objective_for`). Pure apart from reading and writing files.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import yaml

from bootstrap.report import REPORT_NAME, masked_override, write_text_atomic

CSV_NAME = "sweep_summary.csv"
MD_NAME = "sweep_summary.md"

# The objective when none is set: train_stub's throughput (higher is better), else a
# task's returned number, which sweepers such as Optuna minimise by default (a loss).
AUTO_OBJECTIVES: Tuple[Tuple[str, str], ...] = (("samples_per_s", "max"), ("return", "min"))
DEFAULT_MODES = dict(AUTO_OBJECTIVES)  # any other metric: min
MODES = ("max", "min")


@dataclass(frozen=True)
class Row:
    job: str
    overrides: str
    status: str
    intra_op: Optional[int]
    inter_op: Optional[int]
    metrics: Dict[str, float] = field(default_factory=dict)
    best: bool = False


_STATUS_ORDER = ("failed", "check_failed", "interrupted", "incomplete", "unknown", "completed")


def _job_status(report: dict) -> str:
    status = (report.get("job") or {}).get("status", "unknown")
    return "incomplete" if status == "running" else status  # ended without on_job_end (killed, crashed hard)


def _severity(status: str) -> int:
    return _STATUS_ORDER.index(status) if status in _STATUS_ORDER else 0  # an unexpected status: show it


def row_from_reports(job_dir: Path, reports: List[dict]) -> Row:
    """One row per job; with several ranks, rank 0's numbers and the worst rank's status."""
    report = reports[0]
    job = report.get("job") or {}
    status = min((_job_status(r) for r in reports), key=_severity)
    if status == "completed" and not all(c["ok"] for c in report.get("checks", [])):
        status = "completed, check failed"
    threads = report.get("threads") or {}
    return Row(
        job=str(job["num"]) if job.get("num") is not None else job_dir.name,
        overrides=" ".join(report.get("overrides", [])),
        status=status,
        intra_op=threads.get("intra_op"),
        inter_op=threads.get("inter_op"),
        metrics={k: float(v) for k, v in (job.get("metrics") or {}).items()},
    )


def _row_without_report(job_dir: Path) -> Row:
    overrides = yaml.safe_load((job_dir / ".hydra" / "overrides.yaml").read_text()) or []
    return Row(job_dir.name, " ".join(masked_override(o) for o in overrides), "no report", None, None)


def read_reports(job_dir: Path) -> List[dict]:
    """The job's bootstrap.json, or its bootstrap.rank<N>.json files in rank order."""
    paths = [job_dir / REPORT_NAME] + sorted(job_dir.glob("bootstrap.rank*.json"),
                                             key=lambda p: int(p.stem.rsplit("rank", 1)[1] or 0))
    reports = []
    for path in paths:
        try:
            reports.append(json.loads(path.read_text()))
        except (OSError, ValueError):  # absent, or unreadable: the row says what is known
            continue
    return reports


def job_dirs(sweep_dir: Path) -> List[Path]:
    """Every job directory under ``sweep_dir`` (those Hydra wrote ``.hydra/overrides.yaml`` into)."""
    return [f.parent.parent for f in sorted(Path(sweep_dir).rglob(".hydra/overrides.yaml"))]


def collect(sweep_dir: Path, objective: Optional[str] = None, mode: Optional[str] = None) -> List[Row]:
    rows = []
    for job_dir in job_dirs(sweep_dir):
        reports = read_reports(job_dir)
        rows.append(row_from_reports(job_dir, reports) if reports else _row_without_report(job_dir))
    return rank(rows, objective, mode)


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
    if value is None or not math.isfinite(value):
        return None
    return value if objective[1] == "max" else -value


def rank(rows: List[Row], objective: Optional[str] = None, mode: Optional[str] = None) -> List[Row]:
    """Best first; jobs without the objective's metric last, in job order. Marks the best."""
    chosen = objective_for(rows, objective, mode)

    def job_order(row: Row):
        return (0, int(row.job), "") if row.job.isdigit() else (1, 0, row.job)

    def key(row: Row):
        value = score(row, chosen) if chosen else None
        return (value is None, -(value or 0.0), job_order(row))

    ordered = sorted(rows, key=key)
    if ordered and chosen and score(ordered[0], chosen) is not None:
        ordered[0] = replace(ordered[0], best=True)
    return ordered


def metric_names(rows: Sequence[Row]) -> List[str]:
    """Every metric any job reported, in order of first appearance by job number."""
    names: Dict[str, None] = {}
    for row in sorted(rows, key=lambda r: (0, int(r.job), "") if r.job.isdigit() else (1, 0, r.job)):
        names.update(dict.fromkeys(row.metrics))
    return list(names)


def _table(rows: Sequence[Row]) -> Tuple[List[str], List[list]]:
    names = metric_names(rows)
    header = ["job", "overrides", "status", "intra_op", "inter_op", *names, "best"]
    body = [[r.job, r.overrides, r.status, r.intra_op, r.inter_op, *(r.metrics.get(n) for n in names), r.best]
            for r in rows]
    return header, body


def _plain(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else ""
    return "" if value is None else str(value)


def _csv_cell(value) -> str:
    # OWASP's CSV-injection guidance: a spreadsheet runs a text cell starting with one
    # of these as a formula. Numbers stay numbers (a negative loss is not a formula).
    text = _plain(value)
    if isinstance(value, str) and text.startswith(("=", "+", "-", "@", "\t", "\r")):
        return "'" + text
    return text


def _md_cell(value) -> str:
    if isinstance(value, float) and not isinstance(value, bool):
        text = f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    else:
        text = _plain(value)
    return " ".join(text.split()).replace("|", "\\|")  # one line, no stray column breaks


def to_csv(rows: List[Row]) -> str:
    header, body = _table(rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([[_csv_cell(v) for v in line] for line in body])
    return out.getvalue()


def to_markdown(rows: List[Row]) -> str:
    header, body = _table(rows)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row, line in zip(rows, body):
        cells = [_md_cell(v) for v in line]
        if row.best:
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write(sweep_dir: Path, objective: Optional[str] = None, mode: Optional[str] = None) -> str:
    """Write both summary files into ``sweep_dir``; return the markdown table."""
    sweep_dir = Path(sweep_dir)
    rows = collect(sweep_dir, objective, mode)
    markdown = to_markdown(rows)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(sweep_dir / CSV_NAME, to_csv(rows))
    write_text_atomic(sweep_dir / MD_NAME, markdown)
    return markdown
