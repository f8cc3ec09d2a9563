"""What the world's figures show: which ranks are faulty or slow, and why. Pure.

Every rank holds every rank's figures (one ``all_gather``) and runs :func:`judge` on them, so every rank
reaches the same verdict and, under ``preflight.mode=error``, all stop together. The rules:

- **faulty**: a rank whose matmul gave NaN or Inf, or an answer further from a float64 reference than its
  precision allows (:func:`compute_error`), whatever its speed, or that ran no matmul;
- **slow**: a rank whose TFLOP/s is more than ``max_skew`` times below the median of the *other* ranks (with 2
  ranks the median of both would hide half the gap);
- **floors**: a rank's TFLOP/s under ``min_tflops``, the world's bus bandwidth under ``min_busbw_gbps``, a
  node's under ``min_node_busbw_gbps``; the network NCCL chose on a rank, when it is not the one expected;
- **invalid**: a rank whose record held a figure that cannot be (NaN, Inf, 0, above the device's bound) or a
  byte out of range: named, and the figure left out of every other rule;
- **slow_link**: a node whose links to the other nodes are all more than ``max_skew`` times slower than the
  other links' median (:mod:`bootstrap.preflight.links`).
"""

from __future__ import annotations

import statistics
from dataclasses import field
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Optional, Protocol, Sequence, TypeVar

from bootstrap.distributed.ranks import Ranks
from bootstrap.doors import outbound
from bootstrap.doors.errors import PRESET_KEY
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.statuses import PreflightStatus as Status
from bootstrap.preflight import links as node_links
from bootstrap.preflight.figures import Compute, RankFigures
from bootstrap.preflight.request import Floors

if TYPE_CHECKING:
    from torch import Tensor

MAX_NAMED = 8  # ranks a finding names with their figures; the rest are counted

# How far one element of a matmul's result may be from a float64 reference, scaled by the norms of its row of
# A and its column of B (|c - c64| / (|a_i| |b_j|): rounding each product's inputs costs at most about the
# format's unit roundoff, fp32 2**-24, TF32 2**-11, bf16 2**-8), for the precision that
# torch.set_float32_matmul_precision set. Measured with random normal inputs, n = 512 to 2048: fp32 7e-8,
# TF32 (inputs rounded to 10 bits) 5e-5, bf16 5e-4. The tolerances sit 10x to 150x above that; one element
# doubled or of the wrong sign costs about |c| / (|a_i| |b_j|) ~ 0.7 / sqrt(n), 7.5e-3 at n = 8192, above
# the TF32 tolerance, and a flipped exponent bit or a garbage tile far more.
TOLERANCE = {"highest": 1e-5, "high": 1e-3, "medium": 5e-3}


@lean_dataclass
class Finding:
    kind: str  # faulty | slow | min_tflops | min_busbw_gbps | min_node_busbw_gbps | network | unfinished | invalid
    #            | slow_link
    message: str  # one line, naming the ranks, their hosts, the figure, what it was measured against, the fix
    ranks: List[int] = field(default_factory=list)  # the ranks named (at most MAX_NAMED)
    against: List[float] = field(default_factory=list)  # what each named rank was judged against (slow: the others')

    @property
    def faulty(self) -> bool:
        return self.kind in ("faulty", "unfinished", "invalid")


def compute_error(result: Tensor, reference: Tensor, a_rows: Tensor, b: Tensor) -> float:
    """The largest error of an element of ``result`` (rows of A @ B) against ``reference`` (the same in float64),
    scaled by the norms of its row of A (``a_rows``) and its column of ``b``; inf when it holds NaN or Inf."""
    import torch

    if not bool(torch.isfinite(result).all()):
        return float("inf")
    scale = torch.linalg.vector_norm(a_rows.double(), dim=1)[:, None] * torch.linalg.vector_norm(b.double(), dim=0)
    return float(((result.double() - reference).abs() / scale.clamp_min(1e-300)).max())


def compute_verdict(error: float, precision: str) -> Compute:
    """A result's error (:func:`compute_error`) judged against ``precision``'s tolerance."""
    if error == float("inf") or error != error:
        return Compute.NOT_FINITE
    return Compute.WRONG if error > TOLERANCE.get(precision, TOLERANCE["medium"]) else Compute.OK


def _figure(value: Optional[float]) -> str:
    return f"{value:.3g}" if value is not None else "none"


class Ranked(Protocol):
    """What a message names of a rank (a :class:`RankFigures`, or the watch's figures of a window)."""

    @property
    def rank(self) -> int: ...
    @property
    def host(self) -> str: ...


R = TypeVar("R", bound=Ranked)


