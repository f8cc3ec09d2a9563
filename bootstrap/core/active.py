"""The sessions applied in this process, innermost last: what ``bootstrap.current()`` returns.

Sessions nest like context managers: an inner session restores to the state its outer
one left, and closing an outer one closes those inside it first. ``os.environ`` and
torch's settings belong to the whole process, so only one thread applies at a time.
"""

from __future__ import annotations

import threading
from typing import Callable, List, Optional

from bootstrap.doors.errors import BootstrapError

# The sessions (bootstrap.core.session.Session), kept as plain objects: this stack knows nothing of what they do.
_sessions: List[object] = []
_owner: Optional[threading.Thread] = None  # the thread whose sessions these are
_lock = threading.RLock()  # re-entrant: closing a session closes the ones inside it first


def push(session: object, apply: Callable[[], None]) -> None:
    """Run ``apply`` and put ``session`` on top; refuse a second apply and another thread's."""
    global _owner
    with _lock:
        if session in _sessions:
            raise BootstrapError("This session is already applied. Close it (session.close()) before applying it "
                                 "again, or make a new one with bootstrap.initialize().")
        if _sessions and _owner is not None and _owner is not threading.current_thread():  # (set with the first)
            raise BootstrapError(f"A bootstrap session is already applied in thread {_owner.name!r}. os.environ "
                                 "and torch's settings belong to the whole process: apply sessions from one "
                                 "thread, or close that one first.")
        apply()
        if not _sessions:
            _owner = threading.current_thread()
        _sessions.append(session)


def remove(session: object) -> None:
    with _lock:
        if session in _sessions:
            _sessions.remove(session)


def inside(session: object) -> List[object]:
    """The sessions applied after ``session`` and still applied, innermost last."""
    with _lock:
        return _sessions[_sessions.index(session) + 1:] if session in _sessions else []


def innermost() -> Optional[object]:
    return _sessions[-1] if _sessions else None
