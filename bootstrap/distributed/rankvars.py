"""The variables each launcher gives each rank of a world it starts (the launcher rows' evidence, made rather than read), for ``bootstrap dryrun``. Pure.

:class:`Layout` is the world as the dry run was asked for it: the nodes, the ranks on each, the hosts (SLURM's
order), the job's id. :func:`rank_vars` gives one rank's variables as its launcher sets them, block by block
(ranks ``node * per_node`` to ``node * per_node + per_node - 1`` on each node, as torchrun, ``srun``'s default
block distribution and ``mpirun --map-by slot`` place them), and what a framework would answer for it
(``submitit.JobEnvironment()``, made from the same variables: :func:`submitit_answer`). Each row's sources:

- ``torchrun``: torch 2.13's ``LocalElasticAgent._start_workers`` and ``torch.distributed.run`` (which sets
  ``OMP_NUM_THREADS=1`` where unset for more than one process per node);
- ``slurm``: ``srun``'s task environment (SLURM 22.05 measured on the cluster fixture, ``man srun``);
- ``submitit``: SLURM's, with ``SUBMITIT_EXECUTOR=slurm`` (submitit 1.5.4, ``SlurmJobEnvironment._env``);
- ``mpi``: Open MPI 5's ``OMPI_COMM_WORLD_*`` and ``PMIX_NAMESPACE``;
- ``kubeflow``: training-operator's ``envvar.go`` for one process per pod;
- ``ray``: Ray Train's ``TorchTrainer`` worker (and ``OMP_NUM_THREADS`` = the worker's CPUs, 1 by default);
- ``lightning``: rank 0 is the process the user started; ranks 1.. get rank 0's environment, as its bootstrap
  left it, with ``LOCAL_RANK``, ``NODE_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``
  (``_SubprocessScriptLauncher``);
- ``env``: torchrun's names set by a script.
"""

from __future__ import annotations

from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

from bootstrap.distributed import hostlist
from bootstrap.distributed.frameworks import SubmititJob
from bootstrap.doors.errors import ConfigError
from bootstrap.doors.lean import lean_dataclass

DEFAULT_PORT = 29500  # torchrun's --master-port default; the port a dry run gives launchers that choose one
RAY_WORKER_CPUS = 1  # Ray Train's resources_per_worker default: the CPUs each worker is given alone
# What every launcher's rank may carry from the shell, and the dry run therefore drops from the base environment:
# a launcher's own variables there would describe this shell's job, not the one planned.
LAUNCHER_PREFIXES = ("SLURM_", "SLURMD_", "TORCHELASTIC_", "OMPI_", "PMIX_", "PMI_", "MV2_", "MPI_LOCAL", "PET_",
                     "RAY_", "SUBMITIT_", "GROUP_", "ROLE_")
LAUNCHER_NAMES = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "MPIRUN_ID"})

# submitit's SlurmJobEnvironment._env (1.5.4): the field each SLURM variable gives JobEnvironment()
SUBMITIT_FIELDS = {"job_id": "SLURM_JOB_ID", "num_tasks": "SLURM_NTASKS", "num_nodes": "SLURM_JOB_NUM_NODES",
                   "node": "SLURM_NODEID", "nodes": "SLURM_JOB_NODELIST", "global_rank": "SLURM_PROCID",
                   "local_rank": "SLURM_LOCALID", "array_job_id": "SLURM_ARRAY_JOB_ID",
                   "array_task_id": "SLURM_ARRAY_TASK_ID"}


@lean_dataclass(frozen=True)
class Layout:
    """The world a dry run plans: ``nodes`` nodes of ``per_node`` ranks each, on ``hosts`` (one per node)."""

    launcher: str
    nodes: int
    per_node: int
    hosts: Sequence[str]
    job_id: str = "4242"
    master_port: int = DEFAULT_PORT
    nodelist: str = ""  # the hosts as SLURM writes them (``gpu[001-128]``): made once, from ``hosts``

    def __post_init__(self) -> None:
        if MAKERS.get(self.launcher) is None:
            raise ConfigError(f"--launcher {self.launcher!r} is not one the dry run knows: use one of "
                              f"{', '.join(LAUNCHERS)}.")
        if len(self.hosts) != self.nodes:
            raise ConfigError(f"--nodelist gives {len(self.hosts)} hosts for --nodes {self.nodes}.")
        object.__setattr__(self, "nodelist", hostlist.compress(self.hosts))

    @property
    def maker(self) -> Maker:
        return MAKERS[self.launcher]

    @property
    def world(self) -> int:
        return self.nodes * self.per_node

    def place(self, rank: int) -> Tuple[int, int]:
        """(node, local rank) of ``rank``: block by block."""
        return divmod(rank, self.per_node)

    def tasks_per_node(self) -> str:
        """SLURM_TASKS_PER_NODE in its compressed form: ``4(x256)``, or ``4`` on one node."""
        return str(self.per_node) if self.nodes == 1 else f"{self.per_node}(x{self.nodes})"


