"""The checks of the preset's ``preflight``, ``nodes`` and ``watch`` sections that the type system cannot make
(figures in range, sizes that fit the budget, host names), each a ConfigError naming ``env.<section>.<key>`` and
the fix. Pure.
"""

from __future__ import annotations

import math
from typing import Any

from bootstrap.doors.errors import PRESET_KEY, ConfigError
from bootstrap.preflight import bounds

# ``check`` and ``nodes`` are core.schema's Preflight and Nodes sections; schema.validate() calls these, so they do
# not import schema (imports point one way).

MAX_MESSAGE_MB = 16384  # one all_reduce message: 16 GiB is past any link's plateau, and fits a GPU's memory
MAX_SIZES = 8  # message sizes per check


def preflight(check: Any, timeout_s: int, device: str = "cpu") -> None:
    where = f"{PRESET_KEY}.preflight"
    for name in ("min_tflops", "min_busbw_gbps", "min_node_busbw_gbps"):
        value = getattr(check, name)
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise ConfigError(f"{where}.{name}={value} is not a floor. Use a figure >= 0, e.g. {where}.{name}=50, "
                              f"or null for none.")
    if not (math.isfinite(check.max_skew) and check.max_skew > 1):
        raise ConfigError(f"{where}.max_skew={check.max_skew} must be above 1 (a rank this many times slower than "
                          f"the others' median is named), e.g. {where}.max_skew=2.")
    if not (math.isfinite(check.seconds) and 0 < check.seconds <= timeout_s):
        raise ConfigError(f"{where}.seconds={check.seconds} must be positive and at most "
                          f"{PRESET_KEY}.distributed.timeout_s ({timeout_s}), e.g. {where}.seconds=5.")
    sizes = list(check.sizes_mb)
    if not 0 < len(sizes) <= MAX_SIZES or not all(math.isfinite(s) and 0 < s <= MAX_MESSAGE_MB for s in sizes):
        raise ConfigError(f"{where}.sizes_mb={sizes} must list 1 to {MAX_SIZES} message sizes in MB, each above 0 "
                          f"and at most {MAX_MESSAGE_MB}, e.g. {where}.sizes_mb=[1] on a CPU or [64,256] on GPUs.")
    fits_mb = bounds.too_slow(sizes, check.seconds, device)
    if fits_mb is not None:  # refused before anything is allocated: no run could measure these in time
        raise ConfigError(f"{where}.sizes_mb={sizes} cannot be all_reduced {bounds.RUNS} times each within "
                          f"{where}.seconds={check.seconds:g}, even at {bounds.FASTEST_BUSBW_GBPS[device]:g} GB/s "
                          f"(faster than any {device} moves them): at most {fits_mb:.3g} MB in all fits; lower "
                          f"{where}.sizes_mb or raise {where}.seconds.")


MAX_TTL_H = 24 * 365  # a year
MAX_REQUEUES = 100
MAX_OBSERVATIONS = 1000


def nodes(nodes: Any) -> None:
    from bootstrap.distributed.nodename import NAME as HOST

    where = f"{PRESET_KEY}.nodes"
    if nodes.exclude_file is not None and not (nodes.exclude_file.strip() and "\0" not in nodes.exclude_file):
        raise ConfigError(f"{where}.exclude_file={nodes.exclude_file!r} is not a path. Give a file on a shared "
                          f"filesystem, e.g. {where}.exclude_file=/shared/bad_nodes.jsonl, or null for none.")
    if isinstance(nodes.exclude_ttl_h, bool) or not (math.isfinite(nodes.exclude_ttl_h)
                                                     and 0 < nodes.exclude_ttl_h <= MAX_TTL_H):
        raise ConfigError(f"{where}.exclude_ttl_h={nodes.exclude_ttl_h} must be positive hours, at most {MAX_TTL_H} "
                          f"(a year), e.g. {where}.exclude_ttl_h=24.")
    for name, value, low, high in (("min_observations", nodes.min_observations, 1, MAX_OBSERVATIONS),
                                   ("max_per_job", nodes.max_per_job, 1, MAX_OBSERVATIONS)):
        if isinstance(value, bool) or not low <= value <= high:
            raise ConfigError(f"{where}.{name}={value} must be a count in [{low}, {high}], e.g. {where}.{name}=2.")
    fraction = nodes.systemic_fraction
    if isinstance(fraction, bool) or not (math.isfinite(fraction) and 0 < fraction <= 1):
        raise ConfigError(f"{where}.systemic_fraction={fraction} must be a fraction in (0, 1] of a job's nodes, e.g. "
                          f"{where}.systemic_fraction=0.5 (1: never systemic).")
    bad = [host for host in nodes.ignore if not isinstance(host, str) or not HOST.fullmatch(host)]
    if bad:
        raise ConfigError(f"{where}.ignore={list(nodes.ignore)!r}: {bad[0]!r} is not a node's name. List nodes as "
                          f"the scheduler names them (SLURMD_NODENAME, else the host name), e.g. {where}.ignore=[node3].")
    if isinstance(nodes.max_requeues, bool) or not 0 <= nodes.max_requeues <= MAX_REQUEUES:
        raise ConfigError(f"{where}.max_requeues={nodes.max_requeues} must be a count in [0, {MAX_REQUEUES}], e.g. "
                          f"{where}.max_requeues=2.")


MIN_WINDOW_S = 0.5  # a window holds a few steps of even a slow job, and costs its exchange at most twice a second
MAX_WINDOW_S = 24 * 3600.0
MAX_CONSECUTIVE = 1000


def watch(watched: Any) -> None:
    where = f"{PRESET_KEY}.watch"
    window = watched.window_s
    if isinstance(window, bool) or not (math.isfinite(window) and MIN_WINDOW_S <= window <= MAX_WINDOW_S):
        raise ConfigError(f"{where}.window_s={window} must be seconds from {MIN_WINDOW_S:g} to {MAX_WINDOW_S:g} (a "
                          f"day), e.g. {where}.window_s=60.")
    threshold = watched.threshold
    if isinstance(threshold, bool) or not (math.isfinite(threshold) and 0 < threshold < 1):
        raise ConfigError(f"{where}.threshold={threshold} must be a score between 0 and 1 (a rank whose score stays "
                          f"under it is named), e.g. {where}.threshold=0.75.")
    count = watched.consecutive
    if isinstance(count, bool) or not (isinstance(count, int) and 1 <= count <= MAX_CONSECUTIVE):
        raise ConfigError(f"{where}.consecutive={count} must be a count of windows in [1, {MAX_CONSECUTIVE}], e.g. "
                          f"{where}.consecutive=3.")
