"""The watch's exchange, through the job's store: never a collective, so it can neither deadlock nor hang. Touches
the store.

Ranks can be at different steps, and a rank can die: a collective on the job's group at an agreed step would then
wait for it (NVRx's detector deadlocked on sub-mesh groups, NVRx #277). So nothing here waits for another rank.
Each call is one or a few store operations that answer at once, bounded by the store's own timeout (the job's
``env.distributed.timeout_s``) only where its host is gone:

- every rank puts its header once (``header/<rank>``), then each window's record in one of two slots
  (``w<window % 2>/<rank>``, overwritten two windows on: the store holds 2 records a rank, however long the job);
- the first rank of each node puts its link probe's address (``probe/<rank>``);
- rank 0 reads what is there when its own window ends (:meth:`Exchange.present`, :meth:`Exchange.read`): a rank
  whose record is not there is late, and absent once ``timeout_s`` has passed without it;
- rank 0 puts its verdict (``verdict``, with a counter every rank reads once a window).

Per window: one operation on each rank, three on rank 0 (and one more per late rank), ``N`` records read by rank 0:
linear in the ranks (docs/watch.md#what-it-costs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from bootstrap.doors import inbound, outbound
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.watch_report import MAX_FINDINGS, WatchFinding

if TYPE_CHECKING:
    from torch.distributed import Store

PREFIX = "hydra_train_bootstrap/watch"
MAX_VERDICT_BYTES = 256 * 1024  # MAX_FINDINGS findings of a few hundred bytes each, with room
MAX_ADDRESS_BYTES = 256


class Exchange:
    """One run's keys in the job's store, under ``key`` (see the module's docstring)."""

    def __init__(self, store: Store, key: str, rank: int, world_size: int):
        self.store, self.key, self.rank, self.world_size = store, key, rank, world_size
        self.sent = 0  # bytes this rank put and read, in all
        self._verdicts = 0  # the verdict counter last read

    def _put(self, name: str, data: bytes) -> None:
        self.store.set(f"{self.key}/{name}", data)  # type: ignore[arg-type]  # torch takes bytes; its stub says str
        self.sent += len(data)

    def announce(self, header: bytes) -> None:
        self._put(f"header/{self.rank}", header)

    def publish(self, window: int, record: bytes) -> None:
        self._put(f"w{window % 2}/{self.rank}", record)

    def offer_probe(self, address: str) -> None:
        self._put(f"probe/{self.rank}", address.encode())

    def probe_address(self, rank: int) -> Optional[str]:
        """The address rank ``rank`` listens on for link probes, once it has put it; None until then."""
        name = f"{self.key}/probe/{rank}"
        if not self.store.check([name]):
            return None
        data = self.store.get(name)
        return data[:MAX_ADDRESS_BYTES].decode("ascii", errors="replace")

    # -- rank 0 -----------------------------------------------------------------------------------
    def present(self, names: Sequence[str]) -> List[int]:
        """The positions of ``names`` (keys under this run) that the store holds now: one ``check`` when all are
        there, and a few more for each that is not (halving)."""
        keys = [f"{self.key}/{name}" for name in names]
        found: List[int] = []
        pending = [(0, len(keys))] if keys else []
        while pending:
            start, stop = pending.pop()
            if self.store.check(keys[start:stop]):
                found.extend(range(start, stop))
            elif stop - start > 1:
                middle = (start + stop) // 2
                pending += [(middle, stop), (start, middle)]
        return sorted(found)

    def read(self, names: Sequence[str]) -> List[bytes]:
        """The values of ``names``, which the store holds (:meth:`present`), in one ``multi_get``."""
        if not names:
            return []
        values = self.store.multi_get([f"{self.key}/{name}" for name in names])
        self.sent += sum(len(value) for value in values)
        return values

    def headers(self, ranks: Sequence[int]) -> Dict[int, bytes]:
        """The headers of ``ranks`` that are there now."""
        names = [f"header/{rank}" for rank in ranks]
        found = self.present(names)
        return dict(zip([ranks[i] for i in found], self.read([names[i] for i in found]), strict=True))

    def records(self, window: int, ranks: Sequence[int]) -> Dict[int, bytes]:
        """What ``ranks`` hold in ``window``'s slot now (a record of that window, or of one two windows away)."""
        names = [f"w{window % 2}/{rank}" for rank in ranks]
        found = self.present(names)
        return dict(zip([ranks[i] for i in found], self.read([names[i] for i in found]), strict=True))

    def post_verdict(self, window: int, findings: Sequence[WatchFinding], stop: bool) -> None:
        """Rank 0: every finding so far, and whether the job stops (``env.watch.mode=error``), for every rank."""
        data = outbound.to_json({"window": window, "stop": stop,
                                 "findings": [f.to_json() for f in findings[:MAX_FINDINGS]]}).encode()
        self._put("verdict", data[:MAX_VERDICT_BYTES])
        self.store.add(f"{self.key}/verdicts", 1)

    # -- every rank -------------------------------------------------------------------------------
    def verdict(self) -> Optional[Tuple[bool, List[WatchFinding]]]:
        """Rank 0's verdict, when it posted a new one since this rank last read (None otherwise): whether the job
        stops, and every finding. Read through the one way in: a verdict that cannot be read is a finding."""
        posted = self.store.add(f"{self.key}/verdicts", 0)
        if posted <= self._verdicts:
            return None
        self._verdicts = posted
        data = self.store.get(f"{self.key}/verdict")
        self.sent += len(data)
        try:
            parsed = inbound.parse_json_bytes(data, MAX_VERDICT_BYTES, "the watch's verdict")
            if type(parsed) is not dict or type(parsed.get("findings")) is not list:
                raise Unreadable("the watch's verdict: not a verdict")
            return parsed.get("stop") is True, [WatchFinding.from_json(f) for f in parsed["findings"][:MAX_FINDINGS]]
        except Unreadable as error:
            return False, [WatchFinding(kind="invalid", message=outbound.finding(
                f"rank 0's verdict could not be read ({error}): this rank does not follow it"))]


def per_window(world: int, nodes: int, links: bool) -> Dict[str, int]:
    """What one window costs the job's store and network at ``world`` ranks on ``nodes`` nodes, as this module
    spends it (``bootstrap dryrun``'s figures): each rank puts its record and reads the verdicts' counter; rank 0
    also checks every slot at once and reads every record in one ``multi_get``; each node's first rank sends its link
    probe. No collective: the job's process group is not touched."""
    from bootstrap.watch import figures, probe

    return {"store_ops": 2 * world + 2, "store_ops_rank0": 4, "rank0_reads_bytes": world * figures.LAYOUT.size,
            "bytes_per_rank": figures.LAYOUT.size, "collectives": 0,
            "probe_bytes": probe.MESSAGE_BYTES * nodes if links and nodes > 1 else 0}
