"""A figure to draw on, and the one way a picture leaves: every text in it cleaned as all output is
(:func:`bootstrap.doors.outbound.clean`: secrets masked, control characters escaped), then written whole.

matplotlib is optional (the ``plot`` extra) and imported only here, when a picture is asked for. Figures
are made with :class:`matplotlib.figure.Figure`, not ``pyplot``: no global state, no GUI backend, nothing
changed in an app that uses pyplot itself.
"""

from __future__ import annotations

import io
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, BinaryIO, Callable, Optional, Sequence, Tuple

from bootstrap.doors import inbound, outbound

MISSING = "no picture: matplotlib is not installed (pip install 'hydra-train-bootstrap[plot]')"
FORMATS = {".png": "png", ".svg": "svg"}
MAX_BYTES = 64 * 2**20  # the JSON of a picture of 10,000 ranks is well under 1 MiB
MAX_DRAW_S = 120  # a drawing process ends by then, whatever happens (a font cache built for the first time)


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


def save(figure: Any, path: Path) -> None:
    """Write ``figure`` to ``path`` (.png or .svg), its texts cleaned first; atomically, as every file."""
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
    outbound.write_bytes(path, buffer.getvalue())


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


# -- a picture drawn in a process of its own (the preflight's, the watch's) -----------------------------------------
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


def drawing_process(argv: Sequence[str], name: str, what: str, figure_from: Callable[[Any], Optional[Any]]) -> int:
    """A drawing process's main: ``argv`` is ``[PATH]``; the picture arrives on stdin as JSON, ``figure_from`` makes
    the figure of it (the one of ``name``, the part that asked: ``preflight``, ``watch``; ``what`` it shows)."""
    path = Path(argv[0]) if argv else Path(".")
    try:
        _bounded()
    except Exception as error:  # noqa: BLE001 - no bound to set: draw anyway, and say so
        outbound.say(f"bootstrap: {name}: drawing unbounded: {type(error).__name__}: {error}", err=True,
                     one_line=True)
    return draw_from(sys.stdin.buffer, path, name, what, figure_from)


def draw_from(stream: BinaryIO, path: Path, name: str, what: str, figure_from: Callable[[Any], Optional[Any]]) -> int:
    """Draw the picture ``stream`` holds (JSON) into ``path``. Any failure is one line on stderr, and status 1."""
    try:
        data = inbound.parse_json_bytes(stream.read(MAX_BYTES + 1), MAX_BYTES, what)
        drawn = figure_from(data)
        if drawn is None:
            outbound.say(f"bootstrap: {name}: {MISSING}", err=True, one_line=True)
            return 1
        save(drawn, path)
        return 0
    except Exception as error:  # noqa: BLE001 - whatever it is, one line: the job goes on without its picture
        outbound.say(f"bootstrap: {name}: no picture in {path}: {type(error).__name__}: {error}", err=True,
                     one_line=True)
        return 1
