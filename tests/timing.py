"""Where the suite's time goes, and the order its modules run in (tests/conftest.py registers this plugin).

**Order.** pytest-xdist's ``loadscope`` hands each worker a whole module at a time (a module's shared world runs
once), and by default hands out the modules with the *most tests* first: the unit modules of hundreds of quick
tests went first and the cluster's few minute-long tests last, where the two workers could not balance them. So
the suite runs with ``--no-loadscope-reorder`` and orders the modules here, the costliest first (longest
processing time first), by their measured seconds in ``tests/costs.json`` (``python tests/durations.py DIR
--write-costs`` rewrites it from a timed run); a module not yet measured counts as its tier's median.

**Times.** With ``BOOTSTRAP_TEST_TIMES=DIR`` each worker writes one JSON line per test into ``DIR/<worker>.jsonl``:
its wall time, the time it waited for the machine's cores (``conftest.cores()``), the CPU time of the worker and of
the processes it started and reaped, and how many processes it started. ``python tests/durations.py DIR`` makes
CONTRIBUTING's table from them. Without the variable nothing is recorded.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
COSTS = TESTS / "costs.json"
WAITED = [0.0]  # seconds this process waited for the cores (conftest._lock_cores adds to it)
_started = [0]  # processes started (subprocess.Popen, os.posix_spawn), counted by an audit hook


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _tier(module: str) -> str:
    return module.split("/")[1] if module.count("/") >= 2 else "unit"


def order(items: list) -> None:
    """Sort ``items`` in place: whole modules, the costliest first; each module's tests in their own order."""
    try:
        costs = json.loads(COSTS.read_text())
    except (OSError, ValueError):
        costs = {}
    by_tier: dict = {}
    for module, seconds in costs.items():
        by_tier.setdefault(_tier(module), []).append(seconds)
    median = {tier: sorted(values)[len(values) // 2] for tier, values in by_tier.items()}
    first = {}
    for index, item in enumerate(items):
        first.setdefault(_module(item.nodeid), index)

    def cost(item) -> tuple:
        module = _module(item.nodeid)
        return (-costs.get(module, median.get(_tier(module), 0.0)), first[module])

    items.sort(key=cost)  # stable: a module's tests keep their order


class Recorder:
    """One JSON line per test (see the module's docstring)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        sys.addaudithook(self._audit)

    @staticmethod
    def _audit(event: str, args: tuple) -> None:
        if event in ("subprocess.Popen", "os.posix_spawn"):
            _started[0] += 1

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        started, waited, processes = time.monotonic(), WAITED[0], _started[0]
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        yield
        own_after = resource.getrusage(resource.RUSAGE_SELF)
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        line = {"nodeid": item.nodeid, "worker": self.worker, "wall": round(time.monotonic() - started, 3),
                "waited": round(WAITED[0] - waited, 3),
                "cpu_self": round(own_after.ru_utime + own_after.ru_stime - own.ru_utime - own.ru_stime, 3),
                "cpu_children": round(children_after.ru_utime + children_after.ru_stime - children.ru_utime
                                      - children.ru_stime, 3),
                "processes": _started[0] - processes}
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / f"{self.worker}.jsonl", "a") as out:
            out.write(json.dumps(line) + "\n")


def register(config) -> None:
    directory = os.environ.get("BOOTSTRAP_TEST_TIMES")
    if directory:
        config.pluginmanager.register(Recorder(Path(directory)), "bootstrap-test-times")
