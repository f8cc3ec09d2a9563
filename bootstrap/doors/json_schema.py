"""The JSON Schema of ``bootstrap.json``, made from the typed report (:mod:`bootstrap.doors.records`). Pure.

The types are the one source: each section becomes a definition, each field a property of its type, each
status field an ``enum`` (:mod:`bootstrap.doors.statuses`). Numbers carry the bounds the reader checks (a count
is a whole number from 0 to 2**53, any other whole number within 64 bits). A key the schema does not name is
allowed, as the reader ignores it: a report of a later version validates against an earlier schema.

A report validates against the schema of its own ``schema_version``. :data:`OLDER` says what each earlier version
held, as changes to the next version's schema; ``bootstrap schema --version N`` prints version N's.
"""

import copy
import dataclasses
import json
import typing
from typing import Any, Callable, Dict

from bootstrap.doors import records
from bootstrap.doors.textenum import TextEnum
from bootstrap.doors.typed import MAX_COUNT, MAX_INT, Count

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_SCALARS: Dict[Any, Dict[str, Any]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    float: {"type": "number"},
    int: {"type": "integer", "minimum": -MAX_INT, "maximum": MAX_INT - 1},
    Count: {"type": "integer", "minimum": 0, "maximum": MAX_COUNT - 1},
    Any: {},
}


def _of(hint: Any, definitions: Dict[str, Any]) -> Dict[str, Any]:
    """The schema of one field's type; a section's definition is added to ``definitions`` once."""
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    if isinstance(hint, type) and issubclass(hint, TextEnum):
        return {"type": "string", "enum": [member.value for member in hint]}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if hint.__name__ not in definitions:
            definitions[hint.__name__] = {}  # first: a section that refers to itself stops here
            definitions[hint.__name__] = _section(hint, definitions)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union and len(args) == 2 and type(None) in args:
        return {"anyOf": [_of(next(a for a in args if a is not type(None)), definitions), {"type": "null"}]}
    if origin is list:
        return {"type": "array", "items": _of(args[0], definitions)}
    if origin is dict and args[0] is str:
        return {"type": "object", "additionalProperties": _of(args[1], definitions)}
    raise TypeError(f"no schema for {hint!r}")  # a programming error: a test makes every version's schema


def _section(cls: type, definitions: Dict[str, Any]) -> Dict[str, Any]:
    hints = typing.get_type_hints(cls)
    properties, required = {}, []
    for field in dataclasses.fields(cls):
        name = field.metadata.get("json", field.name)
        properties[name] = _of(hints[field.name], definitions)
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            required.append(name)
    schema: Dict[str, Any] = {"type": "object", "description": (cls.__doc__ or cls.__name__).strip().split("\n")[0]}
    schema["properties"] = properties
    if required:
        schema["required"] = required
    return schema


def _current() -> Dict[str, Any]:
    definitions: Dict[str, Any] = {}
    report = _section(records.Report, definitions)
    report["properties"]["schema_version"] = {"const": records.SCHEMA_VERSION}
    report["required"] = ["schema_version"]
    return {"$schema": DIALECT, "title": "bootstrap.json", **report, "$defs": definitions}


def _schema_4(newer: Dict[str, Any]) -> Dict[str, Any]:
    """Version 4 had no links between nodes and no bad nodes in the preflight: no ``preflight.links``,
    ``bad_nodes``, ``on_bad`` or ``restart_count``."""
    older = copy.deepcopy(newer)
    for name in ("links", "bad_nodes", "on_bad", "restart_count"):
        del older["$defs"]["Preflight"]["properties"][name]
    for name in ("PreflightLink", "BadNode"):
        del older["$defs"][name]
    return older


def _schema_3(newer: Dict[str, Any]) -> Dict[str, Any]:
    """Version 3 had no provenance: no ``provenance`` section, no ``timings.provenance_s``."""
    older = copy.deepcopy(newer)
    del older["properties"]["provenance"]
    del older["$defs"]["Timings"]["properties"]["provenance_s"]
    for name in ("Provenance", "Git"):
        del older["$defs"][name]
    return older


def _schema_2(newer: Dict[str, Any]) -> Dict[str, Any]:
    """Version 2 had no preflight check: no ``preflight`` section, no ``timings.preflight_s``, and its
    ``distributed.hang`` was the flight recorder's findings as an object of the same fields, unchecked."""
    older = copy.deepcopy(newer)
    del older["properties"]["preflight"]
    del older["$defs"]["Timings"]["properties"]["preflight_s"]
    for name in ("Preflight", "PreflightRank", "CollectiveSize", "PreflightFinding"):
        del older["$defs"][name]
    older["$defs"]["Distributed"]["properties"]["hang"] = {"anyOf": [{"type": "object"}, {"type": "null"}]}
    del older["$defs"]["Hang"]
    return older


def _schema_1(newer: Dict[str, Any]) -> Dict[str, Any]:
    """Version 1 wrote ``resolved`` as text (``auto -> cpu_debug (no CUDA device)``), a section it had not
    filled as null, the group's end in ``process_group`` (``destroyed``) with no ``teardown``, and no
    comparison of the ranks (``distributed.agreement``)."""
    older = copy.deepcopy(newer)
    properties, defs = older["properties"], older["$defs"]
    properties["resolved"] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    for name in ("found", "threads", "torch", "distributed", "seed", "timings", "job"):
        properties[name] = {"anyOf": [properties[name], {"type": "null"}]}
    distributed = defs["Distributed"]["properties"]
    distributed["process_group"] = {"type": "string", "enum": [*distributed["process_group"]["enum"], "destroyed"]}
    for name in ("teardown", "agreement"):
        del distributed[name]
    for name in ("Agreement", "Difference", "ValueGroup", "Resolved"):
        del defs[name]
    return older


# schema_version -> what brings the next version's schema to this one (the inverse of upgrades.UPGRADES)
OLDER: Dict[int, Callable[[Dict[str, Any]], Dict[str, Any]]] = {4: _schema_4, 3: _schema_3, 2: _schema_2,
                                                                 1: _schema_1}


def report_schema(version: int = records.SCHEMA_VERSION) -> Dict[str, Any]:
    """The JSON Schema of a report of ``version`` (1 to :data:`~bootstrap.doors.records.SCHEMA_VERSION`)."""
    if not 1 <= version <= records.SCHEMA_VERSION:
        raise ValueError(f"{version}: this package knows schema versions 1 to {records.SCHEMA_VERSION}")
    schema = _current()
    for older in range(records.SCHEMA_VERSION - 1, version - 1, -1):
        schema = OLDER[older](schema)
        schema["properties"]["schema_version"] = {"const": older}
    return schema


def text(version: int = records.SCHEMA_VERSION) -> str:
    """The schema as the file ``bootstrap/bootstrap.schema.json`` holds it (version 5) and ``bootstrap schema``
    prints it."""
    return json.dumps(report_schema(version), indent=2) + "\n"
