"""The end of a sweep in the launching process, run once, also when Hydra skips ``on_multirun_end``.

A sweep holds process-wide hooks in the process that launches it: the log-record factory that masks
every record (``outbound.MaskedLogs``) and the snapshot of what a launcher plugin changed in
``os.environ``. ``on_multirun_end`` releases them, but Hydra skips that hook whenever the sweeper raises:
a job failed (Hydra's basic sweeper re-raises its error), a check stopped the sweep, Ctrl-C. In a script
the process ends there and nothing is left; in a process that goes on (a notebook calling the app's
``main``, hydra-zen's ``launch(multirun=True)``, a test) the hooks would stay installed for the rest of it.

So the release does not rely on the hook. :class:`SweepEnd` finds, on the launching thread's stack, the
call that drives the sweep: whoever called Hydra's ``Callbacks.on_multirun_start`` (Hydra's own
``Hydra.multirun``, hydra-zen's ``launch``, which drives a sweep itself). A daemon thread looks every
:data:`POLL_S` whether that call is still running; when it has returned, by a result or an exception,
the release runs, once. ``on_multirun_end`` runs it at once when Hydra does call it. Where no driver is
found (a hook called by hand, a Hydra whose callbacks are called otherwise) only the hook releases.
"""

from __future__ import annotations

import sys
import threading
from types import FrameType
from typing import Callable, Optional

POLL_S = 0.1  # how soon after the sweep's end the hooks are released


def _driver() -> Optional[FrameType]:
    """The frame that called Hydra's ``Callbacks.on_multirun_start`` on this thread's stack, or None."""
    try:
        from hydra._internal.callbacks import Callbacks

        code = Callbacks.on_multirun_start.__code__
    except (ImportError, AttributeError):  # another Hydra: only on_multirun_end releases
        return None
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    return frame.f_back if frame is not None else None


def _on_stack(top: Optional[FrameType], frame: FrameType) -> bool:
    while top is not None:
        if top is frame:
            return True
        top = top.f_back
    return False


class SweepEnd:
    """``release()`` once: when :meth:`end` is called, or when the call driving the sweep on the launching thread
    returns, whichever comes first."""

    def __init__(self, release: Callable[[], None]):
        self._release: Optional[Callable[[], None]] = release
        self._lock = threading.Lock()
        self._ended = threading.Event()
        self._frame = _driver()
        self._thread_id = threading.get_ident()
        if self._frame is not None:
            threading.Thread(target=self._watch, name="bootstrap-sweep-end", daemon=True).start()

    def _watch(self) -> None:
        while not self._ended.wait(POLL_S):
            frame = self._frame
            if frame is None or not _on_stack(sys._current_frames().get(self._thread_id), frame):
                break
        self.end()

    def end(self) -> None:
        """Release now (``on_multirun_end``), unless released already."""
        with self._lock:
            release, self._release = self._release, None
            self._frame = None  # the watcher holds no frame of Hydra's past the sweep
        self._ended.set()
        if release is not None:
            release()
