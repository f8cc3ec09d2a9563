"""What one rank measured, as the fixed-size record every rank sends every other, and the header agreed first. Pure.

Two gathers carry the figures (``measure.gather``). The first gathers a :data:`HEADER` from every rank, of a
size fixed for every version (98 bytes, the size of version 1's record: a peer on version 1, which sends its
record there, is read as a header of no known magic, never a gloo abort): the magic, the record's version and
size, the largest message the rank can hold (``bounds.affordable_mb``) and its node (host and launcher node
rank), so that the links between nodes are known before anything large is sent. Only when every header matches
this rank's does the second gather carry the records, :data:`LAYOUT` bytes each. A mismatch is a finding on
every rank, since every rank reads the same headers (:func:`agree`).

What a peer sent is read back strictly (:func:`unpack`): a figure is the sentinel :data:`UNKNOWN` (not
measured) or a finite number above 0 and under the device's bound (``bounds.problem``); anything else, and a
byte out of its range, is kept as the rank's ``invalid`` reasons and the figure is left out of the verdict.
"""

from __future__ import annotations

import enum
import math
import struct
from dataclasses import field
from typing import List, Optional, Sequence, Tuple

from bootstrap.doors import inbound, outbound
from bootstrap.doors.lean import lean_dataclass
from bootstrap.preflight import bounds

