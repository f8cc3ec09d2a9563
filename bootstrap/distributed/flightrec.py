"""The flight recorder's dumps: each rank's recent collectives, written into the job's directory
when the job fails, times out or is stopped. Touches the process (torch, signals, a thread).

torch records every collective of every process group in a per-process ring buffer
(``TORCH_FR_BUFFER_SIZE``, which the plan sets from ``env.distributed.flight_recorder``). On
NCCL its watchdog dumps the buffer on a timeout (to ``TORCH_FR_DUMP_TEMP_FILE``, which the plan
points at the same directory); gloo never dumps. So the bootstrap writes the dumps itself:

- when the task raises under a process group (a gloo timeout raises there), from
  ``Session.close``;
- when SIGTERM or SIGINT arrives, even while the main thread is blocked in a collective (where
  Python runs no signal handler until the collective returns): a watcher thread wakes on
  ``signal.set_wakeup_fd``, dumps, and, if the main thread does not end the job within
  :data:`GRACE_S`, finishes it from there;
- when another rank asks, through the group's store: the first rank that fails asks every
  rank for its dump, so that one diagnosis (:mod:`bootstrap.distributed.hang`) sees them all.

A healthy job writes nothing.
"""

from __future__ import annotations

import logging
import os
import pickle
import select
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Dict, Optional

import torch
import torch.distributed as dist

from bootstrap.distributed import hang
from bootstrap.distributed.dumps import DUMP_PREFIX
from bootstrap.doors import outbound, records

log = logging.getLogger(__name__)
REQUEST_KEY = "hydra_train_bootstrap/fr_dump_request"  # in the group's store: who asked for dumps
POLL_S = 0.5  # how often the watcher looks for a request
GRACE_S = 2.0  # after a signal, how long the main thread gets to end the job itself
_Handler = Callable[[int, Optional[FrameType]], Any]  # a Python signal handler
PEERS_S = 5.0  # how long a failing rank waits for the others' dumps


def _pg_config() -> Dict[str, dict]:
    """Each process group's name, description and ranks, from torch's Python registry.

    gloo registers its ranks before Python names the group, so the recorder's own ``pg_config``
    is one empty entry, and torch's analyser cannot read such a dump without this."""
    world = dist.distributed_c10d._world
    config = {}
    for group, name in list(world.pg_names.items()):
        ranks = sorted(world.pg_group_ranks.get(group, {}))
        config[str(name)] = {"name": str(name), "desc": str(getattr(group, "group_desc", "undefined")),
                             "ranks": str(ranks)}
    return config


def merged(cpu: dict, nccl: Optional[dict]) -> dict:
    """One dump of torch's two recorders. gloo's collectives are in the CPU recorder (``_dump_fr_trace``);
    NCCL's are in a recorder of their own, which only ``_dump_nccl_trace`` returns (seen on an H200 with
    torch 2.11: ``_dump_fr_trace`` held none of a NCCL group's all_reduces)."""
    if not nccl:
        return cpu
    entries = sorted([*cpu.get("entries", []), *nccl.get("entries", [])], key=lambda e: e.get("time_created_ns", 0))
    return {**cpu, **nccl, "entries": entries}


def recorded(stacks: bool = True) -> dict:
    """This process's recorders as one dump (:func:`merged`): every collective they still hold, each with its
    times; ``stacks``: with the Python stack that issued each (the first call symbolises them, about a second)."""
    c10d: Any = torch._C._distributed_c10d  # private, and its stubs lack the recorder's functions
    nccl_dump = getattr(c10d, "_dump_nccl_trace", None)  # CUDA builds only
    return merged(pickle.loads(c10d._dump_fr_trace(True, stacks, False)),
                  pickle.loads(nccl_dump(True, stacks, False)) if nccl_dump is not None else None)


