"""``initialize(env_cfg)``: the plain-Python API that every entry point goes through.

Data flows one way: config -> validated preset -> plan (pure) -> apply (records what
it changed) -> report. ``close()`` undoes exactly what was recorded. If anything
fails half-way, the process is put back as it was before the error propagates.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence

from bootstrap import environ, launcher, readers, report, runtime, seeding, versions
from bootstrap.errors import BootstrapError, ConfigError, MismatchError
from bootstrap.mesh import coordinate, resolve_mesh
from bootstrap.schema import AUTO, DistributedInit, EnvConfig, OnMismatch, SeedOffset, validate

log = logging.getLogger(__name__)


def load_preset(env_cfg: Any, key: str = "env") -> EnvConfig:
    """Turn a DictConfig, dict or EnvConfig into a validated EnvConfig."""
    if isinstance(env_cfg, EnvConfig):
        return validate(env_cfg, key)
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        if not (isinstance(env_cfg, DictConfig) and OmegaConf.get_type(env_cfg) is EnvConfig):
            # Hydra already typed a preset that lists the schema; anything else is typed here.
            env_cfg = OmegaConf.merge(OmegaConf.structured(EnvConfig), env_cfg)
        preset = OmegaConf.to_object(env_cfg)
    except OmegaConfBaseException as e:
        full_key = getattr(e, "full_key", None) or ""
        # A node cut from a whole job config (env=auto's composed preset) already names its key.
        where = full_key if full_key == key or full_key.startswith(f"{key}.") else \
            f"{key}.{full_key}" if full_key else key
        raise ConfigError(f"{where}: {str(e).splitlines()[0]}") from None
    return validate(preset, key)


def _derived_vars(preset: EnvConfig, intra_op: int, export_threads: bool) -> Dict[str, Any]:
    """Variables implied by other preset fields, for child processes and late readers."""
    derived: Dict[str, Any] = {}
    if export_threads:
        derived.update(OMP_NUM_THREADS=intra_op, MKL_NUM_THREADS=intra_op)
    if preset.seed is not None:
        derived["PYTHONHASHSEED"] = preset.seed
    if preset.torch.deterministic:
        derived["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # cuBLAS's documented deterministic workspace
    return derived


class Session:
    """One job's bootstrap. Use as a context manager, or call ``apply()`` and ``close()``.

    While applied, the task reads it through :func:`current`: ``device``, ``rank``,
    ``local_rank``, ``world_size``, ``mesh`` and ``data_seed``.
    """

    def __init__(
        self,
        env_cfg: Any,
        *,
        name: Optional[str] = None,
        key: str = "env",
        env_set: Optional[Mapping[str, Any]] = None,
        overrides: Collection[str] = (),
        output_dir: Optional[os.PathLike] = None,
        job_overrides: Sequence[str] = (),
        job_num: Optional[int] = None,
    ):
        self.key = key
        self.preset = load_preset(env_cfg, key)
        self.name = name or "custom"
        self.env_set = dict(env_set or {})
        self.overrides = frozenset(overrides)
        self.output_dir = Path(output_dir) if output_dir is not None else None
        self.task_overrides = list(job_overrides)  # as given: env=auto re-applies the env.* ones
        self.job_overrides = [report.masked_override(o) for o in job_overrides]  # as recorded
        self.resolved: Optional[str] = None  # "auto -> cpu_debug (no CUDA device)" under env=auto
        self.job_num = job_num
        self.report: Dict[str, Any] = {}
        self.launch: Optional[launcher.Launch] = None  # set by detect_launch()
        self.device = self.preset.device.value  # resolved by apply(): cpu when CUDA is asked for but absent
        self.data_seed = self.preset.seed
        self._torch_seed: Optional[int] = None  # torch.initial_seed() once the bootstrap has seeded
        self._group = None  # distributed.ProcessGroup
        self._threads: Optional[Dict[str, Any]] = None  # read back from torch
        self._seeded: List[str] = []
        self._backend: Optional[str] = None  # the backend of the group this session made or found
        self._previous_sigterm = None  # restored on close
        self._environ_snapshot: Optional[environ.EnvironSnapshot] = None
        self._torch_snapshot: Optional[runtime.TorchState] = None

    # -- what the task reads ---------------------------------------------
    @property
    def rank(self) -> int:
        return self.launch.rank if self.launch else 0

    @property
    def local_rank(self) -> int:
        return self.launch.local_rank if self.launch else 0

    @property
    def world_size(self) -> int:
        return self.launch.world_size if self.launch else 1

    @property
    def mesh(self):
        """The DeviceMesh, or None when no process group was made."""
        return self._group.mesh if self._group is not None else None

    # -- context manager -------------------------------------------------
    def __enter__(self) -> "Session":
        self.apply()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is None:
            self.close("completed")
        else:
            self.close("failed", error=exc)

    # -- the work --------------------------------------------------------
    def plan(self, environ_now: Mapping[str, str], state: readers.ProcessState, ranks_on_node: int = 1):
        """Thread counts and variable decisions. Pure given its arguments."""
        preset, key = self.preset, self.key
        requested_vars = {n: environ.normalize(n, v, key) for n, v in preset.vars.items()}
        if "OMP_NUM_THREADS" in self.overrides:
            user_omp = requested_vars.get("OMP_NUM_THREADS")
        elif "OMP_NUM_THREADS" in environ.inherited_names(environ_now):
            user_omp = None  # a parent's bootstrap chose it for a different number of ranks
        else:
            user_omp = environ_now.get("OMP_NUM_THREADS")
        cpus, machine_cpus = runtime.usable_cpus(), os.cpu_count() or 1
        intra = runtime.check_thread_count(runtime.resolve_threads(preset.threads.intra_op, cpus, ranks_on_node,
                                                                   user_omp), f"{key}.threads.intra_op", machine_cpus)
        inter = runtime.check_thread_count(runtime.resolve_threads(preset.threads.inter_op, cpus, ranks_on_node),
                                           f"{key}.threads.inter_op", machine_cpus)
        # The thread variables are exported only when they tell a child something: an
        # explicit count, CPUs shared among several ranks, or the user's own value. For one
        # process, ``auto`` is what libgomp picks anyway, and exporting it would hide the
        # variable's absence from frameworks that divide the CPUs among the processes they
        # start (Lightning's DDP, torchrun: both set OMP_NUM_THREADS only where it is unset).
        export_threads = preset.threads.intra_op != AUTO or ranks_on_node > 1 or user_omp is not None
        derived = {n: environ.normalize(n, v, key) for n, v in _derived_vars(preset, intra, export_threads).items()}
        requested = {**derived, **requested_vars}  # the preset's own entries win over derived ones
        decisions = environ.plan_vars(requested, environ_now, self.env_set, self.overrides, state)
        return intra, inter, decisions

    def detect_launch(self) -> launcher.Launch:
        """How this process was started (torchrun, submitit, srun or single). Reads only the environment."""
        dist_cfg = self.preset.distributed
        job = None
        if any(name.startswith("SUBMITIT_") for name in os.environ):
            from bootstrap.distributed import submitit_job

            job = submitit_job(os.environ)
        try:
            self.launch = launcher.detect(os.environ, job, dist_cfg.master_addr, dist_cfg.master_port)
        except ConfigError as error:
            raise ConfigError(f"{self.key}.distributed: {error}") from None
        return self.launch

    def _resolve_auto(self, warnings: List[str]) -> None:
        """Under env=auto, replace the placeholder preset by the one this machine calls for."""
        if not self.preset.auto:
            return
        from bootstrap import auto

        # On a GPU this reads the compute capability, which creates the CUDA context
        # before the chosen preset's variables are set: CUDA_* variables then reach
        # child processes only (the report says so per variable).
        choice = auto.choose(versions.detect())
        env_cfg = auto.compose_preset(choice.preset, self.key, auto.env_overrides(self.task_overrides, self.key))
        self.preset = load_preset(env_cfg, self.key)
        if self.preset.auto:
            raise ConfigError(f"{self.key}={choice.preset} sets auto: true itself; only env=auto may.")
        self.resolved = f"auto -> {choice.preset} ({choice.reason})"
        if choice.warning:
            warnings.append(choice.warning)
            log.warning("%s", choice.warning)

    def _prepare(self, environ_now: Mapping[str, str]):
        """Everything decided before the process is touched; raises ConfigError on bad input."""
        preset = self.preset
        launch = self.launch or self.detect_launch()
        # A framework that starts its own ranks (Lightning) makes the group itself, later.
        create_group = not launch.framework_makes_group and (
            preset.distributed.init is DistributedInit.always
            or (preset.distributed.init is DistributedInit.auto and launch.world_size > 1))
        # The mesh only matters with more than one rank or a group to build it on.
        mesh_shape = resolve_mesh(preset.distributed.mesh, launch.world_size, self.key) \
            if create_group or launch.world_size > 1 else {}
        intra, inter, decisions = self.plan(environ_now, readers.current_state(), launch.local_world_size)
        return launch, mesh_shape, create_group, intra, inter, decisions

    def _device_type(self, found: versions.Found, warnings: List[str]) -> str:
        if self.preset.device.value == "cuda" and found.gpus == 0:
            # Only reachable with on_mismatch=warn: run the task, on the CPU.
            warnings.append(f"{self.key}.device=cuda but no CUDA device is visible; the task runs on cpu")
            return "cpu"
        return self.preset.device.value

    def preview(self) -> Dict[str, Any]:
        """The report ``apply()`` would write, worked out without changing the process.

        Hydra's ``env_set`` (given to the session) counts as already in the environment,
        as it is when a job starts. Used by ``bootstrap doctor``.
        """
        started = time.perf_counter()
        warnings: List[str] = []
        self._resolve_auto(warnings)
        environ_now = {**os.environ, **{k: str(v) for k, v in self.env_set.items()}}
        launch, mesh_shape, create_group, intra, inter, decisions = self._prepare(environ_now)
        found = versions.detect()
        checks = versions.check(self.preset.requires, found, self.preset.device.value)
        device_type = self._device_type(found, warnings)
        self.device = distributed_device(device_type, launch) if create_group or launch.world_size > 1 \
            else device_type
        self._threads = {"intra_op": intra, "inter_op": inter, "requested": {"intra_op": intra, "inter_op": inter}}
        self.data_seed = seeding.data_seed(self.preset.seed, launch.rank, self.preset.seed_offset is SeedOffset.rank)
        self._build_report(decisions, checks, found, warnings, started, mesh_shape)
        self.report["job"]["status"] = "preview"
        return self.report

    def apply(self) -> "Session":
        """Apply the preset to this process. Sessions nest as a stack (see :func:`current`)."""
        with _lock:  # os.environ belongs to the whole process: one thread applies at a time
            _check_can_apply(self)
            self._apply()
            if not _stack:
                global _owner
                _owner = threading.current_thread()
            _stack.append(self)
        return self

    def _apply(self) -> None:
        started = time.perf_counter()
        warnings: List[str] = []
        self._resolve_auto(warnings)
        preset = self.preset
        launch, mesh_shape, create_group, intra, inter, decisions = self._prepare(os.environ)

        self._environ_snapshot = environ.EnvironSnapshot(os.environ, foreign=self.env_set)
        self._torch_snapshot = runtime.TorchState.capture()
        found, checks = None, []
        try:
            # First: a signal during start-up (a rendezvous that waits for a peer) must end
            # the job restored and reported, like one during the task.
            self._catch_interrupts()
            environ.apply_vars(decisions)
            # Whoever set them (preset, shell, Hydra's env_set after import torch): a value
            # this process read too early must be the one it runs with, as its children will.
            for apply_now in {r.apply_now for r in readers.READERS if r.apply_now}:
                runtime.APPLY_NOW[apply_now](self.key)
            # Detect after the variables are set: on a GPU, reading the compute
            # capability creates the CUDA context, which reads CUDA_* variables.
            found = versions.detect()
            checks = versions.check(preset.requires, found, preset.device.value)
            if not all(c.ok for c in checks):
                message = versions.mismatch_message(self.name, checks, self.key, chosen_as=self._chosen_as(),
                                                    warn=preset.on_mismatch is OnMismatch.warn)
                if preset.on_mismatch is OnMismatch.error:
                    self._build_report(decisions, checks, found, warnings, started)
                    self._finish_report("check_failed", error=message)
                    raise MismatchError(message)
                warnings.append(message)
                log.warning("%s", message)

            device_type = self._device_type(found, warnings)
            if device_type != preset.device.value:
                log.warning("%s", warnings[-1])

            runtime.apply_torch_settings(preset.torch)
            intra_read = runtime.apply_intra_op(intra)
            inter_read, inter_note = runtime.apply_inter_op(inter)
            self._threads = {"intra_op": intra_read, "inter_op": inter_read,
                             "requested": {"intra_op": intra, "inter_op": inter}}
            if inter_note:
                warnings.append(inter_note)
                _warn_once(inter_note)

            if create_group or launch.world_size > 1:
                from bootstrap import distributed

                distributed.export_rendezvous(launch)
                self.device = distributed_device(device_type, launch)
                self._backend = preset.distributed.backend.value if device_type == "cuda" else "gloo"
                self._group = distributed.start(launch, self._backend, preset.distributed.timeout_s, self.device,
                                                mesh_shape, create_group)
            else:
                self.device = device_type

            if preset.seed is not None:
                pp_rank = coordinate(launch.rank, mesh_shape, "pp")
                self._seeded = seeding.seed_everything(seeding.global_seed(preset.seed, pp_rank))
            self.data_seed = seeding.data_seed(preset.seed, launch.rank, preset.seed_offset is SeedOffset.rank)
            self._torch_seed = seeding.torch_seed()  # a different one at job end: the task re-seeded

            for d in decisions:
                if d.warn:
                    warnings.append(f"{d.name}: {d.note}")
                    log.warning("%s=%s is %s: %s", d.name, report.masked(d.name, d.value),
                                "not set" if d.withheld else "exported for child processes only", d.note)
            self._build_report(decisions, checks, found, warnings, started, mesh_shape)
            self._write_report()  # an unwritable output directory fails the job, not half of it
            log.info("bootstrap\n%s", report.format_table(self.report))
        except BaseException as error:
            self._undo()
            if isinstance(error, (KeyboardInterrupt, SystemExit)) and not self.report:
                self._report_interrupted_start(decisions, checks, found, warnings, started, error)
            raise

    def _report_interrupted_start(self, decisions, checks, found, warnings, started, error) -> None:
        """Ctrl-C or SIGTERM before the job started (a rendezvous waiting for a peer): say so."""
        try:
            self._build_report(decisions, checks, found or versions.detect(), warnings, started)
            self._finish_report("interrupted", error=f"stopped during start-up ({type(error).__name__})")
        except Exception as write_error:  # noqa: BLE001 - the interrupt is what matters; the record is a courtesy
            log.warning("could not record the interrupted start: %s", write_error)

    def _catch_interrupts(self) -> None:
        """Make sure an interrupted job is still closed: group destroyed, process restored, report written.

        Hydra 1.3 skips on_job_end when the task is interrupted (hydra#3078), and
        SIGTERM's default action ends the process without running any Python. So
        SIGTERM becomes SystemExit(143) in the main thread, and an atexit hook closes
        the session with status "interrupted" if nothing else did. Ctrl-C
        (KeyboardInterrupt) reaches the same hook.
        """
        atexit.register(self._close_interrupted)
        # Only over the default action: a handler someone else installed stays in charge
        # (submitit's, for one, lets a preempted SLURM job requeue instead of dying).
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            self._previous_sigterm = signal.signal(signal.SIGTERM, _exit_on_sigterm)

    def _close_interrupted(self) -> None:
        self.close("interrupted", error="the process was stopped by a signal or exit before the job ended")

    def close(self, status: str = "completed", metrics: Any = None, error: Any = None) -> None:
        """Restore the process and record how the job ended. Safe to call twice.

        Sessions applied after this one and still open are closed first (status
        ``failed``): each restores to the state its outer session left.
        """
        if self._environ_snapshot is None:
            return
        with _lock:
            inner = _stack[_stack.index(self) + 1:] if self in _stack else []
        for session in reversed(inner):
            session.close("failed", error="closed because an outer session was closed first")
        try:
            self._record_task_effects()
        except Exception as record_error:  # a record must never keep the process from being restored
            log.warning("could not record the task's process group or seed: %s", record_error)
        try:
            if status == "failed" and error is not None and self._group is not None \
                    and self._group.state == "created" and self.world_size > 1:
                error = self._attribute_failure(error)
        except Exception as attribution_error:  # the store may be gone with a peer: still restore
            log.warning("could not record which rank failed first: %s", attribution_error)
        self._undo()
        self._finish_report(status, metrics=metrics, error=error)

    # -- internals -------------------------------------------------------
    def _record_task_effects(self) -> None:
        """What the task did that the report must show: a group a framework made, threads, a re-seed."""
        if not self.report:
            return
        from bootstrap import distributed

        readers.current_state()  # remembers a live group: some variables are read at the first one only
        made_here = self._group is not None and self._group.state == "created"
        self.report["distributed"]["group_at_end"] = distributed.group_in_use(made_here)
        threads_now = runtime.intra_op_now()
        if self._threads and threads_now != self._threads["intra_op"]:
            self.report["threads"]["intra_op_at_end"] = threads_now  # e.g. Lightning set its own count
        seed_now = seeding.torch_seed()
        if self._torch_seed is not None and seed_now != self._torch_seed:
            self.report["seed"]["task_seed"] = seed_now

    def _chosen_as(self) -> str:
        """``+`` or ``++`` when the job chose its preset with ``+env=...``, as an app without an env group does."""
        for override in self.task_overrides:
            lhs = override.split("=", 1)[0].strip()
            if lhs.lstrip("+") == self.key and lhs.startswith("+"):
                return lhs[: len(lhs) - len(self.key)]
        return ""

    def _attribute_failure(self, error: Any) -> str:
        """Name the rank whose failure came first, here and in torchrun's summary."""
        from bootstrap import distributed

        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        first_rank, first_time, first_message = distributed.claim_first_failure(self.rank, text)
        if first_rank == self.rank:
            message, timestamp = f"rank {self.rank} failed: {text}", first_time
        else:
            message = f"rank {self.rank} stopped because rank {first_rank} failed first ({first_message}); here: {text}"
            timestamp = max(int(time.time()), first_time + 1)
        log.error("%s", message)
        distributed.write_elastic_error_file(message, timestamp)
        return message

    def _undo(self) -> None:
        """Put the process back. Each step runs even if an earlier one raised."""
        with _lock:
            if self in _stack:
                _stack.remove(self)
        atexit.unregister(self._close_interrupted)
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None
        group, self._group = self._group, None
        torch_snapshot, self._torch_snapshot = self._torch_snapshot, None
        environ_snapshot, self._environ_snapshot = self._environ_snapshot, None
        try:
            if group is not None:
                group.teardown()
                if group.state == "created" and self.report:
                    self.report["distributed"]["process_group"] = "destroyed"
        finally:
            try:
                if torch_snapshot is not None:
                    torch_snapshot.restore()
            finally:
                if environ_snapshot is not None:
                    environ_snapshot.restore()

    def _build_report(self, decisions, checks, found, warnings, started, mesh_shape=None) -> None:
        preset, launch = self.preset, self.launch or launcher.Launch("single")
        self.report = {
            "schema_version": 1,
            "preset": self.name,
            "resolved": self.resolved,
            "overrides": self.job_overrides,
            "device": self.device,
            "found": {
                "python": found.python, "torch": found.torch, "cuda": found.cuda, "nccl": found.nccl,
                "cudnn": found.cudnn, "compute_capability": found.compute_capability, "gpus": found.gpus,
                "gpu_names": list(found.gpu_names), "cpus": os.cpu_count(), "cpus_usable": runtime.usable_cpus(),
                "cpu_affinity": runtime.cpu_affinity(),
            },
            "checks": [{"name": c.name, "required": c.required, "found": c.found, "ok": c.ok} for c in checks],
            "vars": {
                d.name: {"value": report.masked(d.name, d.value), "source": d.source,
                         "effective": d.effective, "note": d.note, **({"withheld": True} if d.withheld else {})}
                for d in decisions
            },
            "threads": self._threads,
            "torch": {
                "matmul_precision": preset.torch.matmul_precision.value,
                "cudnn_allow_tf32": preset.torch.cudnn_allow_tf32,
                "cudnn_benchmark": preset.torch.cudnn_benchmark and not preset.torch.deterministic,
                "deterministic": preset.torch.deterministic,
            },
            "distributed": {
                **launch.as_dict(),
                "backend": self._backend,
                "process_group": self._group.state if self._group is not None else "none",
                "mesh": mesh_shape if self._group is not None and self._group.mesh is not None else None,
                "group_at_end": None,  # filled at job end: the group in use then, whoever made it
            },
            "seed": {"value": preset.seed, "generators": self._seeded, "data_seed": self.data_seed,
                     "task_seed": None},
            "warnings": warnings,
            "timings": {"bootstrap_s": round(time.perf_counter() - started, 6)},
            "job": {"num": self.job_num, "status": "running", "metrics": None},
        }

    def _finish_report(self, status: str, metrics: Any = None, error: Any = None) -> None:
        if not self.report:
            return
        values, skipped = report.metrics_from(metrics)
        job: Dict[str, Any] = {"num": self.job_num, "status": status, "metrics": values}
        if skipped:
            job["metrics_skipped"] = skipped
        if error is not None:
            job["error"] = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self.report["job"] = job
        self._write_report()

    def _write_report(self) -> None:
        if self.output_dir is not None:
            report.write_json_atomic(self.output_dir / report.report_name(self.rank, self.world_size), self.report)


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)  # unwinds the task; the session's atexit hook then closes it


