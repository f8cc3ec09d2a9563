"""The preflight's picture (``preflight.png`` in the job's directory, when the check has findings): each
rank's figures, one panel per figure (the matmul's TFLOP/s, the all_reduce's bus bandwidth, within its node),
against the median and the floor, with the ranks a finding names marked.

Drawn from plain values (:class:`Picture`: the series :mod:`bootstrap.preflight.picture` builds), so that a test
reads every plotted number back from the figure: each artist has a ``gid`` (``ranks-<panel>``,
``named-<panel>``, ``<line kind>-<panel>``). :func:`main` draws one in a process of its own, from the picture
as JSON on its stdin: the job that asked for it never waits for it.
"""

import logging
import os
import signal
import sys
from dataclasses import field
from pathlib import Path
from typing import Any, BinaryIO, List, Optional, Sequence

from bootstrap.doors import inbound, outbound
from bootstrap.doors.typed import Section, section
from bootstrap.pictures import canvas, notes

MAX_BYTES = 64 * 2**20  # the JSON of a picture of 10,000 ranks is well under 1 MiB
MAX_DRAW_S = 120  # the drawing process ends by then, whatever happens (a font cache built for the first time)
MAX_NOTES = 4  # findings written under the picture (the log and the report have them all)
MAX_LABELLED = 8  # named ranks whose number is written beside their point (as a finding names 8)
LOG_SCALE_RATIO = 30  # a panel whose values and lines span more than this factor is drawn on a log scale
STYLE = {"median": ("#4c72b0", "-"), "threshold": ("#dd8452", "--"), "floor": ("#c44e52", ":")}
RANK, NAMED = "#8c8c8c", "#c44e52"


@section
class Line(Section):
    """A reference drawn across a panel: one value for every rank (a horizontal line), or one per rank (a short
    tick at each rank: the median of the *other* ranks differs from rank to rank)."""

    kind: str  # median | threshold | floor
    label: str
    values: List[Optional[float]]


@section
class Panel(Section):
    """One figure of every rank."""

    label: str  # the figure and its unit ("matmul TFLOP/s")
    values: List[Optional[float]]  # one per rank, in rank order; None: not measured there
    named: List[int] = field(default_factory=list)  # the ranks a finding names on this figure
    lines: List[Line] = field(default_factory=list)


@section
class Picture(Section):
    title: str
    panels: List[Panel]
    notes: List[str] = field(default_factory=list)  # the findings, one line each


def read(data: Any) -> Picture:
    """A picture from parsed JSON, its shape checked: at least one panel, panels of one length, lines of one value
    or one per rank, known line kinds, named ranks among the ranks. Raises :class:`inbound.Unreadable` with a
    one-line reason."""
    picture = Picture.from_json(data)
    ranks = {len(panel.values) for panel in picture.panels}
    if not ranks:
        raise inbound.Unreadable("the picture has no panel")
    if len(ranks) > 1:
        raise inbound.Unreadable(f"the picture's panels hold {sorted(ranks)} ranks: one number for all")
    for panel in picture.panels:
        for line in panel.lines:
            if line.kind not in STYLE or len(line.values) not in (1, len(panel.values)):
                raise inbound.Unreadable(f"{panel.label}: a line {line.kind!r} of {len(line.values)} values")
        if any(not 0 <= rank < len(panel.values) for rank in panel.named):
            raise inbound.Unreadable(f"{panel.label}: names a rank beyond its {len(panel.values)}")
    return picture


def figure(picture: Picture) -> Optional[Any]:
    """The picture as a figure, a panel under the other; None without matplotlib."""
    lines = notes.cut(picture.notes, MAX_NOTES)
    height = 2.4 * max(len(picture.panels), 1) + 0.8
    drawn = canvas.new_figure((10, height + notes.LINE_INCHES * len(lines)))
    if drawn is None:
        return None
    ratios = [2.4] * len(picture.panels) + ([notes.LINE_INCHES * len(lines)] if lines else [])
    every = drawn.subplots(len(ratios), 1, height_ratios=ratios, squeeze=False)[:, 0]
    for index, (axes, panel) in enumerate(zip(every, picture.panels, strict=False)):
        _panel(axes, panel, index)
    every[len(picture.panels) - 1].set_xlabel("rank")
    if lines:
        notes.write(every[-1], lines)
    drawn.suptitle(picture.title, fontsize=10)
    return drawn


