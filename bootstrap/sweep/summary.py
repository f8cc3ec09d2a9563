"""The sweep summary: one row per job, gathered from the job directories on disk, written as
``sweep_summary.md``, ``sweep_summary.csv`` and its picture, ``sweep_summary.png``, into the sweep directory
(:func:`write`), at a sweep's end or again later (``bootstrap summary``, :mod:`bootstrap.cli.summary`).

Hydra hands ``on_multirun_end`` no job results, and joblib and submitit jobs run
in other processes, so the per-job ``bootstrap.json`` files are the only record
that works under every launcher. A job directory without a report still gets a row.

The overrides every job shared are one line above the table; then the columns are the job, one per swept key,
status and threads, every numeric metric the jobs reported (in order of first appearance), and ``best``: the job
that did best on the objective. Each step is a module of its own:

- :mod:`bootstrap.sweep.walk`: which job directories, the latest sweep's only (a reused sweep directory
  holds earlier ones; the markdown says how many were left out);
- :mod:`bootstrap.sweep.read`: each job's files, hostile or not, as a :class:`~bootstrap.sweep.read.Row`;
- :mod:`bootstrap.sweep.rank`: the objective and the best job;
- :mod:`bootstrap.sweep.swept`: the overrides every job shared, and the swept keys;
- :mod:`bootstrap.sweep.render` and :mod:`bootstrap.sweep.tables`: the markdown and the CSV, every text cell
  masked, one line in the markdown, no formula in the CSV. Both files leave through
  :mod:`bootstrap.doors.outbound` (masked again, control characters escaped);
- :mod:`bootstrap.sweep.plotted` and :mod:`bootstrap.pictures.sweep`: the picture, drawn once from the rows, where
  matplotlib is installed (the ``plot`` extra); without it the markdown says in one line how to get it.

:func:`write` raises only :class:`SummaryError`.

**Scale.** Reading the files is the cost: one directory listing, one ``stat`` and the two files per job
(``bench/bench_summary.py`` measures it against a bare ``json.load`` + ``yaml`` read). The picture is drawn once:
a fixed cost, plus a point per job.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional, Sequence, Tuple

from bootstrap.doors import outbound
from bootstrap.doors.masking import masked_line
from bootstrap.pictures import canvas
from bootstrap.pictures import sweep as picture
from bootstrap.sweep import plotted, rank, read, render, swept, walk
from bootstrap.sweep.read import Row
from bootstrap.sweep.swept import Layout
from bootstrap.sweep.tables import CSV_NAME, MD_NAME, to_csv

PNG_NAME = picture.PNG_NAME


class SummaryError(Exception):
    """The summary files could not be written; the message is one line."""


class NoJobs(SummaryError):
    """``standalone``: the directory holds no job directory of a sweep."""


def write(sweep_dir: Path, objective: Optional[str] = None, mode: Optional[str] = None,
          directions: Optional[Sequence[str]] = None, *, pictured: bool = True, standalone: bool = False) -> str:
    """Write the summary files into ``sweep_dir`` (through :mod:`bootstrap.doors.outbound`); return the markdown.
    ``directions``: the sweeper's own, per objective (:func:`bootstrap.sweep.sweepers.directions`).
    ``pictured``: draw the picture too, where matplotlib is installed and there is something to draw.
    ``standalone``: a sweep on disk, summed up again (``bootstrap summary``): a directory without a job, or with
    jobs of more than one sweep or single runs beside a sweep (:func:`walk.not_one_sweep`), is refused
    (:class:`NoJobs`), and without ``directions`` the sweeper's own are read from the jobs' ``hydra.yaml``.

    A sweep with no job (its first failed to compose) gets a one-line note, not an empty table.
    Raises only :class:`SummaryError` (the files could not be written)."""
    sweep_dir = Path(sweep_dir)
    found, older = walk.latest(sweep_dir)
    if standalone and not found:
        raise NoJobs(render.one_line(f"{sweep_dir} holds no job of a sweep (no <job>/.hydra/overrides.yaml below it)"))
    mixed = (walk.not_one_sweep(sweep_dir) or read.not_a_sweep(sweep_dir, [job for job, _ in found])) if standalone \
        else None
    if mixed:  # a mixed table would mislead, and its files would land among other runs': nothing is written
        raise NoJobs(render.one_line(mixed))
    if standalone and directions is None:
        directions = read.sweepers_directions(Path(job_dir) for job_dir, _ in found)
    with read.no_cycle_collection():
        rows = [read.row_of(job_dir, names) for job_dir, names in found]
    rows = rank.rank(rows, objective, mode, directions)
    chosen = rank.objective_for(rows, objective, mode, directions) if rows else None
    layout = swept.split(rows)
    try:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        shown = _picture(sweep_dir, rows, layout, chosen) if pictured else ""
        markdown = render.markdown(rows, sweep_dir, older, chosen, objective, directions, layout, shown)
        outbound.write_text(sweep_dir / CSV_NAME, to_csv(rows, layout))
        outbound.write_text(sweep_dir / MD_NAME, markdown)  # last: it shows the picture only once that is written
    except (OSError, ValueError) as error:  # ValueError: a path with a NUL, say
        reason = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
        raise SummaryError(render.one_line(f"cannot write the sweep summary into {sweep_dir}: {reason}")) from None
    return markdown


def _picture(sweep_dir: Path, rows: Sequence[Row], layout: Layout, chosen: Optional[Tuple[str, str]]) -> str:
    """Draw the picture (:mod:`bootstrap.pictures.sweep`) and return the markdown that shows it, or the line that
    says why there is none; '' when there is nothing to draw (no swept key, no job with the objective)."""
    panels = plotted.panels(rows, layout, chosen)
    if not panels or chosen is None:
        return ""
    name = masked_line(chosen[0])
    try:
        if not picture.draw(panels, name, chosen[1], sweep_dir / PNG_NAME):
            return canvas.MISSING
    except OSError:
        raise
    except Exception as error:  # noqa: BLE001 - matplotlib's own failure costs the picture, never the summary
        return f"no picture: matplotlib failed: {outbound.finding(f'{type(error).__name__}: {error}', 300)}"
    alt = outbound.cut(re.sub(r"[\[\]\\]", "", render.one_line(name)), 60)
    more = len(panels) - picture.MAX_PANELS
    return f"![{alt} against each swept value]({PNG_NAME})" + (
        f"\n\nThe picture shows the first {picture.MAX_PANELS} swept keys; {more} more are in the table's CSV."
        if more > 0 else "")
