"""Every wait is bounded by the user's timeout: one budget for all the blocking steps of one wait. Pure.

A wait for other ranks is a chain of blocking steps (connect to rank 0's store, read rank 0's record,
read that every rank has arrived). Each step given the whole ``env.distributed.timeout_s`` would make the
chain wait a multiple of it; a :class:`Deadline` gives each step what is left of one budget instead, so
that the user's timeout bounds the whole wait. ``tests/unit/test_waits.py`` lists every blocking call in
the package with what bounds it, and fails on a new one until it is listed.
"""

from __future__ import annotations

import datetime
import time
from typing import TypeVar

S = TypeVar("S")
MIN_STEP_S = 0.01  # a step whose budget is spent still gets this long: a store treats 0 as "no timeout"


class Deadline:
    """``timeout_s`` from now, for every step of one wait."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self._end = time.monotonic() + timeout_s

    def left_s(self) -> float:
        return max(MIN_STEP_S, self._end - time.monotonic())

    def spent(self) -> bool:
        return time.monotonic() >= self._end

    def left(self) -> datetime.timedelta:
        return datetime.timedelta(seconds=self.left_s())

    def bound(self, store: S) -> S:
        """``store`` (any c10d Store), its next blocking operations bounded by what is left."""
        store.set_timeout(self.left())  # type: ignore[attr-defined]
        return store


