"""The parts of multi-process start-up that touch the process: the process group, the device mesh,
teardown, and telling the ranks apart when one fails. Detection itself is pure (``launcher``); shape
rules too (``mesh``).

torch is imported inside the functions that use it: the report and the sweep summary import
:class:`GroupState` and :class:`Teardown` from here and must not load torch for them.
"""

from __future__ import annotations

import datetime
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Generic, List, Mapping, MutableMapping, Optional, Tuple, TypeVar

from bootstrap.distributed.launcher import Launch, peek
from bootstrap.distributed.waits import Deadline
from bootstrap.doors import inbound, outbound
from bootstrap.doors.errors import BootstrapError
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.statuses import GroupState, Teardown
from bootstrap.doors.timeline import counted

if TYPE_CHECKING:  # torch is imported where it is used (see above)
    from torch.distributed import Store

T = TypeVar("T")
log = logging.getLogger(__name__)




def export_rendezvous(launch: Launch, environ: MutableMapping[str, str] = os.environ) -> None:
    """Give torch's env:// rendezvous (and user code) the torchrun-style variables.

    torchrun sets them itself; for submitit and srun the bootstrap does, and restores
    them with the rest of the environment at job end.
    """
    if not launch.row.exports_rendezvous:
        return
    environ.update({
        "RANK": str(launch.rank), "LOCAL_RANK": str(launch.local_rank), "WORLD_SIZE": str(launch.world_size),
        "LOCAL_WORLD_SIZE": str(launch.local_world_size),
        "MASTER_ADDR": launch.master_addr or "127.0.0.1", "MASTER_PORT": str(launch.master_port),
    })


@lean_dataclass
class ProcessGroup:
    """What the bootstrap did about torch.distributed, and so what it must undo."""

    state: GroupState
    mesh: object = None  # torch.distributed.device_mesh.DeviceMesh
    backend: Optional[str] = None  # the group's own backend (an existing group's may not be ours)

    def teardown(self) -> Teardown:
        # Only a group this session created: the user's own is theirs to destroy.
        self.mesh = None
        if self.state is GroupState.CREATED:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
            return Teardown.DESTROYED
        return Teardown.LEFT


