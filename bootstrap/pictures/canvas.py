"""A figure to draw on, and the one way a picture leaves: every text in it cleaned as all output is
(:func:`bootstrap.doors.outbound.clean`: secrets masked, control characters escaped), then written whole.

matplotlib is optional (the ``plot`` extra) and imported only here, when a picture is asked for. Figures
are made with :class:`matplotlib.figure.Figure`, not ``pyplot``: no global state, no GUI backend, nothing
changed in an app that uses pyplot itself.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Optional, Tuple

from bootstrap.doors import outbound

MISSING = "no picture: matplotlib is not installed (pip install 'hydra-train-bootstrap[plot]')"
FORMATS = {".png": "png", ".svg": "svg"}


def available() -> bool:
    """Is matplotlib importable? (Imports it: call only when a picture is wanted.)"""
    try:
        import matplotlib.figure  # noqa: F401
    except ImportError:
        return False
    return True


def new_figure(size: Tuple[float, float]) -> Optional[Any]:
    """A blank :class:`matplotlib.figure.Figure` of ``size`` inches, or None without matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure(figsize=size, layout="constrained")


def texts(figure: Any) -> list:
    """Every text artist of ``figure``: titles, labels, tick labels, legends, annotations."""
    from matplotlib.text import Text

    return list(figure.findobj(Text))


def save(figure: Any, path: Path, parents: bool = True) -> None:
    """Write ``figure`` to ``path`` (.png or .svg), its texts cleaned first; atomically, as every file.
    ``parents``: make its directory where it is missing (False: FileNotFoundError)."""
    path = Path(path)
    if path.suffix not in FORMATS:
        raise ValueError(f"{path.name}: a picture is .png or .svg")
    for text in texts(figure):
        shown = text.get_text()
        if shown:
            text.set_text(outbound.clean(shown, one_line=True))
    for axes in figure.axes:  # tick labels are made again at each draw, from the axis's formatters
        for axis in (axes.xaxis, axes.yaxis):
            axis.set_major_formatter(_cleaning(axis.get_major_formatter()))
            axis.set_minor_formatter(_cleaning(axis.get_minor_formatter()))
    buffer = io.BytesIO()
    figure.savefig(buffer, format=FORMATS[path.suffix], metadata=_no_software_metadata(path.suffix))
    outbound.write_bytes(path, buffer.getvalue(), parents=parents)


def _cleaning(inner: Any) -> Any:
    """A tick formatter that writes what ``inner`` writes, cleaned."""
    from matplotlib.ticker import Formatter

    if getattr(inner, "_cleaned", False):
        return inner

    class Cleaned(Formatter):
        _cleaned = True

        def __call__(self, x: Any, pos: Any = None) -> str:
            return outbound.clean(inner(x, pos), one_line=True)

        def format_ticks(self, values: Any) -> list:
            return [outbound.clean(label, one_line=True) for label in inner.format_ticks(values)]

        def get_offset(self) -> str:
            return outbound.clean(inner.get_offset(), one_line=True)

        def set_locs(self, locs: Any) -> None:
            inner.set_locs(locs)

        def set_axis(self, axis: Any) -> None:
            super().set_axis(axis)
            inner.set_axis(axis)

    return Cleaned()


def _no_software_metadata(suffix: str) -> dict:
    # matplotlib stamps its version and, in SVG, a date: a picture's bytes then depend only on its data
    return {"Software": None} if suffix == ".png" else {"Date": None, "Creator": None}
