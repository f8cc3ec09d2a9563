"""The measurements, on this rank's device and over the job's process group: they touch the machine.

- :func:`compute`: an n x n float32 matmul at the precision in effect (TF32 under ``matmul_precision: high``
  on a GPU), timed; its result checked for NaN or Inf and, on 16 rows spread through it, against float64.
- :func:`new_group`: the check's own process group, with the budget as its timeout. The check's collectives
  never touch the job's group: they do not shift its sequence ids (which the hang forensics show), and a
  collective a peer never matched leaves nothing behind on it; tearing the check's group down waits at most
  the budget.
- :func:`all_reduce`: each message size timed over a group (nccl-tests' algbw and busbw), smallest first; a
  size is started only when every rank's prediction from the size before (or a 1 MB probe) says it fits what is
  left of the budget (:func:`agreed_max`: one small all_reduce, so that every rank skips the same sizes).
- :func:`time_link`: one link's message sent and received at once between two ranks, timed.
- :func:`gather`: every rank's fixed-size header or record on every rank, in one ``all_gather``.

Every collective is issued asynchronously and polled (:meth:`Meeting.finish`) until done or until the check's
:class:`~bootstrap.distributed.waits.Deadline` runs out, which raises :class:`Unfinished` naming the ranks
that had not arrived: a rank that never enters the check costs the budget, never a hang. Before each step
a rank marks itself in the job's store, and the ranks without a mark are those named.
The tensors come from a generator of their own: the job's random streams are untouched.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

from bootstrap.distributed.agree_store import absent_ranks
from bootstrap.distributed.ranks import Ranks
from bootstrap.distributed.waits import Deadline
from bootstrap.doors import inbound
from bootstrap.doors.lean import lean_dataclass
from bootstrap.preflight import figures as rank_figures
from bootstrap.preflight.figures import Compute
from bootstrap.preflight.verdict import compute_error, compute_verdict

if TYPE_CHECKING:  # torch is imported where it is used
    from torch.distributed import ProcessGroup, Store

MATRIX = {"cpu": 512, "cuda": 8192}  # n of the matmul: a few ms a product on either (TF32 on H100: 1.1 TFLOP)
COMPUTE_SHARE = 0.25  # of the budget, at most, for the matmuls: the collectives must fit the rest
COMPUTE_TARGET_S = {"cpu": 0.08, "cuda": 0.2}  # long enough that a scheduler's tick does not decide the figure
MAX_COMPUTE_REPS = 50
CHECKED_ROWS = 16  # rows of the result checked against float64: enough to see a bad tile, cheap in float64
REPS = 5  # timed all_reduces per message size, after one untimed (connections, NCCL's buffers)
PROBE_MB = 1.0  # the all_reduce timed first when the smallest size is larger: the prediction for the first size
LINK_MB = 1.0  # a link's message (or the smallest size, when smaller): 0.17 s on a 50 Mbit/s link, 1 ms unshaped
LINK_REPS = 2  # timed exchanges a link, after one untimed
POLL_S = 0.0002  # how often an unfinished collective is looked at: a fraction of a 1 MB all_reduce on a CPU


class Unfinished(Exception):
    """A collective did not finish within the check's budget; ``absent``: the ranks that had not come to it."""

    def __init__(self, what: str, absent: Ranks, complete: bool, budget_s: float):
        self.what, self.absent, self.complete, self.budget_s = what, absent, complete, budget_s
        super().__init__(what)


@lean_dataclass
class ComputeResult:
    verdict: Compute
    tflops: Optional[float]
    error: Optional[float]  # relative error against float64; None: NaN or Inf
    matrix: int
    precision: str


def _synchronize(device: str) -> Callable[[], None]:
    import torch

    return torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)


