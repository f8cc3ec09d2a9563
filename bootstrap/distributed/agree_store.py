"""Comparing the ranks' fingerprints through a store, in a constant number of operations per rank.

Rank 0 publishes its policy (``env.distributed.agree``) and its fingerprint with a fresh random salt;
every other rank reads them, computes its own with that salt (a secret is compared as an HMAC keyed by
the salt, so its digest means nothing outside this run) and compares. A rank whose policy differs from
rank 0's compares nothing else and says so: ranks that would decide differently must all stop, and a
rank under ``off`` still takes part (without a fingerprint), so that no rank waits for one that will
never come. Only a rank that differs writes anything more: what differs, with its host. Then each
rank marks itself here, counts itself in, waits for the last, and reads how many differed:

- every rank: 5 operations whatever the world size (rank 0: set, set, add, get, add; the others: get,
  set, add, get, add; the last rank to arrive sets where the others get);
- a rank that differs: 2 more (add, set); and only when some differ does each rank read their
  records, at most :data:`MAX_NAMED` of them, then count itself as having read them (add; the last sets a
  mark). Where rank 0's own process hosts the store (``srun``, ``mpirun``: not torchrun's agent store), rank 0
  then looks for that mark a while before it stops (:data:`COURTESY_S`, no more): a rank still reading from a
  store that went away would print torch's C++ frames instead of its own one line. The courtesy is a
  courtesy: its bound is its own and small, it polls (``store.check``) rather than blocking, so that it leaves
  no c10d warning lines, and a peer that never reads costs rank 0 at most that.

Every wait shares one budget, the user's ``env.distributed.timeout_s`` (:class:`waits.Deadline`). When
it runs out, the ranks that never marked themselves here are found by halving (``store.check`` on a
span of marks at a time, a few calls per absent rank) and named (:class:`Absent`): a rank that started
is never blamed for one that did not.

``tests/unit/test_agree_store.py`` counts the operations on a real ``TCPStore`` at 2 and 64 ranks.
Everything a peer wrote is read through :mod:`bootstrap.doors.typed`: bounded, strict, typed.
"""

import json
import secrets
import time
from dataclasses import field
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple, Type, TypeVar

from bootstrap.distributed.ranks import Ranks
from bootstrap.distributed.waits import Deadline
from bootstrap.doors import inbound
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.typed import Section, section

if TYPE_CHECKING:
    from torch.distributed import Store

PREFIX = "hydra_train_bootstrap/agree"
MAX_NAMED = 16  # odd ranks whose records are read: enough to name them; the rest are counted
MAX_RECORD_BYTES = 1 << 20  # a fingerprint is a few KiB; a peer cannot make this rank read megabytes
MAX_VALUE_CHARS = 4096  # one value in a fingerprint (a variable's text)
COURTESY_S = 5.0  # at most this long rank 0 (hosting the store) looks for the mark that every rank has read
POLL_S = 0.02  # between two looks: each is one store.check, which never blocks
POLICY_KEY = "agree.policy"  # the key a rank whose policy differs from rank 0's sends instead of its fingerprint


@section
class Reference(Section):
    """Rank 0's record."""

    host: str
    salt: str
    fingerprint: Dict[str, str]  # empty under agree=off
    policy: Optional[str] = None  # env.distributed.agree on rank 0


class Absent(RuntimeError):
    """The budget ran out before every rank had marked itself here: ``ranks`` never did (``complete``: all of
    them; else the first :data:`MAX_NAMED` found, and there are more)."""

    def __init__(self, ranks: Ranks, complete: bool, world_size: int, timeout_s: float):
        self.ranks, self.complete, self.world_size, self.timeout_s = ranks, complete, world_size, timeout_s
        if ranks:
            said = f"{ranks.text()}{'' if complete else ' and more'} of {world_size} did not reach the comparison"
        elif complete:  # every rank marked itself here: one stopped half-way (crashed while comparing)
            said = f"every rank of {world_size} reached the comparison, but not every rank finished it"
        else:
            said = f"the store went away (rank 0 hosts it) before the {world_size} ranks had compared"
        super().__init__(f"{said} within {timeout_s:g} s")


@section
class OddRank(Section):
    """A rank that differs from rank 0: its host and its values where they differ (null: unset)."""

    rank: int
    host: str
    values: Dict[str, Optional[str]]


@lean_dataclass
class Exchanged:
    """What one rank learnt: rank 0's record, its own fingerprint, and the ranks that differ."""

    reference: Reference
    own: Dict[str, str]
    odd: List[OddRank] = field(default_factory=list)  # at most MAX_NAMED, by rank
    odd_count: int = 0  # all the ranks that differ


def differing(reference: Dict[str, str], own: Dict[str, str]) -> Dict[str, Optional[str]]:
    """The keys where ``own`` differs from ``reference``, with own's value (None: own lacks it)."""
    return {key: own.get(key) for key in sorted(reference.keys() | own.keys()) if own.get(key) != reference.get(key)}


_Record = TypeVar("_Record", bound=Section)


