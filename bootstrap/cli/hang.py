"""``bootstrap hang RUN_DIR [--plot [PATH]]``: what the ranks' flight-recorder dumps say about a hang.

The analysis: :mod:`bootstrap.distributed.hang`; the picture (``--plot``): :mod:`bootstrap.pictures.timeline`.
Exit status: 0 when the dumps show no divergence, 1 when they do, 2 when there is no dump of this run, the
usage is wrong, or the analysis failed (never 1: 1 means a divergence). The picture never changes it: a
picture that cannot be drawn (no matplotlib, a directory that cannot be written) is one line on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from bootstrap.cli.commands import purpose
from bootstrap.distributed import dumps, hang
from bootstrap.distributed.dumps import DUMP_PREFIX
from bootstrap.distributed.ranks import ranks_text
from bootstrap.doors import outbound
from bootstrap.doors.masking import masked_line
from bootstrap.pictures import canvas, timeline

PICTURE = "hang_timeline.png"  # written into RUN_DIR by a bare --plot


def main(argv: Optional[List[str]] = None) -> int:
    parser = outbound.ArgumentParser(prog="bootstrap hang", description=purpose("hang"))
    parser.add_argument("run_dir", type=Path, help="the job's output directory, which holds the ranks' dumps")
    parser.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    parser.add_argument("--plot", nargs="?", const="", metavar="PATH",
                        help=f"also draw a timeline per rank into PATH (.png or .svg; by default RUN_DIR/{PICTURE}); "
                             "needs matplotlib (pip install 'hydra-train-bootstrap[plot]')")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 2
    picture = None
    if args.plot is not None:
        picture = Path(args.plot) if args.plot else args.run_dir / PICTURE
        if picture.suffix not in canvas.FORMATS:
            outbound.say(f"bootstrap hang: --plot {picture}: a picture is .png or .svg (--plot timeline.svg)",
                         err=True, one_line=True)
            return 2
    try:
        return _answer(args.run_dir, args.json, picture)
    except Exception as error:  # noqa: BLE001 - whatever happens, a line and 2: exit 1 means a divergence
        outbound.say(f"bootstrap hang: {args.run_dir}: the dumps could not be analysed: {type(error).__name__}: "
                     f"{error}", err=True, one_line=True)
        return 2


def _answer(run_dir: Path, as_json: bool, picture: Optional[Path]) -> int:
    if not run_dir.is_dir():
        outbound.say(f"bootstrap hang: {run_dir}: no such directory.", err=True, one_line=True)
        return 2
    diagnosis, paths = hang.diagnose_dir(run_dir, dumps.run_started_ns(run_dir), timeline=picture is not None)
    if not diagnosis.ranks:
        of_this_run = " from this run" if diagnosis.stale or diagnosis.unreadable else ""
        outbound.say(f"bootstrap hang: {run_dir} holds no flight-recorder dump{of_this_run} ({DUMP_PREFIX}<rank>). "
                     "The bootstrap writes one per rank when a job under a process group fails, times out or gets "
                     "SIGTERM.", err=True, one_line=True)
        for note in diagnosis.notes:
            outbound.say(f"  {note}", err=True, one_line=True)
        return 2
    if as_json:
        outbound.say_json(diagnosis.record(run_dir, [str(p) for p in paths.values()]).to_json())
    else:
        lines = [f"bootstrap hang: {run_dir} (dumps from {ranks_text(diagnosis.ranks)})"]
        lines += [f"  {line}" for line in diagnosis.groups]
        lines += [f"  {line}" for line in diagnosis.findings] or ["  no divergence between the ranks"]
        lines += [f"  {line}" for line in diagnosis.notes]
        for line in lines:
            outbound.say(masked_line(line), one_line=True)  # a dump's fields may hold anything
    if picture is not None and diagnosis.timeline is not None:
        _draw(diagnosis, diagnosis.timeline, run_dir, picture, as_json)
    return 1 if diagnosis.findings else 0


def _draw(diagnosis: hang.Diagnosis, lanes: hang.Timeline, run_dir: Path, picture: Path, as_json: bool) -> None:
    """The timeline into ``picture``, and one line saying where (on stderr under ``--json``), or why not."""
    try:
        drawn = timeline.figure(lanes, f"bootstrap hang: {run_dir} ({ranks_text(diagnosis.ranks)})",
                                [masked_line(finding) for finding in diagnosis.findings])
        if drawn is None:
            outbound.say(f"bootstrap hang: {canvas.MISSING}", err=True, one_line=True)
            return
        canvas.save(drawn, picture)
    except Exception as error:  # noqa: BLE001 - the analysis stands: its exit status is the answer
        outbound.say(f"bootstrap hang: no picture: {type(error).__name__}: {error} (--plot PATH writes it elsewhere)",
                     err=True, one_line=True)
        return
    outbound.say(f"bootstrap hang: timeline drawn into {picture}", err=as_json, one_line=True)
