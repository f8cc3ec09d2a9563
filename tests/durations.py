"""Where the suite's time goes: the table in CONTRIBUTING.md ("Where the suite's time goes"), from a timed run.

    BOOTSTRAP_TEST_TIMES=/tmp/times python -m pytest          # each worker writes DIR/<worker>.jsonl (tests/timing.py)
    python tests/durations.py /tmp/times                      # the table, by tier and by file
    python tests/durations.py /tmp/times --write-costs        # also tests/costs.json, the modules' order

Each test's seconds are split by kind:

- **waiting for the cores**: a test that judges ranks' speeds holds the machine alone (``conftest.cores()``); the
  others wait meanwhile;
- **process start-up**: each process a test started costs at least a bare interpreter that imports torch, Hydra
  and the package (measured here, the cheapest of 3);
- **work**: the rest of the CPU time of the test and of the processes it started;
- **idle**: wall time with no CPU of its own (a process waited on, a timeout, the other worker's share of the
  two cores).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent
BARE = "import torch, hydra, omegaconf, bootstrap"


def bare_start_cpu() -> float:
    """The CPU seconds of a bare interpreter that imports what every job imports (the cheapest of 3)."""
    costs = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", BARE], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        costs.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return min(costs)


def read(directory: Path) -> list:
    lines = []
    for path in sorted(directory.glob("*.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return lines


def split(test: dict, start_cpu: float) -> dict:
    cpu = test["cpu_self"] + test["cpu_children"]
    startup = min(cpu, test["processes"] * start_cpu)
    return {"wall": test["wall"], "waited": test["waited"], "startup": startup, "work": cpu - startup,
            "idle": max(0.0, test["wall"] - test["waited"] - cpu), "processes": test["processes"]}


def table(rows: dict, title: str) -> str:
    out = [f"| {title} | tests | wall s | waiting for the cores | process start-up (CPU) | work (CPU) | idle | "
           "processes |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, parts in sorted(rows.items(), key=lambda item: -item[1]["wall"]):
        out.append(f"| `{name}` | {parts['tests']} | {parts['wall']:.0f} | {parts['waited']:.0f} | "
                   f"{parts['startup']:.0f} | {parts['work']:.0f} | {parts['idle']:.0f} | {parts['processes']} |")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--write-costs", action="store_true", help="also write tests/costs.json")
    parser.add_argument("--top", type=int, default=25, help="files in the table (default 25)")
    args = parser.parse_args(argv)
    tests = read(args.directory)
    if not tests:
        print(f"{args.directory}: no timed tests (run the suite with BOOTSTRAP_TEST_TIMES={args.directory})")
        return 2
    start_cpu = bare_start_cpu()
    by_file: dict = defaultdict(lambda: defaultdict(float))
    by_tier: dict = defaultdict(lambda: defaultdict(float))
    for test in tests:
        module = test["nodeid"].split("::", 1)[0]
        tier = module.split("/")[1] if module.count("/") >= 2 else "unit"
        for rows, key in ((by_file, module), (by_tier, tier)):
            rows[key]["tests"] += 1
            for kind, seconds in split(test, start_cpu).items():
                rows[key][kind] += seconds
    totals = {kind: sum(parts[kind] for parts in by_tier.values()) for kind in
              ("wall", "waited", "startup", "work", "idle")}
    print(f"{len(tests)} tests, {totals['wall']:.0f} s of test time over the workers; a bare start-up "
          f"(`{BARE}`) costs {start_cpu:.2f} CPU s\n")
    print(table({tier: {**parts, "tests": int(parts["tests"]), "processes": int(parts["processes"])}
                 for tier, parts in by_tier.items()}, "tier"))
    print()
    top = dict(sorted(by_file.items(), key=lambda item: -item[1]["wall"])[:args.top])
    print(table({name: {**parts, "tests": int(parts["tests"]), "processes": int(parts["processes"])}
                 for name, parts in top.items()}, "file"))
    if args.write_costs:
        costs = {name: round(parts["wall"] - parts["waited"], 1) for name, parts in sorted(by_file.items())}
        (TESTS / "costs.json").write_text(json.dumps(costs, indent=1) + "\n")
        print(f"\nwrote {TESTS / 'costs.json'} ({len(costs)} modules; median "
              f"{statistics.median(costs.values()):.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
