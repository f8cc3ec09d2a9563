"""Every installed distribution as ``name==version`` (what ``pip freeze`` would name), its digest, and
what changed between two such lists. :func:`installed` reads the environment; the rest is pure."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from bootstrap.doors import inbound, masking

_SEPARATORS = re.compile(r"[-_.]+")


def normalized(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503): ``Hydra_Core`` is ``hydra-core``."""
    return _SEPARATORS.sub("-", name).lower()


def installed() -> List[str]:
    """``name==version`` for every distribution on ``sys.path``, sorted by name; the first on the path wins
    where two copies are installed, as for an import.

    Read from the metadata directories' names (``torch-2.13.0+cpu.dist-info``: what pip names them), which is
    what ``importlib.metadata`` finds, in about 1 ms where parsing each METADATA file takes 150 ms for 200
    packages; a directory whose name holds no version (a legacy ``name.egg-info``) has its file read."""
    seen: Dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # a zip, a missing directory
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            stem = name.rsplit(".", 1)[0]
            distribution, _, version = stem.partition("-")
            version = version.split("-py")[0]  # name-1.0-py3.11.egg-info
            if not version:
                distribution, version = _from_file(Path(entry or ".") / name, distribution)
            if distribution and version:
                seen.setdefault(normalized(distribution), version)
    return [f"{name}=={version}" for name, version in sorted(seen.items())]


def _from_file(directory: Path, name: str) -> Tuple[str, str]:
    """(name, version) from the headers of a metadata directory's METADATA or PKG-INFO; ("", "") if neither."""
    for file in ("METADATA", "PKG-INFO"):
        try:
            head = inbound.read_log_head(directory / file, 64 * 1024)
        except (OSError, inbound.Unreadable):
            continue
        headers = dict(line.split(": ", 1) for line in inbound.lines(head)[:40] if ": " in line)
        return headers.get("Name", name), headers.get("Version", "")
    return "", ""


def digest(lines: Iterable[str]) -> str:
    """sha256 of the lines, one per line: two jobs with the same packages have the same digest."""
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def text(lines: List[str]) -> str:
    """packages.txt's content: one ``name==version`` a line, each version as it may be shown (:func:`shown_version`)."""
    shown = []
    for line in lines:
        name, separator, version = line.partition("==")
        shown.append(f"{name}=={shown_version(name, version)}" if separator else line)
    return "".join(f"{line}\n" for line in shown)


def shown_version(name: str, version: str) -> str:
    """A package's version as it may be shown: a version's shape (PEP 440) is shown whatever the package's name
    (``google-auth``, ``fastapi``: a keyword in a name says nothing of a version); anything else is a value stored
    under the name, masked as one (``my-api-key==<a token>``)."""
    from packaging.version import InvalidVersion, Version

    try:
        Version(version)
        return version
    except InvalidVersion:
        return masking.masked(name, version)


def parse(content: str) -> Dict[str, str]:
    """packages.txt -> {name: version}; a line that is not ``name==version`` is skipped."""
    found = {}
    for line in inbound.lines(content):  # "\n" alone ends a line: a name holding U+2028 is one line, escaped
        name, separator, version = line.strip().partition("==")
        if separator and name and version:
            found[normalized(name)] = version
    return found


Change = Tuple[str, Optional[str], Optional[str]]  # (name, version in A or None, version in B or None)


def compare(a: Dict[str, str], b: Dict[str, str]) -> List[Change]:
    """Each package added, removed or changed from ``a`` to ``b`` (name -> version), by name."""
    return [(name, a.get(name), b.get(name)) for name in sorted(a.keys() | b.keys()) if a.get(name) != b.get(name)]
