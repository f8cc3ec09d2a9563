"""What a session changed in this process, and how it is all put back, interrupted or not.
Touches the process.

:class:`ProcessChanges` takes its snapshots before anything changes; ``undo()`` destroys
the group the session made, then restores torch's settings, then the environment, each
step even if an earlier one raised.

An interrupted job is still closed. Hydra 1.3 skips ``on_job_end`` when the task is
interrupted (hydra#3078), and SIGTERM's default action ends the process without running any
Python. So, while a session is applied, SIGTERM becomes ``SystemExit(143)`` in the main
thread, and an atexit hook closes the session if nothing else did; Ctrl-C
(KeyboardInterrupt) reaches the same hook.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Union

from bootstrap.core.runtime import TorchState
from bootstrap.distributed import seeding
from bootstrap.distributed.group import ProcessGroup, Teardown
from bootstrap.variables.environ import EnvironSnapshot

if TYPE_CHECKING:
    from bootstrap.distributed.flightrec import JobRecorder, Watcher


class _SigtermHold:
    """Process-wide: while any session closes, a SIGTERM waits instead of raising half-way.

    Process-wide because only the outermost session's guard installs the handler: a nested
    session closes under it."""

    def __init__(self):
        self.depth = 0  # sessions closing now
        self.held: Optional[int] = None  # the signal that came meanwhile

    @contextlib.contextmanager
    def __call__(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if self.depth == 0 and self.held is not None:  # the last close is done: end as the signal asked,
                signum, self.held = self.held, None  # also over an error (Ctrl-C) that ended the close
                raise SystemExit(128 + signum)


sigterm_held = _SigtermHold()  # ``with sigterm_held():`` around a close


class InterruptGuard:
    """Calls ``close`` at exit unless removed first; turns SIGTERM into SystemExit meanwhile,
    except while a session closes (see :data:`sigterm_held`)."""

    def __init__(self, close: Callable[[], None]):
        self._close = close
        self._previous_sigterm: Union[Callable[[int, Optional[FrameType]], Any], int, signal.Handlers, None] = None

    @staticmethod
    def _exit_on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
        if sigterm_held.depth:
            sigterm_held.held = signum
            return
        raise SystemExit(128 + signum)  # unwinds the task; the atexit hook then closes the session

    def install(self) -> None:
        atexit.register(self._close)
        # Only over the default action: a handler someone else installed stays in charge
        # (submitit's, for one, lets a preempted SLURM job requeue instead of dying).
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            self._previous_sigterm = signal.signal(signal.SIGTERM, self._exit_on_sigterm)

    def remove(self) -> None:
        atexit.unregister(self._close)
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None


class ProcessChanges:
    """A session's hold on the process: snapshots, its process group, its interrupt guard."""

    def __init__(self, env_set: Iterable[str], close_at_exit: Callable[[], None]):
        # Hydra restores its own env_set keys, before on_job_end: restoring them too would leak them.
        self.environ = EnvironSnapshot(os.environ, foreign=env_set)
        self.torch = TorchState.capture()
        self.group: Optional[ProcessGroup] = None  # once start() made or adopted one
        self.watcher: Optional[Watcher] = None  # while a process group may hang
        self.recorder: Optional[JobRecorder] = None  # the flight recorder's dumps of this job, under a group
        self.guard = InterruptGuard(close_at_exit)

    def undo(self) -> Optional[Teardown]:
        """Put the process back. Returns what became of the group (None: there was none)."""
        watcher, self.watcher = self.watcher, None
        if watcher is not None:  # first: it wrapped the guard's SIGTERM handler
            watcher.stop()
        self.guard.remove()
        group, self.group = self.group, None
        try:
            return group.teardown() if group is not None else None
        finally:
            try:
                self.torch.restore()
            finally:
                seeding.forget_pending_seed()  # its import hook, not left on sys.meta_path after the job
                self.environ.restore()