def _panel(axes: Any, panel: Panel, index: int) -> None:
    from matplotlib.ticker import MaxNLocator

    named = set(panel.named)
    measured = [(rank, value) for rank, value in enumerate(panel.values) if value is not None]
    size = 36 if len(panel.values) <= 64 else 12 if len(panel.values) <= 1024 else 3
    plain = [(rank, value) for rank, value in measured if rank not in named]
    marked = [(rank, value) for rank, value in measured if rank in named]
    if plain:
        axes.scatter([r for r, _ in plain], [v for _, v in plain], s=size, color=RANK, label="a rank",
                     gid=f"ranks-{index}", zorder=3)
    if marked:
        axes.scatter([r for r, _ in marked], [v for _, v in marked], s=max(size, 24), color=NAMED, marker="D",
                     label="named by a finding", gid=f"named-{index}", zorder=4)
        for rank, value in marked[:MAX_LABELLED]:
            axes.annotate(f"rank {rank}", (rank, value), xytext=(4, 4), textcoords="offset points", fontsize=7)
    for line in panel.lines:
        color, style = STYLE[line.kind]
        if len(line.values) == 1:
            if line.values[0] is not None:
                axes.axhline(line.values[0], color=color, linestyle=style, label=line.label, gid=f"{line.kind}-{index}")
            continue
        ticks = [(rank, value) for rank, value in enumerate(line.values) if value is not None]
        if ticks:  # a tick at each rank, as wide as a rank: no slope drawn between two ranks' references
            axes.hlines([v for _, v in ticks], [r - 0.4 for r, _ in ticks], [r + 0.4 for r, _ in ticks], colors=color,
                        linestyles=style, label=line.label, gid=f"{line.kind}-{index}")
    shown = [v for _, v in measured] + [v for line in panel.lines for v in line.values if v is not None]
    positive = [v for v in shown if v > 0]
    if positive and max(positive) / min(positive) > LOG_SCALE_RATIO:
        axes.set_yscale("log")  # a floor 1000x above what was measured, a rank 100x slower
    elif shown:
        axes.set_ylim(0, max(shown) * 1.15 or 1)
    axes.set_xlim(-0.6, len(panel.values) - 0.4)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylabel(panel.label, fontsize=8)
    axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)


# -- drawn in a process of its own -------------------------------------------------------------
def _bounded() -> None:
    """The drawing process: gentle on the job's CPUs, quiet, and ended within :data:`MAX_DRAW_S`."""
    try:
        os.nice(10)
    except OSError:
        pass

    def too_long(*_: Any) -> None:
        raise TimeoutError(f"not drawn within {MAX_DRAW_S} s")

    signal.signal(signal.SIGALRM, too_long)
    signal.alarm(MAX_DRAW_S)
    logging.getLogger("matplotlib").setLevel(logging.ERROR)  # its own notes (a font cache built) are not ours


def main(argv: Sequence[str]) -> int:
    """The drawing process: ``main([PATH])`` draws the picture that arrives on stdin into PATH (:func:`draw_from`)."""
    path = Path(argv[0]) if argv else Path(".")
    try:
        _bounded()
    except Exception as error:  # noqa: BLE001 - no bound to set: draw anyway, and say so
        outbound.say(f"bootstrap: preflight: drawing unbounded: {type(error).__name__}: {error}", err=True,
                     one_line=True)
    return draw_from(sys.stdin.buffer, path)


def draw_from(stream: BinaryIO, path: Path) -> int:
    """Draw the picture ``stream`` holds (:class:`Picture` as JSON) into ``path``. Any failure is one line on
    stderr, and status 1."""
    try:
        data = inbound.parse_json_bytes(stream.read(MAX_BYTES + 1), MAX_BYTES, "the preflight's figures")
        drawn = figure(read(data))
        if drawn is None:
            outbound.say(f"bootstrap: preflight: {canvas.MISSING}", err=True, one_line=True)
            return 1
        if not path.parent.is_dir():  # the job's directory was deleted after the job: never made again
            return 0
        canvas.save(drawn, path, parents=False)
        return 0
    except FileNotFoundError:  # deleted while this process drew: the same
        return 0
    except Exception as error:  # noqa: BLE001 - whatever it is, one line: the job goes on without its picture
        outbound.say(f"bootstrap: preflight: no picture in {path}: {type(error).__name__}: {error}", err=True,
                     one_line=True)
        return 1
