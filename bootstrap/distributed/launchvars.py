"""Reading the values launchers set: strict whole numbers, SLURM's lists and job ids, a port derived from one. Pure.

Nothing here expands what could be huge (``n[0-9999999]``, ``2(x9999999)``), and every value that
cannot be read is refused with a ConfigError naming the variable, its value and the fix.
"""

from __future__ import annotations

import functools
import re
from typing import Mapping, Optional, Sequence, Tuple

from bootstrap.distributed import hostlist
from bootstrap.doors.errors import ConfigError

# The port range for a port derived from a job id: above the well-known and
# registered ranges most services use, below the kernel's ephemeral range (32768+).
DERIVED_PORT_BASE = 20000
DERIVED_PORT_SPAN = 10000
MAX_PORT = 65535
MAX_RANKS = 2**31 - 1  # torch holds ranks and world sizes in a C int
_NODELIST = "SLURM_NODELIST"


def _quoted(name: str, value: str, limit: int = 24) -> str:
    """A variable's value as a message quotes it: masked where its name says secret, cut when long."""
    from bootstrap.doors.masking import masked

    text = masked(name, value)
    return f"{text[:limit]!r}... ({len(text)} characters)" if len(text) > limit else repr(text)


def whole_number(name: str, text: str, low: int, high: int, fix: str = "") -> int:
    """``text`` as an integer in [low, high], or a ConfigError naming the variable, its value and the fix.

    Strict on purpose: only ASCII digits. ``int()`` would also take ``" 2"``, ``"+2"``, ``"2_0"`` and
    other scripts' digits, which the other programs that read the variable may not; a value the
    bootstrap reads must be one every reader reads the same way."""
    text = text.strip(" \t\n")  # as torch's int() reads it: a ConfigMap's trailing newline is no error
    digits = text.lstrip("0") or ("0" if text else "")
    if text.isascii() and text.isdigit() and len(digits) <= len(str(high)) and low <= int(digits) <= high:
        return int(digits)
    what = "a TCP port" if name.endswith("_PORT") else "a whole number"
    fix = fix or "It comes from the launcher: check how the job was started, or unset it if you exported it."
    raise ConfigError(f"{name}={_quoted(name, text)} is not {what} from {low} to {high}. {fix}")


def count(environ: Mapping[str, str], name: str, default: Optional[int] = None) -> int:
    """A rank, a size or a count from the launcher's variables (see :func:`whole_number`)."""
    if name not in environ and default is not None:
        return default
    return whole_number(name, environ[name], 0, MAX_RANKS)


@functools.lru_cache(maxsize=64)  # pure; every rank of a dry run asks it of the same list
def first_host(nodelist: str) -> Optional[str]:
    """The first host of SLURM's compact list, without expanding the rest (``n[0-9999999]`` is cheap)."""
    items = hostlist.split_items(nodelist, _NODELIST)
    if not items:
        return None
    match = re.search(r"\[([^\]]*)\]", items[0])
    if match is None:
        return items[0]
    first = hostlist.range_bounds(match.group(1).split(",")[0], match.group(1), _NODELIST)[0]
    return first_host(items[0][: match.start()] + first + items[0][match.end():])


def slurm_job_id(environ: Mapping[str, str]) -> Optional[str]:
    """``<array job>_<task>`` for a task of a job array (as submitit names it), else SLURM_JOB_ID."""
    if environ.get("SLURM_ARRAY_JOB_ID") and environ.get("SLURM_ARRAY_TASK_ID"):
        return f"{environ['SLURM_ARRAY_JOB_ID']}_{environ['SLURM_ARRAY_TASK_ID']}"
    return environ.get("SLURM_JOB_ID") or None


def slurm_attempt(environ: Mapping[str, str]) -> Optional[Tuple[str, int]]:
    """A SLURM job's id (SLURM_JOB_ID, as ``scontrol`` takes it) and its requeues so far (SLURM_RESTART_COUNT, which
    SLURM sets from the first requeue on: 0 where unset); None outside SLURM."""
    job = environ.get("SLURM_JOB_ID")
    return (job, count(environ, "SLURM_RESTART_COUNT", 0)) if job else None


def refuse_a_partial_world(environ: Mapping[str, str], launcher: str, names: Sequence[Tuple[str, str, str, str]],
                            starter: str) -> None:
    """A launcher's rank and size (each of ``names``: rank, size, local rank, local size) set without the local two
    that its ``starter`` sets with them, saying more than one process (or a rank outside the size): no world can form
    from them, and one process is not what they say. A ConfigError naming the variables."""
    for rank_name, size_name, *local in names:
        if all(n in environ for n in local):  # the whole set: its launcher's row read it
            continue
        rank, world = (count(environ, n) if n in environ else None for n in (rank_name, size_name))
        if rank is not None and world is not None and (rank >= world or world > 1):
            said = f"rank {rank} is outside world size {world}" if rank >= world else f"a world of {world} ranks"
            raise ConfigError(f"{launcher}: {said} ({rank_name}={rank}, {size_name}={world}, without "
                              f"{' or '.join(local)}, which {starter} sets with them): start the ranks with {starter}, "
                              f"or unset {rank_name} and {size_name} where they leaked.")


def tasks_on_node(compact: str, node: int) -> int:
    """The task count of ``node`` in SLURM's ``4``, ``2(x3)`` or ``4(x2),2`` (the last for nodes beyond the list).

    Walks the groups without expanding them: ``2(x9999999)`` costs nothing.
    """
    tasks = 0
    for part in compact.split(","):
        match = re.fullmatch(r"(\d{1,9})(?:\(x(\d{1,9})\))?", part.strip(), re.ASCII)
        if match is None:
            raise ConfigError(f"Cannot read the tasks per node {compact!r} (SLURM_TASKS_PER_NODE).")
        tasks, repeat = int(match.group(1)), int(match.group(2) or 1)
        if node < repeat:
            return tasks
        node -= repeat
    return tasks


def derived_port(job_id: str) -> int:
    digits = re.sub(r"[^0-9]", "", job_id)[-9:] or "0"  # the last digits decide the remainder: no huge int
    return DERIVED_PORT_BASE + int(digits) % DERIVED_PORT_SPAN
