"""The preflight's picture, when the check has findings: every rank's figures against the median and the floor
(:func:`picture`, pure, from the figures every rank gathered), drawn into the job's directory by a process of
its own (:func:`draw`), so that the job never waits for it and nothing in drawing it can stop the job.

Why a process, not a thread: under ``preflight.mode=error`` every rank stops at once, and torchrun (or
Lightning) stops the ranks still running as soon as one has ended, so a picture drawn inside rank 0 would be
cut short, and rank 0's record with it. The drawing process starts in a session of its own, and outlives them.
"""

from __future__ import annotations

import importlib.util
import logging
import statistics
from pathlib import Path
from typing import Any, List, Optional, Sequence

from bootstrap.doors import outbound
from bootstrap.pictures import apart, canvas
from bootstrap.pictures.preflight import Line, Panel, Picture
from bootstrap.preflight.figures import RankFigures
from bootstrap.preflight.request import Request
from bootstrap.preflight.verdict import Finding, medians_of_others

log = logging.getLogger(__name__)

COMPUTE_KINDS = ("faulty", "slow", "min_tflops")  # findings about a rank's matmul
NETWORK_KINDS = ("min_busbw_gbps", "network")  # about the world's all_reduce
MAX_NOTES = 4


def wanted(findings: Sequence[Finding]) -> bool:
    """Is there a picture to draw? When the check found something, and every rank's figures were gathered (a
    collective that did not finish leaves nothing to compare)."""
    return bool(findings) and not any(finding.kind == "unfinished" for finding in findings)


def _named(findings: Sequence[Finding], kinds: Sequence[str]) -> List[int]:
    return sorted({rank for finding in findings if finding.kind in kinds for rank in finding.ranks})


def _floor(value: Optional[float], name: str, key: str) -> List[Line]:
    return [] if value is None else [Line(kind="floor", label=f"floor {key}.preflight.{name}={value:g}",
                                          values=[value])]


def picture(world: Sequence[RankFigures], findings: Sequence[Finding], request: Request) -> Picture:
    """Every rank's figures (``world``, in rank order, as every rank judged them) and what the check found, as
    the picture's plain series: a panel for the matmul, one for the world's all_reduce, and one for the
    all_reduce within each node when it was timed."""
    key, floors, ranks = request.key, request.floors, len(world)
    # the slow rule's reference: each rank against the median of the *other* ranks (verdict._slow)
    compared = [i for i, rank in enumerate(world) if rank.tflops and not rank.compute.faulty]
    others: List[Optional[float]] = [None] * ranks
    for i, median in zip(compared, medians_of_others([world[i].tflops or 0.0 for i in compared]), strict=True):
        others[i] = median
    compute_lines = []
    if any(median is not None for median in others):
        compute_lines = [Line(kind="median", label="the other ranks' median", values=others),
                         Line(kind="threshold", label=f"slow below: that median / max_skew ({request.max_skew:g})",
                              values=[None if m is None else m / request.max_skew for m in others])]
    panels = [Panel(label="matmul TFLOP/s", values=[rank.tflops for rank in world],
                    named=_named(findings, COMPUTE_KINDS),
                    lines=compute_lines + _floor(floors.min_tflops, "min_tflops", key))]
    busbw = [rank.busbw_gbps for rank in world]
    seen = [value for value in busbw if value is not None]
    if seen:
        panels.append(Panel(label="all_reduce bus bandwidth, GB/s", values=busbw,
                            named=_named(findings, NETWORK_KINDS),
                            lines=[Line(kind="median", label="the world's: the ranks' median",
                                        values=[statistics.median(seen)])]
                            + _floor(floors.min_busbw_gbps, "min_busbw_gbps", key)))
    node = [rank.node_busbw_gbps for rank in world]
    if any(value is not None for value in node):
        panels.append(Panel(label="all_reduce within its node, GB/s", values=node,
                            named=_named(findings, ("min_node_busbw_gbps",)),
                            lines=_floor(floors.min_node_busbw_gbps, "min_node_busbw_gbps", key)))
    kinds = ", ".join(dict.fromkeys(finding.kind for finding in findings))
    title = f"preflight: {ranks} rank{'s' if ranks != 1 else ''} on {request.device}: {kinds}"
    return Picture(title=title, panels=panels,
                   notes=[finding.message for finding in findings[:MAX_NOTES]])


def draw(drawn: Any, path: Path, name: str = "preflight", module: str = "preflight",
         what: str = "every rank's figures") -> None:
    """Draw ``drawn`` (a picture section: the preflight's, or ``bootstrap.pictures.<module>``'s, whose ``main`` draws
    it) into ``path`` in a process of its own when the job ends (:func:`bootstrap.pictures.apart.later`), and return
    at once. Without matplotlib, one line in the log says how to get the picture (``name``: the part that asked)."""
    try:
        if importlib.util.find_spec("matplotlib") is None:
            log.warning("%s: %s", name, canvas.MISSING)
            return
        apart.later(module, drawn.to_json(), path)
    except Exception as error:  # noqa: BLE001 - the picture is a courtesy: the job goes on without it
        log.warning("%s: no picture: %s", name, outbound.finding(f"{type(error).__name__}: {error}"))
        return
    log.info("%s: drawing %s into %s at the job's end", name, what, path)
