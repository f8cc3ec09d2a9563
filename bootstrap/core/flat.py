"""The report as flat ``bootstrap/...`` keys and scalar values, masked: the one view every tracker
integration logs (docs/trackers.md). Pure.

A key is the report's JSON path under ``bootstrap/``, joined with ``/`` (``bootstrap/threads/intra_op``),
whatever the section: a section the report gains appears here with no change. A few rules keep the view
small and its keys stable:

- ``vars``: each variable's value alone, ``bootstrap/vars/NCCL_ALGO``; its source and note stay in
  ``bootstrap.json``;
- a few fields asked of every run sit at the top (:data:`ALIASES`): ``bootstrap/host``, ``bootstrap/git/commit``;
- a list of values is one value, joined (:data:`JOINED_BY`): ``bootstrap/overrides`` reads as typed;
- a list of records is keyed by each record's ``name`` (``bootstrap/checks/torch/ok``) or ``rank``, else by
  position;
- ``null`` leaves its key out, and the diagnoses of :data:`LEFT_OUT` are left out.

Values are ``str``, ``int``, ``float`` or ``bool``. Everything is sized for the strictest tracker, MLflow:
keys of at most :data:`MAX_KEY` characters from its allowed set, values of at most :data:`MAX_VALUE`.
Everything leaves masked, through :mod:`bootstrap.doors.outbound`.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from bootstrap.doors import outbound
from bootstrap.doors.masking import masked_line

Scalar = Union[str, int, float, bool]

PREFIX = "bootstrap"
# MLflow refuses a tag or param key over 250 characters (mlflow.utils.validation.MAX_ENTITY_KEY_LENGTH).
MAX_KEY = 250
# MLflow's limits on a value: tags 8,000 characters in 3.17 (5,000 in earlier releases), params 6,000: the least.
MAX_VALUE = 5000
# A report holds about a hundred keys; the bound keeps one made by hand (thousands of variables) within a
# tracker's request size. The keys past it are counted in LEFT_OUT_COUNT.
MAX_KEYS = 1000
LEFT_OUT_COUNT = f"{PREFIX}/keys_left_out"

# Report paths shown under a shorter key, with everything beneath them: what a user asks of any run.
ALIASES = {"provenance/host": "host", "provenance/git": "git"}
VALUE_OF = {"vars": "value"}  # sections of records shown by one field each
# How a list of values is joined into one: the overrides as typed on a command line; any other list by ", ".
JOINED_BY: Dict[str, Callable[[Iterable[str]], str]] = {"overrides": " ".join, "warnings": " | ".join}
RECORD_NAMES = ("name", "rank")  # a list of records is keyed by the first of these that each record has
LEFT_OUT = {  # path -> why it is in bootstrap.json only
    "job/metrics": "the task's own numbers: a tracker logs them as metrics, not as the environment",
    "job/metrics_skipped": "the task's own numbers: a tracker logs them as metrics, not as the environment",
    "distributed/hang": "a diagnosis written after a failure, with every rank's dump",
    "distributed/agreement/fingerprint": "repeats found/, threads/, torch/ and vars/",
    "distributed/agreement/differences": "every differing value of every rank; agreement/message names them",
    "timings/phases": "the start phase by phase, a few dozen keys: timings/first_step_s is their end",
    "timings/world_phases": "every phase across the ranks: rank 0's bootstrap.json holds them",
}

# What survives the cap (MAX_KEYS), in this order: first the keys every run promises (the job's status, where and
# from which code it ran, which preset), then whole sections, the small ones every comparison reads first and the
# open-ended ones (variables, lint findings, the preflight's ranks) last; a section not named here comes after
# these, in the report's order; keys_left_out is always the last key. Within a section, the report's order.
FIRST = ("job/status", "job/error", "schema_version", "host", "git", "preset", "device")
SECTION_ORDER = ("job", "found", "checks", "threads", "torch", "distributed", "seed", "timings", "overrides",
                 "warnings", "preset_digest", "resolved", "provenance", "preflight", "watch", "lint", "vars")

# MLflow's allowed characters (mlflow.utils.validation), without ':' (refused on Windows) and ' '.
_NOT_IN_KEY = re.compile(r"[^A-Za-z0-9_./-]")


def flat(report: Any) -> Dict[str, Scalar]:
    """``report`` (a :class:`bootstrap.doors.records.Report`) as the flat view."""
    return view(report.to_json())


def view(data: Mapping[str, Any]) -> Dict[str, Scalar]:
    """The flat view of a report's JSON (``Report.to_json()``, or a ``bootstrap.json`` read back)."""
    raw: Dict[str, Any] = {}
    for section, value in data.items():
        _visit(raw, str(section), value)
    # One pass through the way out: secrets masked by the key's name and the value's shape, remembered
    # secrets masked, control characters escaped.
    cleaned = outbound.clean_data({f"{PREFIX}/{path}": value for path, value in raw.items()})
    out: Dict[str, Scalar] = {}
    for key, value in cleaned.items():
        if isinstance(value, str):
            value = outbound.cut(outbound.printable(value, one_line=True), MAX_VALUE)
        _put(out, _key(key), value)
    if len(out) > MAX_KEYS:
        order = {key: index for index, key in enumerate(out)}
        kept_keys = sorted(sorted(out, key=_priority)[:MAX_KEYS - 1], key=order.__getitem__)
        kept: Dict[str, Scalar] = {key: out[key] for key in kept_keys}  # in the report's order
        kept[LEFT_OUT_COUNT] = len(out) - len(kept)
        return kept
    return out


