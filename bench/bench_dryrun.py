"""How `bootstrap dryrun` scales with the world size (issue 49: 131,072 ranks in at most 30 s on this machine,
linear in N, memory bounded by the sample it keeps, not by N).

    python bench/bench_dryrun.py [--quick]     # prints the result as JSON

Each size runs the real command in a fresh process (imports, the compose, every rank's launch detection and plan,
the cross-rank checks, torch's fake-backend DeviceMesh for the sample, dryrun.json), for an H100 job under SLURM
with 8 ranks a node and a dp x tp mesh. Reported: the process's wall time and CPU time (user + system: what a busy
machine does not inflate as much; the dry run is one thread, so on a quiet machine its wall time is its CPU time),
the planning's own CPU time (every rank's start-up and the checks: ``bootstrap.dryrun.world.plan_world``) and peak
RSS. Linearity is the planning's CPU time per rank at 131,072 ranks over its time per rank at 1,024 (1.0: linear).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (1024, 16384, 131072)
QUICK_SIZES = (64, 128, 256)
CHILD = """
import resource, sys, time
from bootstrap.cli import dryrun
from bootstrap.dryrun import world as core
spent, plan_world = [], core.plan_world
def timed(*args, **kwargs):
    started = time.process_time()  # its CPU time: linearity is the planning's own, whatever else loads the machine
    try:
        return plan_world(*args, **kwargs)
    finally:
        spent.append(time.process_time() - started)
core.plan_world = timed
code = dryrun.main(sys.argv[1:])
own = resource.getrusage(resource.RUSAGE_SELF)
print('PLAN_S', spent[0], 'RSS_KB', own.ru_maxrss, 'CPU_S', own.ru_utime + own.ru_stime)
sys.exit(0 if code in (0, 1) else code)
"""


def one(world: int, out: Path) -> dict:
    args = ["--world", str(world), "--ranks-per-node", "8", "--launcher", "slurm", "--cpus-per-node", "96",
            "--gpus-per-node", "8", "--out", str(out), "env=h100", "+env.distributed.mesh.tp=8"]
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"bootstrap dryrun --world {world} failed: {done.stderr[-2000:]}")
    figures = done.stdout.rsplit("PLAN_S", 1)[1].split()
    plan_s, rss, cpu_s = float(figures[0]), int(figures[2]), float(figures[4])
    kept = len(json.loads((out / "dryrun.json").read_text())["ranks"])
    return {"world": world, "seconds": round(seconds, 2), "cpu_s": round(cpu_s, 2), "planning_s": round(plan_s, 2),
            "planning_ms_per_rank": round(1000 * plan_s / world, 3), "peak_rss_mb": round(rss / 1024, 1),
            "entries": kept}


def dryrun_scale(quick: bool) -> dict:
    sizes = QUICK_SIZES if quick else SIZES
    with tempfile.TemporaryDirectory(prefix="bench-dryrun-") as work:
        runs = [one(world, Path(work) / str(world)) for world in sizes]
    return {"runs": runs, f"seconds_{sizes[-1]}": runs[-1]["seconds"], f"cpu_s_{sizes[-1]}": runs[-1]["cpu_s"],
            "linearity": round(runs[-1]["planning_ms_per_rank"] / runs[0]["planning_ms_per_rank"], 2),
            "memory_ratio": round(runs[-1]["peak_rss_mb"] / runs[0]["peak_rss_mb"], 2)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    print(json.dumps(dryrun_scale(parser.parse_args().quick), indent=1))
