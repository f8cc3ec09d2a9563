"""The measurements, on this rank's device and over the job's process group: they touch the machine.

- :func:`compute`: an n x n float32 matmul at the precision in effect (TF32 under ``matmul_precision: high``
  on a GPU), timed; its result checked for NaN or Inf and, on 16 rows spread through it, against float64.
- :func:`new_group`: the check's own process group, with the budget as its timeout. The check's collectives
  never touch the job's group: they do not shift its sequence ids (which the hang forensics show), and a
  collective a peer never matched leaves nothing behind on it; tearing the check's group down waits at most
  the budget.
- :func:`all_reduce`: each message size timed over a group (nccl-tests' algbw and busbw).
- :func:`gather`: every rank's fixed-size record on every rank, in one ``all_gather``.

Every collective is issued asynchronously and polled (:meth:`Meeting.finish`) until done or until the check's
:class:`~bootstrap.distributed.waits.Deadline` runs out, which raises :class:`Unfinished` naming the ranks
that had not arrived: a rank that never enters the check costs the budget, never a hang. Before each step
a rank marks itself in the job's store, and the ranks without a mark are those named.
The tensors come from a generator of their own: the job's random streams are untouched.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence

from bootstrap.distributed.agree_store import absent_ranks
from bootstrap.distributed.ranks import Ranks
from bootstrap.distributed.waits import Deadline
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


def all_reduce(meeting: Meeting, group: Optional[ProcessGroup], device: str, sizes_mb: Sequence[float],
               stage: str) -> List[Timed]:
    """Each size's all_reduce over ``group`` (None: the world), timed on this rank."""
    import torch
    import torch.distributed as dist

    ranks = dist.get_world_size(group)
    timed = []
    for size_mb in sizes_mb:
        message = torch.zeros(max(1, int(size_mb * 2**20) // 4), dtype=torch.float32, device=device)
        what = f"the all_reduce of {size_mb:g} MB" + ("" if group is None else " within the node")
        meeting.arrive(f"{stage}{size_mb:g}")
        meeting.finish([dist.all_reduce(message, group=group, async_op=True)], f"{stage}{size_mb:g}", what)
        started = time.perf_counter()
        works = [dist.all_reduce(message, group=group, async_op=True) for _ in range(REPS)]
        meeting.finish(works, f"{stage}{size_mb:g}", what)
        timed.append(Timed(size_mb, REPS, time.perf_counter() - started, ranks))
        del message
    return timed


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


def node_members(node_of_rank: Sequence[str]) -> List[List[int]]:
    """The ranks of each node, when there are several nodes and one holds more than one rank; else none."""
    members: dict = {}
    for rank, node in enumerate(node_of_rank):
        members.setdefault(node, []).append(rank)
    if len(members) < 2 or all(len(ranks) < 2 for ranks in members.values()):
        return []
    return list(members.values())
