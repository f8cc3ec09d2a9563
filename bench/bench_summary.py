"""Benchmark (not a test): the sweep summary against merely reading its files.

    python bench/bench_summary.py [--quick]        prints JSON

:func:`summary_scale` builds N synthetic job directories as a Hydra sweep leaves them (a realistic
``bootstrap.json`` written from a typed ``Report``, ``.hydra/overrides.yaml`` with distinct
overrides, ``.hydra/config.yaml``, a job log, and the sweep's ``multirun.yaml``) for N = 1,000 and
10,000 (``quick``: 100 and 1,000). It then times, interleaved and after one warm-up of each,
``bootstrap.sweep.summary.write`` without its picture against the bare read of the same directories: list the
sweep directory, ``json.load`` each report and ``yaml.load`` (the C loader) each ``overrides.yaml``. It returns
the medians in seconds and the two ratios issue 20 sets targets for: the summary at most 1.5x the bare
read of the larger sweep, and the larger sweep at most 11x the smaller (10x the jobs). The picture is drawn
once per summary, not per job: ``picture_s`` is what it adds (the summary with it, less the summary without),
where matplotlib is installed.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

import yaml

from bootstrap.doors import outbound, records
from bootstrap.sweep import summary, walk

TARGET_VS_BARE = 1.5
TARGET_SCALE = 11.0
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _report(num: int, overrides: List[str]) -> dict:
    """What a job on a GPU node records (an h100-like preset: 4 variables, 6 checks, 2 lint findings)."""
    check = records.Check
    return records.Report(
        preset="h100", overrides=overrides, device="cuda",
        found=records.Found(python="3.11.7", torch="2.13.0+cu126", cuda="12.6", nccl="2.26.2", cudnn="91002",
                            compute_capability="9.0", gpus=8, gpu_names=["NVIDIA H100 80GB HBM3"] * 8, cpus=192,
                            cpus_usable=24, cpu_affinity="0-23"),
        checks=[check(name="device", required="cuda", found="cuda", ok=True),
                check(name="python", required=">=3.10", found="3.11.7", ok=True),
                check(name="torch", required=">=2.13", found="2.13.0+cu126", ok=True),
                check(name="cuda", required=">=11.8", found="12.6", ok=True),
                check(name="compute_capability", required=">=9.0", found="9.0", ok=True),
                check(name="gpus", required=">=1", found="8", ok=True)],
        lint=[records.LintFinding(name="NCCL_P2P_LEVEL", kind="hardware", message="set for NVLink; this node has it"),
              records.LintFinding(name="NCCL_IB_HCA", kind="unknown", message="not a variable NCCL 2.26 reads")],
        vars={name: records.Var(value=value, source="preset", effective=True, note="read when a communicator is made")
              for name, value in (("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"), ("TORCH_NCCL_DUMP_ON_TIMEOUT", "1"),
                                  ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
                                  ("CUDA_DEVICE_MAX_CONNECTIONS", "1"))},
        threads=records.Threads(intra_op=1 + num % 4, inter_op=2,
                                requested=records.ThreadCounts(intra_op=1 + num % 4, inter_op=2), applied=True),
        torch=records.Torch(matmul_precision="high", cudnn_allow_tf32=True, cudnn_benchmark=True, deterministic=False),
        distributed=records.Distributed(launcher="single"),
        seed=records.Seed(value=num, global_seed=num, generators=["random", "numpy", "torch"], data_seed=num),
        timings=records.Timings(bootstrap_s=0.0213, started_ns=1_795_000_000_000_000_000 + num),
        job=records.Job(num=num, status="completed", metrics={
            "samples_per_s": 20000.0 + num, "final_loss": 1.0 / (num + 1), "steps": 300.0, "num_threads": 2.0}),
    ).to_json()


def build_sweep(sweep: Path, jobs: int) -> None:
    """``jobs`` job directories under ``sweep``, as Hydra's basic sweeper and the bootstrap leave them."""
    sweep.mkdir(parents=True)
    outbound.write_text(sweep / walk.MULTIRUN_NAME, "hydra:\n  mode: MULTIRUN\n")  # older than every job
    for num in range(jobs):
        job = sweep / str(num)
        overrides = [f"env.threads.intra_op={1 + num % 4}", f"train.lr={0.0001 * (num + 1):.6f}", f"env.seed={num}"]
        outbound.write_text(job / ".hydra" / "overrides.yaml", yaml.safe_dump(overrides))
        outbound.write_text(job / ".hydra" / "config.yaml", f"train:\n  lr: {0.0001 * (num + 1):.6f}\n")
        outbound.write_text(job / "train.log", "")
        outbound.write_json(job / "bootstrap.json", _report(num, overrides))


def bare_read(sweep: Path) -> int:
    """The floor: list the sweep directory, json.load each report, yaml.load (C) each overrides.yaml."""
    read = 0
    for entry in sorted(os.scandir(sweep), key=lambda e: e.name):
        if entry.is_dir():
            with open(os.path.join(entry.path, "bootstrap.json"), "rb") as f:
                json.load(f)
            with open(os.path.join(entry.path, ".hydra", "overrides.yaml"), "rb") as f:
                yaml.load(f, Loader=_LOADER)  # noqa: S506 - a safe loader
            read += 1
    return read


def _seconds(thunk: Callable[[], object]) -> float:
    started = time.perf_counter()
    thunk()
    return time.perf_counter() - started


def summary_scale(quick: bool) -> Dict[str, object]:
    """Medians (seconds) of the summary and the bare read at two sweep sizes, and the ratios."""
    sizes = (100, 1000) if quick else (1000, 10_000)
    repeats = 3 if quick else 5
    result: Dict[str, object] = {"jobs": list(sizes), "repeats": repeats}
    summary_s, bare_s, pictured_s = {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="bench_summary_") as tmp:
        for size in sizes:
            sweep = Path(tmp) / f"sweep_{size}"
            build_sweep(sweep, size)
            variants = {"summary": lambda s=sweep: summary.write(s, pictured=False),
                        "bare": lambda s=sweep: bare_read(s),
                        "pictured": lambda s=sweep: summary.write(s)}
            for thunk in variants.values():  # warm-up: the page cache, imports, Hydra's parser
                thunk()
            times: Dict[str, List[float]] = {name: [] for name in variants}
            for _ in range(repeats):
                for name, thunk in variants.items():
                    times[name].append(_seconds(thunk))
            summary_s[size], bare_s[size] = statistics.median(times["summary"]), statistics.median(times["bare"])
            pictured_s[size] = statistics.median(times["pictured"])
    small, large = sizes
    result.update({
        "summary_s": {str(n): round(summary_s[n], 4) for n in sizes},
        "bare_read_s": {str(n): round(bare_s[n], 4) for n in sizes},
        "summary_vs_bare": {str(n): round(summary_s[n] / bare_s[n], 3) for n in sizes},
        "summary_scale": round(summary_s[large] / summary_s[small], 3),  # for 10x the jobs
        "picture_s": {str(n): round(pictured_s[n] - summary_s[n], 4) for n in sizes},  # drawn once a summary
        "targets": {"summary_vs_bare": TARGET_VS_BARE, "summary_scale": TARGET_SCALE},
    })
    result["within_targets"] = (summary_s[large] / bare_s[large] <= TARGET_VS_BARE
                                and summary_s[large] / summary_s[small] <= TARGET_SCALE)
    return result


def main(argv=None) -> int:
    parser = outbound.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 jobs instead of 1,000 and 10,000")
    args = parser.parse_args(argv)
    outbound.say_json(summary_scale(args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
