"""Which job of a sweep did best: the objective to rank by (named, or the first of :data:`AUTO_OBJECTIVES` a
job reported) and its direction (given, the sweeper's own, or :data:`DEFAULT_MODES`), and the rows in that
order. Pure.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import List, Optional, Sequence, Tuple

from bootstrap.sweep.read import Row, job_order

# The objective when none is set: train_stub's throughput (higher is better), else a
# task's returned number, which sweepers such as Optuna minimise by default (a loss).
AUTO_OBJECTIVES: Tuple[Tuple[str, str], ...] = (("samples_per_s", "max"), ("return", "min"))
DEFAULT_MODES = dict(AUTO_OBJECTIVES)  # any other metric: min
MODES = ("max", "min")


def objective_for(rows: Sequence[Row], objective: Optional[str] = None, mode: Optional[str] = None,
                  directions: Optional[Sequence[str]] = None) -> Optional[Tuple[str, str]]:
    """The metric to rank by and its direction.

    ``objective`` None picks the first of :data:`AUTO_OBJECTIVES` that a job reported; a sweep
    of several objectives (``directions`` has more than one) then has no single best: None.
    ``mode`` None follows the sweeper's own direction for the returned value (``directions``,
    :mod:`bootstrap.sweep.sweepers`: ``return`` for one objective, ``return/<i>`` for several), else
    :data:`DEFAULT_MODES`' direction, else ``min`` (a loss).
    """
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode {mode!r}: use max or min")
    if objective is None:
        if directions and len(directions) > 1:
            return None
        reported = {name for row in rows for name in row.metrics}
        objective = next((name for name, _ in AUTO_OBJECTIVES if name in reported), None)
        if objective is None:
            return None
    return objective, mode or _sweepers_mode(objective, directions) or DEFAULT_MODES.get(objective, "min")


def _sweepers_mode(objective: str, directions: Optional[Sequence[str]]) -> Optional[str]:
    """The sweeper's direction for a returned value: ``return`` (one objective) or ``return/<i>``."""
    if not directions:
        return None
    if objective == "return":
        return directions[0] if len(directions) == 1 else None
    index = objective[len("return/"):] if objective.startswith("return/") else ""
    return directions[int(index)] if index.isdigit() and int(index) < len(directions) else None



def score(row: Row, objective: Tuple[str, str]) -> Optional[float]:
    """The row's objective value, oriented so that higher is better; None when it has none."""
    value = row.metrics.get(objective[0])
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return None
    return value if objective[1] == "max" else -value


def rank(rows: List[Row], objective: Optional[str] = None, mode: Optional[str] = None,
         directions: Optional[Sequence[str]] = None) -> List[Row]:
    """Best first; jobs without the objective's metric last, in job order. Marks the best."""
    chosen = objective_for(rows, objective, mode, directions)

    def key(row: Row) -> Tuple[bool, float, Tuple[int, int, str]]:
        value = score(row, chosen) if chosen else None
        return (value is None, -(value or 0.0), job_order(row.job))

    ordered = sorted(rows, key=key)
    if ordered and chosen and score(ordered[0], chosen) is not None:
        ordered[0] = replace(ordered[0], best=True)
    return ordered