def group_in_use(made_here: bool) -> Optional[dict]:
    """The default process group as it stands now, or None: who made it, backend, size and rank.

    At job end this records a group that a framework (Lightning, Ray) or the task made itself.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return None
    return {"owner": "bootstrap" if made_here else "framework", "backend": str(dist.get_backend()),
            "world_size": dist.get_world_size(), "rank": dist.get_rank()}


# How often the waiting thread wakes up. A signal wakes it sooner (a lock wait is
# interrupted on POSIX); the poll is for platforms where it is not.
POLL_S = 0.1


class _Worker(threading.Thread, Generic[T]):
    """Runs one blocking start-up step (a rendezvous) off the main thread.

    torch waits for peers in C++ with the GIL released, and Python runs signal handlers
    only in the main thread, between bytecodes: a rendezvous run in the main thread keeps
    Ctrl-C and SIGTERM waiting until it returns, up to ``timeout_s``. Here the main thread
    only waits for this thread, and that wait is interruptible.

    If the waiting thread gives up (``cancel``), whatever the step still makes is
    discarded by this thread when it is made, so nothing outlives the interrupted start.
    A daemon: a process that is exiting does not wait for a peer that never comes.
    """

    def __init__(self, work: Callable[[], T], discard: Callable[[T], object], name: str):
        super().__init__(name=name, daemon=True)
        self._work = work
        self._discard = discard
        self._lock = threading.Lock()
        self._cancelled = False
        self.result: Optional[T] = None
        self.error: Optional[BaseException] = None
        # Waited on instead of join(): in Python 3.11 a join() that a signal interrupts
        # marks the thread stopped while it still runs (the bpo-45274 fix releases its lock).
        self.finished = threading.Event()

    def run(self) -> None:
        work = self._work
        del self._work  # it runs once, and the thread holds nothing of the step after it
        try:
            result = work()
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread, which raises it
            self.error = error  # (or drops it, when it has given up: no "Exception in thread" noise)
            self.finished.set()
            return
        with self._lock:
            if not self._cancelled:
                self.result = result
                self.finished.set()
                return
        try:
            self._discard(result)  # made after the waiting thread gave up: nobody will use it
        except BaseException:  # noqa: BLE001 - nothing is left to tell
            pass
        finally:
            self.finished.set()

    def cancel(self) -> Optional[T]:
        """Give up waiting. Returns what the step made already (the caller discards it), else None."""
        with self._lock:
            self._cancelled = True
            result, self.result = self.result, None
        return result


# Rendezvous whose waiting thread was interrupted but that still wait for their peers (until
# timeout_s). One holds MASTER_PORT (rank 0 hosts the store there): a new one must not start.
_abandoned: List[_Worker] = []


def run_interruptibly(work: Callable[[], T], discard: Callable[[T], object], name: str) -> T:
    """``work()``, run in a daemon thread while the calling thread waits in short, interruptible polls.

    A signal handler (KeyboardInterrupt, the session's SIGTERM -> SystemExit) raises in the
    waiting thread within about ``POLL_S``; what ``work`` made by then, or makes later, is
    passed to ``discard``. The worker's own exception is raised in the calling thread.
    """
    worker: _Worker[T] = _Worker(work, discard, name)
    try:
        worker.start()  # (a signal can interrupt start() too, after the thread runs)
        while not worker.finished.wait(POLL_S):
            pass
    except BaseException:
        made = worker.cancel()
        if not worker.finished.is_set():
            _abandoned.append(worker)
        if made is not None:
            discard(made)
        raise
    if worker.error is not None:
        error, worker.error = worker.error, None
        raise error
    return worker.result  # type: ignore[return-value]  # finished without an error: result is what work() made


def check_no_abandoned_rendezvous() -> None:
    _abandoned[:] = [w for w in _abandoned if not w.finished.is_set()]
    if _abandoned:
        raise BootstrapError(
            "An interrupted rendezvous of this process is still waiting for its peers (it gives up after "
            "env.distributed.timeout_s) and may hold MASTER_PORT. Start the job in a new process.")


def in_use() -> bool:
    """Is there a default process group already (a framework's, the app's)? Imports nothing new."""
    import sys

    dist = sys.modules.get("torch.distributed")
    return dist is not None and dist.is_available() and dist.is_initialized()


def default_store() -> Store:
    """The default group's store, which its ranks share (the rank agreement and failures use it)."""
    import torch.distributed as dist

    return dist.distributed_c10d._get_default_store()


def rendezvous_store(launch: Launch, deadline: Deadline) -> Store:
    """The store ``init_method="env://"`` would make, made before the group so that the ranks can compare
    how they started first: a client of torchrun's agent store where torchrun offers it (the launcher's row:
    ``agent_store``), else hosted by rank 0 at MASTER_ADDR:MASTER_PORT, for the group the bootstrap is about
    to make, which takes it over. A client waits for rank 0's store within ``deadline``; rank 0 does not wait
    for its clients here (``wait_for_workers=False``): the comparison waits for every rank, and can then
    name those that never came."""
    import torch.distributed as dist

    agent = launch.row.agent_store(os.environ)
    return dist.TCPStore(launch.master_addr or "127.0.0.1", _master_port(launch), launch.world_size,
                         is_master=not agent and launch.rank == 0, timeout=deadline.left(),
                         wait_for_workers=False, multi_tenant=not agent)


def _master_port(launch: Launch) -> int:
    if launch.master_port is None:  # make_plan refuses such a world first; torchrun always sets one
        raise BootstrapError(f"{launch.launcher.value}: a world of {launch.world_size} ranks needs a rendezvous "
                             "port, and none is set. Export MASTER_PORT=<a free port> for every rank.")
    return launch.master_port


def _make_group(state: GroupState, launch: Launch, backend: str, timeout_s: int, device: str,
                mesh_shape: Optional[Mapping[str, int]], store: Optional[Store] = None) -> ProcessGroup:
    """The blocking part of :func:`start`; runs in the rendezvous thread."""
    import torch
    import torch.distributed as dist

    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))  # the current CUDA device is per thread
    group = ProcessGroup(state, backend=backend)
    if state is GroupState.CREATED:
        # A 1-rank group needs no rendezvous: an in-memory store, no port to pick.
        kwargs: Dict[str, Any] = {"store": dist.HashStore()} if launch.world_size == 1 else \
            {"store": store} if store is not None else {"init_method": "env://"}
        if device.startswith("cuda"):
            kwargs["device_id"] = torch.device(device)  # NCCL starts eagerly, not at the first collective
        dist.init_process_group(backend=backend, rank=launch.rank, world_size=launch.world_size,
                                timeout=datetime.timedelta(seconds=timeout_s), **kwargs)
    if mesh_shape:
        from torch.distributed.device_mesh import init_device_mesh

        try:
            # Its sub-groups wait for their peers too. (torch >= 2.13 keeps no per-thread
            # mesh state but the `with mesh:` stack, so a mesh built here serves the main thread.)
            group.mesh = init_device_mesh(device.split(":")[0], tuple(mesh_shape.values()),
                                          mesh_dim_names=tuple(mesh_shape))
        except BaseException:
            group.teardown()  # a group made here must not outlive a failed start
            raise
    return group


