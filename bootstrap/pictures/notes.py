"""Lines of text under a picture (its findings, what did not fit): each line a text of its own, since every
text of a picture leaves as one line (:func:`bootstrap.pictures.canvas.save`), cut to a readable width."""

from __future__ import annotations

from typing import Any, List, Sequence

MAX_CHARS = 160
LINE_INCHES = 0.22  # the height each line takes under the picture


def cut(lines: Sequence[str], most: int) -> List[str]:
    """The first ``most`` lines, each cut to :data:`MAX_CHARS` characters."""
    return [line if len(line) <= MAX_CHARS else line[:MAX_CHARS - 3] + "..." for line in lines[:most]]


def write(axes: Any, lines: Sequence[str]) -> None:
    """``lines`` on ``axes`` (an axes of their own, under the picture's), top to bottom; each text's gid is
    ``note-<n>``."""
    axes.axis("off")
    for number, line in enumerate(lines):
        axes.text(0, 1 - (number + 0.5) / len(lines), line, fontsize=7, ha="left", va="center",
                  transform=axes.transAxes, gid=f"note-{number}")
