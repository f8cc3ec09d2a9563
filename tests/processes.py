"""Every test's processes end with the test, and no test depends on how the suite was started.

Hooks that tests/conftest.py takes in (it imports them by name):

- **Signal dispositions.** A shell that starts a command in the background without job control (``cmd &`` in a
  script, a CI runner's step) starts it with SIGINT and SIGQUIT *ignored*, and an ignored disposition survives
  ``exec``: every process the suite starts would then ignore Ctrl-C, and a test that sends SIGINT to its job would
  wait for nothing (CI saw it: the interrupt tests failed and left ``train_stub.py train.steps=100000`` running).
  So the suite's processes put both back to their defaults as they start (:func:`pytest_configure`), and every
  child inherits a default SIGINT, however the suite was started.
- **A resolver that fails fast.** c10d looks up the peer's name of every TCPStore and gloo connection
  (``getnameinfo``, a reverse DNS query even for 127.0.0.1). This sandbox's name server never answers, and about
  one connection in 25 waited out glibc's 5 s timeout (measured: 40 TCPStore connects, one took 5.0 s; c10d's
  warning "The hostname of the client socket cannot be retrieved. err=-3" is that lookup failing). A 5 s stall
  inside a 5 s preflight budget is a false finding: the suite's processes give the resolver 1 s, once
  (``RES_OPTIONS``, read by glibc; the same 40 connects then stalled 1.0 s at most).
- **No orphans.** Each worker is a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): a process a test started
  whose parent died is re-parented to the worker, not to init. When a test's call ends (passed, failed, or
  stopped by pytest-timeout's SIGALRM), every process that descends from the worker, did not exist before the
  call, and is not a descendant of a process that did (a module fixture's daemon: slurmd, Ray's raylet, whose
  own teardown ends what they start) is killed with its process group, and reaped (:func:`pytest_runtest_call`).
  The same follows a fixture's setup that failed. A test that ends what it started leaves nothing for this to do;
  one that fails half-way no longer leaves its job running after the suite.
"""

from __future__ import annotations

import ctypes
import os
import signal
from typing import Dict, Iterable, Set, Tuple

import pytest

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
_subreaper = [False]


def pytest_configure(config):
    os.environ.setdefault("RES_OPTIONS", "timeout:1 attempts:1")  # every process the suite starts inherits it
    for signum in (signal.SIGINT, signal.SIGQUIT):
        if signal.getsignal(signum) == signal.SIG_IGN:  # started in the background by a shell without job control
            signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
    try:
        _subreaper[0] = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux: orphans go to init, as before
        pass


Process = Tuple[int, str]  # (pid, start time in clock ticks): a pid the kernel reuses is another process


def _table() -> Dict[Process, int]:
    """Every process as (pid, start time) -> parent pid."""
    table: Dict[Process, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):  # gone meanwhile
            continue
        table[(int(name), fields[19].decode())] = int(fields[1])  # ppid: field 4, start time: field 22
    return table


def _descendants(table: Dict[Process, int], root: int) -> Dict[Process, int]:
    children: Dict[int, list] = {}
    for process, parent in table.items():
        children.setdefault(parent, []).append(process)
    found: Dict[Process, int] = {}
    todo = [root]
    while todo:
        for process in children.get(todo.pop(), []):
            if process not in found:
                found[process] = table[process]
                todo.append(process[0])
    return found


def _leftovers(before: Set[Process], now: Dict[Process, int], root: int) -> Iterable[int]:
    """The processes in ``now`` (the worker's descendants) that are new, and whose ancestors up to the worker are
    new too: a descendant of a process that existed before the call (a module fixture's daemon) is its owner's."""
    by_pid = {pid: (pid, start) for pid, start in now}
    for process, parent in now.items():
        if process in before:
            continue
        while parent != root and parent in by_pid and by_pid[parent] not in before:
            parent = now[by_pid[parent]]
        if parent == root:  # every ancestor is new: the test's (an orphan is re-parented to the worker)
            yield process[0]


def _end(pids: Iterable[int]) -> None:
    for pid in pids:
        for kill, target in ((os.killpg, pid), (os.kill, pid)):  # its group, if it leads one; itself
            try:
                if kill is os.killpg and os.getpgid(pid) != pid:
                    continue
                kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _reap(root: int, keep: Set[int]) -> None:
    """Reap the worker's children that have exited, but for those it had before the call (a fixture's Popen)."""
    for (pid, _), parent in _table().items():
        if parent == root and pid not in keep:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _end_new(before: Set[Process]) -> None:
    root = os.getpid()
    leftovers = list(_leftovers(before, _descendants(_table(), root), root))
    _end(leftovers)
    if leftovers or _subreaper[0]:
        _reap(root, {pid for pid, _ in before})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    before = set(_descendants(_table(), os.getpid()))
    try:
        yield
    finally:
        _end_new(before)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    """A fixture whose setup failed (a shared world's job that timed out) leaves nothing running either; one that
    succeeded keeps what it started (its daemons) until its own teardown."""
    before = set(_descendants(_table(), os.getpid()))
    outcome = yield
    if outcome.excinfo is not None:
        _end_new(before)
