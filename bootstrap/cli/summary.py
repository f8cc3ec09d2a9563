"""``bootstrap summary SWEEP_DIR``: write a sweep's summary (and its picture) again, from the jobs on disk.

For a sweep whose process died before the summary was written, or to rank by another objective
(``--objective NAME --mode max|min``, with the callback's defaults and the sweeper's own direction read from the
jobs' ``.hydra/hydra.yaml``). It writes ``sweep_summary.md``, ``sweep_summary.csv`` and ``sweep_summary.png``
(``--no-plot``: no picture) into SWEEP_DIR, as a sweep's end does, and prints the markdown. Exit status: 0 when
written, 1 when it could not be written, 2 on bad usage (SWEEP_DIR is no sweep's directory, or holds more than
one sweep's jobs, or single runs beside a sweep: nothing is written there).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import List, Optional

from bootstrap.cli.commands import purpose
from bootstrap.doors import outbound
from bootstrap.sweep import rank, summary
from bootstrap.sweep.render import one_line

WHICH = "give the sweep's directory, its hydra.sweep.dir (multirun/<date>/<time> by default)"


def main(argv: Optional[List[str]] = None) -> int:
    # argparse prints its usage and errors itself, quoting what was typed: outbound's parser cleans them.
    parser = outbound.ArgumentParser(prog="bootstrap summary", description=purpose("summary"))
    parser.add_argument("sweep_dir", type=Path, metavar="SWEEP_DIR", help="the multirun directory (hydra.sweep.dir)")
    parser.add_argument("--objective", default=None,
                        help="the metric to rank by (default: samples_per_s if reported, else return)")
    parser.add_argument("--mode", choices=rank.MODES, default=None,
                        help="max or min (default: the sweeper's own for return, max for samples_per_s, else min)")
    parser.add_argument("--plot", action=argparse.BooleanOptionalAction, default=True,
                        help="draw sweep_summary.png where matplotlib is installed (default: --plot)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # the parser has printed its usage and message
        return stop.code if isinstance(stop.code, int) else 2
    if not args.sweep_dir.is_dir():
        return _refuse(f"SWEEP_DIR {one_line(args.sweep_dir)} is not a directory: {WHICH}.", 2)
    try:
        markdown = summary.write(args.sweep_dir, args.objective, args.mode, pictured=args.plot, standalone=True)
    except summary.NoJobs as error:
        return _refuse(f"SWEEP_DIR {error}: {WHICH}.", 2)  # nothing written
    except summary.SummaryError as error:
        return _refuse(str(error), 1)
    outbound.say(f"Sweep summary ({args.sweep_dir / summary.MD_NAME}):\n{markdown}")
    return 0


def _refuse(message: str, code: int) -> int:
    outbound.say(f"bootstrap summary: {one_line(message)}", err=True, one_line=True)
    return code