def distributed_device(device_type: str, launch: launcher.Launch) -> str:
    """Each rank's device: ``cuda:<local_rank>`` on a GPU, else ``cpu``."""
    return f"cuda:{launch.local_rank}" if device_type == "cuda" else "cpu"


# The applied sessions, innermost last. They nest like context managers: an inner
# session restores to the state its outer one left. Only one thread applies at a time.
_stack: List[Session] = []
_owner: Optional[threading.Thread] = None  # the thread whose sessions are on the stack
_lock = threading.RLock()  # re-entrant: closing a session closes the ones inside it first


def _check_can_apply(session: Session) -> None:
    if session._environ_snapshot is not None:
        raise BootstrapError("This session is already applied. Close it (session.close()) before applying it "
                             "again, or make a new one with bootstrap.initialize().")
    if _stack and _owner is not threading.current_thread():
        raise BootstrapError(f"A bootstrap session is already applied in thread {_owner.name!r}. os.environ and "
                             "torch's settings belong to the whole process: apply sessions from one thread, "
                             "or close that one first.")
_warned: set = set()


def current() -> Session:
    """The session of the running job: ``bootstrap.current().device`` is where the model goes."""
    if not _stack:
        raise RuntimeError(
            "No bootstrap session is active. Enable the callback (hydra/callbacks=bootstrap) "
            "or wrap the code in `with bootstrap.initialize(cfg.env):`."
        )
    return _stack[-1]


def _warn_once(message: str) -> None:
    # One warning per process, not one per job of a long one-process sweep.
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)


def initialize(env_cfg: Any, **kwargs: Any) -> Session:
    """Validate ``env_cfg`` now; apply it on ``with``, restore on exit.

    >>> with bootstrap.initialize(cfg.env, output_dir="out") as session:
    ...     train()
    """
    return Session(env_cfg, **kwargs)
