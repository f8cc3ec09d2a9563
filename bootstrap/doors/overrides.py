"""A job's command-line overrides, read with Hydra's own parser. Pure.

Every place that looks inside an override string goes through :func:`split`: the
names given as ``env.vars.NAME=...``, the ``+`` a preset was chosen with, the
``env.*`` overrides ``env=auto`` re-applies, and masking; ``tune`` reads the values a
sweep's jobs set with :func:`typed_values`. Hydra already parsed the
job's overrides before any of this runs, so its parser accepts them; text it rejects
(a hand-edited ``overrides.yaml``, a log line) is split the way its grammar would,
at the first ``=`` (a key cannot hold one). A key stands in the text as typed, so an override whose text
does not hold the key sought is not parsed at all: the parser costs about a millisecond an override.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, Iterable, List, NamedTuple, Optional

_PREFIX = {"CHANGE": "", "ADD": "+", "FORCE_ADD": "++", "DEL": "~"}
_parser = None


class Override(NamedTuple):
    prefix: str  # "", "+", "++" or "~"
    key: str  # the key or group, without its @package
    value: Optional[str]  # the value as typed; None for a deletion without one
    package: str = ""  # where a group's option goes: `hydra.callbacks.bootstrap.env` in `+env@hydra...=h100`


def _hydra_parser():
    global _parser
    if _parser is None:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        _parser = OverridesParser.create()
    return _parser


@functools.lru_cache(maxsize=4096)  # a job's overrides are read several times; ANTLR is not cheap
def _split(text: str) -> Override:
    lhs, sep, value = text.partition("=")
    try:
        parsed = _hydra_parser().parse_override(text)
        return Override(_PREFIX[parsed.type.name], parsed.key_or_group, value if sep else None, parsed.package or "")
    except Exception:  # noqa: BLE001 - hostile text: Hydra's parse error, or whatever its grammar raises
        prefix = "~" if lhs.startswith("~") else "++" if lhs.startswith("++") else "+" if lhs.startswith("+") else ""
        key, _, package = lhs[len(prefix):].partition("@")
        return Override(prefix, key.strip(), value if sep else None, package.strip())


def split(text: str) -> Override:
    """``+env.vars.X=1`` -> ``Override("+", "env.vars.X", "1")``."""
    return _split(str(text))


def var_names(overrides: Iterable[str], key: str = "env") -> frozenset:
    """The variables the command line sets: ``[+|++]<key>.vars.NAME=value``."""
    prefix = f"{key}.vars."
    return frozenset(o.key[len(prefix):] for o in map(split, (text for text in overrides if prefix in str(text)))
                     if o.prefix != "~" and o.key.startswith(prefix) and o.value is not None)


def preset_prefix(overrides: Iterable[str], key: str = "env") -> str:
    """``+`` or ``++`` when the job chose its preset with ``+env=...`` (an app without an env group)."""
    return next((o.prefix for o in map(split, overrides) if o.key == key and o.prefix in ("+", "++")), "")


def reapplied(overrides: Iterable[str], key: str = "env") -> List[str]:
    """The job's overrides of keys under ``key``, to put on a preset composed later (``env=auto``).

    They were written against ``auto.yaml``, which sets no variables: a variable of the
    chosen preset had to be added there (``+env.vars.X=1``) but exists in the chosen one,
    where ``+`` would fail. So each is re-applied as ``++`` (add or override); deletions
    (``~``) stay as they are.
    """
    picked = []
    for text in overrides:
        o = split(text)
        if o.key.startswith(f"{key}."):
            picked.append(text if o.prefix == "~" else f"++{o.key}={o.value}")
    return picked


def _plain(value: Any) -> bool:
    """A value YAML can hold as it is: what Hydra gives for a plain (non-sweep) override."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, (str, int, float, bool)) and _plain(v) for k, v in value.items())
    return False


def typed_values(overrides: Optional[Iterable[str]]) -> Optional[Dict[str, Any]]:
    """``[+]env.threads.intra_op=2`` -> ``{"env.threads.intra_op": 2}``, typed as Hydra types them;
    deletions are skipped. None when Hydra cannot parse one, or one is a sweep (``a=1,2``) or gives a
    value that is not plain data: what the job set cannot be told. The parser's message is never
    shown: it quotes the override."""
    if overrides is None:
        return None
    values: Dict[str, Any] = {}
    try:
        for text in overrides:
            parsed = _hydra_parser().parse_override(text)
            if parsed.is_delete():
                continue
            value = parsed.value()
            if not _plain(value):  # a sweep's value (ChoiceSweep...) is not plain either
                return None
            values[parsed.key_or_group] = value
    except Exception:  # noqa: BLE001 - hostile text: OverrideParseException, and whatever a grammar function raises
        return None
    return values
