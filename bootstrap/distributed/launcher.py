"""How was this process started? One row per launcher: how it is detected, and every fact the package uses about it.

:data:`LAUNCHERS` is ordered: the first row whose detector recognises the environment wins, and
``single``, last, takes any. The package asks a launch's row (``launch.row.exports_rendezvous``), never
a launcher's name, and :class:`Launcher` (the report's ``distributed.launcher``) is made from the rows'
names: adding a launcher means one detector function and one row.

Detection is pure and opens no connection; a :class:`Launch` checks itself when it is built, so
inconsistent values fail before any is tried. The facts that ask a running framework (submitit's
job, the CPUs Ray assigned, whether this is a Ray worker) are hooks on the rows too, which call
:mod:`bootstrap.distributed.frameworks`: :func:`detect_running` asks the rows' ``asked_job`` first
(the session's detection), :func:`detect` and :func:`peek` read only the environment and what they are given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, Mapping, Optional, Tuple

from bootstrap.distributed import launchvars
from bootstrap.distributed.frameworks import SubmititJob, in_ray_worker, ray_assigned_cpus, submitit_job
from bootstrap.distributed.launchvars import count, derived_port, first_host, slurm_job_id, tasks_on_node, whole_number
from bootstrap.doors.errors import ConfigError
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.textenum import TextEnum

# What torchrun takes for --nproc-per-node besides a count (Kubeflow passes nprocPerNode on as
# PET_NPROC_PER_NODE): torchrun counts the processes itself, so they say nothing to python started directly.
TORCHRUN_COUNT_WORDS = ("auto", "cpu", "gpu", "xpu")


@lean_dataclass(frozen=True)
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
    # A single process's MASTER_PORT that is not a port: refused only where a group is made (see _single)
    port_problem: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "launcher", Launcher(self.launcher))
        name = self.launcher.value
        if self.world_size < 1:
            raise ConfigError(f"{name}: world size {self.world_size} must be at least 1 (WORLD_SIZE >= 1).")
        if not 0 <= self.rank < self.world_size:
            raise ConfigError(f"{name}: rank {self.rank} is outside world size {self.world_size} "
                              f"(RANK must be in [0, WORLD_SIZE)). Check the launcher's variables.")
        if not 1 <= self.local_world_size <= self.world_size:
            raise ConfigError(f"{name}: local world size {self.local_world_size} must be in "
                              f"[1, world size {self.world_size}] (LOCAL_WORLD_SIZE must be in [1, WORLD_SIZE]).")
        if not 0 <= self.local_rank < self.local_world_size:
            raise ConfigError(f"{name}: local rank {self.local_rank} is outside local world size "
                              f"{self.local_world_size} (LOCAL_RANK must be in [0, LOCAL_WORLD_SIZE)).")
        if self.node_rank < 0:
            raise ConfigError(f"{name}: node rank {self.node_rank} is negative (NODE_RANK >= 0).")
        if self.world_size > 1 and self.multi_node and not self.master_addr:
            raise ConfigError(f"{name}: a multi-node world ({self.world_size} ranks, {self.local_world_size} per "
                              "node) needs MASTER_ADDR. Export MASTER_ADDR=<first node's host> on every node or "
                              f"set env.distributed.master_addr.{self.row.master_addr_hint}")

    @property
    def row(self) -> LauncherRow:
        """Everything the package knows about the launcher that started this process."""
        return ROW_OF[self.launcher]

    @property
    def multi_node(self) -> bool:
        return self.world_size > self.local_world_size

    def as_dict(self) -> dict:
        return {
            "launcher": self.launcher.value, "rank": self.rank, "local_rank": self.local_rank,
            "world_size": self.world_size, "local_world_size": self.local_world_size, "node_rank": self.node_rank,
            "master_addr": self.master_addr, "master_port": self.master_port, "job_id": self.job_id,
        }


@lean_dataclass(frozen=True)
class Hints:
    """What a detector may use beside the environment."""

    submitit_job: Optional[SubmititJob] = None  # what submitit.JobEnvironment() reports, if anything
    master_addr: Optional[str] = None  # env.distributed.master_addr
    master_port: Optional[int] = None  # env.distributed.master_port
    group_exists: Optional[bool] = None  # is there a default process group already? None: not asked

    def address(self, environ: Mapping[str, str]) -> Tuple[Optional[str], Optional[int]]:
        """MASTER_ADDR/MASTER_PORT in the environment win over the preset's, as any user setting does.

        A MASTER_PORT that is not a port is refused, not passed over: torch (Lightning, accelerate, the
        task's own init_process_group) would read it later and fail with a bare ``int()`` error."""
        port = self.master_port
        if environ.get("MASTER_PORT"):  # empty: unset, as a shell's `MASTER_PORT= cmd` means
            port = whole_number("MASTER_PORT", environ["MASTER_PORT"], 1, launchvars.MAX_PORT, fix=(
                "Export a free port (MASTER_PORT=29500), or unset it: the preset's distributed.master_port "
                "is used then, or a port derived from the job id."))
        return environ.get("MASTER_ADDR") or self.master_addr, port


Detector = Callable[[Mapping[str, str], Hints], Optional[Launch]]


# -- the detectors, in the table's order, each with what else its launcher needs ---------------------
def _torchrun_style(launcher: str, environ: Mapping[str, str], hints: Hints, node_var: str = "GROUP_RANK",
                    job_id: Optional[str] = None) -> Launch:
    """RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and a node rank)."""
    world = count(environ, "WORLD_SIZE")
    local_world = count(environ, "LOCAL_WORLD_SIZE", world)
    rank = count(environ, "RANK")
    addr, port = hints.address(environ)
    return Launch(Launcher(launcher), rank=rank, local_rank=count(environ, "LOCAL_RANK", 0), world_size=world,
                  local_world_size=local_world, node_rank=count(environ, node_var, rank // max(1, local_world)),
                  master_addr=addr, master_port=port, job_id=job_id)


AGENT_STORE = "TORCHELASTIC_USE_AGENT_STORE"


def _uses_agent_store(environ: Mapping[str, str]) -> bool:
    """torchrun's workers use its agent's store (torch elastic sets the variable to True or False)."""
    return environ.get(AGENT_STORE) == "True"


def _has_rank(environ: Mapping[str, str]) -> bool:
    return "RANK" in environ and "WORLD_SIZE" in environ


def _torchrun(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """torchrun / torch elastic: its variables, and TORCHELASTIC_RUN_ID, which only it sets."""
    if not (_has_rank(environ) and "TORCHELASTIC_RUN_ID" in environ):
        return None
    return _torchrun_style("torchrun", environ, hints, job_id=environ["TORCHELASTIC_RUN_ID"])


def _ray(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """A Ray Train worker: Ray's TorchTrainer sets the torchrun-style variables and NODE_RANK in a Ray
    worker process (RAY_RAYLET_PID), and makes the process group before the training function runs."""
    if not (_has_rank(environ) and "RAY_RAYLET_PID" in environ):
        return None
    return _torchrun_style("ray", environ, hints, node_var="NODE_RANK", job_id=environ.get("RAY_JOB_ID"))


def _ray_task(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """One process in a Ray worker (RAY_RAYLET_PID) without rank variables: a task or an actor, as
    hydra-ray-launcher runs each job."""
    if "RAY_RAYLET_PID" not in environ or _has_rank(environ):
        return None
    return Launch(Launcher("ray_task"), master_addr=hints.master_addr, master_port=hints.master_port,
                  job_id=environ.get("RAY_JOB_ID"))


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
            "PET_NPROC_PER_NODE", per_pod, 1, launchvars.MAX_RANKS,
            fix="Set the PyTorchJob's nprocPerNode to a count (1 when python is started directly), "
                "or to auto.") > 1:
        raise ConfigError(f"kubeflow: this PyTorchJob runs {per_pod} processes per pod (PET_NPROC_PER_NODE), but "
                          f"python was started directly, so RANK={environ['RANK']} is the pod's index, not a process "
                          "rank. Start the processes with torchrun inside the pod (command: torchrun "
                          "train_stub.py ...): it reads the PET_* variables and numbers every process.")
    addr, port = hints.address(environ)
    rank = count(environ, "RANK")
    return Launch(Launcher("kubeflow"), rank=rank, world_size=count(environ, "WORLD_SIZE"),
                  node_rank=count(environ, "PET_NODE_RANK", rank), master_addr=addr, master_port=port)


def _lightning(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """A rank that Lightning's ``ddp`` strategy re-launched (its _SubprocessScriptLauncher).

    It copies rank 0's environment with LOCAL_RANK, NODE_RANK, WORLD_SIZE (devices x
    nodes), MASTER_ADDR and MASTER_PORT, but no RANK and nothing giving the ranks per
    node. On one node that is the world size; on several, LOCAL_WORLD_SIZE must say it.
    """
    if "RANK" in environ or not {"LOCAL_RANK", "NODE_RANK", "WORLD_SIZE"} <= environ.keys():
        return None
    world, node = count(environ, "WORLD_SIZE"), count(environ, "NODE_RANK")
    if "LOCAL_WORLD_SIZE" in environ:
        per_node = count(environ, "LOCAL_WORLD_SIZE")
    elif node == 0:
        per_node = world  # one node, or the first of several: the rank is the local rank either way
    else:
        raise ConfigError(f"lightning: this rank runs on node {node} of a multi-node run, but nothing says how "
                          "many ranks run per node. Export LOCAL_WORLD_SIZE=<trainer.devices> on every node.")
    local = count(environ, "LOCAL_RANK")
    addr, port = hints.address(environ)
    return Launch(Launcher("lightning"), rank=node * per_node + local, local_rank=local, world_size=world,
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
    rank, world, local, local_world = (count(environ, n) for n in names)
    job_id = next((environ[n] for n in MPI_JOB_VARIABLES if environ.get(n)), None)
    addr, port = hints.address(environ)
    if addr is None and world == local_world:
        addr = "127.0.0.1"
    # Open MPI maps ranks by slot (node by node) unless told otherwise; it gives no node index.
    return Launch(Launcher("mpi"), rank=rank, local_rank=local, world_size=world, local_world_size=local_world,
                  node_rank=rank // max(1, local_world), master_addr=addr,
                  master_port=port or derived_port(job_id or "0"), job_id=job_id)


def _submitit(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """submitit (real SLURM or submitit_local), through what ``submitit.JobEnvironment()`` reported."""
    job = hints.submitit_job
    if job is None:
        return None
    addr, port = hints.address(environ)
    return Launch(Launcher("submitit"), rank=job.global_rank, local_rank=job.local_rank, world_size=job.num_tasks,
                  local_world_size=max(1, job.num_tasks // max(1, job.num_nodes)), node_rank=job.node,
                  master_addr=addr or (job.hostnames[0] if job.hostnames else None),
                  master_port=port or derived_port(job.job_id), job_id=job.job_id)


def _srun(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """A task of a plain ``srun`` step: SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS, SLURM_NODELIST, ...

    Only inside a step (SLURM_STEP_ID): a batch script sees SLURM_PROCID and
    SLURM_NTASKS too, but it is one process, whatever --ntasks asked for.
    """
    if not {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID"} <= environ.keys():
        return None
    world = count(environ, "SLURM_STEP_NUM_TASKS" if "SLURM_STEP_NUM_TASKS" in environ else "SLURM_NTASKS")
    # SLURM_TASKS_PER_NODE is always set (SLURM_NTASKS_PER_NODE only with --ntasks-per-node).
    per_node_text = environ.get("SLURM_STEP_TASKS_PER_NODE") or environ.get("SLURM_TASKS_PER_NODE") \
        or environ.get("SLURM_NTASKS_PER_NODE") or str(world)
    node = count(environ, "SLURM_NODEID", 0)
    job_id = slurm_job_id(environ)
    addr, port = hints.address(environ)
    return Launch(Launcher("slurm"), rank=count(environ, "SLURM_PROCID"), local_rank=count(environ, "SLURM_LOCALID", 0),
                  world_size=world, local_world_size=tasks_on_node(per_node_text, node), node_rank=node,
                  master_addr=addr or first_host(environ.get("SLURM_NODELIST", "")),
                  master_port=port or derived_port(environ.get("SLURM_JOB_ID", "0")),
                  job_id=f"{job_id}.{environ['SLURM_STEP_ID']}" if job_id else None)


def _env(environ: Mapping[str, str], hints: Hints) -> Optional[Launch]:
    """torchrun-style variables that no known launcher set: a script, a scheduler, a person."""
    return _torchrun_style("env", environ, hints, node_var="NODE_RANK") if _has_rank(environ) else None


def _single(environ: Mapping[str, str], hints: Hints) -> Launch:
    """Any environment: one process. Inside a scheduler's job it carries the job's id (an array
    task's run directory is named after it)."""
    job_id = scheduler_job_id(environ)
    try:
        addr, port = hints.address(environ)
    except ConfigError as problem:
        # One process reads MASTER_PORT only to make a group (env.distributed.init=always). Kubernetes
        # puts `MASTER_PORT=tcp://10.0.0.5:7077` in every pod of a namespace with a Service named
        # `master`: that must not stop a job that never makes one.
        return Launch(Launcher("single"), master_addr=environ.get("MASTER_ADDR") or hints.master_addr,
                      master_port=hints.master_port, job_id=job_id, port_problem=str(problem))
    return Launch(Launcher("single"), master_addr=addr, master_port=port, job_id=job_id)


# -- the table -----------------------------------------------------------------------------------------
@lean_dataclass(frozen=True)
class LauncherRow:
    """Everything the package knows about one launcher. The defaults describe a launcher that sets the
    torchrun-style variables itself and nothing else, with ranks that share their node's CPUs."""

    name: str  # the report's distributed.launcher
    detect: Detector  # the launch it started, or None: not this launcher; reads the environment only
    mark: str = ""  # the variables that only it sets, as messages name them
    exports_rendezvous: bool = False  # sets no (or not all) torchrun-style variables: the bootstrap exports them
    framework_makes_group: bool = False  # the framework that started the ranks makes the process group itself
    # Rank 0's own process started this rank, with its environment as it was then (Lightning's ddp re-launch).
    started_by_rank0: bool = False
    # The framework made the process group before the job started (Ray Train): a world without one is not its.
    group_before_job: bool = False
    # It hosts a store that its workers use as torch's env:// would (torchrun's agent, when
    # TORCHELASTIC_USE_AGENT_STORE=True): the ranks compare how they started through it (core.agreement)
    # and agree on rank 0's run directory (group.agree_on_run_dir); no rank hosts one.
    agent_store: Callable[[Mapping[str, str]], bool] = lambda environ: False
    # Its ranks agree on rank 0's run directory through its store (group.agree_on_run_dir); the ranks of
    # other launchers use one named after the launch's job id.
    run_dir_from_store: bool = False
    # How often it has restarted this run's ranks (torch elastic's TORCHELASTIC_RESTART_COUNT): the store keys
    # carry it beside the job id, so a restarted world never reads what the attempt before it wrote.
    restart_count: Callable[[Mapping[str, str]], str] = lambda environ: "0"
    # The file it reads a rank's failure from for its own summary (torch elastic's TORCHELASTIC_ERROR_FILE, in
    # the format @record writes: group.write_elastic_error_file), or None: it reads none.
    error_file: Callable[[Mapping[str, str]], Optional[str]] = lambda environ: None
    # What the running framework says about this process's job, where only its own API tells
    # (submitit.JobEnvironment()): detect_running asks it and the detector reads it as Hints.submitit_job.
    asked_job: Callable[[Mapping[str, str]], Optional[SubmititJob]] = lambda environ: None
    # The id of the scheduler's job this process runs in, whatever launcher started it (a batch script
    # run without one, torchrun inside an allocation): the run directory carries it.
    scheduler_job_id: Callable[[Mapping[str, str]], Optional[str]] = lambda environ: None
    own_cpus: Callable[[], Optional[int]] = lambda: None  # the CPUs it assigned this worker alone; None: shared
    # The OMP_NUM_THREADS it sets where the variable is unset (given own_cpus), or None: a value equal
    # to it is reported as the launcher's, below the preset.
    omp_threads: Callable[[Launch, Optional[int]], Optional[int]] = lambda launch, own_cpus: None
    # True where the engine re-runs a worker that exits: a job the bootstrap refuses raises errors.JobRefused.
    exits_are_retried: Callable[[], bool] = lambda: False
    master_addr_hint: str = ""  # said when its multi-node world lacks MASTER_ADDR
    # Its own process starts each rank (torchrun's agent, SLURM's slurmstepd) and gives it this variable, not itself:
    # the rank's nearest ancestor without it is the launcher's (the start's phase `launcher`); "": none measured.
    own_process_lacks: str = ""


# The precedence, first match wins. torchrun's own variables describe its workers even in a
# SLURM allocation, a Kubeflow pod or a Lightning app; Ray and Kubeflow set torchrun-style
# variables with a mark of their own; Lightning's re-launched ranks carry no RANK; mpirun
# inside a SLURM allocation leaves the allocation's SLURM_* variables in its ranks.
LAUNCHERS: Tuple[LauncherRow, ...] = (
    # torchrun / torch elastic (and what uses it: accelerate launch, torchrun in a pod). Where
    # OMP_NUM_THREADS is unset it sets 1 for more than one process per node.
    LauncherRow("torchrun", _torchrun, "TORCHELASTIC_RUN_ID", run_dir_from_store=True, agent_store=_uses_agent_store,
                own_process_lacks="TORCHELASTIC_RUN_ID",
                restart_count=lambda environ: environ.get("TORCHELASTIC_RESTART_COUNT", "0"),
                error_file=lambda environ: environ.get("TORCHELASTIC_ERROR_FILE") or None,
                omp_threads=lambda launch, own_cpus: 1 if launch.local_world_size > 1 else None),
    # a Ray Train worker: Ray set the variables and made the process group. Where OMP_NUM_THREADS
    # is unset, Ray (as for a task) sets the CPUs it assigned the worker.
    LauncherRow("ray", _ray, "RAY_RAYLET_PID", framework_makes_group=True, group_before_job=True,
                own_cpus=ray_assigned_cpus,
                omp_threads=lambda launch, own_cpus: own_cpus, exits_are_retried=in_ray_worker),
    # one process in a Ray worker: a task or actor (hydra-ray-launcher's jobs)
    LauncherRow("ray_task", _ray_task, "RAY_RAYLET_PID without RANK", own_cpus=ray_assigned_cpus,
                omp_threads=lambda launch, own_cpus: own_cpus,
                exits_are_retried=in_ray_worker),
    # python started directly in a Kubeflow PyTorchJob pod
    LauncherRow("kubeflow", _kubeflow, "PET_NNODES or PET_NPROC_PER_NODE", exports_rendezvous=True),
    # a rank >= 1 that Lightning's `ddp` strategy re-launched
    LauncherRow("lightning", _lightning, "LOCAL_RANK and NODE_RANK without RANK", framework_makes_group=True,
                started_by_rank0=True),
    # mpirun / mpiexec: Open MPI, MPICH, Intel MPI, MVAPICH
    LauncherRow("mpi", _mpi, "an MPI's rank and size variables", exports_rendezvous=True,
                master_addr_hint=" MPI gives no master address; pass it with mpirun -x MASTER_ADDR."),
    # submitit on SLURM or submitit_local: found by asking submitit, which reads its own variables
    LauncherRow("submitit", _submitit, "SUBMITIT_EXECUTOR", exports_rendezvous=True, asked_job=submitit_job),
    # a task of a plain srun step
    LauncherRow("slurm", _srun, "SLURM_STEP_ID", exports_rendezvous=True, scheduler_job_id=slurm_job_id,
                own_process_lacks="SLURM_STEP_ID"),
    # torchrun-style variables set by hand or by another tool
    LauncherRow("env", _env, "RANK and WORLD_SIZE"),
    # one process, nothing started it as a rank
    LauncherRow("single", _single),
)
# The launchers' names, as the report writes them (a str enum: Launcher.torchrun == "torchrun").
if TYPE_CHECKING:  # a type checker cannot read the members from the rows; it knows Launcher("torchrun") is one
    class Launcher(TextEnum):
        pass
else:
    Launcher = TextEnum("Launcher", [(row.name, row.name) for row in LAUNCHERS], module=__name__)
ROW_OF: Dict[Launcher, LauncherRow] = {Launcher(row.name): row for row in LAUNCHERS}


def detect(
    environ: Mapping[str, str],
    submitit_job: Optional[SubmititJob] = None,
    master_addr: Optional[str] = None,
    master_port: Optional[int] = None,
    group_exists: Optional[bool] = None,
) -> Launch:
    """The launch the first matching row's detector reports (``single`` takes any environment); evidence that
    contradicts itself is a ConfigError. ``group_exists``: whether a default process group exists now (None:
    not known, as in :func:`peek`)."""
    hints = Hints(submitit_job, master_addr, master_port, group_exists)
    launch = next(launch for launch in (row.detect(environ, hints) for row in LAUNCHERS) if launch is not None)
    _refuse_contradictions(launch, environ, hints)
    launchvars.slurm_attempt(environ)  # read after the preflight (a requeue): refused here, with the others
    return launch


def detect_running(environ: Mapping[str, str], master_addr: Optional[str] = None, master_port: Optional[int] = None,
                   group_exists: Optional[bool] = None) -> Launch:
    """:func:`detect`, told what the running frameworks say (the first row whose ``asked_job`` answers): the
    session's detection. A framework's evidence that contradicts itself is a ConfigError too."""
    job = next((job for job in (row.asked_job(environ) for row in LAUNCHERS) if job is not None), None)
    return detect(environ, job, master_addr, master_port, group_exists)


def _refuse_contradictions(launch: Launch, environ: Mapping[str, str], hints: Hints) -> None:
    """Evidence that the launcher started this process, which the rest of the evidence denies: a process that
    would come out neither one process nor one rank of a world that can form (it would wait for what no
    one provides, or report a world with no group). One line, naming the variables."""
    if launch.world_size <= 1:  # one process, where an MPI's rank and size alone say more (or nonsense)
        launchvars.refuse_a_partial_world(environ, "mpi", MPI_VARIABLES, "mpirun")
        return
    name, world = launch.launcher.value, f"rank {launch.rank} of {launch.world_size}"
    if _uses_agent_store(environ) and not launch.row.agent_store(environ):
        raise ConfigError(
            f"{AGENT_STORE}=True says torchrun's agent hosts the ranks' store, but torchrun did not start this "
            f"process (no TORCHELASTIC_RUN_ID; {name} started it, {world}): every rank would wait for a store that "
            f"no process hosts. Unset {AGENT_STORE} where it leaked from a torchrun job's environment, or start "
            "the ranks with torchrun.")
    if launch.row.group_before_job and hints.group_exists is False:
        raise ConfigError(
            f"{name}: {launch.row.mark} with RANK={launch.rank} and WORLD_SIZE={launch.world_size} say this is {world} "
            f"of a world whose process group {name} makes before the job starts, but no process group exists. Start "
            f"the job where {name} makes the group (inside its training function), or unset RANK and WORLD_SIZE "
            "where they leaked into this process.")


def peek(environ: Mapping[str, str]) -> Launch:
    """:func:`detect` without the preset's hints, for what is decided before a job's preset is
    read (the run directory, who writes a sweep's summary). Inconsistent variables give a
    single process here; the job's start reports them."""
    try:
        return detect(environ)
    except ConfigError:
        return Launch(Launcher("single"))


def scheduler_job_id(environ: Mapping[str, str]) -> Optional[str]:
    """The id of the scheduler's job this process runs in (the first row that knows one), or None."""
    return next((job for job in (row.scheduler_job_id(environ) for row in LAUNCHERS) if job), None)


def exported_by_launcher(launch: Launch, environ: Mapping[str, str], own_cpus: Optional[int]) -> Dict[str, str]:
    """The variables in ``environ`` that the launcher itself set, not the user: each ranks below the
    preset and is reported as the launcher's.

    A launcher that sets OMP_NUM_THREADS where it is unset (``row.omp_threads``) does not mark it: a
    value equal to its own is taken as its own, so a user's own equal value ranks below the preset
    too (docs/distributed.md says to set env.threads.intra_op to keep it)."""
    omp, theirs = environ.get("OMP_NUM_THREADS"), launch.row.omp_threads(launch, own_cpus)
    return {"OMP_NUM_THREADS": omp} if omp is not None and theirs is not None and omp == str(theirs) else {}