def start(launch: Launch, backend: str, timeout_s: int, device: str, mesh_shape: Optional[Mapping[str, int]],
          create: bool, store: Optional[Store] = None) -> ProcessGroup:
    """Create the process group (or adopt an existing one) and build the mesh.

    The wait for the other ranks runs in a daemon thread (see :func:`run_interruptibly`):
    Ctrl-C, or SIGTERM once the session has made it SystemExit, ends the wait at once
    and propagates from here, with no group left behind, now or when the peers arrive.
    ``store``: the one :func:`rendezvous_store` made for the rank agreement (None: env://).
    """
    import torch
    import torch.distributed as dist

    if device.startswith("cuda"):
        # Before init_process_group: NCCL binds each rank's communicator to the current device.
        torch.cuda.set_device(torch.device(device))
    if dist.is_available() and dist.is_initialized():
        state, backend = GroupState.EXISTING, str(dist.get_backend())
    elif create:
        state = GroupState.CREATED
        check_no_abandoned_rendezvous()
    else:
        return ProcessGroup(GroupState.NONE)
    if state is GroupState.EXISTING and not mesh_shape:
        return ProcessGroup(state, backend=backend)
    return run_interruptibly(lambda: _make_group(state, launch, backend, timeout_s, device, mesh_shape, store),
                             ProcessGroup.teardown, "bootstrap-rendezvous")


MAX_RUN_DIR_BYTES = 4096  # a path, as rank 0 sends it (PATH_MAX)


def agree_on_run_dir(run_dir: str, launch: Launch, timeout_s: int, environ: Mapping[str, str] = os.environ) -> str:
    """Where the launcher hosts a store (torchrun), return rank 0's run directory on every rank, within
    ``timeout_s`` (the preset's ``env.distributed.timeout_s``) for connecting and reading together.

    Every rank runs Hydra and resolves ``${now:...}`` from its own clock, so ranks
    can land in different directories. torchrun's agent hosts a store that its
    workers may use (the row's ``agent_store``): rank 0 publishes its directory
    there, keyed by the run id and restart count, and the others read it, strictly (bounded UTF-8 text).
    """
    if launch.world_size <= 1 or not launch.row.agent_store(environ):
        return run_dir
    key = f"hydra_train_bootstrap/{launch.job_id or ''}/{launch.row.restart_count(environ)}/run_dir"
    deadline = Deadline(timeout_s)

    def exchange() -> str:
        import torch.distributed as dist

        store = dist.TCPStore(launch.master_addr or "127.0.0.1", _master_port(launch), is_master=False,
                              timeout=deadline.left())
        return share_run_dir(counted(store), key, launch.rank, run_dir, deadline)  # counted in the callback's phase

    try:  # off the main thread, like the rendezvous: Ctrl-C must not wait for rank 0
        return run_interruptibly(exchange, lambda _: None, "bootstrap-run-dir")
    except (RuntimeError, ValueError) as error:  # RuntimeError: torch's DistStoreError, DistNetworkError
        raise BootstrapError(
            f"rank {launch.rank} could not learn rank 0's run directory from {launch.launcher.value}'s store at "
            f"{launch.master_addr}:{launch.master_port} within env.distributed.timeout_s={timeout_s}: "
            f"{outbound.finding(inbound.first_line(error) if str(error) else type(error).__name__, 300)}. "
            "Rank 0 did not start, or failed before its job started (its own output says why).") from None


