"""How `bootstrap hang`'s analysis scales with the number of ranks (issue 20: linear; 10,000 ranks within
12x the time of 1,000, memory bounded by the dumps' own size).

    python bench/bench_hang.py [--quick]     # prints the result as JSON

Dumps are synthesised as the bootstrap writes them (bootstrap.distributed.flightrec): torch's plain-data pickle,
a few entries per rank with stack frames, one rank a collective behind, and a ``pg_config`` whose
default group lists its members. torch writes that list in every rank's dump, so the dumps'
total size grows as ranks squared (59 KB a rank at 10,000 ranks); the reader parses it once
per distinct text, but must still read every byte. So two worlds are timed: ``members: "all"``,
as torch writes them, and ``members: "own"``, where each rank's pg_config names only a group of
8 (a tensor-parallel group), which keeps each dump's size constant and shows the analysis itself.
The target ratio applies to the second; the first is reported with its bytes.
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bootstrap.distributed import dumps, hang  # noqa: E402 - after the path, so that a plain checkout runs it

START_NS = 1_700_000_000 * 10**9  # the synthetic run's start
FRAMES = [{"filename": f"/opt/venv/lib/python3.11/site-packages/torch/distributed/module_{i}.py", "line": 100 + i,
           "name": f"function_{i}"} for i in range(8)]


def _entry(seq: int, created_ns: int) -> dict:
    return {"record_id": seq, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
            "p2p_seq_id": 0, "op_id": seq, "profiling_name": "nccl:all_reduce", "time_created_ns": created_ns,
            "input_sizes": [[1024, 1024]], "input_dtypes": ["Float"], "output_sizes": [[1024, 1024]],
            "output_dtypes": ["Float"], "state": "scheduled", "time_discovered_started_ns": None,
            "time_discovered_completed_ns": None, "retired": False, "timeout_ms": 600000, "is_p2p": False,
            "frames": FRAMES, "thread_id": "140000000000000", "thread_name": "python"}


def synthesise(run_dir: Path, world: int, members: str, entries: int = 3) -> int:
    """``world`` ranks' dumps in ``run_dir``; the last rank never entered the last collective. Returns their bytes."""
    run_dir.mkdir(parents=True, exist_ok=True)
    everyone = str(list(range(world)))
    total = 0
    for rank in range(world):
        mine = entries - 1 if rank == world - 1 else entries
        if members == "all":  # as torch writes it: the default group and its every member, in every dump
            config = {"0": {"name": "0", "desc": "default_pg", "ranks": everyone}}
        else:  # the rank's tensor-parallel group of 8 only: each dump's size stays the same at any scale
            tp = rank - rank % 8
            config = {str(1 + rank // 8): {"name": str(1 + rank // 8), "desc": "tp",
                                           "ranks": str(list(range(tp, min(tp + 8, world))))}}
        data = pickle.dumps({
            "version": "2.10", "comm_lib_version": "2.21.5", "pg_config": config, "pg_status": {},
            "entries": [_entry(seq, START_NS + seq * 10**9) for seq in range(1, mine + 1)],
            "bootstrap": {"rank": rank, "world_size": world, "reason": "job failed: DistBackendError",
                          "dump_time_ns": START_NS + 600 * 10**9}})
        (run_dir / f"{dumps.DUMP_PREFIX}{rank}").write_bytes(data)
        total += len(data)
    return total


def analyse(run_dir: Path) -> dict:
    """What `bootstrap hang RUN_DIR` computes (read, sort by run, diagnose), without printing it."""
    return hang.findings(run_dir, since_ns=START_NS)


def _timed(run_dir: Path) -> float:
    gc.collect()
    started = time.perf_counter()
    found = analyse(run_dir)
    took = time.perf_counter() - started
    assert found.findings, found  # the lagging rank is named: the work was done
    return took


def _peak(run_dir: Path) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        analyse(run_dir)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def hang_scale(quick: bool) -> dict:
    """Time `bootstrap hang`'s analysis at two world sizes, ten times apart (interleaved, median of
    repeats), for dumps with torch's full member lists and with constant-size ones."""
    small, large = (100, 1000) if quick else (1000, 10_000)
    repeats = 3 if quick else 5
    work = Path(tempfile.mkdtemp(prefix="bench-hang-"))
    result = {"ranks": [small, large], "repeats": repeats}
    try:
        for members in ("own", "all"):
            dirs = {world: work / f"{members}-{world}" for world in (small, large)}
            size = {world: synthesise(path, world, members) for world, path in dirs.items()}
            times = {world: [] for world in dirs}
            _timed(dirs[small]), _timed(dirs[large])  # warm the page cache and the imports
            for _ in range(repeats):
                for world, path in dirs.items():
                    times[world].append(_timed(path))
            seconds = {world: statistics.median(values) for world, values in times.items()}
            peaks = {world: _peak(path) for world, path in dirs.items()}
            result[f"members_{members}"] = {
                "seconds": {str(w): round(s, 4) for w, s in seconds.items()},
                "ratio": round(seconds[large] / seconds[small], 2),
                "dump_bytes": {str(w): b for w, b in size.items()},
                "bytes_ratio": round(size[large] / size[small], 1),
                "peak_memory_bytes": {str(w): p for w, p in peaks.items()},
                "peak_memory_per_dump_byte": round(peaks[large] / size[large], 3),
            }
            for path in dirs.values():
                shutil.rmtree(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["ratio"] = result["members_own"]["ratio"]  # the analysis's own scaling: target <= 12
    result["target_ratio"] = 12
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 ranks instead of 1,000 and 10,000")
    args = parser.parse_args(argv)
    print(json.dumps(hang_scale(args.quick), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
