"""The sweep summary's two tables, from its rows (:class:`bootstrap.sweep.read.Row`): markdown for people,
printed when a sweep ends and so bounded (:data:`MAX_METRIC_COLUMNS` metrics, :data:`MAX_SWEPT_COLUMNS` swept keys,
:data:`MAX_CELL` characters a cell, one line a row), and CSV for machines, every metric of every job, no cell a
spreadsheet formula. Each swept key is a column (:mod:`bootstrap.sweep.swept`); the markdown leaves the overrides
every job shared to the line above it, the CSV keeps each job's whole command line too. Pure.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Dict, List, Optional, Sequence, Tuple

from bootstrap.doors import outbound
from bootstrap.doors.masking import masked_line
from bootstrap.sweep import swept
from bootstrap.sweep.read import job_order
from bootstrap.sweep.swept import Layout

CSV_NAME = "sweep_summary.csv"
MD_NAME = "sweep_summary.md"
# The markdown is printed when a sweep ends: bounded, whatever the tasks returned (the CSV keeps every metric).
MAX_METRIC_COLUMNS = 24  # metrics shown as columns, in order of first appearance (the objective always)
MAX_SWEPT_COLUMNS = 12  # swept keys shown as columns, in order of first appearance
MAX_CELL = 120  # characters of one cell
MAX_SWEPT_CELL = 60  # characters of a swept key's name or value in the markdown: a table's row stays readable


def _metric_names(rows: Sequence[Any]) -> List[str]:
    """Every metric any job reported, in order of first appearance by job number."""
    names: Dict[str, None] = {}
    for row in sorted(rows, key=lambda r: job_order(r.job)):
        names.update(dict.fromkeys(row.metrics))
    return list(names)


def _checked(rows: Sequence[Any]) -> bool:
    """Did the preflight check run in any job (a world of ranks, a floor)? Only then are its columns shown."""
    return any(getattr(r, "preflight", "") not in ("", "skipped") for r in rows)


def _table(rows: Sequence[Any], names: Sequence[str], keys: Sequence[str],
           whole_overrides: bool) -> Tuple[List[str], List[list]]:
    """The header and one line per row: the job, its whole overrides (``whole_overrides``: the CSV), status,
    threads, the time to the first step where a job reached it, the preflight's columns where it ran, the swept
    ``keys``, the metrics ``names``, best. The first columns keep their places whatever was swept: what a job was
    given sits beside what it reported."""
    checked, bad = _checked(rows), any(getattr(r, "bad_nodes", "") for r in rows)
    watched = any(getattr(r, "watch", "") for r in rows)
    stepped = any(getattr(r, "first_step_s", None) is not None for r in rows)  # a job reached its first step
    fixed = ["job", *(["overrides"] if whole_overrides else []), "status", "intra_op", "inter_op",
             *(["first_step_s"] if stepped else []), *(["preflight", "slowest_tflops"] if checked else []),
             *(["bad_nodes"] if bad else []), *(["watch"] if watched else [])]
    columns = swept.column_names(keys, [*fixed, "best", *_metric_names(rows)])
    header = [*fixed, *(masked_line(c) for c in columns), *(masked_line(n) for n in names), "best"]
    body = []
    for r in rows:
        given = swept.cells(r) if keys else {}
        body.append([r.job, *([r.overrides] if whole_overrides else []), r.status, r.intra_op, r.inter_op,
                     *([r.first_step_s] if stepped else []), *([r.preflight, r.slowest_tflops] if checked else []),
                     *([r.bad_nodes] if bad else []), *([r.watch] if watched else []),
                     *(given.get(k) for k in keys),
                     *(r.metrics.get(n) for n in names), r.best])
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
    if isinstance(value, str) and text.lstrip(" ").startswith(("=", "+", "-", "@", "\t", "\r", "\n")) \
            and not swept.is_number(text):  # a swept value typed as a number: -0.5
        return "'" + text
    return text


def _md_cell(value: Any, limit: int = MAX_CELL) -> str:
    if value is None:
        return ""
    if type(value) is float:  # at most 16 characters, no space, no "|": nothing to cut or escape
        return f"{value:.0f}" if 1000 <= abs(value) < 1e15 else f"{value:.4g}"
    if type(value) is int and -10**15 < value < 10**15:  # thread counts
        return str(value)
    text = _plain(value)
    return outbound.cut(" ".join(text.split()), limit).replace("|", "\\|")  # one line, no stray column breaks


def to_csv(rows: List[Any], layout: Optional[Layout] = None) -> str:
    """Every job, every swept key and every metric; ``layout``: :func:`bootstrap.sweep.swept.split` of ``rows``."""
    layout = swept.split(rows) if layout is None else layout
    header, body = _table(rows, _metric_names(rows), layout.keys, whole_overrides=True)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([_csv_cell(v) for v in header])
    writer.writerows([[_csv_cell(v) for v in line] for line in body])
    return out.getvalue()


def to_markdown(rows: List[Any], objective: Optional[str] = None, layout: Optional[Layout] = None) -> str:
    """The table, the best job in bold: a column per swept key (at most :data:`MAX_SWEPT_COLUMNS`), at most
    :data:`MAX_METRIC_COLUMNS` metrics (``objective`` among them). ``layout``: :func:`bootstrap.sweep.swept.split`
    of ``rows``; the overrides it shares are not in the table (:mod:`bootstrap.sweep.render` shows them once)."""
    layout = swept.split(rows) if layout is None else layout
    names = _metric_names(rows)
    shown = [name for name in names if name == objective] + [name for name in names if name != objective]
    shown = [name for name in names if name in shown[:MAX_METRIC_COLUMNS]]
    keys = layout.keys[:MAX_SWEPT_COLUMNS]
    header, body = _table(rows, shown, keys, whole_overrides=False)
    first = len(header) - 1 - len(shown) - len(keys)
    short = range(first, first + len(keys))  # the swept keys' columns
    lines = ["| " + " | ".join(_md_cell(v, MAX_SWEPT_CELL if i in short else MAX_CELL) for i, v in enumerate(header))
             + " |", "|" + "---|" * len(header)]
    for row, line in zip(rows, body, strict=True):
        cells = [_md_cell(v, MAX_SWEPT_CELL if i in short else MAX_CELL) for i, v in enumerate(line)]
        if row.best:
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    more = "".join(f"\n{left_out} more {what} than shown here: every one is in {CSV_NAME}.\n"
                   for left_out, what in ((len(layout.keys) - len(keys), "swept keys"),
                                          (len(names) - len(shown), "metrics")) if left_out)
    return "\n".join(lines) + "\n" + more
