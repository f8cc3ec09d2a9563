"""The start's timeline: one clock from the process's own start, and the marks every layer makes on it. Pure
accounting, apart from reading the kernel's clock and its record of when a process started.

**One clock.** The kernel records when each process started: field 22 of ``/proc/<pid>/stat``, in clock
ticks since the machine booted (``os.sysconf("SC_CLK_TCK")``, 100 a second on Linux: 10 ms a tick), on the
clock ``CLOCK_BOOTTIME`` reads (``task->start_boottime``, Linux 5.5 and later; the same clock before).
Every mark is a reading of that clock, so a phase's start is seconds since the process started, with the
interpreter and the imports before any of our code counted. The kernel truncates the start to its tick: a
process that started at 12.3456 s after boot reads 12.34 s, so every time measured from it reads up to one
tick long, never short.

**A mark names the phase that ends at it.** ``TIMELINE.mark("compose")`` says that the time since the mark
before (or since the process started) was Hydra's compose. The code that knows what just happened names it,
and the phases are contiguous by construction: nothing between two marks can go missing. The first step
ends the timeline (:meth:`Timeline.finish`): later marks are not the start's, and cost nothing.

**Counted store operations.** :func:`counted` wraps a store so that each call through it counts into the
phase that is running (``bootstrap dryrun`` predicts these counts; a real run's report shows them).

``TIMELINE.enabled = False`` turns the accounting off (bench/bench_phases.py measures it on against off).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, List, NamedTuple, Optional, Tuple, TypeVar, cast

CLOCK = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)  # Linux: the clock of the kernel's start times
MAX_ANCESTORS = 8  # processes walked up from this one to find the launcher's own (a wrapper script or two)
S = TypeVar("S")


def now() -> float:
    """The timeline's clock, in seconds since the machine booted."""
    return time.clock_gettime(CLOCK)


def tick_s() -> float:
    """The kernel's clock tick, the resolution of a process's start time (10 ms on Linux)."""
    try:
        return 1.0 / os.sysconf("SC_CLK_TCK")
    except (AttributeError, ValueError, OSError):
        return 0.01


def started(pid: Any = "self") -> Optional[float]:
    """When the process ``pid`` started, on the timeline's clock; None where the kernel does not say (not Linux)."""
    from bootstrap.doors import inbound  # loaded when a phase is first recorded, not at Hydra's plugin scan

    try:
        return inbound.read_process_stat(pid)[1] * tick_s()
    except inbound.Unreadable:
        return None


def launcher_started(lacking: str) -> Optional[float]:
    """When the launcher's own process started: the nearest ancestor of this process started without the
    variable ``lacking``, which the launcher gives the processes it starts and not itself (torchrun's agent gives
    ``TORCHELASTIC_RUN_ID`` to its workers). A wrapper script between them carries the variable and is passed
    over; an ancestor whose environment cannot be read (another user's: SLURM's slurmstepd runs as root) is the
    launcher's. None when none is found within :data:`MAX_ANCESTORS` ancestors."""
    from bootstrap.doors import inbound

    try:
        pid = inbound.read_process_stat()[0]
        for _ in range(MAX_ANCESTORS):
            if pid <= 1:
                return None
            environ = inbound.read_start_environ(Path(f"/proc/{pid}/environ"))
            parent, start = inbound.read_process_stat(pid)
            if environ is None or lacking not in environ:
                return start * tick_s()
            pid = parent
    except inbound.Unreadable:
        return None
    return None


class Mark(NamedTuple):
    """The end of a phase: its name, when (the timeline's clock), and the store operations counted in it."""

    name: str
    at: float
    store_ops: int = 0


class Timeline:
    """The marks of one process's start, from :attr:`origin` (the process's start) to its first step."""

    def __init__(self, origin: Optional[float] = None) -> None:
        """``origin``: the process's start on the timeline's clock; None: read from the kernel when first needed
        (or, where it does not say, this timeline's making)."""
        self.enabled = True
        self._begin(origin)

    def _begin(self, origin: Optional[float]) -> None:
        self._origin, self._made = origin, now()
        self.pid = os.getpid()
        self.marks: List[Mark] = []
        self._ops = 0  # store operations counted since the last mark
        self.finished = False  # the first step has been marked: the start is over

    def mark(self, name: str, at: Optional[float] = None) -> None:
        """The phase ``name`` ends now (or ``at``): it began at the mark before, or at the process's start."""
        if self.enabled and not self.finished:
            self.marks.append(Mark(name, now() if at is None else at, self._ops))
            self._ops = 0

    def count(self, ops: int = 1) -> None:
        """``ops`` store operations in the phase that is running."""
        if self.enabled and not self.finished:
            self._ops += ops

    def last(self) -> Optional[str]:
        return self.marks[-1].name if self.marks else None

    def finish(self) -> None:
        """The start is over (its first step is marked): the store operations counted since the last mark (the
        exchange that reports the phases) are the last phase's, and no later mark counts."""
        if self.marks and self._ops and self.enabled:
            self.marks[-1] = self.marks[-1]._replace(store_ops=self.marks[-1].store_ops + self._ops)
        self._ops, self.finished = 0, True

    def phases(self) -> List[Tuple[str, float, float, int]]:
        """Each phase so far as ``(name, start_s, seconds, store_ops)``, from the process's start."""
        out, begun = [], self.origin
        for name, at, ops in self.marks:
            out.append((name, begun - self.origin, at - begun, ops))
            begun = at
        return out

    @property
    def origin(self) -> float:
        """The process's start, on the timeline's clock."""
        if self._origin is None:
            found = started()
            self._origin = found if found is not None else self._made
        return self._origin

    def own_process(self) -> None:
        """In a process forked from the one that made this timeline (``multiprocessing``'s fork): this process's
        own start, and none of the parent's marks."""
        if os.getpid() != self.pid:
            self._begin(None)

    def restart(self, name: str) -> None:
        """A session ended: what the process does next is the next job's start, after a phase ``name`` (the jobs
        before it) from the process's start to now."""
        self.marks, self._ops, self.finished = [], 0, False
        self.mark(name)


TIMELINE = Timeline()  # the process's: every mark of its start


class _Counted:
    """A store whose calls through it count into the running phase (:func:`counted`)."""

    __slots__ = ("_store", "_timeline")

    def __init__(self, store: Any, timeline: Timeline) -> None:
        self._store, self._timeline = store, timeline

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if name in ("set_timeout", "timeout") or not callable(found):  # the client's own settings: no request
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            self._timeline.count()
            return found(*args, **kwargs)
        return call


def counted(store: S, timeline: Optional[Timeline] = None) -> S:
    """``store`` (any c10d Store), each operation made through it counted into ``timeline``'s running phase."""
    return cast(S, _Counted(store, TIMELINE if timeline is None else timeline))
