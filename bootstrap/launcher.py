"""How was this process started? Pure detection from environment variables.

:data:`DETECTORS` is an ordered table: the first detector that recognises the
environment wins, so the order is the precedence. Adding a launcher means one
function and one row. Nothing here opens a connection: a :class:`Launch` checks
itself when it is built, so inconsistent values fail before any is tried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from bootstrap.textenum import TextEnum
from bootstrap.errors import ConfigError

# The port range for a port derived from a job id: above the well-known and
# registered ranges most services use, below the kernel's ephemeral range (32768+).
DERIVED_PORT_BASE = 20000
DERIVED_PORT_SPAN = 10000


class Launcher(TextEnum):
    single = "single"  # one process, nothing started it as a rank
    torchrun = "torchrun"  # torchrun / torch elastic (and what uses it: accelerate launch)
    lightning = "lightning"  # a rank >= 1 that Lightning's `ddp` strategy re-launched
    submitit = "submitit"  # submitit on SLURM or submitit_local
    slurm = "slurm"  # a task of a plain srun step


@dataclass(frozen=True)
class Launch:
    launcher: Launcher
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    local_world_size: int = 1
    master_addr: Optional[str] = None
    master_port: Optional[int] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "launcher", Launcher(self.launcher))
        name = self.launcher.value
        if self.world_size < 1:
            raise ConfigError(f"{name}: world size {self.world_size} must be at least 1.")
        if not 0 <= self.rank < self.world_size:
            raise ConfigError(f"{name}: rank {self.rank} is outside world size {self.world_size} "
                              f"(RANK must be in [0, WORLD_SIZE)). Check the launcher's variables.")
        if not 1 <= self.local_world_size <= self.world_size:
            raise ConfigError(f"{name}: local world size {self.local_world_size} must be in "
                              f"[1, world size {self.world_size}].")
        if not 0 <= self.local_rank < self.local_world_size:
            raise ConfigError(f"{name}: local rank {self.local_rank} is outside local world size "
                              f"{self.local_world_size} (LOCAL_RANK must be in [0, LOCAL_WORLD_SIZE)).")
        if self.world_size > 1 and self.multi_node and not self.master_addr:
            raise ConfigError(f"{name}: a multi-node world ({self.world_size} ranks, {self.local_world_size} per "
                              "node) needs MASTER_ADDR. Export MASTER_ADDR=<first node's host> or set "
                              "env.distributed.master_addr.")

    @property
    def multi_node(self) -> bool:
        return self.world_size > self.local_world_size

    @property
    def framework_makes_group(self) -> bool:
        """The framework that started the ranks creates the process group itself."""
        return self.launcher is Launcher.lightning

    @property
    def exports_rendezvous(self) -> bool:
        """The launcher sets no torchrun-style variables, so the bootstrap exports them for the job."""
        return self.launcher in (Launcher.submitit, Launcher.slurm)

    def as_dict(self) -> dict:
        return {
            "launcher": self.launcher.value, "rank": self.rank, "local_rank": self.local_rank,
            "world_size": self.world_size, "local_world_size": self.local_world_size,
            "master_addr": self.master_addr, "master_port": self.master_port,
        }


@dataclass(frozen=True)
class SubmititJob:
    """The fields of ``submitit.JobEnvironment()`` the bootstrap uses."""

    job_id: str
    global_rank: int
    local_rank: int
    num_tasks: int
    num_nodes: int
    hostnames: Sequence[str]


@dataclass(frozen=True)
class Hints:
    """What a detector may use beside the environment."""

    submitit_job: Optional[SubmititJob] = None  # what submitit.JobEnvironment() reports, if anything
    master_addr: Optional[str] = None  # env.distributed.master_addr
    master_port: Optional[int] = None  # env.distributed.master_port

    def address(self, environ: Mapping[str, str]) -> Tuple[Optional[str], Optional[int]]:
        """MASTER_ADDR/MASTER_PORT in the environment win over the preset's, as any user setting does."""
        port_text = environ.get("MASTER_PORT")
        port = int(port_text) if port_text and port_text.isdigit() else self.master_port
        return environ.get("MASTER_ADDR") or self.master_addr, port


