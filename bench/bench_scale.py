"""What a many-rank start-up costs each rank in store operations, simulated on one machine (issue 30).

    python bench/bench_scale.py [--quick]     # prints the result as JSON

One real ``torch.distributed.TCPStore`` server, hosted by this process as rank 0 hosts it, and one real client per
rank, each rank a thread of this process (the store's calls release the GIL). Every rank runs the bootstrap's
own store protocol, unchanged: rank 0's run directory (``group.share_run_dir``, torchrun's agent store) and the
drift check (``agree_store.exchange``, the ranks' agreement), once with every rank alike and once with a few ranks
that differ. Each client counts the calls made through it; the server does the work. (Ranks in several worker
processes, tried first, stalled here: past a few hundred clients from several processes, this machine's loopback
stopped completing connects for minutes, while one process connects 4,096 in about 10 s. Beyond about 2,000
threads the interpreter's lock, not the store, sets the pace: 4,096 ranks took 13.5 s where 1,024 took 0.8 s.)

The model, for a world of ``W`` ranks: each rank makes a constant number of store operations (``per_rank``,
the same at every ``W``), so the server rank 0 hosts answers ``per_rank * W`` requests plus ``W`` connections;
rank 0's own calls are constant too. The rank-0 host's work is linear in ``W``: at 10,000 ranks it is
``per_rank * 10,000`` requests at the rate measured here (``ops_per_s``: a lower bound, since every client
competes with the server for this machine's CPUs). The wall time of the run directory and the drift check is
fitted as ``a + b * W`` over the worlds up to :data:`FIT_MAX_WORLD`, and extrapolated.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch.distributed as dist  # noqa: E402

from bootstrap.distributed.agree_store import MAX_NAMED, exchange  # noqa: E402
from bootstrap.distributed.group import share_run_dir  # noqa: E402
from bootstrap.distributed.waits import Deadline  # noqa: E402
from bootstrap.doors.torch_settings import SETTINGS  # noqa: E402

TARGET_WORLD = 10_000
FIT_MAX_WORLD = 1024  # past this, thousands of threads queue on the interpreter's lock: the fit would measure that
TIMEOUT = datetime.timedelta(seconds=300)
PHASES = ("run_dir", "agree", "agree_odd")
# A fingerprint the size of a real one (bootstrap.core.agreement.fingerprint): versions, settings, variables.
FINGERPRINT = {**{f"version.{name}": "2.13.0" for name in ("python", "torch", "cuda", "cudnn", "nccl", "bootstrap")},
               **{f"torch.{setting.name}": "False" for setting in SETTINGS},
               **{f"var.NCCL_VAR_{i}": f"value-{i}" for i in range(24)}, "preset": "h100", "threads.intra_op": "8"}


class Counting:
    """A real store's client that counts the calls made through it (``set_timeout`` and ``timeout`` are the
    client's own settings and reach no server: not counted)."""

    def __init__(self, store):
        self.store, self.ops = store, Counter()

    def __getattr__(self, name):
        method = getattr(self.store, name)
        if name in ("set_timeout", "timeout"):
            return method

        def counted(*args):
            self.ops[name] += 1
            return method(*args)
        return counted


def _connect(port: int, count: int, at_once: int) -> list:
    """``count`` clients of the server at ``port``, ``at_once`` connecting at a time. One after another, this
    machine's loopback stalls about one connect in 25 for 5 s (a dropped SYN, in c10d's trace log); a thousand
    at once overflow the server's accept backlog, and each refused client retries seconds later. 64 at a time
    overlap the stalls."""
    with ThreadPoolExecutor(at_once) as pool:
        return list(pool.map(lambda _: dist.TCPStore("127.0.0.1", port, None, False, TIMEOUT), range(count)))


def _step(phase: str, world: int, odd_ranks: set):
    """What rank ``rank`` does in ``phase``, through ``store``: the bootstrap's own calls."""
    def run(rank: int, store) -> None:
        if phase == "run_dir":
            assert share_run_dir(store, "bench/run_dir", rank, "/runs/rank0", Deadline(300)) == "/runs/rank0"
            return
        differing = odd_ranks if phase == "agree_odd" else set()
        fingerprint = dict(FINGERPRINT, **({"var.NCCL_ALGO": "Tree"} if rank in differing else {}))
        result = exchange(store, f"bench/{phase}", rank, world, f"node-{rank // 8}", "error",
                          lambda salt: fingerprint, Deadline(300))
        assert result.odd_count == len(differing), (result.odd_count, len(differing))
    return run