def dump(dump_dir: Path, rank: int, world_size: int, reason: str, since_ns: int) -> Optional[Path]:
    """Write this rank's recorder (entries created since ``since_ns``: this job's) to
    ``<dump_dir>/comm_lib_trace_rank_<rank>``, atomically, with the permissions the umask gives (as
    reports: a teammate's ``bootstrap hang`` must be able to read it); None when there is nothing to write."""
    dumped_ns = time.time_ns()  # before the dump itself: its first call symbolises stacks (about a second)
    raw = recorded()
    entries = [e for e in raw.get("entries", []) if e.get("time_created_ns", 0) >= since_ns]
    if not entries:
        return None
    raw.update(entries=entries, pg_config=_pg_config(),
               bootstrap={"rank": rank, "world_size": world_size, "reason": reason, "dump_time_ns": dumped_ns})
    path = Path(dump_dir) / f"{DUMP_PREFIX}{rank}"
    # The temporary name neither starts like a dump nor ends in a digit: torch's analyser would take it for one.
    outbound.write_bytes(path, pickle.dumps(raw), prefix=".fr-", suffix=".partial")
    return path


def request_dumps(rank: int) -> None:
    """Ask every rank of the default group for its dump (their watchers poll the store)."""
    try:
        dist.distributed_c10d._get_default_store().set(REQUEST_KEY, f"{rank}@{time.time_ns()}")
    except Exception:  # noqa: BLE001 - the store went away with a peer: only our own dump, then
        pass


def wait_for_dumps(dump_dir: Path, world_size: int, since_ns: int, timeout_s: float = PEERS_S) -> None:
    """Until every rank's dump written after ``since_ns`` is in ``dump_dir``, or ``timeout_s`` (a dump
    left there by an earlier run does not count)."""
    deadline = time.monotonic() + timeout_s
    waiting = [Path(dump_dir) / f"{DUMP_PREFIX}{rank}" for rank in range(world_size)]
    while waiting and time.monotonic() < deadline:
        waiting = [p for p in waiting if not _written_since(p, since_ns)]
        if waiting:
            time.sleep(0.1)


def _written_since(path: Path, since_ns: int) -> bool:
    try:
        return path.stat().st_mtime_ns >= since_ns
    except OSError:
        return False


class JobRecorder:
    """One job's dumps: this rank's, in ``dump_dir``, of the collectives since ``since_ns``. Its waits (for the
    peers' dumps, for the main thread after a signal) are bounded by ``timeout_s`` too, the user's."""

    def __init__(self, dump_dir: Path, rank: int, world_size: int, since_ns: int, timeout_s: float = PEERS_S):
        self.dump_dir, self.rank, self.world_size, self.since_ns = dump_dir, rank, world_size, since_ns
        self.timeout_s = timeout_s
        self._ending = False  # this rank is collecting for its own failure

    def dump(self, reason: str) -> Optional[Path]:
        return dump(self.dump_dir, self.rank, self.world_size, reason, self.since_ns)

    def dump_for_peer(self) -> Optional[Path]:
        """A peer failed and asked (through the store). Not while this rank collects for its own end:
        its own request reaches its own watcher too, and would overwrite the dump's reason."""
        return None if self._ending else self.dump("asked by a peer that failed")

    def collect(self, reason: str) -> Optional[records.Hang]:
        """On a job's failed or interrupted end: this rank's dump, every other rank's (asked for through
        the store, waited for up to PEERS_S), and what they show, as the report's ``distributed.hang``."""
        self._ending = True
        mine = self.dump(reason)
        if self.world_size > 1:
            request_dumps(self.rank)
            # any dump of this job counts
            wait_for_dumps(self.dump_dir, self.world_size, self.since_ns, min(PEERS_S, self.timeout_s))
        # This job's dumps only: one left by an earlier run in a reused directory is stale, not this job's.
        found = hang.findings(self.dump_dir, since_ns=self.since_ns, world_size=self.world_size)
        if mine is None and not found.dumps:
            return None
        if found.finding:
            log.error("flight recorder: %s (bootstrap hang %s)", found.finding, self.dump_dir)
        return found


