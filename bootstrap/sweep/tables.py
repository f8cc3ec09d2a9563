"""The sweep summary's two tables, from its rows (:class:`bootstrap.sweep.read.Row`): markdown for people,
printed when a sweep ends and so bounded (:data:`MAX_METRIC_COLUMNS` metrics, :data:`MAX_CELL` characters a
cell, one line a row), and CSV for machines, every metric of every job, no cell a spreadsheet formula. Pure.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Dict, List, Optional, Sequence, Tuple

from bootstrap.doors import outbound
from bootstrap.doors.masking import masked_line

CSV_NAME = "sweep_summary.csv"
MD_NAME = "sweep_summary.md"
# The markdown is printed when a sweep ends: bounded, whatever the tasks returned (the CSV keeps every metric).
MAX_METRIC_COLUMNS = 24  # metrics shown as columns, in order of first appearance (the objective always)
MAX_CELL = 120  # characters of one cell


def job_order(job: str) -> Tuple[int, int, str]:
    """Job numbers in numeric order, then any other name."""
    if job.isascii() and job.isdigit() and len(job) < 19:
        return (0, int(job), "")
    return (1, 0, job)


def _metric_names(rows: Sequence[Any]) -> List[str]:
    """Every metric any job reported, in order of first appearance by job number."""
    names: Dict[str, None] = {}
    for row in sorted(rows, key=lambda r: job_order(r.job)):
        names.update(dict.fromkeys(row.metrics))
    return list(names)


def _checked(rows: Sequence[Any]) -> bool:
    """Did the preflight check run in any job (a world of ranks, a floor)? Only then are its columns shown."""
    return any(getattr(r, "preflight", "") not in ("", "skipped") for r in rows)


def _table(rows: Sequence[Any], names: Sequence[str]) -> Tuple[List[str], List[list]]:
    checked = _checked(rows)
    header = ["job", "overrides", "status", "intra_op", "inter_op", *(["preflight", "slowest_tflops"] if checked
                                                                       else []),
              *(masked_line(n) for n in names), "best"]
    body = [[r.job, r.overrides, r.status, r.intra_op, r.inter_op, *([r.preflight, r.slowest_tflops] if checked
                                                                       else []),
             *(r.metrics.get(n) for n in names), r.best] for r in rows]
    return header, body


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else ""
    if value is None:
        return ""
    text = str(value)
    return text if text.isprintable() else outbound.printable(text)  # printable text holds nothing to escape


def _csv_cell(value: Any) -> str:
    # OWASP's CSV-injection guidance: a spreadsheet runs a text cell starting with one
    # of these as a formula (some after leading spaces). Numbers stay numbers (a negative
    # loss is not a formula).
    text = _plain(value)
    if isinstance(value, str) and text.lstrip(" ").startswith(("=", "+", "-", "@", "\t", "\r", "\n")):
        return "'" + text
    return text


def _md_cell(value: Any) -> str:
    if value is None:
        return ""
    if type(value) is float:  # at most 16 characters, no space, no "|": nothing to cut or escape
        return f"{value:.0f}" if 1000 <= abs(value) < 1e15 else f"{value:.4g}"
    if type(value) is int and -10**15 < value < 10**15:  # thread counts
        return str(value)
    text = _plain(value)
    return outbound.cut(" ".join(text.split()), MAX_CELL).replace("|", "\\|")  # one line, no stray column breaks


def to_csv(rows: List[Any]) -> str:
    header, body = _table(rows, _metric_names(rows))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([_csv_cell(v) for v in header])
    writer.writerows([[_csv_cell(v) for v in line] for line in body])
    return out.getvalue()


def to_markdown(rows: List[Any], objective: Optional[str] = None) -> str:
    """The table, the best job in bold; at most :data:`MAX_METRIC_COLUMNS` metrics (``objective`` among them)."""
    names = _metric_names(rows)
    shown = [name for name in names if name == objective] + [name for name in names if name != objective]
    shown = [name for name in names if name in shown[:MAX_METRIC_COLUMNS]]
    header, body = _table(rows, shown)
    lines = ["| " + " | ".join(_md_cell(v) for v in header) + " |", "|" + "---|" * len(header)]
    for row, line in zip(rows, body, strict=True):
        cells = [_md_cell(v) for v in line]
        if row.best:
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    left_out = len(names) - len(shown)
    more = f"\n{left_out} more metrics than shown here: every one is in {CSV_NAME}.\n" if left_out else ""
    return "\n".join(lines) + "\n" + more
