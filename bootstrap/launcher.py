"""How was this process started? Pure detection from environment variables.

:data:`DETECTORS` is an ordered table: the first detector that recognises the
environment wins, so the order is the precedence. Adding a launcher means one
function and one row. Nothing here opens a connection: a :class:`Launch` checks
itself when it is built, so inconsistent values fail before any is tried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from bootstrap.errors import ConfigError
from bootstrap.textenum import TextEnum

# The port range for a port derived from a job id: above the well-known and
# registered ranges most services use, below the kernel's ephemeral range (32768+).
DERIVED_PORT_BASE = 20000
DERIVED_PORT_SPAN = 10000
MAX_PORT = 65535
MAX_RANKS = 2**31 - 1  # torch holds ranks and world sizes in a C int
# What torchrun takes for --nproc-per-node besides a count (Kubeflow passes nprocPerNode on as
# PET_NPROC_PER_NODE): torchrun counts the processes itself, so they say nothing to python started directly.
TORCHRUN_COUNT_WORDS = ("auto", "cpu", "gpu", "xpu")


class Launcher(TextEnum):
    single = "single"  # one process, nothing started it as a rank
    torchrun = "torchrun"  # torchrun / torch elastic (and what uses it: accelerate launch, torchrun in a pod)
    ray = "ray"  # a Ray Train worker: Ray set the variables and made the process group
    ray_task = "ray_task"  # one process in a Ray worker: a task or actor (hydra-ray-launcher's jobs)
    kubeflow = "kubeflow"  # python started directly in a Kubeflow PyTorchJob pod
    lightning = "lightning"  # a rank >= 1 that Lightning's `ddp` strategy re-launched
    mpi = "mpi"  # mpirun / mpiexec: Open MPI, MPICH, Intel MPI, MVAPICH
    submitit = "submitit"  # submitit on SLURM or submitit_local
    slurm = "slurm"  # a task of a plain srun step
    env = "env"  # torchrun-style variables set by hand or by another tool


@dataclass(frozen=True)
class Launch:
    launcher: Launcher
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    local_world_size: int = 1
    node_rank: int = 0
    master_addr: Optional[str] = None
    master_port: Optional[int] = None
    job_id: Optional[str] = None  # the scheduler's id for the job (all its ranks share it), if it has one
    # A single process's MASTER_PORT that is not a port: refused only where a group is made (see detect)
    port_problem: Optional[str] = None

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
        if self.node_rank < 0:
            raise ConfigError(f"{name}: node rank {self.node_rank} is negative.")
        if self.world_size > 1 and self.multi_node and not self.master_addr:
            hint = " MPI gives no master address; pass it with mpirun -x MASTER_ADDR." \
                if self.launcher is Launcher.mpi else ""
            raise ConfigError(f"{name}: a multi-node world ({self.world_size} ranks, {self.local_world_size} per "
                              "node) needs MASTER_ADDR. Export MASTER_ADDR=<first node's host> on every node or "
                              f"set env.distributed.master_addr.{hint}")

    @property
    def multi_node(self) -> bool:
        return self.world_size > self.local_world_size

    @property
    def framework_makes_group(self) -> bool:
        """The framework that started the ranks creates the process group itself."""
        return self.launcher in (Launcher.lightning, Launcher.ray)

    @property
    def exports_rendezvous(self) -> bool:
        """The launcher sets no (or not all) torchrun-style variables: the bootstrap exports them for the job."""
        return self.launcher in (Launcher.mpi, Launcher.kubeflow, Launcher.submitit, Launcher.slurm)

    def as_dict(self) -> dict:
        return {
            "launcher": self.launcher.value, "rank": self.rank, "local_rank": self.local_rank,
            "world_size": self.world_size, "local_world_size": self.local_world_size, "node_rank": self.node_rank,
            "master_addr": self.master_addr, "master_port": self.master_port, "job_id": self.job_id,
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
    node: int = 0


@dataclass(frozen=True)
class Hints:
    """What a detector may use beside the environment."""

    submitit_job: Optional[SubmititJob] = None  # what submitit.JobEnvironment() reports, if anything
    master_addr: Optional[str] = None  # env.distributed.master_addr
    master_port: Optional[int] = None  # env.distributed.master_port

    def address(self, environ: Mapping[str, str]) -> Tuple[Optional[str], Optional[int]]:
        """MASTER_ADDR/MASTER_PORT in the environment win over the preset's, as any user setting does.

        A MASTER_PORT that is not a port is refused, not passed over: torch (Lightning, accelerate, the
        task's own init_process_group) would read it later and fail with a bare ``int()`` error."""
        port = self.master_port
        if environ.get("MASTER_PORT"):  # empty: unset, as a shell's `MASTER_PORT= cmd` means
            port = whole_number("MASTER_PORT", environ["MASTER_PORT"], 1, MAX_PORT, fix=(
                "Export a free port (MASTER_PORT=29500), or unset it: the preset's distributed.master_port "
                "is used then, or a port derived from the job id."))
        return environ.get("MASTER_ADDR") or self.master_addr, port


def _quoted(name: str, value: str, limit: int = 24) -> str:
    """A variable's value as a message quotes it: masked where its name says secret, cut when long."""
    from bootstrap.masking import masked

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


def _int(environ: Mapping[str, str], name: str, default: Optional[int] = None) -> int:
    """A rank, a size or a count from the launcher's variables (see :func:`whole_number`)."""
    if name not in environ and default is not None:
        return default
    return whole_number(name, environ[name], 0, MAX_RANKS)


def _torchrun_style(launcher: Launcher, environ: Mapping[str, str], hints: Hints, node_var: str = "GROUP_RANK",
                    job_id: Optional[str] = None) -> Launch:
    """RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and a node rank)."""
    world = _int(environ, "WORLD_SIZE")
    local_world = _int(environ, "LOCAL_WORLD_SIZE", world)
    rank = _int(environ, "RANK")
    addr, port = hints.address(environ)
    return Launch(launcher, rank=rank, local_rank=_int(environ, "LOCAL_RANK", 0), world_size=world,
                  local_world_size=local_world, node_rank=_int(environ, node_var, rank // max(1, local_world)),
                  master_addr=addr, master_port=port, job_id=job_id)


def _has_rank(environ: Mapping[str, str]) -> bool:
    return "RANK" in environ and "WORLD_SIZE" in environ


def _torchrun(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """torchrun / torch elastic: its variables, and TORCHELASTIC_RUN_ID, which only it sets."""
    if not (_has_rank(environ) and "TORCHELASTIC_RUN_ID" in environ):
        return None
    return _torchrun_style(Launcher.torchrun, environ, hints, job_id=environ["TORCHELASTIC_RUN_ID"])


def _ray(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """A Ray Train worker: Ray's TorchTrainer sets the torchrun-style variables and NODE_RANK in a Ray
    worker process (RAY_RAYLET_PID), and makes the process group before the training function runs."""
    if not (_has_rank(environ) and "RAY_RAYLET_PID" in environ):
        return None
    return _torchrun_style(Launcher.ray, environ, hints, node_var="NODE_RANK", job_id=environ.get("RAY_JOB_ID"))


def _ray_task(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """One process in a Ray worker (RAY_RAYLET_PID) without rank variables: a task or an actor, as
    hydra-ray-launcher runs each job."""
    if "RAY_RAYLET_PID" not in environ or _has_rank(environ):
        return None
    return Launch(Launcher.ray_task, master_addr=hints.master_addr, master_port=hints.master_port,
                  job_id=environ.get("RAY_JOB_ID"))


def exported_by_launcher(launch: Launch, environ: Mapping[str, str], own_cpus: Optional[int]) -> Dict[str, str]:
    """The variables in ``environ`` that the launcher itself set, not the user: each ranks below the
    preset and is reported as the launcher's.

    Ray sets OMP_NUM_THREADS to the CPUs it assigned a task (``own_cpus``) where it is unset, and
    torchrun sets it to 1 for more than one process per node where it is unset. Neither marks it: a
    value equal to theirs is taken as theirs, so a user's own equal value ranks below the preset too
    (docs/distributed.md says to set env.threads.intra_op to keep it)."""
    omp = environ.get("OMP_NUM_THREADS")
    if omp is None:
        return {}
    if launch.launcher in (Launcher.ray, Launcher.ray_task) and own_cpus is not None and omp == str(own_cpus):
        return {"OMP_NUM_THREADS": omp}
    if launch.launcher is Launcher.torchrun and launch.local_world_size > 1 and omp == "1":
        return {"OMP_NUM_THREADS": omp}
    return {}


def _kubeflow(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """Python started directly in a Kubeflow PyTorchJob pod (training-operator's envvar.go).

    The operator sets RANK (the pod's index), WORLD_SIZE (replicas x processes per pod),
    MASTER_ADDR, MASTER_PORT and PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK for torchrun.
    With one process per pod, RANK is the process rank; with more, it is a node index, and
    only torchrun inside the pod can start and number the processes.
    """
    if not (_has_rank(environ) and ({"PET_NNODES", "PET_NPROC_PER_NODE"} & environ.keys())):
        return None
    per_pod = environ.get("PET_NPROC_PER_NODE", "1")
    if per_pod not in TORCHRUN_COUNT_WORDS and whole_number(
            "PET_NPROC_PER_NODE", per_pod, 1, MAX_RANKS,
            fix="Set the PyTorchJob's nprocPerNode to a count (1 when python is started directly), "
                "or to auto.") > 1:
        raise ConfigError(f"kubeflow: this PyTorchJob runs {per_pod} processes per pod (PET_NPROC_PER_NODE), but "
                          f"python was started directly, so RANK={environ['RANK']} is the pod's index, not a process "
                          "rank. Start the processes with torchrun inside the pod (command: torchrun "
                          "train_stub.py ...): it reads the PET_* variables and numbers every process.")
    addr, port = hints.address(environ)
    rank = _int(environ, "RANK")
    return Launch(Launcher.kubeflow, rank=rank, world_size=_int(environ, "WORLD_SIZE"),
                  node_rank=_int(environ, "PET_NODE_RANK", rank), master_addr=addr, master_port=port)


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
                  local_world_size=per_node, node_rank=node, master_addr=addr, master_port=port)


# Each MPI's variables: (rank, size, local rank, local size), in the order they are tried.
MPI_VARIABLES: Tuple[Tuple[str, str, str, str], ...] = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),  # MPICH (Hydra), Intel MPI
)
# What names one mpirun (all its ranks share it): Open MPI's PMIx namespace and job id, MPICH's.
MPI_JOB_VARIABLES = ("PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "PMI_JOBID", "MPIRUN_ID")


def _mpi(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """A rank that mpirun (or mpiexec) started. MPI gives no master address: on one node it is
    127.0.0.1; on several, MASTER_ADDR (or env.distributed.master_addr) must say it."""
    names = next((names for names in MPI_VARIABLES if all(n in environ for n in names)), None)
    if names is None:
        return None
    rank, world, local, local_world = (_int(environ, n) for n in names)
    job_id = next((environ[n] for n in MPI_JOB_VARIABLES if environ.get(n)), None)
    addr, port = hints.address(environ)
    if addr is None and world == local_world:
        addr = "127.0.0.1"
    # Open MPI maps ranks by slot (node by node) unless told otherwise; it gives no node index.
    return Launch(Launcher.mpi, rank=rank, local_rank=local, world_size=world, local_world_size=local_world,
                  node_rank=rank // max(1, local_world), master_addr=addr,
                  master_port=port or derived_port(job_id or "0"), job_id=job_id)


def _submitit(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """submitit (real SLURM or submitit_local), through what ``submitit.JobEnvironment()`` reported."""
    job = hints.submitit_job
    if job is None:
        return None
    addr, port = hints.address(environ)
    return Launch(Launcher.submitit, rank=job.global_rank, local_rank=job.local_rank, world_size=job.num_tasks,
                  local_world_size=max(1, job.num_tasks // max(1, job.num_nodes)), node_rank=job.node,
                  master_addr=addr or (job.hostnames[0] if job.hostnames else None),
                  master_port=port or derived_port(job.job_id), job_id=job.job_id)


def slurm_job_id(environ: Mapping[str, str]) -> Optional[str]:
    """``<array job>_<task>`` for a task of a job array (as submitit names it), else SLURM_JOB_ID."""
    if environ.get("SLURM_ARRAY_JOB_ID") and environ.get("SLURM_ARRAY_TASK_ID"):
        return f"{environ['SLURM_ARRAY_JOB_ID']}_{environ['SLURM_ARRAY_TASK_ID']}"
    return environ.get("SLURM_JOB_ID") or None


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
    node = _int(environ, "SLURM_NODEID", 0)
    job_id = slurm_job_id(environ)
    addr, port = hints.address(environ)
    return Launch(Launcher.slurm, rank=_int(environ, "SLURM_PROCID"), local_rank=_int(environ, "SLURM_LOCALID", 0),
                  world_size=world, local_world_size=tasks_on_node(per_node_text, node), node_rank=node,
                  master_addr=addr or first_host(environ.get("SLURM_NODELIST", "")),
                  master_port=port or derived_port(environ.get("SLURM_JOB_ID", "0")),
                  job_id=f"{job_id}.{environ['SLURM_STEP_ID']}" if job_id else None)


def _env(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """torchrun-style variables that no known launcher set: a script, a scheduler, a person."""
    return _torchrun_style(Launcher.env, environ, hints, node_var="NODE_RANK") if _has_rank(environ) else None


Detector = Callable[[Mapping[str, str], Hints], Optional[Launch]]

# The precedence, first match wins. torchrun's own variables describe its workers even in a
# SLURM allocation, a Kubeflow pod or a Lightning app; Ray and Kubeflow set torchrun-style
# variables with a mark of their own; Lightning's re-launched ranks carry no RANK; mpirun
# inside a SLURM allocation leaves the allocation's SLURM_* variables in its ranks.
DETECTORS: Tuple[Tuple[Launcher, Detector], ...] = (
    (Launcher.torchrun, _torchrun),
    (Launcher.ray, _ray),
    (Launcher.ray_task, _ray_task),
    (Launcher.kubeflow, _kubeflow),
    (Launcher.lightning, _lightning),
    (Launcher.mpi, _mpi),
    (Launcher.submitit, _submitit),
    (Launcher.slurm, _srun),
    (Launcher.env, _env),
)


def detect(
    environ: Mapping[str, str],
    submitit_job: Optional[SubmititJob] = None,
    master_addr: Optional[str] = None,
    master_port: Optional[int] = None,
) -> Launch:
    """The launch the first matching detector reports; a single process when none matches
    (inside a SLURM job, with the job's id: an array task's run directory is named after it)."""
    hints = Hints(submitit_job, master_addr, master_port)
    for _, detector in DETECTORS:
        launch = detector(environ, hints)
        if launch is not None:
            return launch
    try:
        addr, port = hints.address(environ)
    except ConfigError as problem:
        # One process reads MASTER_PORT only to make a group (env.distributed.init=always). Kubernetes
        # puts `MASTER_PORT=tcp://10.0.0.5:7077` in every pod of a namespace with a Service named
        # `master`: that must not stop a job that never makes one.
        return Launch(Launcher.single, master_addr=environ.get("MASTER_ADDR") or hints.master_addr,
                      master_port=hints.master_port, job_id=slurm_job_id(environ), port_problem=str(problem))
    return Launch(Launcher.single, master_addr=addr, master_port=port, job_id=slurm_job_id(environ))


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
    if not re.fullmatch(r"\d{1,18}", low, re.ASCII) or (high and not re.fullmatch(r"\d{1,18}", high, re.ASCII)):
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
        match = re.fullmatch(r"(\d{1,9})(?:\(x(\d{1,9})\))?", part.strip(), re.ASCII)
        if match is None:
            raise ConfigError(f"Cannot read the tasks per node {compact!r} (SLURM_TASKS_PER_NODE).")
        count, repeat = int(match.group(1)), int(match.group(2) or 1)
        if node < repeat:
            return count
        node -= repeat
    return count


def derived_port(job_id: str) -> int:
    digits = re.sub(r"[^0-9]", "", job_id)[-9:] or "0"  # the last digits decide the remainder: no huge int
    return DERIVED_PORT_BASE + int(digits) % DERIVED_PORT_SPAN


def peek(environ: Mapping[str, str]) -> Launch:
    """:func:`detect` without the preset's hints, for what is decided before a job's preset is
    read (the run directory, who writes a sweep's summary). Inconsistent variables give a
    single process here; the job's start reports them."""
    try:
        return detect(environ)
    except ConfigError:
        return Launch(Launcher.single)
