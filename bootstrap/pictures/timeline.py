"""The hang's timeline (``bootstrap hang RUN_DIR --plot``): one row per lane of ranks in the same state, the
last collective every rank of its process group completed and the one it waits in.

The x axis is the collective's sequence number within its process group, not time: it is the same number on
every rank (no clock to agree on between nodes), it is what tells one collective from the next, and it is what
the text's findings name (``collective #2``). How long a lane waited is written beside it, from its dump.

Drawn from plain values (:class:`LaneLike`, which :class:`bootstrap.distributed.hang.Lane` is), so that a test
reads every plotted number back from the figure: each bar has a ``gid`` (``completed-<row>``,
``waiting-<row>``, ``never-<row>``), which SVG keeps as the element's id.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence

from bootstrap.pictures import canvas, notes

SHOWN_BEFORE = 8  # collectives drawn before the earliest lane's last in common: the hang is at the right edge
MAX_NOTES = 4  # findings written under the picture (the text output has them all)
COMPLETED, WAITING, NEVER = "#4c72b0", "#c44e52", "#dd8452"


class LaneLike(Protocol):
    """What the timeline draws of a lane (:class:`bootstrap.distributed.hang.Lane` is one)."""

    @property
    def group(self) -> str: ...
    @property
    def ranks(self) -> str: ...
    @property
    def completed(self) -> int: ...
    @property
    def completed_op(self) -> str: ...
    @property
    def entered(self) -> int: ...
    @property
    def waiting_op(self) -> str: ...
    @property
    def waited_s(self) -> Optional[float]: ...


class TimelineLike(Protocol):
    """The lanes, the groups whose ranks diverge, what did not fit (a :class:`bootstrap.distributed.hang.Timeline`)."""

    @property
    def lanes(self) -> Sequence[LaneLike]: ...
    @property
    def diverged(self) -> Sequence[str]: ...
    @property
    def more(self) -> int: ...
    @property
    def more_ranks(self) -> str: ...


def row_label(lane: LaneLike) -> str:
    return f"{lane.group}: {lane.ranks}"


def end_label(lane: LaneLike, diverged: bool) -> str:
    """What is written at the end of a lane's bar."""
    done = f"#{lane.completed} {lane.completed_op}".rstrip() if lane.completed else "no collective in common"
    if lane.entered > lane.completed:
        waited = f", {lane.waited_s:.1f} s" if lane.waited_s is not None else ""
        further = f" (entered up to #{lane.entered})" if lane.entered > lane.completed + 1 else ""
        return f"{done}; waits in #{lane.completed + 1} {lane.waiting_op}{waited}{further}"
    return f"{done}; never entered #{lane.completed + 1}" if diverged else done


def figure(timeline: TimelineLike, title: str, findings: Sequence[str] = ()) -> Optional[Any]:
    """The timeline as a figure; None without matplotlib. ``findings``: the diagnosis's, the first few written
    under the picture."""
    lanes = list(timeline.lanes)
    lines = notes.cut(findings, MAX_NOTES)
    if timeline.more:
        lines.append(f"and {timeline.more} more lanes, not drawn: {timeline.more_ranks}")  # bounded: 12 spans
    height = 1.7 + 0.38 * max(len(lanes), 1)
    drawn = canvas.new_figure((11, height + notes.LINE_INCHES * len(lines)))
    if drawn is None:
        return None
    from matplotlib.ticker import MaxNLocator  # matplotlib is there: new_figure made a figure

    if lines:
        axes, under = drawn.subplots(2, 1, height_ratios=[height, notes.LINE_INCHES * len(lines)])
        notes.write(under, lines)
    else:
        axes = drawn.add_subplot()
    start = max(0, min((lane.completed for lane in lanes), default=0) - SHOWN_BEFORE)
    end = max((lane.entered for lane in lanes), default=0) + 1
    for row, lane in enumerate(lanes):
        diverged = lane.group in timeline.diverged
        done = axes.barh(row, lane.completed - start, left=start, height=0.6, color=COMPLETED,
                         label="completed: every rank of the group entered it" if row == 0 else None)
        done.patches[0].set_gid(f"completed-{row}")
        if lane.entered > lane.completed:
            waits = axes.barh(row, lane.entered - lane.completed, left=lane.completed, height=0.6, color=WAITING,
                              hatch="//", label="entered, waiting for the other ranks")
            waits.patches[0].set_gid(f"waiting-{row}")
        elif diverged:  # others of its group went on: it never entered the next one
            never = axes.barh(row, 1, left=lane.completed, height=0.6, fill=False, edgecolor=NEVER, hatch="..",
                              label="never entered (the rank is elsewhere)")
            never.patches[0].set_gid(f"never-{row}")
        axes.annotate(end_label(lane, diverged), (max(lane.entered, lane.completed + diverged), row),
                      xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
    axes.set_yticks(range(len(lanes)), [row_label(lane) for lane in lanes], fontsize=8)
    axes.set_ylim(max(len(lanes), 1) - 0.5, -0.5)  # the first lane on top
    if not lanes:  # dumps of point-to-point operations only (gloo records none of those anyway)
        axes.text(0.5, 0.5, "no collective of a process group in the dumps", ha="center", va="center",
                  transform=axes.transAxes)
    axes.set_xlim(start, end + max(2, (end - start) * 0.6))  # room for the labels at the right
    axes.set_xlabel("collective sequence number, within its process group")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    handles, labels = axes.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    drawn.suptitle(title, fontsize=10)
    if unique:  # under everything: the lanes' labels run to the right edge
        drawn.legend(unique.values(), unique.keys(), loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    return drawn
