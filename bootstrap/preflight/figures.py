"""What one rank measured, as the fixed-size record every rank sends every other (one ``all_gather``). Pure.

A record is :data:`LAYOUT` bytes whatever a rank measured, so that a gather of the world's figures is one
small collective of a known size; what a peer sent is read back strictly (:func:`unpack`): a figure that is
not a finite number >= 0 counts as not measured, a host is one cleaned line.
"""

from __future__ import annotations

import enum
import math
import struct
from typing import Optional

from bootstrap.doors import inbound, outbound
from bootstrap.doors.lean import lean_dataclass

HOST_BYTES = 64  # a host name (RFC 1123: 63 characters a label), cut to fit
# node_rank, compute, network, tflops, busbw_gbps, node_busbw_gbps, host
LAYOUT = struct.Struct(f"<qBBddd{HOST_BYTES}s")
NETWORKS = (None, "ib", "efa", "socket", "ofi", "other")  # the network NCCL chose (nccl_log.Network.kind) as a byte
UNKNOWN = -1.0  # a figure not measured


class Compute(enum.IntEnum):
    """The matmul's result on a rank."""

    OK = 0
    NOT_FINITE = 1  # NaN or Inf in the result
    WRONG = 2  # finite, but further from the float64 reference than the precision allows
    NOT_RUN = 3  # the rank measured nothing (it failed to, or sent nothing readable)

    @property
    def faulty(self) -> bool:  # a rank that took part and ran no matmul (it failed) is faulty too
        return self is not Compute.OK


@lean_dataclass
class RankFigures:
    """One rank's figures: its matmul TFLOP/s and whether the result was right, its view of the bus
    bandwidth of the world's and its node's all_reduce (GB/s), and where it runs."""

    rank: int
    host: str
    node_rank: int = 0  # with the host, tells the ranks of two launcher nodes on one machine apart
    compute: Compute = Compute.NOT_RUN
    tflops: Optional[float] = None
    busbw_gbps: Optional[float] = None
    node_busbw_gbps: Optional[float] = None
    network: Optional[str] = None  # the kind of network NCCL chose here; None: not read

    @property
    def node(self) -> str:
        return f"{self.host}#{self.node_rank}"


def _figure(value: Optional[float]) -> float:
    return UNKNOWN if value is None else float(value)


def _read_figure(value: float) -> Optional[float]:
    return value if math.isfinite(value) and value >= 0 else None


def pack(figures: RankFigures) -> bytes:
    host = figures.host.encode("utf-8", errors="replace")[:HOST_BYTES]
    network = NETWORKS.index(figures.network) if figures.network in NETWORKS else NETWORKS.index("other")
    return LAYOUT.pack(figures.node_rank, int(figures.compute), network, _figure(figures.tflops),
                       _figure(figures.busbw_gbps), _figure(figures.node_busbw_gbps), host)


def unpack(rank: int, data: bytes) -> RankFigures:
    """Rank ``rank``'s record as it sent it. The rank is its slot in the gather, never what it claims."""
    try:
        node_rank, compute, network, tflops, busbw, node_busbw, host = inbound.unpack_record(LAYOUT, data,
                                                                                             f"rank {rank}")
    except inbound.Unreadable:
        return RankFigures(rank=rank, host="?")
    return RankFigures(rank=rank, host=outbound.shown(host.rstrip(b"\0").decode("utf-8", errors="replace") or "?"),
                       node_rank=node_rank if 0 <= node_rank < 2**31 else 0,
                       compute=Compute(compute) if compute in Compute._value2member_map_ else Compute.NOT_RUN,
                       tflops=_read_figure(tflops), busbw_gbps=_read_figure(busbw),
                       node_busbw_gbps=_read_figure(node_busbw),
                       network=NETWORKS[network] if network < len(NETWORKS) else None)


def bus_bandwidth_gbps(message_bytes: int, seconds: float, ranks: int) -> float:
    """An all_reduce's bus bandwidth in GB/s, with nccl-tests' formula (doc/PERFORMANCE.md in
    https://github.com/NVIDIA/nccl-tests): algbw = bytes / time; busbw = algbw * 2(n-1)/n. Each rank sends
    and receives 2(n-1)/n of the message in a ring, so busbw is the figure to compare with a link's speed,
    whatever n. One rank moves nothing: 0."""
    if ranks < 2 or seconds <= 0:
        return 0.0
    return message_bytes / seconds * 2 * (ranks - 1) / ranks / 1e9


def algorithm_bandwidth_gbps(message_bytes: int, seconds: float) -> float:
    return message_bytes / seconds / 1e9 if seconds > 0 else 0.0
