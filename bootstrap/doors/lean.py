"""Dataclasses whose methods are shared, not compiled per class. Pure.

``dataclasses.dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__`` (and a frozen class's
``__hash__``, ``__setattr__``, ``__delattr__``) as source text and compiles it when the class is defined.
About 40 such classes load when a job starts, and compiling their methods was most of the callback's
import (bench/RESULTS.md, start-up part by part). :func:`lean_dataclass` keeps everything else of a
dataclass (``fields``, ``replace``, ``asdict``, defaults and factories, ``__post_init__``, what a type
checker sees) and gives the class one generic method of each kind, reading the class's own field spec.

A generic ``__init__`` costs a few microseconds more per instance than a compiled one: types made per row
or per entry of a large input (the sweep summary's rows, a dump's entries) stay plain dataclasses.
"""

import dataclasses
import reprlib
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple, Type, TypeVar, overload

_T = TypeVar("_T")
_MISSING = dataclasses.MISSING

if TYPE_CHECKING:  # typing has it from 3.11; at run time the decorator needs nothing of it
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorated: decorated


class _Spec:
    """One class's fields as the shared methods use them."""

    __slots__ = ("name", "positional", "keywords", "defaults", "compared", "shown")

    def __init__(self, cls: type) -> None:
        fields = dataclasses.fields(cls)
        self.name = cls.__qualname__
        self.positional = tuple(f.name for f in fields if f.init and not f.kw_only)
        self.keywords = frozenset(f.name for f in fields if f.init)
        # every field in definition order, with how it is filled when the caller leaves it out
        self.defaults: Tuple[Tuple[str, Any, Any, bool], ...] = tuple(
            (f.name, f.default, f.default_factory, f.init) for f in fields)
        self.compared = tuple(f.name for f in fields if f.compare)
        self.shown = tuple(f.name for f in fields if f.repr)


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    spec: _Spec = type(self).__lean_spec__
    positional, count = spec.positional, len(args)
    if count > len(positional):
        raise TypeError(f"{spec.name}() takes {len(positional)} positional arguments but {count} were given")
    if kwargs:
        for name in kwargs:
            if name not in spec.keywords:
                raise TypeError(f"{spec.name}() got an unexpected keyword argument {name!r}")
        for name in positional[:count]:
            if name in kwargs:
                raise TypeError(f"{spec.name}() got multiple values for argument {name!r}")
    values = self.__dict__  # straight into the instance: a frozen class's __setattr__ refuses
    given = 0  # the positional arguments taken so far: they fill the positional fields in order
    for name, default, factory, init in spec.defaults:  # every field in order, as dataclass's __init__ sets them
        if init and given < count and name is positional[given]:  # (the same name objects: fields' own)
            values[name] = args[given]
            given += 1
        elif init and name in kwargs:
            values[name] = kwargs[name]
        elif default is not _MISSING:
            values[name] = default
        elif factory is not _MISSING:
            values[name] = factory()
        else:
            raise TypeError(f"{spec.name}() missing required argument: {name!r}")
    post_init = getattr(self, "__post_init__", None)
    if post_init is not None:
        post_init()


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    spec: _Spec = type(self).__lean_spec__
    return f"{spec.name}({', '.join(f'{name}={getattr(self, name)!r}' for name in spec.shown)})"


def _compared(self: Any) -> Tuple[Any, ...]:
    return tuple(getattr(self, name) for name in type(self).__lean_spec__.compared)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        return _compared(self) == _compared(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(_compared(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _make(cls: Type[_T], frozen: bool, eq: bool, kw_only: bool) -> Type[_T]:
    # dataclass does the rest (fields, defaults as class attributes, __match_args__); nothing it compiles
    cls = dataclasses.dataclass(cls, init=False, repr=False, eq=False, kw_only=kw_only)
    methods: Dict[str, Any] = {"__lean_spec__": _Spec(cls), "__init__": _init, "__repr__": _repr}
    if eq:  # as dataclass: a frozen class hashes by its fields, a mutable one is unhashable
        methods.update(__eq__=_eq, __hash__=_hash if frozen else None)
    if frozen:
        methods.update(__setattr__=_frozen_setattr, __delattr__=_frozen_delattr)
    for name, method in methods.items():
        if name not in cls.__dict__ or name in ("__lean_spec__", "__setattr__", "__delattr__"):
            setattr(cls, name, method)  # a method the class writes itself is kept, as dataclass keeps it
    return cls


@overload
def lean_dataclass(cls: Type[_T], /, *, frozen: bool = False, eq: bool = True,
                   kw_only: bool = False) -> Type[_T]: ...


@overload
def lean_dataclass(*, frozen: bool = False, eq: bool = True,
                   kw_only: bool = False) -> Callable[[Type[_T]], Type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field,))
def lean_dataclass(cls: Optional[Type[_T]] = None, /, *, frozen: bool = False, eq: bool = True,
                   kw_only: bool = False) -> Any:
    """``@dataclass`` with ``frozen``, ``eq`` and ``kw_only`` as dataclass takes them, and shared methods."""
    if cls is not None:
        return _make(cls, frozen, eq, kw_only)
    return lambda decorated: _make(decorated, frozen, eq, kw_only)

