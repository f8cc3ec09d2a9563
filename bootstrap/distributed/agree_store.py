"""Comparing the ranks' fingerprints through a store, in a constant number of operations per rank.

Rank 0 publishes its fingerprint with a fresh random salt; every other rank reads it, computes its
own with that salt (a secret is compared as an HMAC keyed by the salt, so its digest means nothing
outside this run) and compares. Only a rank that differs writes anything more: what differs, with
its host. Then each rank counts itself in, waits for the last, and reads how many differed:

- every rank: 4 operations whatever the world size (rank 0: set, add, get, add; the others: get,
  add, get, add; the last rank to arrive sets where the others get);
- a rank that differs: 2 more (add, set); and only when some differ does each rank read their
  records, at most :data:`MAX_NAMED` of them.

``tests/unit/test_agree_store.py`` counts the operations on a real ``TCPStore`` at 2 and 64 ranks.
Everything a peer wrote is read through :mod:`bootstrap.doors.typed`: bounded, strict, typed.
"""

import json
import secrets
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from bootstrap.doors import inbound
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.typed import Section, section

PREFIX = "hydra_train_bootstrap/agree"
MAX_NAMED = 16  # odd ranks whose records are read: enough to name them; the rest are counted
MAX_RECORD_BYTES = 1 << 20  # a fingerprint is a few KiB; a peer cannot make this rank read megabytes
MAX_VALUE_CHARS = 4096  # one value in a fingerprint (a variable's text)


@section
class Reference(Section):
    """Rank 0's record."""

    host: str
    salt: str
    fingerprint: Dict[str, str]


@section
class OddRank(Section):
    """A rank that differs from rank 0: its host and its values where they differ (null: unset)."""

    rank: int
    host: str
    values: Dict[str, Optional[str]]


@dataclass
class Exchanged:
    """What one rank learnt: rank 0's record, its own fingerprint, and the ranks that differ."""

    reference: Reference
    own: Dict[str, str]
    odd: List[OddRank] = field(default_factory=list)  # at most MAX_NAMED, by rank
    odd_count: int = 0  # all the ranks that differ


def differing(reference: Dict[str, str], own: Dict[str, str]) -> Dict[str, Optional[str]]:
    """The keys where ``own`` differs from ``reference``, with own's value (None: own lacks it)."""
    return {key: own.get(key) for key in sorted(reference.keys() | own.keys()) if own.get(key) != reference.get(key)}


def _read(data: bytes, kind, what: str):
    try:
        return kind.from_json(inbound.parse_json_bytes(data, MAX_RECORD_BYTES, what))
    except Unreadable as error:
        raise Unreadable(f"a peer's record in the store: {error}") from None


def _bounded(fingerprint: Dict[str, str]) -> Dict[str, str]:
    return {key: value[:MAX_VALUE_CHARS] for key, value in fingerprint.items()}


def exchange(store, key: str, rank: int, world_size: int, host: str,
             fingerprint: Callable[[str], Dict[str, str]]) -> Exchanged:
    """Compare this rank's ``fingerprint(salt)`` with rank 0's through ``store`` (any c10d Store), under
    ``key`` (one per check: the run, the restart, the check's number in this process).
    Blocks until every rank has compared (each wait is bounded by the store's timeout)."""
    if rank == 0:
        salt = secrets.token_hex(16)
        own = _bounded(fingerprint(salt))
        reference = Reference(host=host, salt=salt, fingerprint=own)
        store.set(f"{key}/ref", json.dumps(reference.to_json()))
    else:
        reference = _read(store.get(f"{key}/ref"), Reference, "rank 0")
        own = _bounded(fingerprint(reference.salt))
        differs = differing(reference.fingerprint, own)
        if differs:
            slot = store.add(f"{key}/odd", 1)
            store.set(f"{key}/odd/{slot}", json.dumps(OddRank(rank=rank, host=host, values=differs).to_json()))
    if store.add(f"{key}/arrived", 1) == world_size:
        store.set(f"{key}/done", "1")
    else:
        store.get(f"{key}/done")  # until the last rank has compared
    count = store.add(f"{key}/odd", 0)
    slots = range(1, min(count, MAX_NAMED) + 1)
    records = store.multi_get([f"{key}/odd/{slot}" for slot in slots]) if count else []
    odd = [_read(data, OddRank, f"odd record {slot}") for slot, data in zip(slots, records, strict=True)]
    return Exchanged(reference, own, sorted(odd, key=lambda record: record.rank), count)