VERSION = 2  # 1: 98 bytes, no header (before issue 37); 2: the header first, the link figures, more networks
MAGIC = b"HTBp"
HEADER_BYTES = 98  # fixed for every version
HOST_BYTES = 64  # a host name (RFC 1123: 63 characters a label), cut to fit
# magic, version, record size, the largest message this rank can hold (MB), node_rank, host: 89 bytes, then zeros
HEADER = struct.Struct(f"<4sBIdq{HOST_BYTES}s")
# version, node_rank, compute, network, tflops, busbw_gbps, node_busbw_gbps, link_prev_gbps, link_next_gbps, host
LAYOUT = struct.Struct(f"<BqBBddddd{HOST_BYTES}s")
# the network NCCL chose (nccl_log.Network.kind) as a byte; version 1 knew (None, ib, efa, socket, ofi, other)
NETWORKS = (None, "ib", "roce", "efa", "ofi", "socket", "fastrak", "tcpx", "other")
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
    bandwidth of the world's and its node's all_reduce (GB/s), its node's links to the previous and the next
    node of the ring (GB/s, measured by the node's first rank), and where it runs."""

    rank: int
    host: str
    node_rank: int = 0  # with the host, tells the ranks of two launcher nodes on one machine apart
    compute: Compute = Compute.NOT_RUN
    tflops: Optional[float] = None
    busbw_gbps: Optional[float] = None
    node_busbw_gbps: Optional[float] = None
    network: Optional[str] = None  # the kind of network NCCL chose here; None: not read
    link_prev_gbps: Optional[float] = None
    link_next_gbps: Optional[float] = None
    invalid: List[str] = field(default_factory=list)  # what in its record could not be believed (left out)

    @property
    def node(self) -> str:
        return f"{self.host}#{self.node_rank}"


@lean_dataclass(frozen=True)
class Header:
    """What a rank announced before its record: its version, its record's size, the largest message it holds."""

    rank: int
    magic: bytes
    version: int
    size: int
    affordable_mb: float
    host: str = "?"
    node_rank: int = 0

    @property
    def node(self) -> str:
        return f"{self.host}#{self.node_rank}"

    def problem(self, version: int = VERSION, size: int = LAYOUT.size) -> Optional[str]:
        """Why this rank's record cannot be gathered with this version's (``version``, of ``size`` bytes: the
        preflight's record, or another that shares its header), or None."""
        if not self.magic:
            return "sent no header this version knows (a version of hydra-train-bootstrap before 2?)"
        if (self.version, self.size) != (version, size):
            return (f"sends record version {self.version} of {self.size} bytes, and this rank version {version} of "
                    f"{size} bytes: a different hydra-train-bootstrap")
        return None


def _figure(value: Optional[float]) -> float:
    return UNKNOWN if value is None else float(value)


def pack(figures: RankFigures) -> bytes:
    """``figures`` as the record this rank sends."""
    network = NETWORKS.index(figures.network) if figures.network in NETWORKS else NETWORKS.index("other")
    return LAYOUT.pack(VERSION, figures.node_rank, int(figures.compute), network, _figure(figures.tflops),
                       _figure(figures.busbw_gbps), _figure(figures.node_busbw_gbps),
                       _figure(figures.link_prev_gbps), _figure(figures.link_next_gbps), host_bytes(figures.host))


def host_bytes(host: str) -> bytes:
    """A host name as a record holds it: UTF-8, cut to :data:`HOST_BYTES`."""
    return host.encode("utf-8", errors="replace")[:HOST_BYTES]


def read_host(host: bytes) -> str:
    """A host name from a record, as a message may show it (``?`` when empty)."""
    return outbound.shown(host.rstrip(b"\0").decode("utf-8", errors="replace") or "?")


def header(record: bytes, affordable_mb: float, host: str, node_rank: int, magic: bytes = MAGIC) -> bytes:
    """The header announcing ``record`` (its version is its first byte), padded to :data:`HEADER_BYTES`; ``magic``:
    the kind of record (the preflight's, or the watch's)."""
    version = record[0] if record else 0
    return HEADER.pack(magic, version, len(record), affordable_mb, node_rank, host_bytes(host)).ljust(HEADER_BYTES,
                                                                                                     b"\0")


def read_header(rank: int, data: bytes, magic: bytes = MAGIC) -> Header:
    """Rank ``rank``'s header as it sent it; one of another size or form, or of another ``magic``, is a header of
    no magic."""
    try:
        found, version, size, affordable, node_rank, host = inbound.unpack_record(HEADER, data[:HEADER.size],
                                                                                  f"rank {rank}")
    except inbound.Unreadable:
        return Header(rank, b"", 0, 0, 0.0)
    if found != magic or len(data) != HEADER_BYTES:  # nothing else in it can be read as this version's
        return Header(rank, b"", 0, 0, 0.0)
    return Header(rank, found, version, size,
                  affordable if affordable > 0 else 0.0, read_host(host),
                  node_rank if 0 <= node_rank < 2**31 else 0)


def agree(headers: Sequence[Header]) -> Tuple[List[Header], float]:
    """The ranks whose record cannot be gathered with this one's, and the largest message every rank holds (MB)."""
    return [h for h in headers if h.problem()], min((h.affordable_mb for h in headers), default=math.inf)


def read_figure(name: str, value: float, device: str, unit: str, invalid: List[str]) -> Optional[float]:
    """A peer's figure: None when not measured (:data:`UNKNOWN`), or when it cannot be (why, added to ``invalid``)."""
    if value == UNKNOWN:
        return None
    why = bounds.problem(name, value, device, unit)
    if why:
        invalid.append(why)
        return None
    return value


def unpack(rank: int, data: bytes, device: str = "cpu") -> RankFigures:
    """Rank ``rank``'s record as it sent it, each figure checked against ``device``'s bounds. The rank is its slot
    in the gather, never what it claims."""
    try:
        version, node_rank, compute, network, tflops, busbw, node_busbw, prev, following, host = \
            inbound.unpack_record(LAYOUT, data, f"rank {rank}")
    except inbound.Unreadable as error:
        return RankFigures(rank=rank, host="?", invalid=[str(error)])
    invalid: List[str] = [] if version == VERSION else [f"record version {version}, not {VERSION}"]
    if not 0 <= node_rank < 2**31:
        invalid.append(f"node rank {node_rank}")
    if compute not in Compute._value2member_map_:
        invalid.append(f"matmul verdict {compute}")
    if network >= len(NETWORKS):
        invalid.append(f"network {network}")
    gbps = [read_figure(name, value, device, "GB/s", invalid) for name, value in
            (("busbw_gbps", busbw), ("node_busbw_gbps", node_busbw), ("link_prev_gbps", prev),
             ("link_next_gbps", following))]
    return RankFigures(rank=rank, host=read_host(host),
                       node_rank=node_rank if 0 <= node_rank < 2**31 else 0,
                       compute=Compute(compute) if compute in Compute._value2member_map_ else Compute.NOT_RUN,
                       tflops=read_figure("tflops", tflops, device, "TFLOP/s", invalid),
                       busbw_gbps=gbps[0], node_busbw_gbps=gbps[1], link_prev_gbps=gbps[2], link_next_gbps=gbps[3],
                       network=NETWORKS[network] if network < len(NETWORKS) else None, invalid=invalid)


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
