"""The plan: everything the bootstrap will do to this process, decided before it touches anything. Pure.

:func:`make_plan` turns a validated preset and the facts of this process (its
environment, Hydra's ``env_set``, the variables named on the command line, what torch
has already read, the CPU count, how it was launched) into a :class:`Plan`. Like
torchtitan's ``ParallelDims``, a plan checks itself when it is built and derives what
follows from it; ``Session.preview()`` reports it and ``Session.apply()`` carries it out.
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Collection, Dict, Mapping, Optional, Sequence, Tuple

from bootstrap.core.schema import (
    AUTO,
    Backend,
    Device,
    DistributedInit,
    EnvConfig,
    PreflightMode,
    SeedOffset,
    TorchSettings,
)
from bootstrap.distributed import mesh, seeding
from bootstrap.distributed.launcher import Launch, exported_by_launcher
from bootstrap.doors.errors import PRESET_KEY, ConfigError
from bootstrap.doors.lean import lean_dataclass
from bootstrap.variables import environ
from bootstrap.variables.readers import ProcessState

PROFILE_SOURCE = "fabric profile"  # a variable the fabric's profile script exported (bootstrap.core.fabric)
DETERMINISTIC_CUBLAS_WORKSPACE = ":4096:8"  # cuBLAS's documented workspace for deterministic results


@lean_dataclass(frozen=True)
class ThreadPlan:
    intra_op: int  # torch.set_num_threads
    inter_op: int  # torch.set_num_interop_threads (once per process)
    # OMP_NUM_THREADS/MKL_NUM_THREADS are exported only when they tell a child something:
    # an explicit count, CPUs shared among several ranks, or the user's own value.
    exported: bool


@lean_dataclass(frozen=True)
class Plan:
    launch: Launch
    create_group: bool  # make a process group (else adopt the one that exists, if any)
    mesh: Mapping[str, int]  # the device mesh's resolved dimensions; empty when none is built
    threads: ThreadPlan
    vars: Tuple[environ.VarDecision, ...]
    torch: Mapping[str, Any]  # each env.torch setting's value as torch gets it and the report shows it (torch_values)
    device_type: str  # the preset's device: cpu | cuda
    backend: str  # the preset's backend, used when the device is a GPU
    # where this rank's flight-recorder dump goes on a failure or SIGTERM (bootstrap.distributed.flightrec); None: the
    # recorder is off, or there is no process group to record
    dump_dir: Optional[str]
    seed: Optional[int]  # env.seed; None: the app seeds itself
    global_seed: Optional[int]  # what random, numpy and torch get on this rank: seed + 100 * pp_rank
    data_seed: Optional[int]  # bootstrap.current().data_seed
    nccl_log_dir: Optional[str] = None  # where NCCL logs its start-up for the preflight check (NCCL_DEBUG_FILE)
    output_dir: Optional[str] = None  # the job's directory (the preflight's picture goes there); None: none

    def __post_init__(self) -> None:
        if self.mesh and math.prod(self.mesh.values()) != self.launch.world_size:
            raise ConfigError(f"mesh {dict(self.mesh)} does not fill WORLD_SIZE({self.launch.world_size}).")
        if self.create_group and self.launch.row.framework_makes_group:
            raise ConfigError(f"{self.launch.launcher.value} makes the process group itself; "
                              "the bootstrap must not make a second one.")

    @property
    def distributed(self) -> bool:
        """Is this process one rank of a world, or asked for a group of its own?"""
        return self.create_group or self.launch.world_size > 1

    def device(self, cuda_visible: bool) -> str:
        """Where the task's model goes: ``cuda:<local_rank>`` for a rank on a GPU, ``cuda`` for one
        process, ``cpu`` otherwise (also when CUDA is asked for but absent, under on_mismatch=warn)."""
        if self.device_type != "cuda" or not cuda_visible:
            return "cpu"
        return f"cuda:{self.launch.local_rank}" if self.distributed else "cuda"

    def backend_for(self, device: str) -> str:
        return self.backend if device.startswith("cuda") else "gloo"


def make_plan(
    preset: EnvConfig,
    *,
    environ_now: Mapping[str, str],
    env_set: Mapping[str, Any],
    explicit_vars: Collection[str],
    state: ProcessState,
    cpus: int,
    machine_cpus: int,
    launch: Launch,
    launcher_cpus: Optional[int] = None,
    cpus_are_own: bool = False,
    output_dir: Optional[str] = None,
    by_process: Mapping[str, str] = {},  # noqa: B006 - read only
    fabric_vars: Mapping[str, str] = {},  # noqa: B006 - read only
) -> Plan:
    """The plan for ``preset`` in this process. Raises ConfigError naming ``env.<field>`` on bad input.

    ``environ_now`` includes Hydra's ``env_set`` values, as it does when a job starts;
    ``explicit_vars`` names the variables given as ``env.vars.NAME=...`` on the command line.
    ``cpus``: the CPUs this process may run on; ``launcher_cpus``: its launcher's (None: the same),
    ``cpus_are_own``: given to this worker alone (see :func:`ranks_sharing_cpus`).
    ``by_process``: the variables the process set for itself before the job started, and who set them
    (``bootstrap.core.process_vars``): their source is ``process``, and a known one the preset does not set
    is recorded too. ``fabric_vars``: what the fabric's profile script exported (gcp_tcpxo), beneath the preset's own
    variables; their source is ``fabric profile``.
    """
    dist = preset.distributed
    # A framework that starts its own ranks (Lightning) makes the group itself, later.
    create_group = not launch.row.framework_makes_group and (
        dist.init is DistributedInit.always or (dist.init is DistributedInit.auto and launch.world_size > 1))
    # The mesh only matters with more than one rank or a group to build it on.
    shape = mesh.resolve_mesh(dist.mesh, launch.world_size) \
        if create_group or launch.world_size > 1 else {}
    requested_vars = {n: environ.normalize(n, v) for n, v in preset.vars.items()}
    sharing = ranks_sharing_cpus(launch, cpus, launcher_cpus or cpus, cpus_are_own)
    by_launcher = exported_by_launcher(launch, environ_now, cpus if cpus_are_own else None)
    threads = _threads(preset, environ_now, requested_vars.get("OMP_NUM_THREADS")
                       if "OMP_NUM_THREADS" in explicit_vars else None, cpus, sharing, machine_cpus, launch,
                       by_launcher)
    recorder = dist.flight_recorder
    distributed = create_group or launch.world_size > 1
    if distributed and launch.port_problem:
        raise ConfigError(f"{PRESET_KEY}.distributed: {launch.port_problem}")
    if create_group and launch.world_size > 1 and launch.master_port is None:  # the rendezvous needs one
        raise ConfigError(f"{PRESET_KEY}.distributed: {launch.launcher.value}: a world of {launch.world_size} ranks "
                          "needs a rendezvous port, and none is set. Export MASTER_PORT=<a free port> for every rank, "
                          f"or set {PRESET_KEY}.distributed.master_port.")
    dump_dir = (recorder.dump_dir or output_dir) if recorder.enabled and distributed else None
    nccl_log = _nccl_log_vars(preset, {**environ_now, **requested_vars}, output_dir if distributed else None)
    derived = {n: environ.normalize(n, v)
               for n, v in {**_derived_vars(preset, threads, distributed, dump_dir), **nccl_log}.items()}
    profile = {n: environ.normalize(n, v) for n, v in fabric_vars.items()}
    decisions = environ.plan_vars({**derived, **profile, **requested_vars},  # the preset's own win over derived ones
                                  environ_now, env_set, explicit_vars, state,
                                  by_launcher={name: launch.launcher.value for name in by_launcher},
                                  by_process=by_process)
    decisions = [replace(d, source=PROFILE_SOURCE) if d.source == "preset" and d.name in profile
                 and d.name not in requested_vars else d for d in decisions]
    # a launcher's own value (Ray's OMP_NUM_THREADS, set in the worker's process) is the launcher's, not the process's
    decisions += _found_set_by_process(by_process, environ_now, {d.name for d in decisions} | set(by_launcher))
    _check_buffer_sizes(decisions)
    global_seed = None
    if preset.seed is not None:
        global_seed = seeding.global_seed(preset.seed, mesh.coordinate(launch.rank, shape, "pp"))
    return Plan(
        launch=launch, create_group=create_group, mesh=shape, threads=threads, vars=tuple(decisions),
        torch=torch_values(preset.torch), device_type=preset.device.value, backend=dist.backend.value,
        dump_dir=dump_dir, seed=preset.seed, global_seed=global_seed,
        data_seed=seeding.data_seed(preset.seed, launch.rank, preset.seed_offset is SeedOffset.rank),
        nccl_log_dir=output_dir if nccl_log else None, output_dir=output_dir,
    )


def _found_set_by_process(by_process: Mapping[str, str], environ_now: Mapping[str, str],
                          planned: Collection[str]) -> list:
    """The known variables (those ranks are compared on) that the process set for itself and the plan does not set."""
    if not by_process:  # the usual case: the table of known names stays unloaded
        return []
    from bootstrap.variables.difference_kinds import known_set

    found = known_set({name: environ_now[name] for name in by_process if name in environ_now and name not in planned})
    return environ.process_decisions({name: by_process[name] for name in found}, environ_now)


_torch_values: Dict[int, Tuple[TorchSettings, Dict[str, Any]]] = {}  # id -> (the settings, their values)


def torch_values(settings: TorchSettings) -> Dict[str, Any]:
    """Each env.torch setting's value as runtime applies it and the report records it; an enum as its text. (Kept
    for the settings object last asked: a dry run asks it of one preset for every rank.)"""
    kept = _torch_values.get(id(settings))
    if kept is None or kept[0] is not settings:
        values = {name: getattr(value, "value", value) for name, value in asdict(settings).items()}
        # cuDNN's autotuner picks kernels by timing, which differs from run to run: no benchmark in deterministic mode
        kept = settings, {**values, "cudnn_benchmark": settings.cudnn_benchmark and not settings.deterministic}
        _torch_values.clear()
        _torch_values[id(settings)] = kept
    return dict(kept[1])


MAX_THREADS_PER_CPU = 8  # oversubscribing further only slows a job down; torch crashes long before 99999


def resolve_threads(value: Any, cpus: int, ranks_on_node: int = 1, omp_num_threads: Optional[str] = None) -> int:
    """An explicit count wins; ``auto`` takes a user's OMP_NUM_THREADS, else CPUs ÷ local ranks."""
    if value != AUTO:
        return int(value)
    if omp_num_threads is not None and omp_num_threads.isdigit() and int(omp_num_threads) > 0:
        return int(omp_num_threads)
    return max(1, cpus // max(1, ranks_on_node))


def check_thread_count(count: int, where: str, machine_cpus: int) -> int:
    """Refuse a count far beyond the machine, naming the key and the CPU count."""
    limit = MAX_THREADS_PER_CPU * machine_cpus
    if count > limit:
        raise ConfigError(f"{where}={count} is far beyond this machine's {machine_cpus} CPUs (at most {limit} "
                          f"here). Use a count up to the CPUs, e.g. {where}={machine_cpus}, or {where}=auto.")
    return count


def ranks_sharing_cpus(launch: Launch, cpus: int, launcher_cpus: int, cpus_are_own: bool = False) -> int:
    """How many of this node's ranks share the ``cpus`` this process may run on.

    ``launcher_cpus``: the CPUs of the process that started this one. A launcher that binds its
    ranks (mpirun does by default) gives each a part of them, a core or a socket each; the node's
    ranks are taken to be spread evenly over them.
    ``cpus_are_own``: the engine said these CPUs are this worker's alone (Ray's assigned CPUs)."""
    local = max(1, launch.local_world_size)
    if cpus_are_own:
        return 1
    return min(local, math.ceil(local * cpus / max(cpus, launcher_cpus, 1)))


def _threads(preset: EnvConfig, environ_now: Mapping[str, str], command_line_omp: Optional[str],
             cpus: int, sharing: int, machine_cpus: int, launch: Launch,
             by_launcher: Mapping[str, str]) -> ThreadPlan:
    if command_line_omp is not None:
        user_omp: Optional[str] = command_line_omp
    elif "OMP_NUM_THREADS" in environ.inherited_names(environ_now) or "OMP_NUM_THREADS" in by_launcher:
        user_omp = None  # a parent's bootstrap or the launcher chose it, not the user
    else:
        user_omp = environ_now.get("OMP_NUM_THREADS")
    intra = check_thread_count(resolve_threads(preset.threads.intra_op, cpus, sharing, user_omp),
                               f"{PRESET_KEY}.threads.intra_op", machine_cpus)
    inter = check_thread_count(resolve_threads(preset.threads.inter_op, cpus, sharing),
                               f"{PRESET_KEY}.threads.inter_op", machine_cpus)
    # For one process, ``auto`` is what libgomp picks anyway, and exporting it would hide the
    # variable's absence from frameworks that divide the CPUs among the processes they start
    # (Lightning's DDP, torchrun: both set OMP_NUM_THREADS only where it is unset).
    # A launcher's value is replaced (or confirmed) in the open, so the report says whose it is.
    exported = preset.threads.intra_op != AUTO or launch.local_world_size > 1 or user_omp is not None \
        or "OMP_NUM_THREADS" in by_launcher
    return ThreadPlan(intra, inter, exported)


# the second: the old name, still read. bootstrap.variables gives both kind="count", which the lint checks.
FR_SIZE_VARS = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")


def _check_buffer_sizes(decisions: Sequence[environ.VarDecision]) -> None:
    """torch parses the flight recorder's size with std::stoi: 'abc' aborts or hangs the first process
    group, '-5' keeps every collective forever. Refuse such a value, wherever it came from."""
    for d in decisions:
        if d.name in FR_SIZE_VARS and not d.value.strip().isdigit():
            where = f"the {d.source}" if d.source in environ.USERS else f"{PRESET_KEY}.vars.{d.name}"
            raise ConfigError(f"{d.name}={d.value!r} (from {where}) is not a count of collectives: torch would abort "
                              f"or hang at the first process group. Use a count such as 2000, or set "
                              f"{PRESET_KEY}.distributed.flight_recorder.buffer_size.")


def _nccl_log_vars(preset: EnvConfig, environ_now: Mapping[str, Optional[str]],
                   output_dir: Optional[str]) -> Dict[str, str]:
    """NCCL's own start-up lines into the job's directory, for the preflight check to read the network NCCL
    chose: only when the preset expects one, NCCL makes the group, and neither the user nor the preset's vars set
    NCCL_DEBUG or NCCL_DEBUG_FILE (``environ_now`` holds both: theirs wins, and NCCL's lines go where they said)."""
    wanted = preset.preflight
    if wanted.network is None or wanted.mode is PreflightMode.off or output_dir is None \
            or preset.distributed.backend is not Backend.nccl or preset.device is not Device.cuda \
            or "NCCL_DEBUG" in environ_now or "NCCL_DEBUG_FILE" in environ_now:
        return {}
    from bootstrap.fabric.nccl_log import LOG_PATTERN

    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET",
            "NCCL_DEBUG_FILE": str(Path(output_dir) / LOG_PATTERN)}


