"""What one rank measured in one window, as the fixed-size record it puts in the job's store, behind the
preflight's header (:mod:`bootstrap.preflight.figures`: the same 98 bytes, the watch's own magic). Pure.

Each rank sends its header once, before its first window's record; rank 0 reads a rank's records only once its
header matches this version's (:meth:`~bootstrap.preflight.figures.Header.problem`): a peer on another version is
an ``invalid`` finding naming it, never a misread figure. A record is read back strictly (:func:`unpack`): a
duration is finite, at least 0 and under a day; a link's speed is believed under the preflight's bounds
(:func:`bootstrap.preflight.figures.read_figure`); anything else is kept as the rank's ``invalid`` reasons and
the figure is left out of the verdict. The rank is the record's key in the store, never what the record claims.
"""

from __future__ import annotations

import math
import struct
from dataclasses import field
from typing import List, Optional

from bootstrap.doors import inbound
from bootstrap.doors.lean import lean_dataclass
from bootstrap.preflight import figures as preflight_figures
from bootstrap.preflight.figures import UNKNOWN, host_bytes, read_figure, read_host

VERSION = 1
MAGIC = b"HTBw"
MAX_SECONDS = 86400.0  # a step's time, or its own time, above a day is no measurement
WAITS_MEASURED = 1  # flags: the steps' waits in collectives were read (the flight recorder held them)
# version, flags, node_rank, window, steps, step_s, own_s, link_next_gbps, link_prev_gbps, host
LAYOUT = struct.Struct(f"<BBqQIdddd{preflight_figures.HOST_BYTES}s")


@lean_dataclass
class WindowFigures:
    """One rank's window: the steps it marked, the median of their wall times and of their own times (a step less
    its waits in collectives), and, on a node's first rank, its link to the next node of the ring (GB/s)."""

    rank: int
    host: str
    window: int
    node_rank: int = 0
    steps: int = 0
    step_s: Optional[float] = None
    own_s: Optional[float] = None
    waits_measured: bool = False
    link_next_gbps: Optional[float] = None
    link_prev_gbps: Optional[float] = None  # never sent: the previous node's link_next, filled in by rank 0
    invalid: List[str] = field(default_factory=list)  # what in its record could not be believed (left out)

    @property
    def node(self) -> str:
        return f"{self.host}#{self.node_rank}"


def _value(value: Optional[float]) -> float:
    return UNKNOWN if value is None else float(value)


def pack(figures: WindowFigures) -> bytes:
    """``figures`` as the record this rank sends."""
    return LAYOUT.pack(VERSION, WAITS_MEASURED if figures.waits_measured else 0, figures.node_rank,
                       figures.window, min(figures.steps, 2**32 - 1), _value(figures.step_s),
                       _value(figures.own_s), _value(figures.link_next_gbps), 0.0, host_bytes(figures.host))


def header(figures: WindowFigures) -> bytes:
    """The header this rank sends once, before its first record."""
    return preflight_figures.header(pack(figures), 0.0, figures.host, figures.node_rank, MAGIC)


def read_header(rank: int, data: bytes) -> preflight_figures.Header:
    return preflight_figures.read_header(rank, data, MAGIC)


def problem(header_read: preflight_figures.Header) -> Optional[str]:
    """Why rank's records cannot be read with this version's, or None."""
    return header_read.problem(VERSION, LAYOUT.size)


def _seconds(name: str, value: float, invalid: List[str]) -> Optional[float]:
    if value == UNKNOWN:
        return None
    if not (math.isfinite(value) and 0 <= value <= MAX_SECONDS):
        invalid.append(f"{name}={value:g} (not a duration from 0 to a day)")
        return None
    return value


def unpack(rank: int, window: int, data: bytes) -> WindowFigures:
    """Rank ``rank``'s record in ``window``'s slot as it sent it, each figure checked; its ``window`` is the one it
    says (the slot holds every other window: an earlier or later one is not ``window``'s)."""
    try:
        version, flags, node_rank, sent_window, steps, step_s, own_s, link_next, _, host = \
            inbound.unpack_record(LAYOUT, data, f"rank {rank}")
    except inbound.Unreadable as error:
        return WindowFigures(rank=rank, host="?", window=window, invalid=[str(error)])
    invalid: List[str] = [] if version == VERSION else [f"record version {version}, not {VERSION}"]
    if not 0 <= node_rank < 2**31:
        invalid.append(f"node rank {node_rank}")
    step = _seconds("step_s", step_s, invalid)
    own = _seconds("own_s", own_s, invalid)
    if step is not None and own is not None and own > step * (1 + 1e-9):
        invalid.append(f"own_s={own:g} above step_s={step:g}")
        own = None
    return WindowFigures(rank=rank, host=read_host(host), window=sent_window,
                         node_rank=node_rank if 0 <= node_rank < 2**31 else 0, steps=steps, step_s=step, own_s=own,
                         waits_measured=bool(flags & WAITS_MEASURED),
                         link_next_gbps=read_figure("link_next_gbps", link_next, "cpu", "GB/s", invalid),
                         invalid=invalid)
