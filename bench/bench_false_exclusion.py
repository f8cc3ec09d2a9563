"""False exclusion (issue 47): healthy 2-rank jobs on this shared machine, a busy neighbour on one core at random
moments, every job writing one shared ledger under the default evidence rule. No node may be excluded; the soft
observations (false findings) are counted, and so are the jobs whose preflight the neighbour overlapped.

    python bench/bench_false_exclusion.py [--jobs 20] [--seed 47]

Each job is ``torchrun --standalone --nproc_per_node=2 train_stub.py`` with the shipped ``cpu_debug`` preset
(``preflight.mode=warn``, ``max_skew=3``, threads auto: one per rank on 2 cores) and ``env.nodes.exclude_file`` set.
The neighbour is ``taskset -c K sh -c 'while :; do :; done'`` on a random core K, started at a random moment of the
job's first seconds (where its start-up and preflight are) and stopped at a random moment after; the ranks are not
pinned, as a healthy job's are not. ``bench/run.py --only false_exclusion`` runs it as benchmark 18.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
STUB = ROOT / "train_stub.py"
FIRST_SECONDS = 8.0  # a job's start-up on this machine: torchrun, two Pythons with torch and Hydra, the preflight


class Neighbour:
    """A busy loop on ``core``, from ``start`` seconds after the job's launch, for ``seconds``."""

    def __init__(self, rng: random.Random):
        self.core = rng.randrange(os.cpu_count() or 1)
        self.start, self.seconds = rng.uniform(0.0, FIRST_SECONDS), rng.uniform(1.0, 6.0)
        self.began: Optional[float] = None  # time.time() of its start and end, to compare with the preflight's
        self.ended: Optional[float] = None
        self._process: Optional[subprocess.Popen] = None
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Neighbour":
        self._thread.start()
        return self

    def _run(self) -> None:
        if self._cancel.wait(self.start):
            return
        self._process = subprocess.Popen(["taskset", "-c", str(self.core), "sh", "-c", "while :; do :; done"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.began = time.time()
        self._cancel.wait(self.seconds)
        self._stop()

    def _stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait()
            self.ended = time.time()

    def __exit__(self, *exc) -> None:
        self._cancel.set()
        self._thread.join(timeout=30)
        self._stop()

    def overlapped(self, start: float, end: float) -> bool:
        return self.began is not None and self.began < end and (self.ended or time.time()) > start


def one_job(work: Path, ledger: Path, number: int, rng: random.Random, extra: List[str]) -> Dict:
    run_dir = work / f"job{number}"
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(STUB),
               f"hydra.run.dir={run_dir}", f"env.nodes.exclude_file={ledger}", "train.steps=10", "train.hidden=256",
               "train.log_every=5", *extra]
    with Neighbour(rng) as neighbour:
        done = subprocess.run(command, capture_output=True, text=True, cwd=work, env=env, timeout=600)
    reports = [json.loads((run_dir / f"bootstrap.rank{rank}.json").read_text()) for rank in (0, 1)
               if (run_dir / f"bootstrap.rank{rank}.json").exists()]
    check = reports[0]["preflight"] if reports else None
    started = reports[0]["timings"]["started_ns"] / 1e9 if reports else 0.0
    checked = started + (reports[0]["timings"].get("bootstrap_s") or 0) + ((check or {}).get("seconds") or 0) \
        if reports else 0.0
    return {"job": number, "exit": done.returncode, "status": reports[0]["job"]["status"] if reports else None,
            "findings": [f["message"] for f in (check or {}).get("findings", [])],
            "bad_nodes": [b["node"] for b in (check or {}).get("bad_nodes", [])],
            "neighbour": {"core": neighbour.core, "start_s": round(neighbour.start, 2),
                          "seconds": round(neighbour.seconds, 2)},
            "neighbour_overlapped_preflight": neighbour.overlapped(started, checked) if reports else False}


def false_exclusion(jobs: int, work: Path, seed: int = 47, extra: Optional[List[str]] = None) -> Dict:
    """``jobs`` healthy jobs, one after another, each with its neighbour; then the ledger judged as a job start
    judges it (the default rule)."""
    sys.path.insert(0, str(ROOT))
    from bootstrap.core import nodes
    from bootstrap.core.schema import Nodes
    from bootstrap.distributed import ledger as evidence

    work.mkdir(parents=True, exist_ok=True)
    ledger = work / "shared" / "bad_nodes.jsonl"
    ledger.parent.mkdir(exist_ok=True)
    rng = random.Random(seed)
    runs = [one_job(work, ledger, number, rng, list(extra or [])) for number in range(jobs)]
    now = datetime.now(timezone.utc)
    read = nodes.load_ledger(ledger, now)
    rule = evidence.Rule(ttl_h=Nodes.exclude_ttl_h, min_observations=Nodes.min_observations)
    judged = evidence.judge(read, now, rule)
    return {"jobs": jobs, "seed": seed, "failed_jobs": sum(1 for run in runs if run["status"] != "completed"),
            "soft_observations": sum(1 for o in read.observations if not o.hard),
            "hard_observations": sum(1 for o in read.observations if o.hard),
            "jobs_with_a_finding": sum(1 for run in runs if run["findings"]),
            "preflights_the_neighbour_overlapped": sum(1 for run in runs if run["neighbour_overlapped_preflight"]),
            "suspects": sorted(node for node, found in judged.items() if found.state == "suspect"),
            "excluded": sorted(node for node, found in judged.items() if found.state == "excluded"),
            "excluded_count": sum(1 for found in judged.values() if found.state == "excluded"),
            "min_observations": rule.min_observations, "runs": runs}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=47)
    parser.add_argument("--work", type=Path, default=None, help="where the jobs run (default: a new temporary one)")
    args = parser.parse_args(argv)
    import tempfile

    work = args.work or Path(tempfile.mkdtemp(prefix="bootstrap-false-exclusion-"))
    result = false_exclusion(args.jobs, work, args.seed)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))
    for run in result["runs"]:
        print(json.dumps(run))
    return 0 if result["excluded_count"] == 0 and result["failed_jobs"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
