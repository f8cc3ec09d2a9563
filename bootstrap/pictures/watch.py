"""The watch's picture (``watch.png`` in the job's directory, when the watch found something): each lane's scores
over time, the relative score above the individual one, one row a lane (at most 40, whatever the world's size:
one a rank, or spans of ranks showing their lowest score), the lanes a finding names marked.

Drawn from plain values (:class:`Picture`, which :func:`bootstrap.watch.series.picture` builds), so that a test
reads every plotted number back: each panel's mesh has a ``gid`` (``relative``, ``individual``). :func:`main`
draws one in a process of its own (:mod:`bootstrap.pictures.apart`), from the picture as JSON
on its stdin: the job that asked for it never waits for it.
"""

from dataclasses import field
from typing import Any, List, Optional, Sequence

from bootstrap.doors import inbound
from bootstrap.doors.typed import Section, section
from bootstrap.pictures import apart, canvas, notes

MAX_NOTES = 4
MAX_LANES = 40
NAMED = "#c44e52"


@section
class Picture(Section):
    title: str
    lanes: List[str]  # each lane's label: "rank 3", "ranks 0-409"
    ends_s: List[float]  # when each point's window ended, in seconds since the watch started
    relative: List[List[Optional[float]]]  # [point][lane]
    individual: List[List[Optional[float]]]
    threshold: float
    named: List[int] = field(default_factory=list)  # the lanes a finding names
    notes: List[str] = field(default_factory=list)  # the findings, one line each


def read(data: Any) -> Picture:
    """A picture from parsed JSON, its shape checked; raises :class:`inbound.Unreadable` with one line."""
    picture = Picture.from_json(data)
    lanes, points = len(picture.lanes), len(picture.ends_s)
    if not 0 < lanes <= MAX_LANES or not points:
        raise inbound.Unreadable(f"the picture has {lanes} lanes and {points} windows")
    for name in ("relative", "individual"):
        rows = getattr(picture, name)
        if len(rows) != points or any(len(row) != lanes for row in rows):
            raise inbound.Unreadable(f"the picture's {name} scores are not {points} windows of {lanes} lanes")
    if any(not 0 <= lane < lanes for lane in picture.named):
        raise inbound.Unreadable(f"the picture names a lane beyond its {lanes}")
    return picture


def figure(picture: Picture) -> Optional[Any]:
    """The picture as a figure: a panel per score, lanes down, time across; None without matplotlib."""
    lines = notes.cut(picture.notes, MAX_NOTES)
    height = 0.9 + 2 * (0.8 + 0.16 * len(picture.lanes))
    drawn = canvas.new_figure((10, height + notes.LINE_INCHES * len(lines)))
    if drawn is None:
        return None
    rows = [0.8 + 0.16 * len(picture.lanes)] * 2 + ([notes.LINE_INCHES * len(lines)] if lines else [])
    every = drawn.subplots(len(rows), 1, height_ratios=rows, squeeze=False)[:, 0]
    mesh = None
    for axes, name in zip(every, ("relative", "individual"), strict=False):
        mesh = _panel(axes, picture, name)
    every[1].set_xlabel("seconds since the watch started (the end of each window)")
    if mesh is not None:
        drawn.colorbar(mesh, ax=list(every[:2]), label=f"score (suspect under {picture.threshold:g})")
    if lines:
        notes.write(every[-1], lines)
    drawn.suptitle(picture.title, fontsize=10)
    return drawn


def _panel(axes: Any, picture: Picture, name: str) -> Any:
    values = [[1.0 if value is None else value for value in row] for row in getattr(picture, name)]
    ends = picture.ends_s
    starts = [0.0, *ends[:-1]]
    columns = [*starts, ends[-1]]
    lanes = list(range(len(picture.lanes) + 1))
    grid = [[values[point][lane] for point in range(len(ends))] for lane in range(len(picture.lanes))]
    mesh = axes.pcolormesh(columns, lanes, grid, vmin=0.0, vmax=1.0, cmap="RdYlGn", gid=name, shading="flat")
    axes.set_ylim(len(picture.lanes), 0)
    axes.set_yticks([lane + 0.5 for lane in range(len(picture.lanes))], picture.lanes, fontsize=7)
    for lane in picture.named:
        axes.get_yticklabels()[lane].set_color(NAMED)
    axes.set_ylabel(f"{name} score", fontsize=8)
    return mesh


def main(argv: Sequence[str]) -> int:
    """The drawing process: ``main([PATH])`` draws the picture that arrives on stdin into PATH."""
    return apart.main(argv, "watch", lambda data: figure(read(data)))
