"""The sweep summary's picture: the objective against each swept value, one panel per swept key, the best job
marked. Drawn from plain values (:class:`Panel`, built by :mod:`bootstrap.sweep.plotted`), once per summary.

A panel whose values are all numbers has a numeric axis, logarithmic where they are all positive and span a
factor of :data:`LOG_SPAN` or more (learning rates); any other panel has one category per value, in the order
given. The jobs' points are the scatter with gid ``jobs``, the best job's point the star with gid ``best``: a test
reads them back from the figure, and they name their groups in an SVG.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple, Union

from bootstrap.doors import outbound
from bootstrap.pictures import canvas

Value = Union[float, str]  # a swept value: a number on a numeric axis, or a category
PNG_NAME = "sweep_summary.png"
MAX_PANELS = 12  # swept keys drawn; the summary says how many more there were
MAX_VALUE_TICKS = 8  # numbers swept: up to this many distinct values, each gets its tick
MAX_TICK_LABELS = 30  # category names written under one panel; with more, every n-th
MAX_LABEL = 24  # characters of a category's name under its tick
LOG_SPAN = 100.0  # positive values spanning this factor or more get a logarithmic axis
COLUMNS = 3  # panels side by side


@dataclass(frozen=True)
class Panel:
    """One swept key: each job's value of it and its objective, and the best job's point, if it set the key."""

    key: str
    points: Tuple[Tuple[Value, float], ...]
    best: Optional[Tuple[Value, float]] = None

    @property
    def numeric(self) -> bool:
        return all(isinstance(x, float) for x, _ in self.points)

    def categories(self) -> List[str]:
        """The category values in the order given (a numeric panel has none)."""
        return [] if self.numeric else list(dict.fromkeys(str(x) for x, _ in self.points))


def figure(panels: Sequence[Panel], objective: str, mode: str) -> Optional[Any]:
    """The picture of ``panels`` (the first :data:`MAX_PANELS`), the y axes ``objective`` with its direction
    ``mode`` (max | min); None without matplotlib."""
    drawn = list(panels)[:MAX_PANELS]
    if not drawn:
        return None
    columns = min(COLUMNS, len(drawn))
    lines = math.ceil(len(drawn) / columns)
    shown = canvas.new_figure((4.2 * columns, 3.3 * lines))
    if shown is None:
        return None
    better = "higher" if mode == "max" else "lower"
    for index, panel in enumerate(drawn):
        axes = shown.add_subplot(lines, columns, index + 1)
        _panel(axes, panel)
        axes.set_xlabel(outbound.cut(panel.key, 60))
        if index % columns == 0:
            axes.set_ylabel(outbound.cut(f"{objective} ({better} is better)", 60))
        if panel.best is not None and not any(a.get_legend() for a in shown.axes):
            axes.legend(loc="best", fontsize="small")
    _no_crowded_ticks(shown, [axes for axes, panel in zip(shown.axes, drawn, strict=True) if panel.numeric])
    return shown


GAP_PT = 4.0  # the least space between two tick labels on a numeric axis, in points


def _no_crowded_ticks(shown: Any, numeric: Sequence[Any]) -> None:
    """No two tick labels of a numeric axis touch (``0.0010.002``): laid out as the file will be, each axis whose
    labels would touch gets fewer ticks, measured again, until none do (the labels' own extents, from matplotlib's
    layout, never a guess at the font)."""
    from matplotlib import ticker

    for axes in numeric:
        for _ in range(6):
            shown.draw_without_rendering()  # ticks, their texts and the layout, as saving makes them
            renderer = shown._get_renderer()
            boxes = sorted((label.get_window_extent(renderer) for label in axes.xaxis.get_ticklabels()
                            if label.get_visible() and label.get_text()), key=lambda box: box.x0)
            gap = GAP_PT * shown.dpi / 72
            if all(left.x1 + gap <= right.x0 for left, right in zip(boxes, boxes[1:], strict=False)):
                break
            fewer = max(1, len(boxes) // 2)
            if axes.get_xscale() == "log":
                axes.xaxis.set_major_locator(ticker.LogLocator(numticks=fewer + 1))
            else:
                axes.xaxis.set_major_locator(ticker.MaxNLocator(nbins=fewer, min_n_ticks=1))
            axes.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:.3g}"))
            axes.minorticks_off()


def _panel(axes: Any, panel: Panel) -> None:
    import numpy  # matplotlib's own dependency: arrays, not lists, spare it a conversion per point

    numeric = panel.numeric  # once: a panel holds a point per job
    categories = panel.categories()
    position = {name: float(i) for i, name in enumerate(categories)}

    def x_of(value: Value) -> float:
        return float(value) if numeric else position[str(value)]

    xs = numpy.fromiter((x_of(x) for x, _ in panel.points), float, len(panel.points))
    ys = numpy.fromiter((y for _, y in panel.points), float, len(panel.points))
    axes.scatter(xs, ys, s=18, alpha=0.7, color="C0", label="jobs", gid="jobs")
    if panel.best is not None:
        axes.scatter([x_of(panel.best[0])], [panel.best[1]], s=160, marker="*", color="C3", zorder=3,
                     label="best", gid="best")
    if numeric:
        values = sorted(set(xs.tolist()))
        if values[0] > 0 and values[-1] / values[0] >= LOG_SPAN:
            axes.set_xscale("log")
        if len(values) <= MAX_VALUE_TICKS and _apart(values, axes.get_xscale() == "log"):
            # a few values swept, far enough apart (thread counts): a tick at each, none between
            axes.set_xticks(values, [f"{x:.4g}" for x in values])
            axes.minorticks_off()
        else:  # values that crowd (an Optuna search's learning rates): the axis's own ticks, 3 significant digits
            from matplotlib import ticker

            axes.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:.3g}"))
        axes.margins(x=0.12, y=0.1)
        return
    step = max(1, math.ceil(len(categories) / MAX_TICK_LABELS))
    ticks = list(range(0, len(categories), step))
    axes.set_xticks(ticks, [_short(categories[i]) for i in ticks],
                    rotation=30 if len(ticks) > 4 or any(len(c) > 8 for c in categories) else 0,
                    ha="right" if len(ticks) > 4 else "center")
    axes.set_xlim(-0.5, len(categories) - 0.5)


def _apart(values: Sequence[float], log: bool) -> bool:
    """Whether a label under each value stays clear of the next one: no two values closer than a tenth of the axis
    (the panel is about ten labels wide), on the axis's scale."""
    if len(values) < 2:
        return True
    at = [math.log10(v) for v in values] if log else list(values)
    return min(b - a for a, b in zip(at, at[1:])) >= (at[-1] - at[0]) / 10


def _short(name: str) -> str:
    """A category's name under its tick: its start and its end, where names that differ at the end stay apart."""
    if len(name) <= MAX_LABEL:
        return name
    keep = (MAX_LABEL - 3) // 2
    return f"{name[:keep]}...{name[-keep:]}"


def draw(panels: Sequence[Panel], objective: str, mode: str, path: Path) -> bool:
    """Write the picture of ``panels`` to ``path`` (:func:`bootstrap.pictures.canvas.save`); False without
    matplotlib (:data:`bootstrap.pictures.canvas.MISSING` says how to get it)."""
    with warnings.catch_warnings():  # a glyph the font lacks (a box is drawn), a layout that did not fit: no news
        warnings.simplefilter("ignore", UserWarning)
        shown = figure(panels, objective, mode)
        if shown is None:
            return False
        canvas.save(shown, path)
    return True
