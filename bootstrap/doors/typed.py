"""Plain data anyone may have written (parsed JSON, a pickle's dicts and lists), read strictly into typed
values, bounded. Pure. Either way raises :class:`WrongShape` with a one-line reason; the caller names the file.

- :func:`section`: a dataclass reads itself by its fields' types, and writes itself back (:func:`to_json`):
  the report (:mod:`bootstrap.doors.records`). Every field's type bounds its depth, and a free-form object
  (``Dict[str, Any]``) is checked against :data:`bootstrap.doors.inbound.MAX_DEPTH`: a section read from
  parsed JSON is bounded in depth whatever the JSON held. A :data:`Count` is a whole number from 0 to 2**53, a
  float finite, any other int within 64 bits (a 400-digit integer is none of these).
- :func:`whole`, :func:`boolean`, :func:`text`: one value of data without a schema, named by the caller:
  the flight recorder's dumps (:mod:`bootstrap.distributed.dumps`).
"""

import dataclasses
import math
import typing
from dataclasses import field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Dict, List, NewType, Optional, Tuple, Type, TypeVar

from bootstrap.doors.inbound import MAX_DEPTH, Unreadable, bounded_depth
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.textenum import TextEnum

# A whole number from 0 to 2**53: a job number, a rank, a thread count. Past 2**53 it would not
# survive a float in another reader, and none of these is ever that large.
if TYPE_CHECKING:  # to a type checker a plain int: its range is checked where it is read (_count), not at each use
    Count = int
else:  # at run time a type of its own, so a section's field finds its reader
    Count = NewType("Count", int)
MAX_COUNT = 2**53
MAX_INT = 2**63  # seeds, ports, nanoseconds: within 64 bits


class WrongShape(Exception):
    """A value of the wrong shape; ``path`` grows (from the inside out) on its way up to the whole."""

    def __init__(self, reason: str, path: Tuple[Any, ...] = ()):
        super().__init__(reason)
        self.reason, self.path = reason, path

    def at(self, key: Any) -> "WrongShape":
        return WrongShape(self.reason, (key, *self.path))

    def where(self, whole: str) -> str:
        parts = []
        for key in self.path:
            if isinstance(key, int):
                parts.append(f"[{key}]")
            else:
                shown = key if key.isprintable() else repr(key)[1:-1]  # the message is one line
                shown = shown if len(shown) <= 40 else shown[:40] + "..."  # a hostile key may be a megabyte long
                parts.append(f".{shown}" if parts else shown)
        return "".join(parts) or whole


# -- one value, by its type -------------------------------------------------------------------
# JSON parses to exactly these types, so ``type(v) is`` is both strict and fast (bool is not an int here).
def _text(value: Any) -> str:
    if type(value) is str:
        return value
    raise WrongShape("not text")


def _text_or_none(value: Any) -> Optional[str]:
    if value is None or type(value) is str:
        return value
    raise WrongShape("not text or null")


def _int(value: Any) -> int:
    if type(value) is int and -MAX_INT <= value < MAX_INT:
        return value
    raise WrongShape("not a whole number within 64 bits")


def _count(value: Any) -> int:
    if type(value) is int and 0 <= value < MAX_COUNT:
        return value
    raise WrongShape("not a whole number from 0 to 2**53")


def _flag(value: Any) -> bool:
    if value is True or value is False:
        return value
    raise WrongShape("not true or false")


def _number(value: Any) -> float:
    if type(value) is float:
        if math.isfinite(value):  # 1e999 parses to inf
            return value
    elif type(value) is int:
        try:
            return float(value)
        except OverflowError:  # a 400-digit integer
            pass
    raise WrongShape("not a finite number")


def _object(value: Any) -> dict:
    """A free-form object (``Dict[str, Any]``): the one type whose depth the schema does not bound, so it is
    bounded here (:data:`bootstrap.doors.inbound.MAX_DEPTH`)."""
    if type(value) is not dict:
        raise WrongShape("not an object")
    try:
        return bounded_depth(value, "")
    except Unreadable:
        raise WrongShape(f"nested more than {MAX_DEPTH} deep") from None


