"""Every installed distribution as ``name==version`` (what ``pip freeze`` would name), its digest, and
what changed between two such lists. :func:`installed` reads the environment; the rest is pure."""

from __future__ import annotations

import hashlib
import re
from typing import Dict, Iterable, List, Optional, Tuple

_SEPARATORS = re.compile(r"[-_.]+")


def normalized(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503): ``Hydra_Core`` is ``hydra-core``."""
    return _SEPARATORS.sub("-", name).lower()


def installed() -> List[str]:
    """``name==version`` for every distribution Python would import, sorted; the first on ``sys.path``
    wins where two copies are installed, as for an import."""
    from importlib import metadata

    seen: Dict[str, str] = {}
    for distribution in metadata.distributions():
        name = distribution.metadata["Name"] if distribution.metadata else None
        if name:
            seen.setdefault(normalized(name), distribution.version)
    return [f"{name}=={version}" for name, version in sorted(seen.items())]


def digest(lines: Iterable[str]) -> str:
    """sha256 of the lines, one per line: two jobs with the same packages have the same digest."""
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def text(lines: List[str]) -> str:
    """packages.txt's content: one ``name==version`` a line."""
    return "".join(f"{line}\n" for line in lines)


def parse(content: str) -> Dict[str, str]:
    """packages.txt -> {name: version}; a line that is not ``name==version`` is skipped."""
    found = {}
    for line in content.splitlines():
        name, separator, version = line.strip().partition("==")
        if separator and name and version:
            found[normalized(name)] = version
    return found


Change = Tuple[str, Optional[str], Optional[str]]  # (name, version in A or None, version in B or None)


def compare(a: Dict[str, str], b: Dict[str, str]) -> List[Change]:
    """Each package added, removed or changed from ``a`` to ``b`` (name -> version), by name."""
    return [(name, a.get(name), b.get(name)) for name in sorted(a.keys() | b.keys()) if a.get(name) != b.get(name)]