def named(ranks: Sequence[R], what: Callable[[R], str]) -> str:
    """``rank 1 (host-a) 0.016 TFLOP/s, rank 5 (host-b) ...``: at most MAX_NAMED, then a count."""
    shown = [f"rank {r.rank} ({r.host}){what(r)}" for r in ranks[:MAX_NAMED]]
    more = len(ranks) - MAX_NAMED
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def medians_of_others(values: Sequence[float]) -> List[Optional[float]]:
    """For each value, the median of all the *other* values (None when it is alone): sorted once, then
    each in constant time, so 10,000 ranks cost what sorting them costs."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranked = [values[i] for i in order]
    left = len(values) - 1
    out: List[Optional[float]] = [None] * len(values)
    if left < 1:
        return out
    low, high = (left - 1) // 2, left // 2  # the middle of what is left once a value is taken out
    for position, index in enumerate(order):
        # the j-th smallest of the others is ranked[j], or ranked[j + 1] from this value's position on
        out[index] = (ranked[low + (low >= position)] + ranked[high + (high >= position)]) / 2
    return out


def _faulty(figures: Sequence[RankFigures]) -> List[Finding]:
    bad = [r for r in figures if r.compute.faulty and not (r.invalid and r.compute is Compute.NOT_RUN)]
    if not bad:
        return []
    said = {Compute.NOT_FINITE: "NaN or Inf", Compute.WRONG: "a wrong answer",
            Compute.NOT_RUN: "no result (the matmul failed there: its report says why)"}
    text = named(bad, lambda r: f": {said[r.compute]}")
    return [Finding("faulty", f"{text} in a matmul checked against float64: a faulty GPU or memory, or an "
                              f"overclock; take the node out of service (nvidia-smi -q -d ECC,PAGE_RETIREMENT)",
                    [r.rank for r in bad[:MAX_NAMED]])]


def _invalid(figures: Sequence[RankFigures]) -> List[Finding]:
    bad = [r for r in figures if r.invalid]
    if not bad:
        return []
    text = named(bad, lambda r: f" sent {', '.join(r.invalid[:3])}")
    return [Finding("invalid", f"{text}: figures no measurement gives, left out of the verdict: a rank with a broken "
                               "clock or memory, or a different build of hydra-train-bootstrap; its own report holds "
                               "what it measured", [r.rank for r in bad[:MAX_NAMED]])]


def _slow_links(figures: Sequence[RankFigures], max_skew: float) -> List[Finding]:
    slow = node_links.slow_nodes(node_links.links(figures), max_skew) if node_links.measured_any(figures) else []
    if not slow:
        return []
    text = "; ".join(f"node {s.node.host} ({Ranks.of(s.node.ranks).text()}): its links carry {_figure(s.gbps)} GB/s "
                     f"against the other links' {_figure(s.others_gbps)} GB/s ({s.others_gbps / s.gbps:.1f}x slower)"
                     for s in slow[:MAX_NAMED])
    named = [rank for s in slow[:MAX_NAMED] for rank in s.node.ranks][:MAX_NAMED]
    return [Finding("slow_link", f"{text}, above {PRESET_KEY}.preflight.max_skew={max_skew:g}: its network link is "
                                 "slow (a NIC at a lower speed or its cable, a shaped or shared link, another job's "
                                 "traffic): check the link's speed (ethtool, ibstat) and counters", named)]


def _slow(figures: Sequence[RankFigures], max_skew: float) -> List[Finding]:
    measured = [r for r in figures if r.tflops is not None and r.tflops > 0 and not r.compute.faulty]
    others = medians_of_others([r.tflops for r in measured])  # type: ignore[misc]
    slow = [(r, median) for r, median in zip(measured, others, strict=True)
            if median is not None and median / r.tflops > max_skew]  # type: ignore[operator]
    if not slow:
        return []
    slow.sort(key=lambda pair: pair[0].tflops / pair[1])  # type: ignore[operator]
    ratios = {r.rank: median / r.tflops for r, median in slow}  # type: ignore[operator]
    medians = {r.rank: median for r, median in slow}
    text = named([r for r, _ in slow], lambda r: f" is {ratios[r.rank]:.1f}x slower than the other ranks' median "
                                                  f"({_figure(r.tflops)} TFLOP/s against {_figure(medians[r.rank])})")
    return [Finding("slow", f"{text}, above {PRESET_KEY}.preflight.max_skew={max_skew:g}: another process on its "
                            f"CPUs or GPU, a throttling GPU (nvidia-smi -q -d PERFORMANCE), or a shared core?",
                    [r.rank for r, _ in slow[:MAX_NAMED]], [m for _, m in slow[:MAX_NAMED] if m is not None])]


def _low_compute(figures: Sequence[RankFigures], floor: Optional[float], device: str) -> List[Finding]:
    if floor is None:
        return []
    low = sorted((r for r in figures if r.tflops is not None and r.tflops < floor and not r.compute.faulty),
                 key=lambda r: r.tflops)  # type: ignore[arg-type,return-value]
    if not low:
        return []
    why = ("a GPU throttled or capped (nvidia-smi -q -d PERFORMANCE,POWER), another job on it, or matmuls "
           f"without TF32 ({PRESET_KEY}.torch.matmul_precision=high)") if device == "cuda" else \
        "fewer or busier CPUs than the floor assumes"
    text = named(low, lambda r: f" {_figure(r.tflops)} TFLOP/s")
    return [Finding("min_tflops", f"{text} in a matmul, under the floor {PRESET_KEY}.preflight.min_tflops={floor:g}: "
                                  f"{why}", [r.rank for r in low[:MAX_NAMED]])]


def _network(figures: Sequence[RankFigures], expected: Optional[str]) -> List[Finding]:
    """Ranks whose NCCL chose another network than ``preflight.network`` expects (a rank whose log could not be
    read says nothing: its own report says why)."""
    if expected in (None, "any"):
        return []
    wrong = [r for r in figures if r.network is not None and r.network != expected]
    if not wrong:
        return []
    text = named(wrong, lambda r: f" NCCL uses {r.network}")
    return [Finding("network", f"{text}, and {PRESET_KEY}.preflight.network={expected} expects {expected}: NCCL fell "
                               "back after its plugin or device was not found; read the 'NET/' lines of its log "
                               "(nccl.<host>.<pid>.log in the job's directory), and set NCCL_NET so that it fails "
                               "instead of falling back", [r.rank for r in wrong[:MAX_NAMED]])]


def _network_advice(backend: str) -> str:
    if backend == "nccl":
        return ("NCCL may be using sockets: set NCCL_NET (e.g. NCCL_NET=IB) so that it fails instead of falling "
                "back, or check NCCL_DEBUG=INFO's 'NET/' lines")
    return "gloo runs over TCP: check the interface (GLOO_SOCKET_IFNAME) and the network's load"


def _low_world(figures: Sequence[RankFigures], floor: Optional[float], backend: str) -> List[Finding]:
    seen = [r.busbw_gbps for r in figures if r.busbw_gbps is not None]
    if floor is None or not seen or len(figures) < 2:
        return []
    world = statistics.median(seen)
    if world >= floor:
        return []
    return [Finding("min_busbw_gbps", f"the world's all_reduce bus bandwidth is {_figure(world)} GB/s over "
                                      f"{len(figures)} ranks, under the floor {PRESET_KEY}.preflight.min_busbw_gbps="
                                      f"{floor:g}: {_network_advice(backend)}")]


def nodes(figures: Iterable[RankFigures]) -> Dict[str, List[RankFigures]]:
    """The ranks of each node (its host and launcher node rank), in rank order."""
    by_node: Dict[str, List[RankFigures]] = {}
    for r in figures:
        by_node.setdefault(r.node, []).append(r)
    return by_node


def _low_nodes(figures: Sequence[RankFigures], floor: Optional[float], backend: str) -> List[Finding]:
    if floor is None:
        return []
    low = []
    for ranks in nodes(figures).values():
        seen = [r.node_busbw_gbps for r in ranks if r.node_busbw_gbps is not None]
        if len(ranks) > 1 and seen and statistics.median(seen) < floor:
            low.append((ranks, statistics.median(seen)))
    if not low:
        return []
    why = ("NVLink or peer-to-peer not in use: check nvidia-smi topo -m, NCCL_P2P_DISABLE and NCCL_SHM_DISABLE"
           if backend == "nccl" else "the node's CPUs or memory are busy")
    text = ", ".join(f"{Ranks.of(r.rank for r in ranks).text()} on {ranks[0].host} {_figure(value)} GB/s"
                     for ranks, value in low[:MAX_NAMED])
    return [Finding("min_node_busbw_gbps", f"the all_reduce within a node is under the floor {PRESET_KEY}.preflight."
                                           f"min_node_busbw_gbps={floor:g}: {text}: {why}",
                    [ranks[0].rank for ranks, _ in low[:MAX_NAMED]])]


def judge(figures: Sequence[RankFigures], floors: Floors, max_skew: float, device: str, backend: str,
          network: Optional[str] = None, extra: Sequence[Finding] = (), key: str = "env") -> List[Finding]:
    """Every finding the world's ``figures`` show, faulty ones first, each one clean line naming the preset as
    ``key``; ``network``: the one NCCL must choose (``preflight.network``); ``extra``: findings made elsewhere (a
    collective that did not finish). The same on every rank, given the same figures."""
    found = [*_invalid(figures), *_faulty(figures), *_low_compute(figures, floors.min_tflops, device),
             *_slow(figures, max_skew), *_slow_links(figures, max_skew), *_low_world(figures, floors.min_busbw_gbps, backend),
             *_low_nodes(figures, floors.min_node_busbw_gbps, backend), *_network(figures, network), *extra]
    for finding in found:
        finding.message = outbound.finding(finding.message.replace(PRESET_KEY, key))
    return sorted(found, key=lambda finding: not finding.faulty)


def status(findings: Sequence[Finding]) -> Status:
    if any(finding.faulty for finding in findings):
        return Status.FAULTY
    return Status.SLOW if findings else Status.OK
