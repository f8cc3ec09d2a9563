"""Ranks whose speeds a test judges against each other: all on CPU 0, each in a CPU cgroup of its own.

Why one CPU, not one CPU each. This VM's two CPUs are not independent, and what else runs on each differs: CI saw
a healthy 3-rank watch job on the namespace cluster name node1's and node2's ranks (sharing CPU 0) slow, their own
work 2.8x node3's (on CPU 1 beside one busy loop), and once CPU 1 is saturated rank 0's own work on CPU 0 took up
to 3x longer too (tests/e2e/test_watch.py). Ranks on one CPU meet the same noise.

Why a cgroup each, with a quota. On one CPU, busy loops that slow one rank would slow every rank alike, were they
plain processes beside them: the kernel shares a CPU between runnable tasks by weight, not by who started them. A
CPU cgroup (v1's ``cpu`` controller) is scheduled as one entity, and each rank's group here may run at most
:data:`CPU_SHARE` / N of the CPU (``cpu.cfs_quota_us`` over a :data:`PERIOD_US` period): a fixed budget a rank keeps
whatever the other ranks do, as a rank on a CPU of its own would, and the ranks' budgets together leave the CPU some
room, so no rank waits for another's. Loops started in rank 1's group (a rank's children inherit its group) share
rank 1's budget alone. (Equal weights without a quota were not enough: measured under Lightning, rank 0's own work
went from 26 ms to 43 ms a step once rank 1's loops kept its group always runnable, since healthy ranks had taken
turns at the whole CPU.) The kernel's autogroups (/proc/sys/kernel/sched_autogroup_enabled), which shared a CPU
between sessions and made every test juggle sessions and nice values, apply only to tasks in the root group: not to
these. The test's parent group weighs :data:`SHARES` against the machine's other tasks (nice -10's weight is 9548),
so that what else runs takes little of the ranks' CPU, and that little from every rank alike.

Use :func:`rank_groups` around the job (by hand: ``python tests/cpu_groups.py RANKS COMMAND ...``); each rank joins
``$RANK_GROUPS/rank<its rank>`` as the bootstrap starts in it (tests/judged/sitecustomize.py, which pinned.sh and the
Lightning test load: its imports run outside the budgets, on every CPU), or as it starts (the cluster test's
wrapper). On leaving, every process still in a group is killed and the groups are removed.
"""

from __future__ import annotations

import os
import signal
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional


ROOT = Path("/sys/fs/cgroup/cpu")  # cgroup v1's cpu controller, as this machine kind mounts it
SHARES = 10240
CPU = 0  # the one CPU every judged rank runs on
CPU_SHARE = 0.9  # of that CPU, the ranks' budgets together
PERIOD_US = 10_000  # the quota's period: a few of a step's milliseconds, so a step is not throttled whole
PREFIX = "hydra-train-bootstrap-tests-"  # each job's parent group: PREFIX<pid>-<tag>
EMPTY_WAIT_S = 10.0  # a killed process leaves its group once reaped


def why_not() -> Optional[str]:
    """None where rank groups can be made here, else the line a skip (or, under CI=true, a failure) shows."""
    if not (ROOT / "cpu.shares").exists():
        return f"needs the cgroup v1 cpu controller mounted at {ROOT} (tests/cpu_groups.py)"
    if not os.access(ROOT, os.W_OK):
        return f"needs the right to make cgroups under {ROOT}: run as root (tests/cpu_groups.py)"
    return None


def join(groups: Path, rank: int) -> None:
    """Move this process, every thread of it, into rank ``rank``'s group and onto :data:`CPU` (what the cluster's
    shell wrapper does as its rank starts; tests/judged/sitecustomize.py as the bootstrap starts)."""
    (groups / f"rank{rank}" / "cgroup.procs").write_text(str(os.getpid()))  # v1: the whole thread group moves
    for thread in os.listdir("/proc/self/task"):  # affinity is a thread's own: torch's threads exist by now
        try:
            os.sched_setaffinity(int(thread), {CPU})
        except OSError:  # a thread that ended meanwhile
            pass


def leave() -> None:
    """Move this process out of any rank's group, onto every CPU: a process started by a rank that had joined."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(",") and path.startswith(f"/{PREFIX}"):
            (ROOT / "cgroup.procs").write_text(str(os.getpid()))
    os.sched_setaffinity(0, range(os.cpu_count() or 1))


def _members(group: Path) -> list:
    try:
        return [int(pid) for pid in (group / "cgroup.procs").read_text().split()]
    except FileNotFoundError:
        return []


@contextmanager
def groups_of(tag: str, ranks: int) -> Iterator[Path]:
    """A parent group for one job's ``ranks`` ranks, holding ``rank0`` ... each with its budget; on leaving, what is
    left in them is killed and every group removed."""
    parent = ROOT / f"{PREFIX}{os.getpid()}-{tag}"
    parent.mkdir()
    (parent / "cpu.shares").write_text(str(SHARES))
    try:
        for rank in range(ranks):
            group = parent / f"rank{rank}"
            group.mkdir()
            (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(int(PERIOD_US * CPU_SHARE / ranks)))
        yield parent
    finally:
        groups = [group for group in parent.iterdir() if group.is_dir()]
        for group in groups:
            for pid in _members(group):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + EMPTY_WAIT_S
        for group in groups:
            while _members(group) and time.monotonic() < deadline:
                time.sleep(0.05)
            group.rmdir()
        parent.rmdir()


@contextmanager
def rank_groups(tag: str, ranks: int = 2) -> Iterator[Path]:
    """:func:`groups_of` for a test (``RANK_GROUPS``). Fails the test (under CI=true) or skips it where groups cannot
    be made here."""
    reason = why_not()
    if reason is not None:
        import pytest

        from conftest import under_ci

        if under_ci():
            pytest.fail(f"{reason} [CI=true: a test that judges ranks' speeds must run]", pytrace=False)
        pytest.skip(reason)
    with groups_of(tag, ranks) as parent:
        yield parent


if __name__ == "__main__":  # python tests/cpu_groups.py RANKS COMMAND [ARG ...]: the command with RANK_GROUPS set
    import subprocess
    import sys

    if len(sys.argv) < 3 or not sys.argv[1].isdigit() or why_not():
        sys.exit(why_not() or "usage: python tests/cpu_groups.py RANKS COMMAND [ARG ...]")
    with groups_of("cli", int(sys.argv[1])) as made:
        code = subprocess.call(sys.argv[2:], env={**os.environ, "RANK_GROUPS": str(made)})
    sys.exit(code)
