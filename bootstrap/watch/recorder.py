"""This rank's collectives, read from torch's flight recorder while the job trains. Touches torch.

The job already keeps the recorder on (``env.distributed.flight_recorder``, :mod:`bootstrap.distributed.flightrec`,
which dumps it only when a job fails or is stopped). Each entry is one collective of one process group, with the
time this rank issued it (``time_created_ns``, the wall clock). On NCCL the watchdog also records when it saw the
collective end (``time_discovered_completed_ns``) and, with ``TORCH_NCCL_ENABLE_TIMING=1``, its kernel's
``duration_ms``; on gloo (torch 2.13, measured: docs/watch.md#the-experiment-that-chose-it) every entry stays
``scheduled`` with no end; each entry's ``input_sizes`` tell a gradient bucket from a framework's one-number
decision. :mod:`bootstrap.watch.steps` makes a step's waits of either. The watch's own exchange
goes through the store and adds no entry.

The recorder keeps the last ``buffer_size`` collectives: a window with more than that reads the waits of its
last ones, and :attr:`Waits.covered_from` says from when.
"""

from __future__ import annotations

from typing import Any, List, NamedTuple, Optional

from bootstrap.watch.steps import Collective

CREATED, COMPLETED, DURATION = "time_created_ns", "time_discovered_completed_ns", "duration_ms"


class Waits(NamedTuple):
    collectives: List[Collective]  # each collective this rank issued since the window began, or still in flight
    covered_from: Optional[int]  # the earliest issue time the recorder still holds, once it is full (else None)
    entries: int  # collectives read


def read(since_ns: int, buffer_size: int) -> Waits:
    """The collectives the recorder holds that were still in flight at ``since_ns`` or issued after it; ``buffer_size``:
    how many it keeps (``TORCH_FR_BUFFER_SIZE``)."""
    from bootstrap.distributed import flightrec

    held = flightrec.recorded(stacks=False).get("entries", [])
    return waits(held, since_ns, buffer_size)


def waits(held: List[Any], since_ns: int, buffer_size: int) -> Waits:
    """:func:`read`'s work on the recorder's entries (a list of dicts, as torch dumps them). Pure. While the
    recorder holds fewer than ``buffer_size``, it holds every collective: the waits are known from the start."""
    out: List[Collective] = []
    earliest: Optional[int] = None
    for entry in held:
        created = entry.get(CREATED) if isinstance(entry, dict) else None
        if not isinstance(created, int) or isinstance(created, bool) or created <= 0:
            continue
        earliest = created if earliest is None else min(earliest, created)
        completed = entry.get(COMPLETED)
        ended = completed if isinstance(completed, int) and completed >= created else None
        if (ended if ended is not None else created + 1) <= since_ns:  # no end: counts only in its own step
            continue
        duration = entry.get(DURATION)
        began = int(ended - duration * 1e6) if ended is not None and isinstance(duration, (int, float)) and \
            0 <= duration * 1e6 <= ended - created else None
        out.append(Collective(created, ended, began, _elements(entry.get("input_sizes"))))
    return Waits(out, earliest if len(held) >= buffer_size else None, len(out))


def _elements(sizes: Any) -> int:
    """A collective's elements from the recorder's ``input_sizes`` (a list of shapes); 1 where it says nothing."""
    total = 0
    for shape in sizes if isinstance(sizes, list) else []:
        count = 1
        for dim in shape if isinstance(shape, list) else []:
            count *= dim if isinstance(dim, int) and not isinstance(dim, bool) and dim > 0 else 1
        total += count
    return max(1, total)