def _derived_vars(preset: EnvConfig, threads: ThreadPlan, distributed: bool, dump_dir: Optional[str]) -> Dict[str, Any]:
    """Variables implied by other preset fields, for child processes and late readers."""
    derived: Dict[str, Any] = {}
    if threads.exported:
        derived.update(OMP_NUM_THREADS=threads.intra_op, MKL_NUM_THREADS=threads.intra_op)
    recorder = preset.distributed.flight_recorder
    if not recorder.enabled:
        derived["TORCH_FR_BUFFER_SIZE"] = 0  # torch records 2000 collectives by default: off must be said
    elif distributed:
        derived["TORCH_FR_BUFFER_SIZE"] = recorder.buffer_size
        if dump_dir:  # where NCCL's own dump on a watchdog timeout goes: beside the bootstrap's, same names
            from bootstrap.distributed.dumps import DUMP_PREFIX  # here: the dumps' reader is no single process's cost

            derived["TORCH_FR_DUMP_TEMP_FILE"] = str(Path(dump_dir) / DUMP_PREFIX)
    if preset.seed is not None:
        derived["PYTHONHASHSEED"] = preset.seed
    if preset.torch.deterministic:
        derived["CUBLAS_WORKSPACE_CONFIG"] = DETERMINISTIC_CUBLAS_WORKSPACE
    return derived
