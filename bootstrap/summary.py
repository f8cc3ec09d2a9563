"""The sweep summary: one row per job, gathered from the job directories on disk.

Hydra hands ``on_multirun_end`` no job results, and joblib and submitit jobs run
in other processes, so the per-job ``bootstrap.json`` files are the only record
that works under every launcher. A job directory without a report still gets a row.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import List, Optional

import yaml

from bootstrap.report import REPORT_NAME, masked_override, write_text_atomic

CSV_NAME = "sweep_summary.csv"
MD_NAME = "sweep_summary.md"


@dataclass(frozen=True)
class Row:
    job: str
    overrides: str
    status: str
    intra_op: Optional[int]
    inter_op: Optional[int]
    samples_per_s: Optional[float]
    final_loss: Optional[float]
    fastest: bool = False


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
    metrics = job.get("metrics") or {}
    threads = report.get("threads") or {}
    return Row(
        job=str(job["num"]) if job.get("num") is not None else job_dir.name,
        overrides=" ".join(report.get("overrides", [])),
        status=status,
        intra_op=threads.get("intra_op"),
        inter_op=threads.get("inter_op"),
        samples_per_s=metrics.get("samples_per_s"),
        final_loss=metrics.get("final_loss"),
    )


def _row_without_report(job_dir: Path) -> Row:
    overrides = yaml.safe_load((job_dir / ".hydra" / "overrides.yaml").read_text()) or []
    return Row(job_dir.name, " ".join(masked_override(o) for o in overrides), "no report", None, None, None, None)


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


def collect(sweep_dir: Path) -> List[Row]:
    """Every job directory under ``sweep_dir`` (those Hydra wrote ``.hydra/overrides.yaml`` into)."""
    rows = []
    for overrides_file in sorted(Path(sweep_dir).rglob(".hydra/overrides.yaml")):
        job_dir = overrides_file.parent.parent
        reports = read_reports(job_dir)
        rows.append(row_from_reports(job_dir, reports) if reports else _row_without_report(job_dir))
    return rank(rows)


def rank(rows: List[Row]) -> List[Row]:
    """Fastest first; jobs without a throughput last, in job order. Marks the fastest."""
    def speed(row: Row) -> float:
        return row.samples_per_s if row.samples_per_s is not None and math.isfinite(row.samples_per_s) else -1.0

    def job_order(row: Row):
        return (0, int(row.job), "") if row.job.isdigit() else (1, 0, row.job)

    ordered = sorted(rows, key=lambda r: (-speed(r), job_order(r)))
    if ordered and speed(ordered[0]) > 0:
        ordered[0] = Row(*astuple(ordered[0])[:-1], fastest=True)
    return ordered


def _csv_value(value):
    if isinstance(value, bool):
        return "yes" if value else ""
    return "" if value is None else value


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(_csv_value(value))


def to_csv(rows: List[Row]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([f.name for f in fields(Row)])
    for row in rows:
        writer.writerow([_csv_value(v) for v in astuple(row)])
    return out.getvalue()


def to_markdown(rows: List[Row]) -> str:
    header = [f.name for f in fields(Row)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [_cell(v).replace("|", "\\|") for v in astuple(row)]
        if row.fastest:
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write(sweep_dir: Path) -> str:
    """Write both summary files into ``sweep_dir``; return the markdown table."""
    sweep_dir = Path(sweep_dir)
    rows = collect(sweep_dir)
    markdown = to_markdown(rows)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(sweep_dir / CSV_NAME, to_csv(rows))
    write_text_atomic(sweep_dir / MD_NAME, markdown)
    return markdown
