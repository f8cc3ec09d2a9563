"""SLURM's host lists (``gpu[001-128,200],login1``): read, expanded within a bound, and written back. Pure.

The syntax is SLURM's own (``slurm_hostlist_create``; ``scontrol show hostnames`` / ``scontrol show hostlist``):
items are separated by commas outside brackets; an item may hold bracket groups of numbers and ranges, each
expanded in turn (``r[1-2]n[1-2]`` is ``r1n1,r1n2,r2n1,r2n2``); a range keeps the zero padding of its low bound
(``[08-10]`` is ``08,09,10``). Every reader names the variable or flag it read (``what``) in its one-line error,
and nothing here expands more than the caller's bound: ``n[0-9999999]`` is refused, not built.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Tuple

from bootstrap.doors import outbound
from bootstrap.doors.errors import ConfigError

MAX_HOSTS = 65536  # the default bound of an expansion: more nodes than any cluster a job spans today
MAX_TEXT = 1 << 20  # characters of a host list read at all
_NAME = re.compile(r"[A-Za-z0-9._-]+", re.ASCII)  # a host name's characters (RFC 1123, and SLURM's "_")


def split_items(text: str, what: str = "the host list") -> List[str]:
    """The list's top-level items (``a[1-2],b`` -> ``a[1-2]``, ``b``), brackets checked."""
    if len(text) > MAX_TEXT:
        raise ConfigError(f"{what} is {len(text)} characters long; a host list is read up to {MAX_TEXT}.")
    items, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise ConfigError(f"{what}={_shown(text)} has a '[' inside brackets: write one range per group.")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ConfigError(f"{what}={_shown(text)} has an unmatched ']'.")
        elif char == "," and depth == 0:
            items.append(text[start:index])
            start = index + 1
    if depth != 0:
        raise ConfigError(f"{what}={_shown(text)} has an unmatched '['.")
    items.append(text[start:])
    return [item.strip() for item in items if item.strip()]


def range_bounds(part: str, group: str, what: str = "the host list") -> Tuple[str, str]:
    """``"08-10"`` -> ``("08", "10")``, ``"7"`` -> ``("7", "7")``; a range that runs backwards is refused."""
    low, _, high = part.partition("-")
    if not re.fullmatch(r"\d{1,18}", low, re.ASCII) or (high and not re.fullmatch(r"\d{1,18}", high, re.ASCII)):
        raise ConfigError(f"Cannot read the host range [{_shown(group)}] in {what}: write ranges as "
                          f"[1-4,7] (SLURM's syntax).")
    if high and int(high) < int(low):
        raise ConfigError(f"The host range [{_shown(group)}] in {what} runs backwards: write [{high}-{low}].")
    return low, high or low


def _tokens(item: str, what: str) -> List[Tuple[str, bool]]:
    """An item as (text, is_group) tokens: ``r[1-2]n`` -> [("r", False), ("1-2", True), ("n", False)]."""
    tokens: List[Tuple[str, bool]] = []
    for literal, group in re.findall(r"([^\[\]]*)(?:\[([^\]]*)\])?", item):
        if literal:
            if not _NAME.fullmatch(literal):
                raise ConfigError(f"{what}: {_shown(literal)} is not a host name (letters, digits, '.', '-', '_').")
            tokens.append((literal, False))
        if group:
            tokens.append((group, True))
    return tokens


def _group_size(group: str, what: str) -> int:
    total = 0
    for part in group.split(","):
        low, high = range_bounds(part.strip(), group, what)
        total += int(high) - int(low) + 1
    return total


def _group_values(group: str, what: str) -> List[str]:
    values: List[str] = []
    for part in group.split(","):
        low, high = range_bounds(part.strip(), group, what)
        width = len(low)
        values.extend(str(number).zfill(width) for number in range(int(low), int(high) + 1))
    return values


def count(text: str, what: str = "the host list") -> int:
    """How many hosts ``text`` names (duplicates counted), without expanding it."""
    total = 0
    for item in split_items(text, what):
        size = 1
        for token, is_group in _tokens(item, what):
            if is_group:
                size *= _group_size(token, what)
        total += size
    return total


def expand(text: str, what: str = "the host list", limit: int = MAX_HOSTS) -> List[str]:
    """Every host of ``text`` in SLURM's order, or one ConfigError naming ``what`` and the fix.

    Refused before anything is built when the list names more than ``limit`` hosts."""
    size = count(text, what)
    if size > limit:
        raise ConfigError(f"{what} names {size} hosts; at most {limit} are read. Check the ranges.")
    hosts: List[str] = []
    for item in split_items(text, what):
        names = [""]
        for token, is_group in _tokens(item, what):
            choices = _group_values(token, what) if is_group else [token]
            names = [name + choice for name in names for choice in choices]
        hosts.extend(names)
    return hosts


def compress(hosts: Iterable[str]) -> str:
    """Hosts in SLURM's compact form, each name once, sorted: ``node3,node1,node7`` -> ``node[1,3,7]``.

    Names ending in digits are grouped by their prefix and the digits' width (``n08`` and ``n10`` join,
    ``n9`` stays apart, as SLURM keeps them); ``sbatch --exclude`` and ``scontrol`` read the result."""
    groups: Dict[Tuple[str, int], List[int]] = {}
    plain: List[str] = []
    for host in sorted(set(hosts)):
        match = re.fullmatch(r"(.*?)(\d+)", host, re.ASCII)
        if match is None:
            plain.append(host)
            continue
        prefix, digits = match.groups()
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        groups.setdefault((prefix, width), []).append(int(digits))
    for (prefix, width), numbers in list(groups.items()):  # n08 and n10 share a width: n[08-10], as SLURM joins them
        natural = groups.get((prefix, 0), []) if width else []
        same_width = [number for number in natural if len(str(number)) == width]
        if same_width:
            numbers.extend(same_width)
            groups[(prefix, 0)] = [number for number in natural if len(str(number)) != width]
    groups = {key: numbers for key, numbers in groups.items() if numbers}
    out = list(plain)
    for (prefix, width), numbers in sorted(groups.items()):
        numbers = sorted(set(numbers))
        if len(numbers) == 1:
            out.append(f"{prefix}{str(numbers[0]).zfill(width)}")
            continue
        runs, start = [], numbers[0]
        for previous, number in zip(numbers, numbers[1:] + [None]):
            if number is None or number != previous + 1:
                low, high = str(start).zfill(width), str(previous).zfill(width)
                runs.append(low if start == previous else f"{low}-{high}")
                if number is not None:
                    start = number
        out.append(f"{prefix}[{','.join(runs)}]")
    return ",".join(sorted(out))


def _shown(text: str) -> str:
    return repr(outbound.shown(text[:80]) + ("..." if len(text) > 80 else ""))
