"""Every rank's start phases to rank 0 at the first step, in one fixed-size record a rank, through the store.

At its first step every rank sets one record (:data:`RECORD_BYTES`, whatever its phases): its node and up to
:data:`MAX_PHASES` phases, each a name and its seconds. No rank but rank 0 waits for anything. Rank 0 waits
for every rank's record within the user's ``env.distributed.timeout_s`` (a :class:`Deadline`), then reads
them :data:`CHUNK` at a time, so that its memory for the records stays bounded whatever the world. A rank that
never set its record (it died, or never reached its first step) is found by halving, as the agreement finds
one (:func:`bootstrap.distributed.agree_store.absent_ranks`), and named.

Store operations: every rank 1 (``set``); rank 0 besides, 1 ``wait`` and ``ceil(N / CHUNK)`` ``multi_get``
(:func:`operations`, which ``bootstrap dryrun`` predicts with). A record is read back strictly
(:func:`unpack`): a name is UTF-8 text, a duration finite, not negative and under :data:`MAX_SECONDS`.
"""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING, Dict, Iterator, List, Sequence, Tuple

from bootstrap.distributed.agree_store import absent_ranks
from bootstrap.distributed.ranks import Ranks
from bootstrap.distributed.waits import Deadline
from bootstrap.doors import inbound, outbound

if TYPE_CHECKING:
    from torch.distributed import Store

PREFIX = "hydra_train_bootstrap/phases"
MAGIC, VERSION = b"HTBs", 1
HOST_BYTES, NAME_BYTES, MAX_PHASES = 64, 20, 24
HEADER = struct.Struct(f"<4sBB{HOST_BYTES}s")  # magic, version, the count of phases, the rank's node
ENTRY = struct.Struct(f"<{NAME_BYTES}sf")  # a phase's name and seconds
RECORD_BYTES = HEADER.size + MAX_PHASES * ENTRY.size  # 646: every rank's record, whatever it holds
CHUNK = 1024  # records rank 0 reads in one multi_get
MAX_SECONDS = 1e7  # a phase longer than 115 days is not one
MORE = "more"  # the phases past MAX_PHASES - 1, summed under this name


def _cut(text: str, limit: int) -> bytes:
    """``text`` as UTF-8, cut to ``limit`` bytes at a character's boundary."""
    return text.encode("utf-8", errors="replace")[:limit].decode("utf-8", errors="ignore").encode("utf-8")


def pack(host: str, phases: Sequence[Tuple[str, float]]) -> bytes:
    """A rank's record: its node and its phases' seconds, each name once (repeats summed, in first order)."""
    summed: Dict[str, float] = {}
    for name, seconds in phases:
        key = _cut(name, NAME_BYTES).decode("utf-8")
        summed[key] = summed.get(key, 0.0) + max(0.0, seconds)
    entries = list(summed.items())
    if len(entries) > MAX_PHASES:
        entries = entries[:MAX_PHASES - 1] + [(MORE, sum(seconds for _, seconds in entries[MAX_PHASES - 1:]))]
    body = b"".join(ENTRY.pack(_cut(name, NAME_BYTES), min(seconds, MAX_SECONDS)) for name, seconds in entries)
    return (HEADER.pack(MAGIC, VERSION, len(entries), _cut(host, HOST_BYTES)) + body).ljust(RECORD_BYTES, b"\0")


def unpack(rank: int, data: bytes) -> Tuple[str, List[Tuple[str, float]]]:
    """Rank ``rank``'s node and phases as it sent them; :class:`~bootstrap.doors.inbound.Unreadable` for anything
    this version did not write."""
    what = f"rank {rank}'s phases"
    if len(data) != RECORD_BYTES:
        raise inbound.Unreadable(f"{what}: {len(data)} bytes, not {RECORD_BYTES}")
    magic, version, count, host = inbound.unpack_record(HEADER, data[:HEADER.size], what)
    if (magic, version) != (MAGIC, VERSION) or count > MAX_PHASES:
        raise inbound.Unreadable(f"{what}: not a record of version {VERSION}")
    phases = []
    for index in range(count):
        name, seconds = ENTRY.unpack_from(data, HEADER.size + index * ENTRY.size)
        try:
            text = name.rstrip(b"\0").decode("utf-8")
        except UnicodeDecodeError:
            raise inbound.Unreadable(f"{what}: a phase's name is not UTF-8") from None
        if not text or not math.isfinite(seconds) or not 0 <= seconds <= MAX_SECONDS:
            raise inbound.Unreadable(f"{what}: phase {index} is not a name and a duration")
        phases.append((outbound.shown(text, limit=4 * NAME_BYTES), float(seconds)))  # escaped, masked: a line
    return outbound.shown(host.rstrip(b"\0").decode("utf-8", errors="replace") or "?", limit=4 * HOST_BYTES), phases


def operations(rank: int, world_size: int) -> int:
    """The store operations rank ``rank`` makes in :func:`send` and :func:`gather` (one world, no rank absent)."""
    return 1 + (1 + math.ceil(world_size / CHUNK) if rank == 0 else 0)


def send(store: Store, key: str, rank: int, record: bytes) -> None:
    """This rank's record, set at once: no rank but rank 0 waits."""
    store.set(f"{key}/here/{rank}", record)  # type: ignore[arg-type]  # the stub says str; c10d takes bytes too


def gather(store: Store, key: str, world_size: int, deadline: Deadline
           ) -> Tuple[Iterator[Tuple[int, bytes]], Ranks, bool]:
    """Rank 0: every rank's record, as (rank, record) read :data:`CHUNK` at a time; the ranks whose record did not
    come within ``deadline``; and whether those are all of them. With more absent ranks than
    :func:`~bootstrap.distributed.agree_store.absent_ranks` names, nothing is read."""
    keys = [f"{key}/here/{rank}" for rank in range(world_size)]
    absent, complete = Ranks(), True
    try:
        store.wait(keys, deadline.left())
    except RuntimeError:  # torch's DistStoreError: the budget ran out before every rank had set its record
        try:
            absent, complete = absent_ranks(store, key, world_size)
        except RuntimeError:  # the store itself went away
            absent, complete = Ranks(), False
    present = Ranks.span(0, world_size).minus(absent) if complete else Ranks()

    def records() -> Iterator[Tuple[int, bytes]]:
        batch: List[int] = []
        for rank in present:
            batch.append(rank)
            if len(batch) == CHUNK:
                yield from zip(batch, store.multi_get([keys[r] for r in batch]), strict=True)
                batch = []
        if batch:
            yield from zip(batch, store.multi_get([keys[r] for r in batch]), strict=True)
    return records(), absent, complete
