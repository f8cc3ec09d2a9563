"""What a sweep varied, from its rows' overrides: the overrides every job gave alike, shown once above the
summary's table, and the swept keys, each a column of its own (:class:`Layout`). Pure.

A **swept key** is one whose override differs among the jobs, or that only some jobs gave:
``env.threads.intra_op=1,2`` sweeps ``env.threads.intra_op``, and each trial of an Optuna search sets every key
it searches. An override that every job gave with the same text is **shared**. Jobs whose overrides could not be
read take no part (their rows say why) and show empty cells.

A key is named as typed, without the ``+`` or ``++`` that added it (``+model.lr=0.1`` gives ``model.lr``), with its
``@package``. A job's cell is its value as typed; ``~`` (``~value``) where the job deleted the key; empty where
the job did not set it. Where a key is given twice, the last wins, as in Hydra.

The overrides are the rows' own, masked already (:func:`bootstrap.doors.masking.masked_override`): a secret's value
is ``***`` in every job, so jobs that differ only in a secret look alike there, and no value of it is ever shown.
An override is split at its first ``=`` (a key holds none), never with Hydra's parser, which costs about a
millisecond an override: a summary of 10,000 jobs splits 30,000 of them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from bootstrap.sweep.read import Row, job_order

# A number as typed (``2``, ``-0.5``, ``1e-3``): a numeric axis in the picture, a number in the CSV.
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
NO_KEY = "(no key)"  # the column of an override whose text has nothing before its "=" (a hand-edited record)


@dataclass(frozen=True)
class Layout:
    """The overrides the jobs shared, and the keys they varied."""

    shared: Tuple[str, ...] = ()  # overrides every compared job gave alike, in the first job's order
    keys: Tuple[str, ...] = ()  # the swept keys, in the order the jobs (by number) first gave them
    compared: int = 0  # jobs whose overrides were known and compared


def parts(override: str) -> Tuple[str, str]:
    """``+model.lr=0.1`` -> ``("model.lr", "0.1")``; ``~model.dropout`` -> ``("model.dropout", "~")``."""
    left, _, value = override.partition("=")
    left = left.strip()
    if left.startswith("~"):
        return left[1:].strip() or NO_KEY, "~" + value
    return left.lstrip("+").strip() or NO_KEY, value


def settings(row: Row) -> Optional[Dict[str, str]]:
    """The row's overrides by key (each as typed, masked), or None where they are not known."""
    if row.override_list is None:
        return None
    return {parts(text)[0]: text for text in row.override_list}


def cells(row: Row) -> Dict[str, str]:
    """The row's value of each key it set (see the module's docstring): empty where its overrides are unknown."""
    return dict(map(parts, row.override_list or ()))  # the last of a key wins, as in settings


def split(rows: Iterable[Row]) -> Layout:
    """Which overrides every job shared, and which keys the sweep varied (:class:`Layout`)."""
    known = [found for found in (settings(row) for row in sorted(rows, key=lambda r: job_order(r.job)))
             if found is not None]
    if not known:
        return Layout()
    first, others = known[0], known[1:]
    shared = [key for key, text in first.items() if all(other.get(key) == text for other in others)]
    shared_keys = set(shared)
    swept: Dict[str, None] = {}
    for found in known:
        swept.update((key, None) for key in found if key not in shared_keys and key not in swept)
    return Layout(tuple(first[key] for key in shared), tuple(swept), len(known))


def column_names(keys: Sequence[str], taken: Iterable[str]) -> List[str]:
    """Each swept key's column name: the key, or ``key (override)`` where another column has that name (a swept
    ``status``, or a key named like a metric)."""
    others = set(taken)
    return [f"{key} (override)" if key in others else key for key in keys]


def number(text: Optional[str]) -> Optional[float]:
    """The value as a finite number when it is typed as one (``2``, ``1e-3``), else None."""
    if text is None or not _NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def is_number(text: str) -> bool:
    """Typed as a number: a spreadsheet reads it as one, never as a formula (``-0.5``)."""
    return _NUMBER.fullmatch(text) is not None