def _read(data: bytes, kind: Type[_Record], what: str) -> _Record:
    try:
        return kind.from_json(inbound.parse_json_bytes(data, MAX_RECORD_BYTES, what))
    except Unreadable as error:
        raise Unreadable(f"a peer's record in the store: {error}") from None


def _bounded(fingerprint: Dict[str, str]) -> Dict[str, str]:
    return {key: value[:MAX_VALUE_CHARS] for key, value in fingerprint.items()}


def exchange(store: "Store", key: str, rank: int, world_size: int, host: str, policy: str,
             fingerprint: Callable[[str], Dict[str, str]], deadline: Deadline, rank0_hosts: bool = True) -> Exchanged:
    """Compare this rank's policy and ``fingerprint(salt)`` with rank 0's through ``store`` (any c10d Store),
    under ``key`` (one per check: the run, the restart, the check's number in this process). Blocks until
    every rank has compared, within ``deadline``; :class:`Absent` names the ranks that never came.
    ``rank0_hosts``: rank 0's process hosts the store (not an agent's): only then does it wait, a little, for
    the others to read what differed."""
    store.set(f"{key}/here/{rank}", "")  # first: a rank waiting for rank 0 is here, and never named absent
    if rank == 0:
        salt = secrets.token_hex(16)
        own = {} if policy == "off" else _bounded(fingerprint(salt))
        reference = Reference(host=host, salt=salt, fingerprint=own, policy=policy)
        store.set(f"{key}/ref", json.dumps(reference.to_json()))
    else:
        reference = _read(_waiting(store, f"{key}/ref", deadline, key, world_size), Reference, "rank 0")
        differs: Dict[str, Optional[str]]
        if reference.policy not in (None, policy):  # nothing else is compared: the decisions would differ
            own, differs = {}, {POLICY_KEY: policy}
        else:
            own = {} if policy == "off" else _bounded(fingerprint(reference.salt))
            differs = differing(reference.fingerprint, own) if policy != "off" else {}
        if differs:
            slot = store.add(f"{key}/odd", 1)
            store.set(f"{key}/odd/{slot}", json.dumps(OddRank(rank=rank, host=host, values=differs).to_json()))
    if store.add(f"{key}/arrived", 1) == world_size:
        store.set(f"{key}/done", "1")
    else:
        _waiting(store, f"{key}/done", deadline, key, world_size)  # until the last rank has compared
    count = store.add(f"{key}/odd", 0)
    slots = range(1, min(count, MAX_NAMED) + 1)
    records = store.multi_get([f"{key}/odd/{slot}" for slot in slots]) if count else []
    odd = [_read(data, OddRank, f"odd record {slot}") for slot, data in zip(slots, records, strict=True)]
    if count:
        _all_read(store, key, rank, world_size, deadline, rank0_hosts)
    return Exchanged(reference, own, sorted(odd, key=lambda record: record.rank), count)


def _all_read(store: "Store", key: str, rank: int, world_size: int, deadline: Deadline, rank0_hosts: bool) -> None:
    """When some rank differs the job may stop here. Where rank 0's process hosts the store, a rank still reading
    the odd records from a store that went away gets torch's TCPStore warning with C++ frames ("frame #0:
    c10::Error::Error") and another error than the one its peers stop with; so each rank adds itself, the last
    sets the mark, and rank 0 looks for it, at most :data:`COURTESY_S` (and never past ``deadline``), by polls
    that never block: a peer that never reads costs rank 0 that much, and no warning line."""
    if store.add(f"{key}/read", 1) == world_size:
        store.set(f"{key}/all_read", "1")
    elif rank == 0 and rank0_hosts:
        end = time.monotonic() + min(COURTESY_S, deadline.left_s())
        while not store.check([f"{key}/all_read"]) and time.monotonic() < end:
            time.sleep(POLL_S)


def _waiting(store: "Store", name: str, deadline: Deadline, key: str, world_size: int) -> bytes:
    """``store.get(name)`` within what is left of ``deadline``; :class:`Absent` when it runs out."""
    try:
        return deadline.bound(store).get(name)
    except RuntimeError:  # torch's DistStoreError: the budget ran out before the key was set
        try:
            absent, complete = absent_ranks(store, key, world_size)
        except RuntimeError:  # the store itself went away (rank 0, which hosts it, ended)
            absent, complete = Ranks(), False
        raise Absent(absent, complete, world_size, deadline.timeout_s) from None


def absent_ranks(store: "Store", key: str, world_size: int, limit: int = MAX_NAMED) -> Tuple[Ranks, bool]:
    """The ranks that never marked themselves here, up to ``limit`` of them, and whether that is all of them.
    Found by halving: ``store.check`` of a span's marks answers at once, so each absent rank costs a few calls
    and the ranks that came cost nothing more."""
    found: List[int] = []
    pending = [(0, world_size)]
    while pending and len(found) < limit:
        start, stop = pending.pop()
        if store.check([f"{key}/here/{rank}" for rank in range(start, stop)]):
            continue
        if stop - start == 1:
            found.append(start)
            continue
        middle = (start + stop) // 2
        pending += [(middle, stop), (start, middle)]  # the lower half first
    return Ranks.of(found), not pending
