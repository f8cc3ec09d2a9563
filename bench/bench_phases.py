"""What the start's phases cost (issue 49): the accounting at ≤ 0.1 ms a phase, and one fixed-size exchange a job.

    python bench/bench_phases.py [--quick]     # prints the result as JSON

1. **The accounting, on against off.** In one fresh process, a real session's start (``apply``: plan, variables,
   checks, torch's settings, the report), its first step and its end, with the timeline on (``TIMELINE.enabled``)
   and off, interleaved round by round (on, off, on, off, ...), so that drift in the machine's load hits both
   alike. The median of each, their ratio, and the difference per phase marked. The marks alone are timed too: a
   million of them.
2. **The exchange.** One real ``TCPStore`` and a client a rank, each rank a thread of this process (as
   bench/bench_scale.py, which says why): every rank sends its record, rank 0 waits for all and reads them. The
   wall time from the first send to rank 0's last read, the bytes a rank sends, rank 0's operations.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

ACCOUNTING = """
import json, logging, statistics, sys, time
import bootstrap
from bootstrap.doors.timeline import TIMELINE
rounds, out = int(sys.argv[1]), sys.argv[2]
logging.disable(logging.CRITICAL)  # the first step's line: its cost is the logging's, the same on and off
preset = {"threads": {"intra_op": 1}, "provenance": {"enabled": False}, "seed": 0}
times, marked = {True: [], False: []}, []
for _ in range(rounds + 3):
    for on in (True, False):
        TIMELINE.enabled = on
        session = bootstrap.initialize(preset)  # the preset validated: the same work on and off, not timed
        started = time.perf_counter()
        session.apply()
        session.step()
        session.close()
        times[on].append(time.perf_counter() - started)
        if on:
            marked.append(len(session.report.timings.phases))
TIMELINE.enabled = True
count = 1_000_000
started = time.perf_counter()
mark = TIMELINE.mark
for _ in range(count):
    mark("plan")
per_mark = (time.perf_counter() - started) / count
del TIMELINE.marks[:]
with open(out, "w") as f:
    json.dump({"on": times[True][3:], "off": times[False][3:], "phases": statistics.median(marked),
               "per_mark_s": per_mark}, f)
"""


def accounting(rounds: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-phases-") as work:
        out = Path(work) / "out.json"
        subprocess.run([sys.executable, "-c", ACCOUNTING, str(rounds), str(out)], check=True, cwd=work)
        got = json.loads(out.read_text())
    on, off = statistics.median(got["on"]), statistics.median(got["off"])
    return {"rounds": rounds, "start_on_ms": on * 1000, "start_off_ms": off * 1000, "ratio": on / off,
            "phases": got["phases"], "per_phase_ms": (on - off) * 1000 / got["phases"],
            "per_mark_us": got["per_mark_s"] * 1e6}


def exchange(world: int) -> dict:
    import torch.distributed as dist
    from bench_scale import _ranks  # the same ranks: a thread and a counted client each, started at once

    from bootstrap.distributed import phase_exchange
    from bootstrap.distributed.waits import Deadline

    timeout = datetime.timedelta(seconds=300)
    server = dist.TCPStore("127.0.0.1", 0, world, True, timeout, wait_for_workers=False)
    clients = [server] + [dist.TCPStore("127.0.0.1", server.port, None, False, timeout) for _ in range(world - 1)]
    record = phase_exchange.pack("node-0001", [(f"phase{i}", 1.0) for i in range(16)])
    read = []

    def step(rank: int, store) -> None:
        phase_exchange.send(store, "bench/0/1", rank, record)
        if rank == 0:
            arrived, _, _ = phase_exchange.gather(store, "bench/0/1", world, Deadline(300))
            read.append(sum(1 for _ in arrived))

    wall, ops = _ranks(world, clients, step)
    assert read == [world]
    return {"world": world, "seconds": wall, "bytes_per_rank": len(record), "rank0_ops": ops[0],
            "other_ranks_ops": max(ops[1:]), "rank0_bytes_read": len(record) * world}


def phases(quick: bool) -> dict:
    return {"accounting": accounting(20 if quick else 300),
            "exchange": [exchange(world) for world in ((2, 16) if quick else (2, 64, 1024))]}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    print(json.dumps(phases(parser.parse_args().quick), indent=1))
