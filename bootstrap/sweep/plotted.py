"""What the sweep summary's picture shows, from the summary's rows: per swept key (:mod:`bootstrap.sweep.swept`),
each job's value of it against the job's objective, and the best job's point
(:class:`bootstrap.pictures.sweep.Panel`). Pure; the drawing is :mod:`bootstrap.pictures.sweep`'s.

Only jobs with a finite value of the objective are points. A key whose every value is typed as a number
(``2``, ``1e-3``) is numeric, and a job that did not set it is no point of its panel; any other key's values are
categories, in the order the jobs (by number) gave them, and a job that did not set it is the category
:data:`NOT_SET`. The values are the rows' own, masked.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from bootstrap.doors.masking import masked_line
from bootstrap.pictures.sweep import Panel, Value
from bootstrap.sweep import rank, swept
from bootstrap.sweep.read import Row, job_order
from bootstrap.sweep.swept import Layout

NOT_SET = "(not set)"


def panels(rows: Sequence[Row], layout: Layout, chosen: Optional[Tuple[str, str]]) -> List[Panel]:
    """One panel per swept key that some job with the objective set; none without an objective."""
    if chosen is None or not layout.keys:
        return []
    scored = [(row, float(row.metrics[chosen[0]])) for row in sorted(rows, key=lambda r: job_order(r.job))
              if row.override_list is not None and rank.score(row, chosen) is not None]
    given = [swept.cells(row) for row, _ in scored]
    found = []
    for key in layout.keys:
        values = [cells.get(key) for cells in given]
        numeric = all(swept.number(v) is not None for v in values if v is not None)
        points: List[Tuple[Value, float]] = []
        best: Optional[Tuple[Value, float]] = None
        for (row, objective), value in zip(scored, values, strict=True):
            x: Optional[Value] = swept.number(value) if numeric else NOT_SET if value is None else value
            if x is None:  # a numeric key this job did not set
                continue
            points.append((x, objective))
            if row.best:
                best = (x, objective)
        if points:
            found.append(Panel(masked_line(key), tuple(points), best))  # as the table's header shows it
    return found
