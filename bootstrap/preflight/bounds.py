"""What a figure can be on a device, and what fits the check's budget and memory: one table of physical bounds. Pure.

A figure a peer sends is believed only when it is finite, above 0 and under the bound of its kind for the device
(:func:`problem`); the same bounds say which message sizes could be all_reduced within a budget at all
(:func:`too_slow`, the preset's validation) and which fit the memory every rank has free (:func:`affordable_mb`).

The bounds sit far above anything a device reaches, so that no real measurement is ever "impossible":

- a float32 matmul (TF32 or bf16 under ``matmul_precision``): B200's dense bf16 is 2.25 PFLOP/s (NVIDIA's
  Blackwell datasheet, 2024); a CPU's float32 FMA peak is cores x GHz x 64 (two AVX-512 FMA ports), 192 cores
  at 2.5 GHz: 31 TFLOP/s. The bounds: 10,000 TFLOP/s on a GPU, 200 on a CPU;
- a bus bandwidth or a link's: NVLink 5 carries 1.8 TB/s per GPU both ways together, about 900 GB/s of
  nccl-tests' busbw; gloo moves a CPU's message through its memory (12-channel DDR5: 460 GB/s a socket). The
  bounds: 4,000 GB/s on a GPU, 1,000 GB/s on a CPU.
"""

from __future__ import annotations

import math
from typing import Dict, Optional, Sequence

MAX_TFLOPS: Dict[str, float] = {"cuda": 10_000.0, "cpu": 200.0}
MAX_GBPS: Dict[str, float] = {"cuda": 4_000.0, "cpu": 1_000.0}
# The fastest bus bandwidth a size's all_reduce is assumed to reach when the preset is validated: far below the
# bounds above (a CPU's gloo over TCP loopback moves 0.4 to 2 GB/s here, NCCL over NVLink up to ~900 GB/s), yet
# above what any real run gives, so that a size refused at validation could never have fitted.
FASTEST_BUSBW_GBPS: Dict[str, float] = {"cuda": 1_000.0, "cpu": 50.0}
RUNS = 6  # all_reduces per size: one untimed, then measure.REPS (5) timed
COLLECTIVE_SHARE = 0.75  # of the budget left to the collectives (measure.COMPUTE_SHARE goes to the matmuls)
MEMORY_SHARE = 0.5  # of the memory free on a device (over its ranks) that the check's messages may take
MESSAGE_COPIES = 2  # a message and what gloo or NCCL hold beside it while it is reduced


def _kind(device: str) -> str:
    return "cuda" if device.split(":")[0] == "cuda" else "cpu"


def problem(name: str, value: float, device: str, unit: str) -> Optional[str]:
    """Why ``value`` cannot be a measured ``name`` on ``device`` (``unit``: ``TFLOP/s`` or ``GB/s``), or None."""
    bound = (MAX_TFLOPS if unit == "TFLOP/s" else MAX_GBPS)[_kind(device)]
    if not math.isfinite(value):
        return f"{name}={value} (not a number)"
    if value <= 0:
        return f"{name}={value:g} (a measured figure is above 0)"
    if value > bound:
        return f"{name}={value:g} {unit} (above {bound:g} {unit}, more than any {_kind(device).upper()} reaches)"
    return None


def run_seconds(size_mb: float, busbw_gbps: float, runs: int = RUNS) -> float:
    """The least time ``runs`` all_reduces of ``size_mb`` take at ``busbw_gbps``: busbw = algbw x 2(n-1)/n, and
    2(n-1)/n >= 1 from 2 ranks on, so one all_reduce moves at least its message at that speed."""
    return runs * size_mb * 2**20 / (busbw_gbps * 1e9)


def too_slow(sizes_mb: Sequence[float], seconds: float, device: str) -> Optional[float]:
    """How many MB of sizes in all could be all_reduced within ``seconds`` at the fastest bus bandwidth the device
    reaches, when ``sizes_mb`` together cannot; None when they can."""
    fastest, share = FASTEST_BUSBW_GBPS[_kind(device)], seconds * COLLECTIVE_SHARE
    if sum(run_seconds(size, fastest) for size in sizes_mb) <= share:
        return None
    return share * fastest * 1e9 / RUNS / 2**20


def affordable_mb(free_bytes: Optional[int], ranks_here: int) -> float:
    """The largest message (MB) a rank may allocate, when ``ranks_here`` ranks share ``free_bytes``; inf when
    the free memory is unknown."""
    if free_bytes is None:
        return math.inf
    return free_bytes * MEMORY_SHARE / max(1, ranks_here) / MESSAGE_COPIES / 2**20