def _or_none(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def read_or_none(value: Any) -> Any:
        return None if value is None else read(value)

    return read_or_none


def _list_of(read: Callable[[Any], Any]) -> Callable[[Any], list]:
    def read_list(value: Any) -> list:
        if type(value) is not list:
            raise WrongShape("not a list")
        items = []
        for index, item in enumerate(value):
            try:
                items.append(read(item))
            except WrongShape as wrong:
                raise wrong.at(index) from None
        return items

    return read_list


def _mapping_of(read: Callable[[Any], Any]) -> Callable[[Any], dict]:
    def read_mapping(value: Any) -> dict:
        if type(value) is not dict:
            raise WrongShape("not an object")
        items = {}
        for key, item in value.items():
            try:
                items[key] = read(item)
            except WrongShape as wrong:
                raise wrong.at(key) from None
        return items

    return read_mapping


_READERS: Dict[Any, Callable[[Any], Any]] = {
    str: _text, int: _int, Count: _count, bool: _flag, float: _number, Optional[str]: _text_or_none,
    Dict[str, Any]: _object,
}
# Types whose check is the type alone, the value kept as it is: checked in the section's loop, no call.
_SIMPLE: Dict[Any, Tuple[type, ...]] = {
    str: (str,), Optional[str]: (str, type(None)), bool: (bool,), Optional[bool]: (bool, type(None)),
    Optional[Dict[str, Any]]: (type(None),),  # and an object, through _object: its depth is checked
    Optional[int]: (type(None),), Optional[Count]: (type(None),),  # and a whole number within _RANGE
}
# Whole numbers checked in the loop too: [low, high).
_RANGE: Dict[Any, Tuple[int, int]] = {
    int: (-MAX_INT, MAX_INT), Optional[int]: (-MAX_INT, MAX_INT), Count: (0, MAX_COUNT),
    Optional[Count]: (0, MAX_COUNT),
}


def _one_of(enumeration: Any) -> Callable[[Any], Any]:
    """A status field: its text, as the enumeration's member."""
    members = enumeration._value2member_map_
    expected = f"not one of {', '.join(members)}"

    def read_member(value: Any) -> Any:
        if type(value) is str and value in members:
            return members[value]
        raise WrongShape(expected)

    return read_member


def _reader(hint: Any) -> Callable[[Any], Any]:
    """The reader for a field's type, made once when its section is defined."""
    if hint in _READERS:
        return _READERS[hint]
    if isinstance(hint, type) and issubclass(hint, TextEnum):
        return _one_of(hint)
    if isinstance(hint, type) and hasattr(hint, "_read"):  # a section
        return hint._read
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union and len(args) == 2 and type(None) in args:
        return _or_none(_reader(next(a for a in args if a is not type(None))))
    if origin is list:
        return _list_of(_reader(args[0]))
    if origin is dict and args[0] is str:
        return _mapping_of(_reader(args[1]))
    raise TypeError(f"no reader for {hint!r}")  # a programming error, at import


# -- sections ---------------------------------------------------------------------------------
_REQUIRED = object()
_S = TypeVar("_S", bound="Section")
# One field of a section, as its reader and writer use it: JSON name, attribute, reader, default (a factory, or
# _REQUIRED), written only when set, the types checked without a call, and the [low, high) of a whole number.
_Field = Tuple[str, str, Callable[[Any], Any], Any, bool, Tuple[type, ...], int, int]

if TYPE_CHECKING:  # tells a type checker what @section makes; typing has it from 3.11, and it does nothing at run time
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorated: decorated


def when_set(default: Any = None, factory: Optional[Callable[[], Any]] = None) -> Any:
    """A field written only when it differs from its default (``withheld``, ``error``)."""
    if factory is not None:
        return field(default_factory=factory, metadata={"omit_default": True})
    return field(default=default, metadata={"omit_default": True})


# when_set is no field specifier: it always gives a default, which a type checker reads only from keywords.
@dataclass_transform(kw_only_default=True, field_specifiers=(field,))
def section(cls: Type[_S]) -> Type[_S]:
    """Make ``cls`` a dataclass that reads itself from JSON (``_read``) and writes itself (``to_json``).
    A field's JSON name is its own, or its metadata's ``json`` (``from_`` is ``from``); an absent field
    takes its default, and a key the section does not know is ignored."""
    cls = lean_dataclass(cls, kw_only=True)  # fields in the order the JSON holds them, defaults or not
    hints = {f.name: f.type for f in dataclasses.fields(cls)}  # evaluated types: no __future__ annotations here
    entries: List[_Field] = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default: Any = lambda value=f.default: value  # noqa: E731 - a factory, as default_factory is
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory
        else:
            default = _REQUIRED
        entries.append((f.metadata.get("json", f.name), f.name, _reader(hints[f.name]), default,
                        f.metadata.get("omit_default", False), _SIMPLE.get(hints[f.name], ()),
                        *_RANGE.get(hints[f.name], (0, 0))))
    cls._spec = spec = tuple(entries)
    new = object.__new__

    def _read(value: Any) -> Any:
        if type(value) is not dict:
            raise WrongShape("not an object")
        read_section = new(cls)  # the values are checked here: no __init__ to run them through again
        values = read_section.__dict__
        get = value.get
        for key, attribute, read, default, _, simple, low, high in spec:
            item = get(key, _REQUIRED)
            # Most fields are text, a flag, null or a count: checked here, without a call (a summary reads
            # 10,000 reports); anything else, and any value of the wrong type, goes to the field's reader.
            if type(item) in simple or type(item) is int and low <= item < high:
                values[attribute] = item
            elif item is not _REQUIRED:
                try:
                    values[attribute] = read(item)
                except WrongShape as wrong:
                    raise wrong.at(key) from None
            elif default is _REQUIRED:
                raise WrongShape("missing", (key,))
            else:
                values[attribute] = default()
        return read_section

    cls._read = staticmethod(_read)
    return cls


def to_json(value: Any) -> Any:
    """A section (and what it holds) as plain JSON data."""
    if hasattr(value, "_spec"):
        written = {}
        for key, attribute, _, default, omit_default, *_ in value._spec:
            item = getattr(value, attribute)
            if omit_default and item == default():
                continue
            written[key] = to_json(item)
        return written
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, str):
        return str(value)  # a TextEnum as its plain value
    return value