def _ranks(world: int, clients: list, step) -> tuple:
    """``step`` on every rank at once, each in its own thread through its own counting client; returns the
    wall time from the start to the last rank's end, and each rank's operations."""
    counted = [Counting(client) for client in clients]
    errors, gate = {}, threading.Barrier(world + 1)

    def rank_main(rank: int) -> None:
        gate.wait()
        try:
            step(rank, counted[rank])
        except BaseException as error:  # noqa: BLE001 - reported below
            errors[rank] = error

    threads = [threading.Thread(target=rank_main, args=(rank,), daemon=True) for rank in range(world)]
    for thread in threads:
        thread.start()
    gate.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join(300)
    wall = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} ranks failed, e.g. rank {min(errors)}: {errors[min(errors)]!r}")
    return wall, [sum(store.ops.values()) for store in counted]


def one_world(world: int, odd: int) -> dict:
    """One world's phases through the same clients, each timed from its start to the last rank's end."""
    server = dist.TCPStore("127.0.0.1", 0, world, True, TIMEOUT, wait_for_workers=False)
    started = time.perf_counter()
    clients = [server, *_connect(server.port, world - 1, 64)]
    out = {"world": world, "processes": 1, "connect_s": time.perf_counter() - started}
    odd_ranks = {1 + i * (world - 1) // odd for i in range(odd)}  # spread over the world, never rank 0
    for phase in PHASES:
        wall, ops = _ranks(world, clients, _step(phase, world, odd_ranks))
        out[phase] = {"wall_s": wall, "rank0_ops": ops[0], "max_ops": max(ops), "median_ops": statistics.median(ops),
                      "total_ops": sum(ops)}
    out["odd_ranks"] = len(odd_ranks)
    return out


def _fit(worlds, walls) -> tuple:
    """Least squares ``wall = a + b * world``."""
    mean_w, mean_t = statistics.fmean(worlds), statistics.fmean(walls)
    slope = sum((w - mean_w) * (t - mean_t) for w, t in zip(worlds, walls, strict=True)) / \
        sum((w - mean_w) ** 2 for w in worlds)
    return mean_t - slope * mean_w, slope


def verdict_s(world: int, repeats: int = 3) -> float:
    """The preflight's verdict over ``world`` ranks' figures, one of them slow: the best of ``repeats``
    (tests/unit/test_preflight.py checks what it finds at 10,000 ranks; this, how long it takes)."""
    from bootstrap.preflight.figures import Compute, RankFigures
    from bootstrap.preflight.request import Floors
    from bootstrap.preflight.verdict import judge

    figures = [RankFigures(rank=r, host=f"node{r // 8}", compute=Compute.OK, tflops=100.0 + r % 13, busbw_gbps=300.0)
               for r in range(world)]
    figures[world // 2].tflops = 20.0
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        judge(figures, Floors(), 1.5, "cuda", "nccl")
        best = min(best, time.perf_counter() - started)
    return best


def scale(quick: bool) -> dict:
    small, large = (100, 1000) if quick else (1000, 10_000)
    verdicts = {small: verdict_s(small), large: verdict_s(large)}
    worlds = [4, 16] if quick else [64, 256, 1024, 2048]
    measured = [one_world(world, odd=3) for world in worlds]
    per_rank = {phase: sorted({m[phase]["max_ops"] for m in measured}) for phase in PHASES}
    total = [m["run_dir"]["total_ops"] + m["agree"]["total_ops"] for m in measured]
    walls = [m["run_dir"]["wall_s"] + m["agree"]["wall_s"] for m in measured]
    ops_per_s = max(t / w for t, w in zip(total, walls, strict=True))  # the best rate seen: requests a second
    fitted = [(world, wall) for world, wall in zip(worlds, walls, strict=True) if world <= FIT_MAX_WORLD]
    a, b = _fit(*zip(*fitted, strict=True))
    ops_alike = per_rank["run_dir"][-1] + per_rank["agree"][-1]
    return {
        "worlds": worlds, "measured": measured,
        "per_rank_ops": {phase: counts[-1] for phase, counts in per_rank.items()},
        "per_rank_ops_constant": float(all(len(counts) == 1 for counts in per_rank.values())),
        "odd_extra_ops_max": per_rank["agree_odd"][-1] - per_rank["agree"][-1],
        "max_named": MAX_NAMED,
        "ops_per_s": ops_per_s,
        "model": f"every rank makes {ops_alike} store operations; rank 0's host answers {ops_alike} * W of them "
                 "and W connections",
        f"rank0_host_requests_at_{TARGET_WORLD}": ops_alike * TARGET_WORLD,
        f"rank0_host_s_at_{TARGET_WORLD}": ops_alike * TARGET_WORLD / ops_per_s,
        "fit_wall_s": {"a": a, "b_per_rank": b},
        f"wall_s_at_{TARGET_WORLD}_extrapolated": a + b * TARGET_WORLD,
        "verdict_s": {str(world): seconds for world, seconds in verdicts.items()},
        "verdict_scale": verdicts[large] / verdicts[small],  # 10x the ranks: 10 is linear
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4 and 16 ranks: does it still run?")
    args = parser.parse_args(argv)
    print(json.dumps(scale(args.quick), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
