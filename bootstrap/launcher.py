"""How was this process started? Pure detection from environment variables.

Checked in this order, the first that applies wins:

1. torchrun / torch elastic: ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``,
   ``MASTER_ADDR``, ``MASTER_PORT``.
2. submitit (real SLURM or ``submitit_local``), through ``submitit.JobEnvironment()``
   when submitit is installed; the caller passes what it reports as :class:`SubmititJob`.
3. plain ``srun``: ``SLURM_PROCID``, ``SLURM_LOCALID``, ``SLURM_NTASKS`` (``SLURM_STEP_NUM_TASKS``),
   ``SLURM_TASKS_PER_NODE`` (or ``SLURM_NTASKS_PER_NODE``) with ``SLURM_NODEID``, ``SLURM_NODELIST``;
   only inside an srun step (``SLURM_STEP_ID``), not in the batch script itself.
4. a single process.

Nothing here opens a connection: inconsistent values fail before any is tried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Mapping, Optional, Sequence

from bootstrap.errors import ConfigError

# The port range for a port derived from a job id: above the well-known and
# registered ranges most services use, below the kernel's ephemeral range (32768+).
DERIVED_PORT_BASE = 20000
DERIVED_PORT_SPAN = 10000


@dataclass(frozen=True)
class Launch:
    launcher: str  # "torchrun" | "submitit" | "slurm" | "single"
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    local_world_size: int = 1
    master_addr: Optional[str] = None
    master_port: Optional[int] = None

    @property
    def multi_node(self) -> bool:
        return self.world_size > self.local_world_size

    def as_dict(self) -> dict:
        return {
            "launcher": self.launcher, "rank": self.rank, "local_rank": self.local_rank,
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


def _expand_one(pattern: str) -> List[str]:
    match = re.search(r"\[([^\]]*)\]", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end():]
    names = []
    for part in match.group(1).split(","):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise ConfigError(f"Cannot read the host range [{match.group(1)}] in SLURM_NODELIST.")
        if high and int(high) < int(low):
            raise ConfigError(f"The host range [{match.group(1)}] in SLURM_NODELIST runs backwards.")
        for number in range(int(low), int(high or low) + 1):
            names.append(f"{head}{number:0{len(low)}d}")
    return [name + rest for name in names for rest in _expand_one(tail)]


def _int(environ: Mapping[str, str], name: str) -> int:
    value = environ[name]
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r} is not an integer; check how the job was launched.") from None


def tasks_per_node(compact: str) -> List[int]:
    """SLURM's ``4``, ``2(x3)`` or ``4(x2),2`` -> one task count per node: [4], [2, 2, 2], [4, 4, 2]."""
    counts: List[int] = []
    for part in compact.split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if match is None:
            raise ConfigError(f"Cannot read the tasks per node {compact!r} (SLURM_TASKS_PER_NODE).")
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return counts


def derived_port(job_id: str) -> int:
    digits = re.sub(r"\D", "", job_id) or "0"
    return DERIVED_PORT_BASE + int(digits) % DERIVED_PORT_SPAN


def detect(
    environ: Mapping[str, str],
    submitit_job: Optional[SubmititJob] = None,
    master_addr: Optional[str] = None,
    master_port: Optional[int] = None,
) -> Launch:
    """Work out the launch. ``master_addr``/``master_port`` are the user's overrides
    (``env.distributed.master_addr``); ``MASTER_ADDR``/``MASTER_PORT`` in the
    environment win over values derived from a job, as any user setting does."""
    addr = environ.get("MASTER_ADDR") or master_addr
    port_text = environ.get("MASTER_PORT")
    port = int(port_text) if port_text and port_text.isdigit() else master_port

    if "RANK" in environ and "WORLD_SIZE" in environ:
        world = _int(environ, "WORLD_SIZE")
        launch = Launch(
            "torchrun", rank=_int(environ, "RANK"),
            local_rank=_int(environ, "LOCAL_RANK") if "LOCAL_RANK" in environ else 0,
            world_size=world,
            local_world_size=_int(environ, "LOCAL_WORLD_SIZE") if "LOCAL_WORLD_SIZE" in environ else world,
            master_addr=addr, master_port=port,
        )
    elif submitit_job is not None:
        job = submitit_job
        launch = Launch(
            "submitit", rank=job.global_rank, local_rank=job.local_rank, world_size=job.num_tasks,
            local_world_size=max(1, job.num_tasks // max(1, job.num_nodes)),
            master_addr=addr or (job.hostnames[0] if job.hostnames else None),
            master_port=port or derived_port(job.job_id),
        )
    elif "SLURM_PROCID" in environ and "SLURM_NTASKS" in environ and "SLURM_STEP_ID" in environ:
        # SLURM_STEP_ID: a task of an srun step. A batch script sees SLURM_PROCID and
        # SLURM_NTASKS too, but it is one process, whatever --ntasks asked for.
        hosts = expand_nodelist(environ["SLURM_NODELIST"]) if environ.get("SLURM_NODELIST") else []
        world = _int(environ, "SLURM_STEP_NUM_TASKS" if "SLURM_STEP_NUM_TASKS" in environ else "SLURM_NTASKS")
        # SLURM_TASKS_PER_NODE is always set (SLURM_NTASKS_PER_NODE only with --ntasks-per-node).
        per_node_text = environ.get("SLURM_STEP_TASKS_PER_NODE") or environ.get("SLURM_TASKS_PER_NODE") \
            or environ.get("SLURM_NTASKS_PER_NODE") or str(world)
        per_node = tasks_per_node(per_node_text)
        node = _int(environ, "SLURM_NODEID") if "SLURM_NODEID" in environ else 0
        launch = Launch(
            "slurm", rank=_int(environ, "SLURM_PROCID"),
            local_rank=_int(environ, "SLURM_LOCALID") if "SLURM_LOCALID" in environ else 0,
            world_size=world,
            local_world_size=per_node[node] if node < len(per_node) else per_node[-1],
            master_addr=addr or (hosts[0] if hosts else None),
            master_port=port or derived_port(environ.get("SLURM_JOB_ID", "0")),
        )
    else:
        return Launch("single", master_addr=addr, master_port=port)
    return validate(launch)


def validate(launch: Launch) -> Launch:
    name = launch.launcher
    if launch.world_size < 1:
        raise ConfigError(f"{name}: world size {launch.world_size} must be at least 1.")
    if not 0 <= launch.rank < launch.world_size:
        raise ConfigError(f"{name}: rank {launch.rank} is outside world size {launch.world_size} "
                          f"(RANK must be in [0, WORLD_SIZE)). Check the launcher's variables.")
    if not 1 <= launch.local_world_size <= launch.world_size:
        raise ConfigError(f"{name}: local world size {launch.local_world_size} must be in "
                          f"[1, world size {launch.world_size}].")
    if not 0 <= launch.local_rank < launch.local_world_size:
        raise ConfigError(f"{name}: local rank {launch.local_rank} is outside local world size "
                          f"{launch.local_world_size} (LOCAL_RANK must be in [0, LOCAL_WORLD_SIZE)).")
    if launch.world_size > 1 and launch.multi_node and not launch.master_addr:
        raise ConfigError(f"{name}: a multi-node world ({launch.world_size} ranks, {launch.local_world_size} per "
                          "node) needs MASTER_ADDR. Export MASTER_ADDR=<first node's host> or set "
                          "env.distributed.master_addr.")
    return launch