def base_environ(environ: Mapping[str, str]) -> Dict[str, str]:
    """The environment every rank starts from: ``environ`` (the shell's, as ``sbatch``'s default
    ``--export=ALL`` and torchrun pass it on) without any launcher's own variables."""
    return {name: value for name, value in environ.items()
            if name not in LAUNCHER_NAMES and not name.startswith(LAUNCHER_PREFIXES)}


def _torchrun(layout: Layout, rank: int, node: int, local: int) -> Dict[str, str]:
    return {**_torchrun_style(layout, rank, local), "GROUP_RANK": str(node), "GROUP_WORLD_SIZE": str(layout.nodes),
            "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(layout.world), "ROLE_NAME": "default",
            "MASTER_ADDR": layout.hosts[0], "MASTER_PORT": str(layout.master_port),
            "TORCHELASTIC_RUN_ID": layout.job_id, "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_USE_AGENT_STORE": "True",
            "TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGTERM,SIGINT,SIGHUP,SIGQUIT"}  # launcher/api.py's default


def _torchrun_style(layout: Layout, rank: int, local: int) -> Dict[str, str]:
    return {"RANK": str(rank), "LOCAL_RANK": str(local), "WORLD_SIZE": str(layout.world),
            "LOCAL_WORLD_SIZE": str(layout.per_node)}


def _slurm(layout: Layout, rank: int, node: int, local: int) -> Dict[str, str]:
    world, nodes, nodelist, tasks = str(layout.world), str(layout.nodes), layout.nodelist, layout.tasks_per_node()
    return {"SLURM_JOB_ID": layout.job_id, "SLURM_JOBID": layout.job_id, "SLURM_STEP_ID": "0",
            "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(local), "SLURM_NODEID": str(node),
            "SLURM_NTASKS": world, "SLURM_NPROCS": world, "SLURM_STEP_NUM_TASKS": world,
            "SLURM_NNODES": nodes, "SLURM_JOB_NUM_NODES": nodes, "SLURM_STEP_NUM_NODES": nodes,
            "SLURM_NODELIST": nodelist, "SLURM_JOB_NODELIST": nodelist, "SLURM_STEP_NODELIST": nodelist,
            "SLURM_TASKS_PER_NODE": tasks, "SLURM_STEP_TASKS_PER_NODE": tasks,
            "SLURMD_NODENAME": layout.hosts[node], "SLURM_TOPOLOGY_ADDR": layout.hosts[node]}


def _submitit(layout: Layout, rank: int, node: int, local: int) -> Dict[str, str]:
    return {**_slurm(layout, rank, node, local), "SUBMITIT_EXECUTOR": "slurm"}


def _mpi(layout: Layout, rank: int, node: int, local: int) -> Dict[str, str]:
    return {"OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(layout.world),
            "OMPI_COMM_WORLD_LOCAL_RANK": str(local), "OMPI_COMM_WORLD_LOCAL_SIZE": str(layout.per_node),
            "OMPI_COMM_WORLD_NODE_RANK": str(node), "PMIX_RANK": str(rank),
            "PMIX_NAMESPACE": f"prterun-{layout.hosts[0]}-{layout.job_id}@1"}


def _kubeflow(layout: Layout, rank: int, node: int, local: int) -> Dict[str, str]:
    """python started directly in each pod: RANK is the pod's index."""
    first, port = layout.hosts[0], str(layout.master_port)
    return {"RANK": str(rank), "WORLD_SIZE": str(layout.world), "MASTER_ADDR": first, "MASTER_PORT": port,
            "PET_MASTER_ADDR": first, "PET_MASTER_PORT": port, "PET_NNODES": str(layout.nodes),
            "PET_NPROC_PER_NODE": str(layout.per_node), "PET_NODE_RANK": str(node)}


def _ray(layout: Layout, rank: int, node: int, local: int) -> Dict[str, str]:
    return {**_torchrun_style(layout, rank, local), "NODE_RANK": str(node), "MASTER_ADDR": layout.hosts[0],
            "MASTER_PORT": str(layout.master_port), "RAY_RAYLET_PID": "4711", "RAY_JOB_ID": layout.job_id}


