"""An interrupted job is still closed: its group destroyed, the process restored, its report written.
Touches the process (signal handlers, atexit).

Hydra 1.3 skips ``on_job_end`` when the task is interrupted (hydra#3078), and SIGTERM's
default action ends the process without running any Python. So, while a session is
applied, SIGTERM becomes ``SystemExit(143)`` in the main thread, and an atexit hook
closes the session if nothing else did; Ctrl-C (KeyboardInterrupt) reaches the same hook.
"""

from __future__ import annotations

import atexit
import signal
import threading
from typing import Callable, Optional


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)  # unwinds the task; the atexit hook then closes the session


class InterruptGuard:
    """Calls ``close`` at exit unless removed first; turns SIGTERM into SystemExit meanwhile."""

    def __init__(self, close: Callable[[], None]):
        self._close = close
        self._previous_sigterm: Optional[object] = None

    def install(self) -> None:
        atexit.register(self._close)
        # Only over the default action: a handler someone else installed stays in charge
        # (submitit's, for one, lets a preempted SLURM job requeue instead of dying).
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            self._previous_sigterm = signal.signal(signal.SIGTERM, _exit_on_sigterm)

    def remove(self) -> None:
        atexit.unregister(self._close)
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None