def _int(environ: Mapping[str, str], name: str, default: Optional[int] = None) -> int:
    if name not in environ and default is not None:
        return default
    value = environ[name]
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r} is not an integer; check how the job was launched.") from None


def _torchrun(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """torchrun / torch elastic: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT."""
    if "RANK" not in environ or "WORLD_SIZE" not in environ:
        return None
    world = _int(environ, "WORLD_SIZE")
    addr, port = hints.address(environ)
    return Launch(Launcher.torchrun, rank=_int(environ, "RANK"), local_rank=_int(environ, "LOCAL_RANK", 0),
                  world_size=world, local_world_size=_int(environ, "LOCAL_WORLD_SIZE", world),
                  master_addr=addr, master_port=port)


def _lightning(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """A rank that Lightning's ``ddp`` strategy re-launched (its _SubprocessScriptLauncher).

    It copies rank 0's environment with LOCAL_RANK, NODE_RANK, WORLD_SIZE (devices x
    nodes), MASTER_ADDR and MASTER_PORT, but no RANK and nothing giving the ranks per
    node. On one node that is the world size; on several, LOCAL_WORLD_SIZE must say it.
    """
    if "RANK" in environ or not {"LOCAL_RANK", "NODE_RANK", "WORLD_SIZE"} <= environ.keys():
        return None
    world, node = _int(environ, "WORLD_SIZE"), _int(environ, "NODE_RANK")
    if "LOCAL_WORLD_SIZE" in environ:
        per_node = _int(environ, "LOCAL_WORLD_SIZE")
    elif node == 0:
        per_node = world  # one node, or the first of several: the rank is the local rank either way
    else:
        raise ConfigError(f"lightning: this rank runs on node {node} of a multi-node run, but nothing says how "
                          "many ranks run per node. Export LOCAL_WORLD_SIZE=<trainer.devices> on every node.")
    local = _int(environ, "LOCAL_RANK")
    addr, port = hints.address(environ)
    return Launch(Launcher.lightning, rank=node * per_node + local, local_rank=local, world_size=world,
                  local_world_size=per_node, master_addr=addr, master_port=port)


def _submitit(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """submitit (real SLURM or submitit_local), through what ``submitit.JobEnvironment()`` reported."""
    job = hints.submitit_job
    if job is None:
        return None
    addr, port = hints.address(environ)
    return Launch(Launcher.submitit, rank=job.global_rank, local_rank=job.local_rank, world_size=job.num_tasks,
                  local_world_size=max(1, job.num_tasks // max(1, job.num_nodes)),
                  master_addr=addr or (job.hostnames[0] if job.hostnames else None),
                  master_port=port or derived_port(job.job_id))


def _srun(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """A task of a plain ``srun`` step: SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS, SLURM_NODELIST, ...

    Only inside a step (SLURM_STEP_ID): a batch script sees SLURM_PROCID and
    SLURM_NTASKS too, but it is one process, whatever --ntasks asked for.
    """
    if not {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID"} <= environ.keys():
        return None
    world = _int(environ, "SLURM_STEP_NUM_TASKS" if "SLURM_STEP_NUM_TASKS" in environ else "SLURM_NTASKS")
    # SLURM_TASKS_PER_NODE is always set (SLURM_NTASKS_PER_NODE only with --ntasks-per-node).
    per_node_text = environ.get("SLURM_STEP_TASKS_PER_NODE") or environ.get("SLURM_TASKS_PER_NODE") \
        or environ.get("SLURM_NTASKS_PER_NODE") or str(world)
    per_node = tasks_on_node(per_node_text, _int(environ, "SLURM_NODEID", 0))
    addr, port = hints.address(environ)
    return Launch(Launcher.slurm, rank=_int(environ, "SLURM_PROCID"), local_rank=_int(environ, "SLURM_LOCALID", 0),
                  world_size=world, local_world_size=per_node,
                  master_addr=addr or first_host(environ.get("SLURM_NODELIST", "")),
                  master_port=port or derived_port(environ.get("SLURM_JOB_ID", "0")))


Detector = Callable[[Mapping[str, str], Hints], Optional[Launch]]

# The precedence: torchrun's own variables describe its workers even inside a SLURM
# allocation or a Lightning app; Lightning's re-launched ranks carry no RANK.
DETECTORS: Tuple[Tuple[Launcher, Detector], ...] = (
    (Launcher.torchrun, _torchrun),
    (Launcher.lightning, _lightning),
    (Launcher.submitit, _submitit),
    (Launcher.slurm, _srun),
)


def detect(
    environ: Mapping[str, str],
    submitit_job: Optional[SubmititJob] = None,
    master_addr: Optional[str] = None,
    master_port: Optional[int] = None,
) -> Launch:
    """The launch the first matching detector reports; a single process when none matches."""
    hints = Hints(submitit_job, master_addr, master_port)
    for _, detector in DETECTORS:
        launch = detector(environ, hints)
        if launch is not None:
            return launch
    addr, port = hints.address(environ)
    return Launch(Launcher.single, master_addr=addr, master_port=port)


def first_host(nodelist: str) -> Optional[str]:
    """The first host of SLURM's compact list, without expanding the rest (``n[0-9999999]`` is cheap)."""
    items = _split_top_level(nodelist)
    if not items:
        return None
    match = re.search(r"\[([^\]]*)\]", items[0])
    if match is None:
        return items[0]
    first = _range_bounds(match.group(1).split(",")[0], match.group(1))[0]
    return first_host(items[0][: match.start()] + first + items[0][match.end():])


def expand_nodelist(nodelist: str) -> List[str]:
    """Expand SLURM's compact host list: ``node[01-03,07],gpu5`` -> node01 node02 node03 node07 gpu5.

    Handles zero padding and several bracket groups in one name (``r[1-2]-n[01-02]``).
    """
    hosts: List[str] = []
    for item in _split_top_level(nodelist):
        hosts.extend(_expand_one(item))
    return hosts


def _split_top_level(text: str) -> List[str]:
    items, depth, current = [], 0, ""
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ConfigError(f"SLURM_NODELIST={text!r} has an unmatched ']'.")
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    if depth != 0:
        raise ConfigError(f"SLURM_NODELIST={text!r} has an unmatched '['.")
    items.append(current)
    return [item for item in items if item]


def _range_bounds(part: str, group: str) -> Tuple[str, str]:
    low, _, high = part.partition("-")
    if not low.isdigit() or (high and not high.isdigit()):
        raise ConfigError(f"Cannot read the host range [{group}] in SLURM_NODELIST.")
    if high and int(high) < int(low):
        raise ConfigError(f"The host range [{group}] in SLURM_NODELIST runs backwards.")
    return low, high or low


def _expand_one(pattern: str) -> List[str]:
    match = re.search(r"\[([^\]]*)\]", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end():]
    names = []
    for part in match.group(1).split(","):
        low, high = _range_bounds(part, match.group(1))
        for number in range(int(low), int(high) + 1):
            names.append(f"{head}{number:0{len(low)}d}")
    return [name + rest for name in names for rest in _expand_one(tail)]


def tasks_on_node(compact: str, node: int) -> int:
    """The task count of ``node`` in SLURM's ``4``, ``2(x3)`` or ``4(x2),2`` (the last for nodes beyond the list).

    Walks the groups without expanding them: ``2(x9999999)`` costs nothing.
    """
    count = 0
    for part in compact.split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if match is None:
            raise ConfigError(f"Cannot read the tasks per node {compact!r} (SLURM_TASKS_PER_NODE).")
        count, repeat = int(match.group(1)), int(match.group(2) or 1)
        if node < repeat:
            return count
        node -= repeat
    return count


def derived_port(job_id: str) -> int:
    digits = re.sub(r"\D", "", job_id) or "0"
    return DERIVED_PORT_BASE + int(digits) % DERIVED_PORT_SPAN


def peek(environ: Mapping[str, str]) -> Launch:
    """:func:`detect` without the preset's hints, for what is decided before a job's preset is
    read (the run directory, who writes a sweep's summary). Inconsistent variables give a
    single process here; the job's start reports them."""
    try:
        return detect(environ)
    except ConfigError:
        return Launch(Launcher.single)