def _lightning(layout: Layout, rank: int, node: int, local: int) -> Dict[str, str]:
    """Rank 0 is the process the user started: nothing; the others go on rank 0's environment."""
    if rank == 0:
        return {}
    extra = {"LOCAL_WORLD_SIZE": str(layout.per_node)} if layout.nodes > 1 else {}
    return {"LOCAL_RANK": str(local), "NODE_RANK": str(node), "WORLD_SIZE": str(layout.world),
            "MASTER_ADDR": layout.hosts[0], "MASTER_PORT": str(layout.master_port), **extra}


def _env(layout: Layout, rank: int, node: int, local: int) -> Dict[str, str]:
    return {**_torchrun_style(layout, rank, local), "NODE_RANK": str(node), "MASTER_ADDR": layout.hosts[0],
            "MASTER_PORT": str(layout.master_port)}


@lean_dataclass(frozen=True)
class Maker:
    """How one launcher starts its ranks, as the dry run needs it."""

    variables: Callable[[Layout, int, int, int], Dict[str, str]]  # (layout, rank, node, local rank)
    rank0_is_the_users: bool = False  # rank 0 is the process the user started; the others inherit its environment
    group_exists: Optional[bool] = None  # the framework made the process group before the job (Ray Train)
    worker_cpus: Optional[int] = None  # the CPUs the engine gives each worker alone (Ray's)
    omp_threads: Optional[str] = None  # OMP_NUM_THREADS it sets where unset (torchrun: with >1 rank a node)
    where_unset: Tuple[Tuple[str, str], ...] = ()  # other variables it sets only where the shell did not


MAKERS: Dict[str, Maker] = {
    "torchrun": Maker(_torchrun, omp_threads="1", where_unset=(("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),)), "slurm": Maker(_slurm), "submitit": Maker(_submitit),
    "mpi": Maker(_mpi), "kubeflow": Maker(_kubeflow),
    "ray": Maker(_ray, group_exists=True, worker_cpus=RAY_WORKER_CPUS, omp_threads=str(RAY_WORKER_CPUS)),
    "lightning": Maker(_lightning, rank0_is_the_users=True), "env": Maker(_env),
}
LAUNCHERS = tuple(MAKERS)  # what --launcher takes


def rank_vars(layout: Layout, rank: int) -> Dict[str, str]:
    """The variables ``layout``'s launcher sets for ``rank`` (beside the base environment). For ``lightning``,
    rank 0's are none (the user started it) and the others' go on rank 0's environment as its job left it."""
    node, local = layout.place(rank)
    return layout.maker.variables(layout, rank, node, local)


def launcher_defaults(layout: Layout, base: Mapping[str, str]) -> Dict[str, str]:
    """What the launcher sets only where the shell did not: OMP_NUM_THREADS (torchrun for more than one process a
    node, ``torch.distributed.run``; Ray in every worker, its CPUs), torchrun's TORCH_NCCL_ASYNC_ERROR_HANDLING."""
    maker = layout.maker
    found = {name: value for name, value in maker.where_unset if name not in base}
    theirs = maker.omp_threads
    if "OMP_NUM_THREADS" not in base and theirs is not None and (maker.worker_cpus is not None or layout.per_node > 1):
        found["OMP_NUM_THREADS"] = theirs
    return found


def submitit_answer(environ: Mapping[str, str], hosts: Sequence[str]) -> Optional[SubmititJob]:
    """What ``submitit.JobEnvironment()`` reports for a rank whose variables are ``environ``, read as submitit
    reads them (:data:`SUBMITIT_FIELDS`), without touching this process's environment; ``hosts``: the node
    list, expanded once for every rank (submitit parses SLURM_JOB_NODELIST itself, with no ``scontrol``)."""
    if environ.get("SUBMITIT_EXECUTOR") != "slurm":
        return None
    field = {name: environ.get(variable) for name, variable in SUBMITIT_FIELDS.items()}
    job_id = field["job_id"] or ""
    if field["array_job_id"]:
        job_id = f"{field['array_job_id']}_{field['array_task_id']}"
    return SubmititJob(job_id=job_id, global_rank=int(field["global_rank"] or 0),
                       local_rank=int(field["local_rank"] or 0), num_tasks=int(field["num_tasks"] or 1),
                       num_nodes=int(field["num_nodes"] or 1), hostnames=hosts, node=int(field["node"] or 0))
