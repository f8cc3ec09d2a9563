"""lean_dataclass behaves as dataclass does, for what the package uses of it: each case builds the same class
both ways and compares what they do."""

import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import List, Optional

import pytest

from bootstrap.doors.lean import lean_dataclass


@lean_dataclass(frozen=True)
class Frozen:  # at module level: pickle finds it by name
    number: int
    text: str


def both(frozen=False, eq=True, kw_only=False):
    """The same class body made by dataclass and by lean_dataclass."""
    made = []
    for decorate in (dataclass(frozen=frozen, eq=eq, kw_only=kw_only),
                     lean_dataclass(frozen=frozen, eq=eq, kw_only=kw_only)):
        class Point:
            x: int
            y: int = 2
            tags: List[str] = field(default_factory=list)
            note: Optional[str] = field(default=None, repr=False, compare=False)
        made.append(decorate(Point))
    return made


@pytest.mark.parametrize("frozen", [False, True])
def test_init_repr_eq_and_hash_match_dataclass(frozen):
    plain, lean = both(frozen=frozen)
    for args, kwargs in [((1,), {}), ((1, 3), {}), ((), {"x": 1, "tags": ["a"]}), ((1,), {"note": "n"})]:
        a, b = plain(*args, **kwargs), lean(*args, **kwargs)
        assert repr(a) == repr(b)
        assert vars(a) == vars(b) and list(vars(a)) == list(vars(b))  # the fields, in order
        assert (b == lean(*args, **kwargs)) and b != lean(99)
        assert b != a  # another class: not equal, as dataclass's own
    assert lean(1, note="a") == lean(1, note="b")  # compare=False
    assert lean(1).tags is not lean(1).tags  # a fresh default per instance
    if frozen:  # hashed by the compared fields, as dataclass's: here a list among them
        for cls in (plain, lean):
            with pytest.raises(TypeError, match="unhashable type: 'list'"):
                hash(cls(1))
        assert hash(Frozen(1, "a")) == hash(Frozen(1, "a")) == hash((1, "a"))
    else:
        assert plain.__hash__ is None and lean.__hash__ is None  # mutable and comparable: unhashable


@pytest.mark.parametrize("call, message", [
    (lambda cls: cls(), "missing required argument: 'x'"),
    (lambda cls: cls(1, 2, [], None, 5), "takes 4 positional arguments but 5 were given"),
    (lambda cls: cls(1, x=2), "multiple values for argument 'x'"),
    (lambda cls: cls(1, z=2), "unexpected keyword argument 'z'"),
])
def test_a_wrong_call_is_a_type_error_as_with_dataclass(call, message):
    plain, lean = both()
    with pytest.raises(TypeError):
        call(plain)
    with pytest.raises(TypeError, match=message):
        call(lean)


def test_frozen_refuses_assignment_and_deletion():
    _, lean = both(frozen=True)
    point = lean(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del point.x
    assert point.x == 1


def test_dataclasses_functions_work_on_it():
    _, lean = both(frozen=True)
    point = lean(1, tags=["a"])
    assert dataclasses.is_dataclass(point)
    assert [f.name for f in dataclasses.fields(point)] == ["x", "y", "tags", "note"]
    assert dataclasses.replace(point, y=5) == lean(1, 5, ["a"])
    assert dataclasses.asdict(point) == {"x": 1, "y": 2, "tags": ["a"], "note": None}
    assert pickle.loads(pickle.dumps(Frozen(1, "a"))) == Frozen(1, "a")  # unpickled without __setattr__


def test_kw_only_and_post_init():
    @lean_dataclass(frozen=True, kw_only=True)
    class Span:
        start: int
        stop: int

        def __post_init__(self):
            if self.stop < self.start:
                raise ValueError("stop before start")

    assert Span(start=1, stop=2).stop == 2
    with pytest.raises(TypeError, match="takes 0 positional"):
        Span(1, 2)
    with pytest.raises(ValueError, match="stop before start"):
        Span(start=2, stop=1)


def test_eq_false_keeps_identity_and_a_class_keeps_its_own_methods():
    @lean_dataclass(frozen=True, eq=False)
    class Handle:
        name: str

        def __repr__(self):
            return f"<{self.name}>"

    a = Handle("a")
    assert a != Handle("a") and a == a and len({a, Handle("a")}) == 2  # identity, as object's
    assert repr(a) == "<a>"


def test_a_recursive_value_repr_does_not_recurse_forever():
    @lean_dataclass
    class Node:
        children: list = field(default_factory=list)

    node = Node()
    node.children.append(node)
    assert repr(node).endswith(".Node(children=[...])")  # the qualified name, as dataclass's