class Watcher:
    """While a process group is in use: dump on SIGTERM/SIGINT or on a peer's request.

    ``on_stuck(signum)`` runs in the watcher thread when the main thread has not ended the job
    :data:`GRACE_S` after a signal (it is blocked in a collective); it must end the process.
    """

    def __init__(self, recorder: JobRecorder, on_stuck: Callable[[int], None]):
        self._recorder = recorder
        self._on_stuck = on_stuck
        self._stopped = threading.Event()
        self._main_alive = threading.Event()  # the signal's Python handler ran: the main thread is not stuck
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)
        self._previous_fd: Optional[int] = None
        self._handlers: Dict[int, _Handler] = {}  # the handlers this watcher wrapped, restored by stop()
        self._thread = threading.Thread(target=self._run, name="bootstrap-flight-recorder", daemon=True)

    def start(self) -> None:
        if threading.current_thread() is threading.main_thread():
            previous = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
            if previous != -1:  # someone else's (asyncio's): leave it in charge, watch the store only
                signal.set_wakeup_fd(previous)
            else:
                self._previous_fd = previous
                for signum in (signal.SIGTERM, signal.SIGINT):
                    handler = signal.getsignal(signum)
                    if callable(handler):  # only a Python handler wakes the fd; it is wrapped to say it ran
                        self._handlers[signum] = handler
                        signal.signal(signum, self._noting(handler))
        self._thread.start()

    def _noting(self, handler: _Handler) -> _Handler:
        def handle(signum: int, frame: Optional[FrameType]) -> Any:
            self._main_alive.set()  # runs in the main thread, between bytecodes: it is not blocked in C++
            return handler(signum, frame)
        return handle

    def stop(self) -> None:
        """Stop watching (the main thread is closing the job itself). Runs in the main thread."""
        self._main_alive.set()
        self._stopped.set()
        for signum, handler in self._handlers.items():
            signal.signal(signum, handler)
        self._handlers.clear()
        if self._previous_fd is not None:
            signal.set_wakeup_fd(self._previous_fd)
            self._previous_fd = None
        try:
            os.write(self._write_fd, b"\0")  # wake the thread
        except OSError:
            pass
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        for fd in (self._read_fd, self._write_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def _run(self) -> None:
        requested, before = False, self._request()  # a request left in the store by an earlier job is not ours
        while not self._stopped.is_set():
            try:
                ready, _, _ = select.select([self._read_fd], [], [], POLL_S)
                signals = os.read(self._read_fd, 64) if ready else b""
            except OSError:
                return  # the pipe was closed: stopped
            if self._stopped.is_set():
                return
            for signum in (b for b in signals if b in (signal.SIGTERM, signal.SIGINT)):
                self._signalled(signum)
                return
            if not requested and self._request() not in (None, before):
                requested = True
                self._safely(self._recorder.dump_for_peer)

    def _signalled(self, signum: int) -> None:
        self._safely(lambda: self._recorder.dump(f"signal {signal.Signals(signum).name}"))
        # Only SIGTERM is ended from here: a SIGINT (Ctrl-C) the task may catch, and go on (Lightning does).
        grace = min(GRACE_S, self._recorder.timeout_s)
        if signum == signal.SIGTERM and not self._main_alive.wait(grace):  # its handler never ran: stuck in C++
            self._on_stuck(signum)

    @staticmethod
    def _request() -> Optional[bytes]:
        """The request in the group's store, if any: who asked, and when."""
        try:
            store = dist.distributed_c10d._get_default_store()
            return store.get(REQUEST_KEY) if dist.is_initialized() and store.check([REQUEST_KEY]) else None
        except Exception:  # noqa: BLE001 - no store (yet, or any more)
            return None

    @staticmethod
    def _safely(action: Callable[[], object]) -> None:
        try:
            action()
        except Exception:  # noqa: BLE001 - a dump is a courtesy; the watcher must go on
            pass