def _priority(key: str) -> Tuple[int, int]:
    """Where a flat key stands in the cap's order (:data:`FIRST`, then :data:`SECTION_ORDER`): lower is kept first."""
    path = key[len(PREFIX) + 1:]
    for index, first in enumerate(FIRST):
        if path == first or path.startswith(first + "/"):
            return 0, index
    section = path.split("/", 1)[0]
    return 1, SECTION_ORDER.index(section) if section in SECTION_ORDER else len(SECTION_ORDER)


def _visit(out: Dict[str, Any], path: str, value: Any) -> None:
    if path in LEFT_OUT or value is None:
        return
    path = ALIASES.get(path, path)
    section = path.split("/", 1)[0]
    if isinstance(value, Mapping):
        field = VALUE_OF.get(section) if path == section else None
        for name, item in value.items():
            if field is not None and isinstance(item, Mapping):
                item = item.get(field)
            _visit(out, f"{path}/{name}", item)
    elif isinstance(value, (list, tuple)):
        if value and all(isinstance(item, Mapping) for item in value):
            field, names = _record_names(value)
            for name, item in zip(names, value, strict=True):  # the name is in the key: not again beneath it
                _visit(out, f"{path}/{name}", {k: v for k, v in item.items() if k != field})
        elif all(not isinstance(item, (Mapping, list, tuple)) for item in value):
            out[path] = masked_line(JOINED_BY.get(path, ", ".join)("null" if v is None else str(v) for v in value))
        else:  # a list that mixes records and values: by position
            for index, item in enumerate(value):
                _visit(out, f"{path}/{index}", item)
    elif isinstance(value, str):
        out[path] = masked_line(value)  # name=value text (an override) masked as an override
    elif isinstance(value, (bool, int, float)):
        out[path] = value
    else:
        out[path] = str(value)


def _record_names(records: Sequence[Mapping[str, Any]]) -> Tuple[Optional[str], List[str]]:
    """Each record's name (the first of RECORD_NAMES that every record has; a repeated name gets ``_2``,
    ``_3``: two lint findings about one variable), else its position; and the field the names came from."""
    for field in RECORD_NAMES:
        if all(record.get(field) is not None for record in records):
            seen: Dict[str, int] = {}
            names = []
            for record in records:
                name = str(record[field])
                seen[name] = seen.get(name, 0) + 1
                names.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
            return field, names
    return None, [str(index) for index in range(len(records))]


def _key(key: str) -> str:
    """``key`` as MLflow accepts it: allowed characters only, no empty, ``.`` or ``..`` part, at most MAX_KEY."""
    parts = [_NOT_IN_KEY.sub("_", part) for part in key.split("/")]
    key = "/".join("_" if part in ("", ".", "..") else part for part in parts)
    return key if len(key) <= MAX_KEY else _shortened(key)


def _shortened(key: str) -> str:
    """A key cut to MAX_KEY characters, ending in a digest of the whole: two long keys stay two."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{key[:MAX_KEY - 9].rstrip('/.')}_{digest}"


def _put(out: Dict[str, Scalar], key: str, value: Scalar) -> None:
    """Two report paths that make one key (``a b`` and ``a_b``) keep both values: the second gets a digest."""
    if key in out:
        digest = hashlib.sha256(f"{key}#{len(out)}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
        key = f"{key[:MAX_KEY - 9]}_{digest}"
    out[key] = value
