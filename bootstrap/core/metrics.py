"""A task's return value as the report's metrics (``job.metrics``), never raising. Pure.

**Whatever the task returns, the job ends recorded.** :func:`metrics_from` turns the return
value into metrics without ever raising: a container that holds itself, nesting past
:data:`MAX_DEPTH`, an integer too large for a float, an object whose conversion raises, a
key that cannot be shown and anything past :data:`MAX_METRICS` go to ``job.metrics_skipped``
with the reason.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

MAX_METRICS = 1000  # a report is read by every summary and tune: a huge mapping must not make it huge
MAX_SKIPPED = 100  # values named one by one in metrics_skipped; the rest are counted
MAX_DEPTH = 16  # mappings nested deeper are not metrics anyone reads (and recursion must stay bounded)
MAX_NAME = 200  # characters in a metric's name
MAX_VALUES = 100_000  # values looked at in all: a mapping of millions (or one that never ends) is not read whole


class _Metrics:
    """What :func:`metrics_from` gathers, within the limits above."""

    def __init__(self) -> None:
        self.values: Dict[str, float] = {}
        self.skipped: List[str] = []
        self.uncounted = 0  # skipped past MAX_SKIPPED
        self.seen = 0
        self.cut = False  # stopped at MAX_VALUES
        self.on_path: Set[int] = set()  # the mappings being visited: one met again holds itself

    def skip(self, name: str, reason: str) -> None:
        if len(self.skipped) < MAX_SKIPPED:
            shown = name if len(name) <= MAX_NAME else name[:MAX_NAME] + "..."
            self.skipped.append(f"{shown} ({reason})")
        else:
            self.uncounted += 1

    def visit(self, name: str, item: Any, depth: int) -> None:
        if self.seen >= MAX_VALUES:
            self.cut = True
            return
        self.seen += 1
        try:
            is_mapping = isinstance(item, Mapping)
        except Exception:  # noqa: BLE001 - an object whose __class__ raises
            is_mapping = False
        if is_mapping:
            self.visit_mapping(name, item, depth)
            return
        if len(name) > MAX_NAME:
            self.skip(name, f"a name longer than {MAX_NAME} characters")
            return
        number, reason = _as_number(item)
        if number is None:
            self.skip(name, reason)
        elif len(self.values) >= MAX_METRICS and name not in self.values:
            self.skip(name, f"past the limit of {MAX_METRICS} metrics in a report")
        else:
            self.values[name] = number

    def visit_mapping(self, name: str, mapping: Mapping, depth: int) -> None:
        shown = name or "return"
        if id(mapping) in self.on_path:
            self.skip(shown, "a mapping that holds itself")
            return
        if depth >= MAX_DEPTH:
            self.skip(shown, f"nested deeper than {MAX_DEPTH} levels")
            return
        self.on_path.add(id(mapping))
        try:
            for key, inner in mapping.items():
                if self.seen >= MAX_VALUES:
                    self.cut = True
                    break
                key_text, why = _key_text(key)
                if key_text is None:
                    self.seen += 1
                    self.skip(f"{name}/?" if name else "?", why)
                else:
                    self.visit(f"{name}/{key_text}" if name else key_text, inner, depth + 1)
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # noqa: BLE001 - a mapping whose items() or iteration raises anything
            self.skip(shown, f"its items could not be read: {type(error).__name__}")
        finally:
            self.on_path.discard(id(mapping))

    def result(self) -> Tuple[Dict[str, float], List[str]]:
        if self.uncounted:
            self.skipped.append(f"{self.uncounted} more values not recorded (at most {MAX_SKIPPED} are named)")
        if self.cut:
            self.skipped.append(f"the rest of the return value was not read (more than {MAX_VALUES} values)")
        return self.values, self.skipped


def metrics_from(value: Any) -> Tuple[Dict[str, float], List[str]]:
    """A task's return value as ``{name: float}``, and what was skipped (``"name (reason)"``). Never raises.

    A number becomes ``{"return": value}``; a mapping is flattened with ``/`` between
    nested keys; 0-d tensors and numpy scalars (anything with ``.item()`` giving a
    number) become floats. Non-finite numbers are skipped: JSON has no NaN. So is what
    cannot be converted, with the reason (the type's name for what is not a number), and
    what lies past the limits (:data:`MAX_METRICS`, :data:`MAX_DEPTH`, :data:`MAX_NAME`).
    A tuple or list of numbers (a multi-objective sweep's return, Optuna's ``direction`` list)
    becomes ``return/0``, ``return/1``, ….
    """
    if value is None:
        return {}, []
    gathered = _Metrics()
    try:
        is_mapping = isinstance(value, Mapping)
        objectives = type(value) in (tuple, list) and 0 < len(value) <= MAX_OBJECTIVES
    except Exception:  # noqa: BLE001 - an object whose __class__ raises
        is_mapping = objectives = False
    if objectives:
        for index, item in enumerate(value):
            gathered.visit(f"return/{index}", item, 1)
    else:
        gathered.visit("" if is_mapping else "return", value, 0)
    return gathered.result()


MAX_OBJECTIVES = 32  # a returned tuple longer than this is data, not a sweeper's objectives


def _key_text(key: Any) -> Tuple[Optional[str], str]:
    """A mapping key as part of a metric's name, or None and why it cannot be one."""
    if type(key) is str:
        return key, ""
    try:
        return str(key), ""
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - a 5000-digit int (ValueError), a __str__ that raises anything
        return None, f"a key of type {type(key).__name__} that cannot be shown: {type(error).__name__}"


def _as_number(item: Any, inside: bool = False) -> Tuple[Optional[float], str]:
    """``item`` as a finite float, or None and the reason it is not one."""
    kind = type(item).__name__
    try:
        if isinstance(item, bool):
            return None, kind  # a flag, not a measurement
        if isinstance(item, numbers.Real):  # numpy registers its scalar types here too
            number = float(item)
        else:
            ndim = getattr(item, "ndim", None)
            if inside or type(ndim) is not int or ndim != 0 or not callable(getattr(item, "item", None)):
                return None, kind
            inner = item.item()  # a 0-d tensor or array
            if hasattr(inner, "ndim"):
                return None, kind
            return _as_number(inner, inside=True)
    except OverflowError:
        return None, f"{kind} too large for a float"
    except KeyboardInterrupt:  # the user's Ctrl-C, not the value's
        raise
    except BaseException as error:  # noqa: BLE001 - the task's own types: __float__, __index__ or item() raise anything
        return None, f"{kind} that could not be converted: {type(error).__name__}"
    if not math.isfinite(number):
        return None, str(number)
    return number, ""