class Section:
    # Made by @section (each subclass is a dataclass):
    __dataclass_fields__: ClassVar[Dict[str, "dataclasses.Field[Any]"]]
    _spec: ClassVar[Tuple[_Field, ...]]
    _read: ClassVar[Callable[[Any], Any]]

    @classmethod
    def from_json(cls: Type[_S], data: Any) -> _S:
        """The section from parsed JSON; raises :class:`~bootstrap.doors.inbound.Unreadable` naming the first
        wrong field (``job.metrics.loss: not a finite number``)."""
        try:
            return cls._read(data)
        except WrongShape as wrong:
            raise Unreadable(f"{wrong.where('the ' + cls.__name__.lower())}: {wrong.reason}") from None

    def to_json(self) -> Dict[str, Any]:
        """This section as JSON data."""
        return to_json(self)


# -- one named value of data without a schema -------------------------------------------------
def kind(value: Any) -> str:
    return type(value).__name__


def shown(number: int) -> str:
    """An int for a message: one past Python's digit limit must not raise when printed."""
    return str(number) if -10**30 < number < 10**30 else ("a number of more than 30 digits" if number > 0
                                                          else "a negative number of more than 30 digits")


def whole(value: Any, what: str, limit: Optional[int], optional: bool = False) -> Any:
    """``value``, a whole number from 0 to below ``limit`` (None: no limit), or None if ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise WrongShape(f"{what} is a {kind(value)}, not an int")
    if value < 0:
        raise WrongShape(f"{what} is negative")
    if limit is not None and value >= limit:
        raise WrongShape(f"{what} is {shown(value)}, more than {limit - 1}")
    return value


def boolean(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise WrongShape(f"{what} is a {kind(value)}, not a bool")
    return value


def text(value: Any, what: str, limit: int, optional: bool = False, cut: bool = False) -> Any:
    """``value``, text of at most ``limit`` characters (longer and ``cut``: its start and "..."), or None
    if ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise WrongShape(f"{what} is a {kind(value)}, not text")
    if len(value) > limit:
        if cut:
            return value[:limit] + "..."
        raise WrongShape(f"{what} is {len(value)} characters long, more than {limit}")
    return value
