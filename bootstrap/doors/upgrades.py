"""A report of an older ``schema_version``, brought to today's shape before the typed reader reads it
(:func:`bootstrap.doors.records.read_report`). Pure.

Each version's changes to the report's shape are in CHANGELOG.md; what each added, and so what ``bootstrap
diff`` cannot compare with an older report, is :data:`bootstrap.doors.records.ADDED_IN`.
"""

import re
from typing import Any, Dict

_RESOLVED_TEXT = re.compile(r"(?P<source>.+?) -> (?P<preset>.+?)(?: \((?P<reason>.*)\))?", re.DOTALL)


def _from_schema_1(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 1 wrote ``resolved`` as the text ``auto -> cpu_debug (no CUDA device)``, a section it had not
    filled as ``null`` (``threads`` of a job whose checks failed), and the group's end in ``process_group``
    (``destroyed``), where version 2 has ``teardown``."""
    data = {key: value for key, value in data.items() if not (value is None and key in _SECTIONS)}
    resolved = data.get("resolved")
    if isinstance(resolved, str):
        match = _RESOLVED_TEXT.fullmatch(resolved)
        data["resolved"] = {"from": match["source"], "preset": match["preset"], "reason": match["reason"] or ""} \
            if match else {"from": "auto", "preset": resolved, "reason": ""}
    distributed = data.get("distributed")
    if isinstance(distributed, dict) and distributed.get("process_group") == "destroyed":
        data["distributed"] = {**distributed, "process_group": "created", "teardown": "destroyed"}
    return data


# schema_version -> what brings a report of that version one version up; applied in turn, oldest first.
# 3 added the preflight section, 4 the provenance (absent before: null), 5 the preflight's links and bad nodes
# (absent: none)
UPGRADES = {1: _from_schema_1, 2: lambda data: data, 3: lambda data: data, 4: lambda data: data}
_SECTIONS = frozenset(("found", "threads", "torch", "distributed", "seed", "timings", "job"))


def upgraded(data: Any) -> Any:
    """Parsed JSON of any schema version this package has written, in today's shape; its ``schema_version``
    stays the one it was written with. Anything else comes back as it is: the typed reader says what is wrong."""
    if type(data) is not dict:
        return data
    version = data.get("schema_version")
    while type(version) is int and version in UPGRADES:
        data, version = UPGRADES[version](data), version + 1
    return data
