"""The sweep summary's markdown page: the table (:mod:`bootstrap.sweep.tables`), then why unreadable jobs were
never ranked, why no job is best, what differs between the jobs' environments
(:mod:`bootstrap.sweep.environments`) and how many jobs of an earlier sweep were left out. Pure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Tuple

from bootstrap.doors import outbound
from bootstrap.doors.masking import masked_line
from bootstrap.sweep import environments
from bootstrap.sweep.read import Row
from bootstrap.sweep.tables import job_order, to_markdown
from bootstrap.sweep.walk import MULTIRUN_NAME

MAX_REASONS = 20  # unreadable jobs named under the table; the rest are counted


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
             objective: Optional[str], directions: Optional[Sequence[str]]) -> str:
    """The page for ``rows`` in rank order; ``chosen``: the objective ranked by and its direction
    (:func:`bootstrap.sweep.rank.objective_for`), ``objective`` and ``directions`` as asked."""
    if rows:
        page = to_markdown(list(rows), chosen[0] if chosen else None) + _reasons(rows) + \
            no_best_note(rows, objective, directions)
        page += environments.note([(r.job, r.environment) for r in sorted(rows, key=lambda r: job_order(r.job))])
    else:
        page = f"No job of this sweep left a directory in {sweep_dir}: nothing to compare.\n"
    if older:
        page += (f"\n{older} job director{'y' if older == 1 else 'ies'} of an earlier sweep into this "
                 f"directory (older than its {MULTIRUN_NAME}) not listed.\n")
    return page
