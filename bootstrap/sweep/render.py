"""The sweep summary's markdown page: the overrides every job shared (:mod:`bootstrap.sweep.swept`), the table
(:mod:`bootstrap.sweep.tables`) and its picture, then why unreadable jobs were never ranked, why no job is best,
what differs between the jobs' environments (:mod:`bootstrap.sweep.environments`) and how many jobs of an earlier
sweep were left out. Pure.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional, Sequence, Tuple

from bootstrap.doors import outbound
from bootstrap.doors.masking import masked_line
from bootstrap.sweep import environments, swept
from bootstrap.sweep.rank import AUTO_OBJECTIVES
from bootstrap.sweep.read import Row, job_order
from bootstrap.sweep.swept import Layout
from bootstrap.sweep.tables import CSV_NAME, MAX_CELL, to_markdown
from bootstrap.sweep.walk import MULTIRUN_NAME

MAX_REASONS = 20  # unreadable jobs named under the table; the rest are counted
MAX_SHARED = 32  # shared overrides shown above the table; the rest are counted (every job's are in the CSV)
MAX_NAMES = 12  # metric names listed where the objective is none of them


def one_line(text: object) -> str:
    """``text`` as one line of printable text: control characters escaped, white space runs one space."""
    return " ".join(outbound.printable(str(text)).split())


def no_best_note(rows: Sequence[Row], objective: Optional[str], directions: Optional[Sequence[str]]) -> str:
    """Why no job is marked best when the sweep optimised several objectives, or ''."""
    if objective is not None or not directions or len(directions) <= 1:
        return ""
    return (f"\nNo single best: the sweeper optimises {len(directions)} objectives ({', '.join(directions)}); the "
            "jobs' returns are return/0, return/1, .... Name one to rank by: "
            "hydra.callbacks.bootstrap.objective=return/0.\n")



def code(text: str) -> str:
    """``text`` as one markdown code span, whatever backticks it holds."""
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def shared_line(layout: Layout, jobs: int) -> str:
    """The overrides every job gave alike, once, above the table; '' when none."""
    if not layout.shared:
        return ""
    shown = [outbound.cut(one_line(o), MAX_CELL) for o in layout.shared[:MAX_SHARED]]
    more = len(layout.shared) - len(shown)
    whose = "all jobs" if layout.compared == jobs else f"all {layout.compared} jobs whose overrides could be read"
    tail = f" and {more} more (each job's overrides are in {CSV_NAME})" if more else ""
    return f"Shared by {whose}: {code(' '.join(shown))}{tail}\n\n"


def no_objective_note(rows: Sequence[Row], chosen: Optional[Tuple[str, str]], objective: Optional[str] = None,
                      directions: Optional[Sequence[str]] = None) -> str:
    """Why no job is best when no job reported the objective, with the metrics they did report; or ''. With no
    objective named (``objective`` None) and one sweeper objective at most, that is when no job returned a value
    or reported any of :data:`~bootstrap.sweep.rank.AUTO_OBJECTIVES`."""
    reported = list(dict.fromkeys(name for row in sorted(rows, key=lambda r: job_order(r.job)) for name in row.metrics))
    named = ", ".join(outbound.cut(one_line(masked_line(n)), MAX_CELL) for n in reported[:MAX_NAMES])
    more = f" and {len(reported) - MAX_NAMES} more" if len(reported) > MAX_NAMES else ""
    said = f"The jobs reported: {named}{more}.\n" if reported else "The jobs reported no metric.\n"
    if chosen is None:
        if objective is not None or (directions and len(directions) > 1):  # named, or several: said elsewhere
            return ""
        tried = " or ".join(code(name) for name, _ in AUTO_OBJECTIVES)
        return (f"\nNo job is best: no job returned a value or reported {tried}; "
                f"return a number from the task, or rank by a metric with the callback's objective. {said}")
    if any(chosen[0] in row.metrics for row in rows):
        return ""
    return f"\nNo job reported the objective {code(one_line(masked_line(chosen[0])))}, so none is best. " + said


def _ranks_apart(rows: Sequence[Row]) -> str:
    """The jobs whose ranks ran other packages than their rank 0 (a node with another image), or ''."""
    apart = sorted((row for row in rows if row.ranks_apart), key=lambda r: job_order(r.job))
    if not apart:
        return ""
    jobs = f"{len(apart)} job{'s' if len(apart) != 1 else ''}"
    lines = [f"\nRanks with other packages than their rank 0 ({jobs}; bootstrap diff on a job names them):"]
    lines += [f"- job {one_line(row.job)}: {row.ranks_apart}" for row in apart[:MAX_REASONS]]
    if len(apart) > MAX_REASONS:
        lines.append(f"- and {len(apart) - MAX_REASONS} more")
    return "\n".join(lines) + "\n"


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



def markdown(rows: Sequence[Row], sweep_dir: Path, older: int, chosen: Optional[Tuple[str, str]],
             objective: Optional[str], directions: Optional[Sequence[str]], layout: Optional[Layout] = None,
             picture: str = "") -> str:
    """The page for ``rows`` in rank order; ``chosen``: the objective ranked by and its direction
    (:func:`bootstrap.sweep.rank.objective_for`), ``objective`` and ``directions`` as asked; ``layout``: what the
    jobs shared and varied (:func:`bootstrap.sweep.swept.split`); ``picture``: the lines that show the picture,
    or say why there is none, under the table."""
    if rows:
        layout = swept.split(rows) if layout is None else layout
        page = shared_line(layout, len(rows)) + to_markdown(list(rows), chosen[0] if chosen else None, layout) + \
            (f"\n{picture}\n" if picture else "") + _reasons(rows) + _ranks_apart(rows) + \
            no_best_note(rows, objective, directions) + \
            no_objective_note(rows, chosen, objective, directions)
        page += environments.note([(r.job, r.environment) for r in sorted(rows, key=lambda r: job_order(r.job))])
    else:
        page = f"No job of this sweep left a directory in {sweep_dir}: nothing to compare.\n"
    if older:
        page += (f"\n{older} job director{'y' if older == 1 else 'ies'} of an earlier sweep into this "
                 f"directory (older than its {MULTIRUN_NAME}) not listed.\n")
    return page
