"""Benchmark (not a test): the watch's cost while the job trains, and its false findings on healthy runs.

    python bench/bench_watch.py [--quick] [--healthy N]      prints JSON

- **cost**: train_stub under torchrun, 2 ranks of DDP (gloo), with the watch on (cpu_debug's, a window of 2 s: 30
  times the windows of the default 60 s) and off (``env.watch.mode=off``), interleaved. ``ratio``: time a step on
  over off, from rank 0's samples/s. A ratio of noisy runs cannot resolve 0.5 %, so the watch's own time is also
  read from each run's reports: its thread's time a window (``watch.seconds / watch.windows``: the recorder read,
  the exchange, rank 0's verdict) and the training loop's own part, a step's mark (timed in place here, one clock
  read and one append). ``share_at_default_window``: both, as a share of a 60 s window of training; ``share_at_2s``:
  the same at cpu_debug's 2 s.
- **false findings**: ``--healthy N`` (10 by default) healthy runs of the same job, both ranks on one CPU with a
  budget of it each, as the tests that judge ranks run them (tests/preflight_app/pinned.sh in tests/cpu_groups.py's
  groups, no busy loop), each long enough for several windows, under cpu_debug's thresholds
  (the ones that name a 4x slowed rank, tests/e2e/test_watch.py), each holding the machine's cores as the tests that
  judge ranks do: the runs with any finding, and every finding.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "train_stub.py"
PINNED = ROOT / "tests" / "preflight_app" / "pinned.sh"
DEFAULT_WINDOW_S = 60.0  # the schema's env.watch.window_s


def _env() -> dict:
    sys.path.insert(0, str(ROOT / "bench"))
    from run import clean_env  # the benchmarks' own environment: cached bytecode, no thread variables

    return clean_env()


def _torchrun(work: Path, name: str, steps: int, *overrides: str, groups: Optional[Path] = None) -> List[dict]:
    """torchrun's 2 ranks of train_stub; with ``groups`` (tests/cpu_groups.py's), each rank in its own, on one CPU."""
    run_dir = work / name
    pinned = groups is not None
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           *(["--no-python", str(PINNED), sys.executable] if pinned else []), str(STUB), f"train.steps={steps}",
           f"hydra.run.dir={run_dir}", "env.threads.intra_op=1", *overrides]
    env = {**_env(), **({"RANK_GROUPS": str(groups)} if groups is not None else {})}
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return [json.loads((run_dir / f"bootstrap.rank{rank}.json").read_text()) for rank in (0, 1)]


def mark_s() -> float:
    """The training loop's own part of the watch: one step's mark (a clock read and an append), in seconds."""
    from collections import deque

    marks: deque = deque()
    setup = "import time"
    return min(timeit.repeat(lambda: marks.append(time.time_ns()), setup=setup, number=100_000, repeat=5)) / 1e5


def cost(work: Path, repeats: int, steps: int) -> Dict[str, float]:
    on, off, per_window, exchange = [], [], [], []
    for round_ in range(repeats):
        for name in (("on", "off") if round_ % 2 == 0 else ("off", "on")):
            with _cores():
                reports = _torchrun(work, f"{name}{round_}", steps,
                                    "env.watch.mode=" + ("warn" if name == "on" else "off"))
            (on if name == "on" else off).append(reports[0]["job"]["metrics"]["samples_per_s"])
            if name == "on":
                watch = reports[0]["watch"]
                if watch["windows"]:
                    per_window.append(max(r["watch"]["seconds"] / r["watch"]["windows"] for r in reports))
                    exchange.append(watch["exchange_bytes"])
    step_s = 256 / statistics.median(on) * 2  # samples/s over both ranks: a step's time on one
    window_s, marking = statistics.median(per_window) if per_window else 0.0, mark_s()
    return {"on_samples_per_s": statistics.median(on), "off_samples_per_s": statistics.median(off),
            "ratio": statistics.median(off) / statistics.median(on), "step_s": step_s,
            "thread_s_per_window": window_s, "mark_s": marking,
            "exchange_bytes_per_window_rank0": statistics.median(exchange) if exchange else 0,
            "share_at_2s": window_s / 2.0 + marking / step_s,
            "share_at_default_window": window_s / DEFAULT_WINDOW_S + marking / step_s}


def _cores():
    """The machine's cores alone, as the tests that judge ranks' speeds hold them (tests/conftest.py's lock, which
    every suite and benchmark on this machine shares): a healthy run is not judged beside another's busy loops."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from conftest import cores
    except ImportError:  # without the test extra: the machine as it is
        return contextlib.nullcontext()
    return cores()


def _groups(tag: str):
    """A CPU group per rank (tests/cpu_groups.py), as the tests that judge ranks make them; where none can be made
    (no cgroup v1 cpu controller, not root), the benchmark says why and stops."""
    sys.path.insert(0, str(ROOT / "tests"))
    import cpu_groups

    reason = cpu_groups.why_not()
    if reason is not None:
        raise RuntimeError(f"bench_watch's healthy runs: {reason}")
    return cpu_groups.groups_of(tag, 2)


def false_findings(work: Path, runs: int, steps: int) -> Dict[str, object]:
    found: List[str] = []
    named_runs, windows = 0, 0
    for number in range(runs):
        with _cores(), _groups(f"healthy{number}") as groups:
            reports = _torchrun(work, f"healthy{number}", steps, groups=groups)
        watch = reports[0]["watch"]
        windows += watch["judged"]
        if watch["findings"]:
            named_runs += 1
            found += [f["message"] for f in watch["findings"]]
    return {"runs": runs, "runs_with_a_finding": named_runs, "windows_judged": windows, "findings": found[:10]}


def watch(quick: bool, work: Path, healthy: int = 10) -> Dict[str, object]:
    started = time.perf_counter()
    steps = 60 if quick else 200
    result: Dict[str, object] = {**cost(work, 1 if quick else 5, steps),
                                 **false_findings(work, 1 if quick else healthy, steps)}
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--healthy", type=int, default=10, help="healthy runs for the false-finding rate")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bootstrap-bench-watch-") as work:
        print(json.dumps(watch(args.quick, Path(work), args.healthy), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
