"""The start's picture (``phases.png`` in the job's directory, drawn for rank 0 at the first step of a world):
one bar a lane of ranks, at most :data:`MAX_LANES` whatever the world's size, each phase a segment of the bar, in
order, on the seconds from each process's start (the launcher's own phase before 0).

Drawn from plain values (:class:`Picture`, which :mod:`bootstrap.core.phases` makes from every rank's phases), so
that a test reads every segment back from the figure: each phase's bars carry the ``gid`` ``phase-<name>``.
:func:`main` draws one in a process of its own (:mod:`bootstrap.pictures.apart`): the job never waits for it.
"""

import importlib.util
import logging
import math
from dataclasses import field
from pathlib import Path
from typing import Any, List, Optional, Sequence

from bootstrap.doors import inbound, outbound
from bootstrap.doors.typed import Section, section
from bootstrap.pictures import apart, canvas, notes

log = logging.getLogger(__name__)
NAME = "phases.png"
MAX_LANES = 40  # bars, whatever the world's size: a lane is a span of ranks
MAX_PHASES = 24  # segments a bar (bootstrap.distributed.phase_exchange.MAX_PHASES)
MAX_NOTES = 3
BEFORE = "launcher"  # the phase drawn before the process's start


@section
class Lane(Section):
    """One bar: its ranks, and each phase's seconds there (the median over its ranks; None: none had it)."""

    label: str
    seconds: List[Optional[float]]


@section
class Picture(Section):
    title: str
    names: List[str]  # the phases, in order
    lanes: List[Lane]
    notes: List[str] = field(default_factory=list)


def read(data: Any) -> Picture:
    """A picture from parsed JSON, its shape checked: 1 to :data:`MAX_LANES` lanes of one figure a phase, each
    finite and not negative. Raises :class:`inbound.Unreadable` with a one-line reason."""
    picture = Picture.from_json(data)
    if not 1 <= len(picture.lanes) <= MAX_LANES or not 1 <= len(picture.names) <= MAX_PHASES:
        raise inbound.Unreadable(f"{len(picture.lanes)} lanes of {len(picture.names)} phases: 1 to {MAX_LANES} lanes "
                                 f"of 1 to {MAX_PHASES} phases")
    for lane in picture.lanes:
        if len(lane.seconds) != len(picture.names) or any(
                value is not None and not (math.isfinite(value) and value >= 0) for value in lane.seconds):
            raise inbound.Unreadable(f"{lane.label}: not one duration a phase")
    return picture


def figure(picture: Picture) -> Optional[Any]:
    """The picture as a figure: a bar a lane, top to bottom in rank order; None without matplotlib."""
    lines = notes.cut(picture.notes, MAX_NOTES)
    height = 0.9 + 0.28 * len(picture.lanes)
    drawn = canvas.new_figure((10, height + notes.LINE_INCHES * len(lines)))
    if drawn is None:
        return None
    ratios = [height] + ([notes.LINE_INCHES * len(lines)] if lines else [])
    every = drawn.subplots(len(ratios), 1, height_ratios=ratios, squeeze=False)[:, 0]
    axes, rows = every[0], list(range(len(picture.lanes)))
    colours = _colours(len(picture.names))
    ends = [0.0] * len(picture.lanes)
    for index, name in enumerate(picture.names):
        widths = [lane.seconds[index] or 0.0 for lane in picture.lanes]
        lefts = [-width for width in widths] if name == BEFORE else ends
        axes.barh(rows, widths, left=lefts, height=0.7, color=colours[index], label=name, gid=f"phase-{name}")
        if name != BEFORE:
            ends = [end + width for end, width in zip(ends, widths, strict=True)]
    axes.set_yticks(rows, [lane.label for lane in picture.lanes], fontsize=7)
    axes.invert_yaxis()
    axes.axvline(0, color="#444444", linewidth=0.6)
    axes.set_xlabel("seconds from each process's start (the launcher's own phase before it)", fontsize=8)
    axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    if lines:
        notes.write(every[-1], lines)
    drawn.suptitle(picture.title, fontsize=10)
    return drawn


def _colours(count: int) -> List[Any]:
    from matplotlib import colormaps

    palette = colormaps["tab20"]
    return [palette(index % 20) for index in range(count)]


def start(picture: Picture, path: Path) -> None:
    """Draw ``picture`` into ``path`` in a process of its own when the job ends (:func:`apart.later`: never while
    it trains), and return at once; without matplotlib (the ``plot`` extra) nothing is drawn, and nothing said:
    every world's first step would say it. The drawing process holds none of the job's output open: a job's
    harness (a test's, a launcher's) reading it to its end never waits for the picture."""
    try:
        if importlib.util.find_spec("matplotlib") is None:
            return
        apart.later("phases", picture.to_json(), path, holds_stderr=False)
    except Exception as error:  # noqa: BLE001 - the picture is a courtesy: the job goes on without it
        log.warning("bootstrap: no picture of the start's phases: %s",
                    outbound.finding(f"{type(error).__name__}: {error}"))


def main(argv: Sequence[str]) -> int:
    """The drawing process: ``main([PATH])`` draws the picture that arrives on stdin into PATH."""
    return apart.main(argv, "phases", lambda data: figure(read(data)))