def share_run_dir(store: Store, key: str, rank: int, run_dir: str, deadline: Deadline) -> str:
    """Rank 0 sets its run directory under ``key``; every other rank gets it (waiting until it is set), strictly:
    one store operation per rank at any world size (bench/bench_scale.py counts them)."""
    if rank == 0:
        store.set(key, run_dir)
        return run_dir
    data = deadline.bound(store).get(key)  # waits until rank 0 has set it
    if len(data) > MAX_RUN_DIR_BYTES or b"\0" in data:
        raise ValueError(f"rank 0's run directory is not a path ({len(data)} bytes)")
    return data.decode("utf-8")


FIRST_FAILURE_KEY = "hydra_train_bootstrap/first_failure"
MAX_FAILURE_CHARS = 4000  # a failure is one line; a peer cannot make this rank carry megabytes


def claim_first_failure(rank: int, error: str) -> Tuple[int, int, str]:
    """Record this rank's failure in the group's store unless another rank's came first.

    Returns the first failure as (rank, unix time, message). When one rank's task
    raises and tears down its group, its peers fail next inside a collective; the
    store tells them, and the user, which rank started it.
    """
    import torch.distributed as dist

    now = int(time.time())
    mine = f"{rank}|{now}|{outbound.finding(error, MAX_FAILURE_CHARS)}"
    try:
        store = dist.distributed_c10d._get_default_store()
        first = store.compare_set(FIRST_FAILURE_KEY, "", mine).decode("utf-8", "replace")
    except (RuntimeError, ValueError, AttributeError):  # no store, or it went away with a peer
        first = mine
    return _parse_failure(first) or (rank, now, mine.split("|", 2)[2])


def _parse_failure(text: str) -> Optional[Tuple[int, int, str]]:
    """A peer's record read from the store: ``rank|time|message``, or None when it is not one."""
    parts = text.split("|", 2)
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() and len(p) < 19 for p in parts[:2]):
        return None
    return int(parts[0]), int(parts[1]), outbound.finding(parts[2][:MAX_FAILURE_CHARS], MAX_FAILURE_CHARS)


def attribute_failure(rank: int, error: str, first: Tuple[int, int, str], hang: Optional[str] = None) -> str:
    """Name the rank whose failure came first (``first``, from :func:`claim_first_failure`), in the
    message returned (and logged) and in torchrun's summary; with ``hang``, what the flight
    recorder's dumps show."""
    first_rank, first_time, first_message = first
    if first_rank == rank:
        message, timestamp = f"rank {rank} failed: {error}", first_time
    else:
        message = f"rank {rank} stopped because rank {first_rank} failed first ({first_message}); here: {error}"
        timestamp = max(int(time.time()), first_time + 1)
    if hang:
        message += f" | flight recorder: {hang}"
    log.error("%s", message)
    write_elastic_error_file(message, timestamp)
    return message


def write_elastic_error_file(message: str, timestamp: int, environ: Mapping[str, str] = os.environ) -> None:
    """Write torch elastic's error file where the launcher reads one (the row's ``error_file``: torchrun's
    TORCHELASTIC_ERROR_FILE), in the format torchrun reads.

    torchrun names as root cause the failure with the smallest timestamp. Timestamps
    are whole seconds and ties go to the lowest rank, so a rank that failed only
    because a peer did is written one second after that peer: the summary then names
    the rank whose task raised.
    """
    path = peek(environ).row.error_file(environ)
    if not path:
        return
    record = {"message": {"message": message, "extraInfo": {"py_callstack": message, "timestamp": str(timestamp)}}}
    outbound.write_json(Path(path), record)
