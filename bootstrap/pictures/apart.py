"""A picture drawn by a process of its own: the job hands over the picture's plain values (as JSON, on the
process's stdin) and never waits for it, and nothing in drawing it can stop the job (the preflight's figures,
the watch's scores, the start's phases). A picture asked for while the job runs is kept (:func:`later`) and drawn
when the job ends (:func:`flush`, from ``Session.close``): a drawing process never competes with training.

Why a process, not a thread: when a job stops (``preflight.mode=error``), torchrun or Lightning stops the ranks
still running at once, and a picture drawn inside rank 0 would be cut short. The drawing process starts in a
session of its own, at a lower priority than the job, and ends within :data:`MAX_DRAW_S` whatever happens.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Sequence, Tuple

from bootstrap.doors import inbound, outbound
from bootstrap.pictures import canvas

MAX_BYTES = 64 * 2**20  # the JSON of a picture of 10,000 ranks is well under 1 MiB
MAX_DRAW_S = 120  # the drawing process ends by then, whatever happens (a font cache built for the first time)
ROOT = str(Path(__file__).resolve().parents[2])  # the directory that holds this bootstrap package
# The drawing process finds this very package first (not one of the same name in its working directory).
CHILD = ("import sys, importlib; sys.path[0] = sys.argv[1]; "
         "sys.exit(importlib.import_module('bootstrap.pictures.' + sys.argv[2]).main(sys.argv[3:]))")
_drawing: List[subprocess.Popen] = []  # started and not yet seen to end (a Popen dropped while running warns)
_kept: Dict[Path, Tuple[str, Any, bool]] = {}  # path -> (module, data, holds_stderr): drawn at the job's end


def start(module: str, data: Any, path: Path, holds_stderr: bool = True) -> None:
    """Start drawing ``data`` (the picture's JSON) into ``path`` with ``bootstrap.pictures.<module>.main``, in a
    process of its own, and return at once. Raises what starting it raised; the caller says it in one line.
    ``holds_stderr``: the drawing process says what it could not draw on the job's stderr, which it then holds open
    until it ends (whoever reads the job's output to its end waits for the picture); else it says nothing."""
    _drawing[:] = [started for started in _drawing if started.poll() is None]
    with tempfile.TemporaryFile() as feed:  # unlinked already: nothing is left behind, whatever happens
        feed.write(outbound.to_json(data).encode("utf-8"))
        feed.seek(0)
        _drawing.append(subprocess.Popen([sys.executable, "-c", CHILD, ROOT, module, str(path)], stdin=feed,
                                         stdout=subprocess.DEVNULL, stderr=None if holds_stderr else subprocess.DEVNULL,
                                         start_new_session=True))


def later(module: str, data: Any, path: Path, holds_stderr: bool = True) -> None:
    """Keep a picture to draw at the job's end (:func:`flush`), as :func:`start` would draw it now. A drawing process
    started while the job trains takes the CPUs of the rank that started it (it inherits the rank's CPU affinity):
    measured on this 2-core VM, rank 0's own work took 2.7x its peer's for the seconds matplotlib took, and the
    watch then named rank 0 slow. The latest picture of a path wins (the watch's, drawn once with all it saw)."""
    _kept[Path(path)] = (module, data, holds_stderr)


def flush() -> None:
    """The job's end: draw every picture kept (:func:`later`), each in a process of its own; a picture that cannot
    be started is one line in the log, and the others are still drawn."""
    kept = list(_kept.items())
    _kept.clear()
    for path, (module, data, holds_stderr) in kept:
        try:
            start(module, data, path, holds_stderr)
        except Exception as error:  # noqa: BLE001 - a picture is a courtesy: the job's end goes on without it
            logging.getLogger(__name__).warning("%s: no picture in %s: %s", module, path,
                                                outbound.finding(f"{type(error).__name__}: {error}"))


def _bounded(what: str) -> None:
    """The drawing process: gentle on the job's CPUs, quiet, and ended within :data:`MAX_DRAW_S`."""
    try:
        os.nice(10)
    except OSError:
        pass

    def too_long(*_: Any) -> None:
        raise TimeoutError(f"not drawn within {MAX_DRAW_S} s")

    try:
        signal.signal(signal.SIGALRM, too_long)
        signal.alarm(MAX_DRAW_S)
    except Exception as error:  # noqa: BLE001 - no bound to set: draw anyway, and say so
        outbound.say(f"bootstrap: {what}: drawing unbounded: {type(error).__name__}: {error}", err=True,
                     one_line=True)
    logging.getLogger("matplotlib").setLevel(logging.ERROR)  # its own notes (a font cache built) are not ours


def main(argv: Sequence[str], what: str, figure: Callable[[Any], Optional[Any]]) -> int:
    """The drawing process of ``what``: ``main([PATH])`` draws the picture on stdin into PATH (:func:`draw_from`)."""
    _bounded(what)
    return draw_from(sys.stdin.buffer, Path(argv[0]) if argv else Path("."), what, figure)


def draw_from(stream: BinaryIO, path: Path, what: str, figure: Callable[[Any], Optional[Any]]) -> int:
    """Draw the picture ``stream`` holds (JSON, which ``figure`` reads and draws) into ``path``. Any failure is one
    line on stderr, and status 1."""
    try:
        drawn = figure(inbound.parse_json_bytes(stream.read(MAX_BYTES + 1), MAX_BYTES, f"the {what}'s figures"))
        if drawn is None:
            outbound.say(f"bootstrap: {what}: {canvas.MISSING}", err=True, one_line=True)
            return 1
        if not path.parent.is_dir():  # the job's directory was deleted after the job: never made again
            return 0
        canvas.save(drawn, path, parents=False)
        return 0
    except FileNotFoundError:  # deleted while this process drew: the same
        return 0
    except Exception as error:  # noqa: BLE001 - whatever it is, one line: the job goes on without its picture
        outbound.say(f"bootstrap: {what}: no picture in {path}: {type(error).__name__}: {error}", err=True,
                     one_line=True)
        return 1
