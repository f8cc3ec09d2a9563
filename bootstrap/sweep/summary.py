"""The sweep summary: one row per job, gathered from the job directories on disk, written as
``sweep_summary.md`` and ``sweep_summary.csv`` into the sweep directory (:func:`write`).

Hydra hands ``on_multirun_end`` no job results, and joblib and submitit jobs run
in other processes, so the per-job ``bootstrap.json`` files are the only record
that works under every launcher. A job directory without a report still gets a row.

Columns: the job, its overrides, status and threads, then every numeric metric the
jobs reported (in order of first appearance), then ``best``: the job that did best
on the objective. Each step is a module of its own:

- :mod:`bootstrap.sweep.walk`: which job directories, the latest sweep's only (a reused sweep directory
  holds earlier ones; the markdown says how many were left out);
- :mod:`bootstrap.sweep.read`: each job's files, hostile or not, as a :class:`~bootstrap.sweep.read.Row`;
- :mod:`bootstrap.sweep.rank`: the objective and the best job;
- :mod:`bootstrap.sweep.render` and :mod:`bootstrap.sweep.tables`: the markdown and the CSV, every text cell
  masked, one line in the markdown, no formula in the CSV. Both files leave through
  :mod:`bootstrap.doors.outbound` (masked again, control characters escaped).

:func:`write` raises only :class:`SummaryError`.

**Scale.** Reading the files is the cost: one directory listing, one ``stat`` and the two files per job
(``bench/bench_summary.py`` measures it against a bare ``json.load`` + ``yaml`` read).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from bootstrap.doors import outbound
from bootstrap.sweep import rank, read, render, walk
from bootstrap.sweep.tables import CSV_NAME, MD_NAME, to_csv


class SummaryError(Exception):
    """The summary files could not be written; the message is one line."""


def write(sweep_dir: Path, objective: Optional[str] = None, mode: Optional[str] = None,
          directions: Optional[Sequence[str]] = None) -> str:
    """Write both summary files into ``sweep_dir`` (through :mod:`bootstrap.doors.outbound`); return the markdown.
    ``directions``: the sweeper's own, per objective (:func:`bootstrap.sweep.sweepers.directions`).

    A sweep with no job (its first failed to compose) gets a one-line note, not an empty table.
    Raises only :class:`SummaryError` (the files could not be written)."""
    sweep_dir = Path(sweep_dir)
    found, older = walk.latest(sweep_dir)
    with read.no_cycle_collection():
        rows = [read.row_of(job_dir, names) for job_dir, names in found]
    rows = rank.rank(rows, objective, mode, directions)
    chosen = rank.objective_for(rows, objective, mode, directions) if rows else None
    markdown = render.markdown(rows, sweep_dir, older, chosen, objective, directions)
    try:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        outbound.write_text(sweep_dir / CSV_NAME, to_csv(rows))
        outbound.write_text(sweep_dir / MD_NAME, markdown)
    except (OSError, ValueError) as error:  # ValueError: a path with a NUL, say
        reason = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
        raise SummaryError(render.one_line(f"cannot write the sweep summary into {sweep_dir}: {reason}")) from None
    return markdown