def compute(device: str, budget_s: float) -> ComputeResult:
    """This rank's matmul speed and whether its answer is right (see the module's docstring)."""
    import torch

    kind = "cuda" if device.startswith("cuda") else "cpu"
    n, sync = MATRIX[kind], _synchronize(device)
    generator = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, generator=generator)
    b = torch.randn(n, n, device=device, generator=generator)
    result = a @ b  # untimed: cuBLAS's handle and workspace, the CPU's thread pool
    sync()
    target = min(COMPUTE_TARGET_S[kind], budget_s * COMPUTE_SHARE)
    reps, started = 0, time.perf_counter()
    while True:
        result = a @ b
        sync()
        reps += 1
        spent = time.perf_counter() - started
        if spent >= target or reps >= MAX_COMPUTE_REPS:
            break
    rows = torch.arange(0, n, n // CHECKED_ROWS, device=device)[:CHECKED_ROWS]  # every tile row band of the result
    reference = a[rows].double() @ b.double()
    error = compute_error(result[rows], reference, a[rows], b)
    precision = torch.get_float32_matmul_precision()
    del a, b, result, reference
    if kind == "cuda":
        torch.cuda.empty_cache()  # give the task back the memory the check used
    verdict = compute_verdict(error, precision)
    return ComputeResult(verdict, 2 * n**3 * reps / spent / 1e12, None if error == float("inf") else error, n,
                         precision)


class Meeting:
    """Where the ranks of one check mark themselves before each step (the job's store), to name those that
    never came when one does not finish. Use as a context manager: the store's timeout, which the marks bound by
    the deadline, is the job's again afterwards (NCCL's later sub-groups wait through it)."""

    def __init__(self, store: Store, key: str, rank: int, world_size: int, deadline: Deadline):
        self.store, self.key, self.rank, self.world_size, self.deadline = store, key, rank, world_size, deadline
        self._timeout = store.timeout  # type: ignore[attr-defined]  # torch's stubs lack Store.timeout

    def __enter__(self) -> "Meeting":
        return self

    def __exit__(self, *exc: object) -> None:
        self.store.set_timeout(self._timeout)

    def arrive(self, stage: str) -> None:
        self.deadline.bound(self.store).set(f"{self.key}/{stage}/here/{self.rank}", "")

    def unfinished(self, stage: str, what: str) -> Unfinished:
        """:class:`Unfinished` for ``stage``, naming the ranks that never marked themselves there."""
        try:
            absent, complete = absent_ranks(self.store, f"{self.key}/{stage}", self.world_size)
        except RuntimeError:  # the store went with rank 0
            absent, complete = Ranks(), False
        return Unfinished(what, absent, complete, self.deadline.timeout_s)

    def finish(self, works: Sequence, stage: str, what: str) -> None:
        """Wait for ``works`` within the deadline; :class:`Unfinished` names the ranks absent from ``stage``."""
        while not all(work.is_completed() for work in works):
            if self.deadline.spent():
                raise self.unfinished(stage, what)
            time.sleep(POLL_S)
        for work in works:
            work.wait()  # done: raises what the collective failed with, if it did

    def finish_p2p(self, works: Sequence, stage: str, what: str) -> None:
        """As :meth:`finish`, for a send or receive: gloo's never says it is completed until it is waited for
        (torch 2.13: ``is_completed()`` stays False), so each is waited for with what is left of the budget."""
        for work in works:
            if self.deadline.spent():
                raise self.unfinished(stage, what)
            try:
                work.wait(self.deadline.left())
            except RuntimeError:  # gloo: "Timed out waiting ... for send operation to complete"
                if self.deadline.spent():
                    raise self.unfinished(stage, what) from None
                raise


def new_group(meeting: Meeting, ranks: Optional[List[int]], stage: str) -> ProcessGroup:
    """A process group of ``ranks`` (None: the world) for the check alone, made by every rank of the world, with
    what is left of the budget as its timeout."""
    import torch.distributed as dist

    meeting.arrive(stage)
    try:
        return dist.new_group(ranks, timeout=meeting.deadline.left())
    except RuntimeError:  # a rank never came to make it: torch's store wait ran out
        raise meeting.unfinished(stage, "making the check's process group") from None


@lean_dataclass
class Timed:
    size_mb: float
    reps: int
    seconds: float
    ranks: int

    @property
    def bytes(self) -> int:
        return int(self.size_mb * 2**20)

    @property
    def algbw_gbps(self) -> float:
        return rank_figures.algorithm_bandwidth_gbps(self.bytes * self.reps, self.seconds)

    @property
    def busbw_gbps(self) -> float:
        return rank_figures.bus_bandwidth_gbps(self.bytes * self.reps, self.seconds, self.ranks)


def agreed_max(meeting: Meeting, group: Optional[ProcessGroup], values: Sequence[float], device: str,
               stage: str) -> List[float]:
    """The largest of each of ``values`` over the ranks of ``group``, the same on every rank (one all_reduce)."""
    import torch
    import torch.distributed as dist

    tensor = torch.tensor(list(values), dtype=torch.float64 if device == "cpu" else torch.float32, device=device)
    meeting.arrive(stage)
    meeting.finish([dist.all_reduce(tensor, op=dist.ReduceOp.MAX, group=group, async_op=True)], stage,
                   "agreeing which message sizes fit the budget")
    return [float(value) for value in tensor.cpu()]


@lean_dataclass
class Skipped:
    size_mb: float
    why: str  # "memory" | "budget"
    predicted_s: float = 0.0  # what its all_reduces would take, from the size before (the slowest rank's)
    left_s: float = 0.0  # what was left of the budget (the least over the ranks)


def _timed_runs(meeting: Meeting, group: Optional[ProcessGroup], device: str, size_mb: float, runs: int,
                stage: str, what: str) -> float:
    """``runs`` all_reduces of ``size_mb`` after one untimed; seconds per timed run (the untimed one: runs=0)."""
    import torch
    import torch.distributed as dist

    message = torch.zeros(max(1, int(size_mb * 2**20) // 4), dtype=torch.float32, device=device)
    meeting.arrive(stage)
    started = time.perf_counter()
    meeting.finish([dist.all_reduce(message, group=group, async_op=True)], stage, what)
    if runs:
        started = time.perf_counter()
        meeting.finish([dist.all_reduce(message, group=group, async_op=True) for _ in range(runs)], stage, what)
    del message
    return (time.perf_counter() - started) / max(1, runs)


def all_reduce(meeting: Meeting, group: Optional[ProcessGroup], device: str, sizes_mb: Sequence[float],
               stage: str, within_node: bool = False, affordable_mb: float = float("inf")
               ) -> Tuple[List[Timed], List[Skipped]]:
    """Each size's all_reduce over ``group`` (None: the world), timed on this rank, smallest first; the sizes no
    rank can hold (``affordable_mb``, agreed in the header) or that would not fit what is left of the budget are
    skipped, by every rank alike."""
    import torch.distributed as dist

    ranks = dist.get_world_size(group)
    timed: List[Timed] = []
    skipped: List[Skipped] = []
    per_mb: Optional[float] = None  # seconds per MB of one all_reduce, from the last size measured
    for size_mb in sorted(sizes_mb):
        what = f"the all_reduce of {size_mb:g} MB" + (" within the node" if within_node else "")
        if size_mb > affordable_mb:
            skipped.append(Skipped(size_mb, "memory"))
            continue
        if per_mb is None and size_mb > PROBE_MB:
            per_mb = _timed_runs(meeting, group, device, PROBE_MB, 0, f"{stage}probe", what) / PROBE_MB
        if per_mb is not None:  # every rank the same: the slowest prediction against the least time left
            predicted, least_left = agreed_max(meeting, group, [per_mb * size_mb * (REPS + 1),
                                                                 -meeting.deadline.left_s()],
                                               device, f"{stage}{size_mb:g}?")
            if predicted > -least_left:
                skipped += [Skipped(size, "memory") if size > affordable_mb else
                            Skipped(size, "budget", per_mb * size * (REPS + 1), -least_left)
                            for size in sorted(sizes_mb) if size >= size_mb]
                break
        seconds = _timed_runs(meeting, group, device, size_mb, REPS, f"{stage}{size_mb:g}", what)
        per_mb = seconds / size_mb
        timed.append(Timed(size_mb, REPS, seconds * REPS, ranks))
    return timed, skipped


def time_link(meeting: Meeting, group: Optional[ProcessGroup], device: str, partner: Optional[int], size_mb: float,
             stage: str, what: str) -> Optional[float]:
    """This rank's message of ``size_mb`` sent to ``partner`` while it receives the partner's, once untimed and
    LINK_REPS times timed: the GB/s one way. Every rank marks ``stage``; one with no partner waits for nothing."""
    import torch
    import torch.distributed as dist

    meeting.arrive(stage)
    if partner is None:
        return None
    outgoing = torch.zeros(max(1, int(size_mb * 2**20) // 4), dtype=torch.float32, device=device)
    incoming = torch.empty_like(outgoing)

    def both() -> list:
        return dist.batch_isend_irecv([dist.P2POp(dist.isend, outgoing, partner, group),
                                       dist.P2POp(dist.irecv, incoming, partner, group)])

    meeting.finish_p2p(both(), stage, what)
    started = time.perf_counter()
    for _ in range(LINK_REPS):
        meeting.finish_p2p(both(), stage, what)
    seconds = time.perf_counter() - started
    del outgoing, incoming
    return rank_figures.algorithm_bandwidth_gbps(int(size_mb * 2**20) * LINK_REPS, seconds) or None


def gather(meeting: Meeting, group: Optional[ProcessGroup], record: bytes, device: str, stage: str) -> List[bytes]:
    """Every rank's ``record`` (all of one size), in rank order."""
    import torch
    import torch.distributed as dist

    mine = torch.frombuffer(bytearray(record), dtype=torch.uint8).to(device)
    everyone = [torch.empty_like(mine) for _ in range(dist.get_world_size(group))]
    meeting.arrive(stage)
    meeting.finish([dist.all_gather(everyone, mine, group=group, async_op=True)], stage,
                   "the gather of every rank's figures")
    return [bytes(tensor.cpu().untyped_storage()) for tensor in everyone]  # no numpy: torch's CPU wheel lacks it


def free_bytes(device: str) -> Optional[int]:
    """The memory free for the check's messages on ``device``: the GPU's free memory, or the machine's
    ``MemAvailable`` (Linux); None where it cannot be read."""
    import torch

    if device.startswith("cuda"):
        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    try:
        text = inbound.read_text("/proc/meminfo", 64 * 1024)
    except inbound.Unreadable:
        return None
    for line in inbound.lines(text):
        name, _, value = line.partition(":")
        if name == "MemAvailable" and value.split()[:2][-1:] == ["kB"] and value.split()[0].isdigit():
            return int(value.split()[0]) * 1024
    return None


def node_members(node_of_rank: Sequence[str]) -> List[List[int]]:
    """The ranks of each node of more than one rank, when there are several nodes; else none. A node of one rank
    (``srun --ntasks-per-node=1``) has nothing to time within it."""
    members: dict = {}
    for rank, node in enumerate(node_of_rank):
        members.setdefault(node, []).append(rank)
    if len(members) < 2:
        return []
    return [ranks for ranks in members.values() if len(ranks) > 1]
