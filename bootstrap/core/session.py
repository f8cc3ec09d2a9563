"""``initialize(env_cfg) -> Session``: the plain-Python API that every entry point goes through.

Data flows one way: config -> validated preset (``schema.load``) -> :class:`~bootstrap.core.plan.Plan`
(pure) -> ``apply()`` (touches the process, remembers what it changed) -> report. ``close()``
undoes exactly that. If anything fails half-way, the process is put back as it was
before the error propagates.

Sessions nest like context managers: an inner session restores to the state its outer
one left, and :func:`current` is the innermost. ``os.environ`` belongs to the whole
process, so one thread applies sessions at a time.
"""

from __future__ import annotations

import functools
import logging
import os
import platform
import time
from pathlib import Path
from typing import (TYPE_CHECKING, Any, Callable, Collection, ContextManager, Iterable, Iterator, List, Mapping,
                    Optional, Sequence, Tuple, TypeVar, cast)

from bootstrap.core import (active, agreement, ending, fabric, nodes, phases, preflight, presets, refusal, report,
                            runtime, schema, startup, verdict, versions, watch)
from bootstrap.core.changes import ProcessChanges, sigterm_held
from bootstrap.core.plan import Plan
from bootstrap.core.process_vars import set_by_process
from bootstrap.core.report import Applied, JobEnd, JobInfo, JobStatus
from bootstrap.distributed import launcher, seeding
from bootstrap.distributed.group import GroupState
from bootstrap.distributed.group import in_use as group_in_use
from bootstrap.doors import outbound, overrides, records
from bootstrap.doors.errors import PRESET_KEY, ConfigError, DisagreementError, PreflightError, naming_preset
from bootstrap.doors.records import Report
from bootstrap.pictures import apart
from bootstrap.provenance import collect as provenance
from bootstrap.variables import environ, lint, readers

if TYPE_CHECKING:
    from torch.distributed import Store

    from bootstrap.core.auto import Choice

log = logging.getLogger(__name__)
Batch = TypeVar("Batch")


class Session:
    """One job's bootstrap. Use as a context manager, or call ``apply()`` and ``close()``.

    While applied, the task reads it through :func:`current`: ``device``, ``rank``,
    ``local_rank``, ``world_size``, ``mesh`` and ``data_seed``. ``report`` is the job's record,
    a typed :class:`bootstrap.doors.records.Report` (``session.report.threads.intra_op``);
    ``session.report.to_json()`` is what ``bootstrap.json`` holds, before the way out masks it.
    """

    @naming_preset
    def __init__(self, env_cfg: Any, *, name: Optional[str] = None, key: str = "env",
                 env_set: Optional[Mapping[str, Any]] = None, explicit_vars: Collection[str] = (),
                 job_overrides: Sequence[str] = (), output_dir: Optional[os.PathLike] = None,
                 job_num: Optional[int] = None, notes: Sequence[str] = ()):
        """``env_cfg``: the preset (DictConfig, dict or EnvConfig), validated now. ``key``: its
        place in the job config, for messages. ``env_set``: Hydra's ``hydra.job.env_set``.
        ``explicit_vars``: the variables named on the command line (``env.vars.NAME=...``),
        which win over the shell. ``job_overrides``: the job's overrides as typed, recorded
        masked. ``output_dir``: where ``bootstrap.json`` goes (None: nowhere). ``notes``: what reading
        the job's config decided, said once and recorded (jobconfig.app_seed)."""
        self.key, self.name = key, name or "custom"
        self.job_overrides = [str(o) for o in job_overrides]
        outbound.remember_overrides(self.job_overrides)  # masked in everything written, the task's error too
        self.output_dir = Path(output_dir) if output_dir is not None else None
        self.job_num = job_num
        self.report: Optional[Report] = None  # the job's record (bootstrap.json) once apply() has made it
        self.resolved: Optional[Choice] = None  # env=auto: what it chose
        self.preset_digest: Optional[str] = None  # schema.digest of the preset the plan was made from
        with refusal.recorded(self):  # a preset refused is recorded too (bootstrap.core.refusal)
            self.preset = schema.load(env_cfg)
        self.env_set, self._notes = dict(env_set or {}), list(notes)
        self.explicit_vars = frozenset(explicit_vars)
        outbound.remember_vars(self.preset.vars or {})
        self.plan, self.launch = cast(Optional[Plan], None), cast(Optional[launcher.Launch], None)
        self.device = "cpu" if self.preset.device.value == "cpu" else "cuda"  # resolved by apply()
        self._torch_seed: Optional[int] = None  # torch.initial_seed() once the bootstrap has seeded
        self._provenance: Optional[provenance.Collection] = None  # collecting, once the job has started
        self._changes: Optional[ProcessChanges] = None  # while applied: what it changed, its group and recorder
        self._masking_logs = False  # holds outbound.MaskedLogs while applied
        self.preflight_always = False  # measure even a lone process with no floor (bootstrap doctor --preflight)
        self._on_step: List[Callable[[], None]] = []  # what each finished training step tells (step())
        self._watching: Optional[watch.Watching] = None  # env.watch: told of every step, once the job started

    data_seed = property(lambda self: self.plan.data_seed if self.plan else self.preset.seed)  # for the task's data
    rank = property(lambda self: self.launch.rank if self.launch else 0)
    local_rank = property(lambda self: self.launch.local_rank if self.launch else 0)
    world_size = property(lambda self: self.launch.world_size if self.launch else 1)

    @property
    def mesh(self):  # the DeviceMesh, or None when none was built
        return self._group.mesh if self._group is not None else None

    @property
    def _group(self):
        return self._changes.group if self._changes is not None else None

    def flat(self) -> dict[str, Any]:
        """The report so far as flat ``bootstrap/...`` keys, masked: what every tracker integration logs."""
        from bootstrap.core import flat

        if self.report is None:
            return {}
        if self._provenance is not None:  # a tracker's run gets the commit: wait for it, bounded
            self.report.provenance, self.report.timings.provenance_s = self._provenance_so_far(wait=True)
        return flat.flat(self.report)

    def preflight_now(self) -> Optional[records.Preflight]:  # once a framework made the group after the start
        return preflight.now(self)

    # -- in the task ---------------------------------------------------------------------------
    def step(self) -> None:
        """One finished training step, told to what watches the steps (the start's phases, the watch): Lightning's
        hooks call it (``BootstrapLogging``), a plain loop after each optimizer step or through :meth:`watch`."""
        for on_step in tuple(self._on_step):  # a listener may leave (the start's, at the first step)
            on_step()

    def watch(self, batches: Iterable[Batch]) -> Iterator[Batch]:
        """``for batch in session.watch(loader):`` yields every batch of ``batches`` and marks a step
        (:meth:`step`) each time the loop comes back for the next one, and when it has done the last."""
        return phases.stepped(batches, self.step)

    def phase(self, name: str) -> ContextManager[None]:
        """``with session.phase("load_checkpoint"):``: a phase of the task's own, up to its first step, in the
        report's ``timings.phases`` and across the ranks (docs/report.md#the-start-phase-by-phase)."""
        return phases.task_phase(name)

    def __enter__(self) -> "Session":
        return self.apply()

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        self.close(JobStatus.COMPLETED if exc is None else JobStatus.FAILED, error=exc)

    def named(self, text: Optional[str]) -> Optional[str]:
        """``text`` (a warning, a refusal) naming the preset as this job does."""
        return text.replace(PRESET_KEY, self.key) if text is not None else None

    @property
    def cpu_override(self) -> str:  # a mismatch's fix, as this job can say it
        chosen_as = overrides.preset_prefix(self.job_overrides, self.key)
        return presets.choose_override(self.key, presets.CPU_PRESET, chosen_as)

    # -- deciding ----------------------------------------------------------------------------
    def detect_launch(self) -> launcher.Launch:
        """How this process was started (torchrun, Lightning, submitit, srun or single). Reads the environment."""
        with refusal.recorded(self):  # launcher variables that do not add up are recorded too
            self.launch = startup.detect_launch(self.preset, os.environ, self.key, group_exists=group_in_use())
        return self.launch

    def _make_plan(self, environ_now: Mapping[str, str], warnings: List[str]) -> Plan:
        for note in self._notes:
            report.warn(warnings, note, once=True)  # each job's record; the log once per process
        if self.preset.auto:  # env=auto: replace the placeholder by the preset this machine calls for
            from bootstrap.core import auto

            # On a GPU this reads the compute capability, which creates the CUDA context before
            # the chosen preset's variables are set: CUDA_* ones then reach children only.
            chosen, self.resolved = auto.resolve(self.key, self.job_overrides, versions.detect())
            self.preset = fabric.carried(chosen, self.preset.fabric)  # env=auto env/fabric=ib: the job's fabric
            report.warn(warnings, self.resolved.warning)
        self.preset_digest = schema.digest(self.preset)  # once per job: the report and the ranks' comparison
        machine = startup.Machine(cpus=versions.usable_cpus(), machine_cpus=os.cpu_count() or 1,
                                  launcher_cpus=versions.launcher_cpus(), state=readers.current_state())
        # the one start-up a dry run shares (bootstrap dryrun): this process's environment and machine
        self.plan = startup.plan_rank(
            self.preset, environ_now, machine, self.launch or self.detect_launch(), env_set=self.env_set,
            explicit_vars=self.explicit_vars, output_dir=str(self.output_dir) if self.output_dir else None,
            by_process=lambda launch: set_by_process(environ_now, self.env_set, launch, self.output_dir),
            fabric_vars=fabric.prepare(self.preset, environ_now, warnings))
        return self.plan

    def _device(self, plan: Plan, found: versions.Found) -> Optional[str]:
        """Resolve ``self.device``; returns the warning when CUDA was asked for and is absent."""
        self.device = plan.device(cuda_visible=found.gpus > 0)
        if plan.device_type == "cuda" and self.device == "cpu":  # only with on_mismatch=warn
            return f"{self.key}.device=cuda but no CUDA device is visible; the task runs on cpu"
        return None

    def _job(self) -> JobInfo:
        return JobInfo(self.name, self.job_overrides, self.job_num, self.resolved, self.preset_digest)

    def _machine(self, found: versions.Found) -> Optional[lint.Machine]:
        """The hardware as both the lint and the report's ``effective`` judge it (``lint.hardware_gap``); None for a
        preset that sets no variable, which the lint does not judge (and whose job loads no variable table)."""
        return lint.machine_from(found, platform.machine(), versions.openmp_runtimes) if self.preset.vars else None

    @naming_preset
    def preview(self) -> Report:
        """The report ``apply()`` would write, worked out without changing the process (``bootstrap doctor``).

        Hydra's ``env_set`` counts as already in the environment, as it is when a job starts."""
        started, warnings = time.perf_counter(), list[str]()
        plan = self._make_plan({**os.environ, **{k: str(v) for k, v in self.env_set.items()}}, warnings)
        found = versions.detect()
        checks = versions.check(self.preset.requires, found, plan.device_type)
        no_gpu, unproven = self._device(plan, found), self.named(verdict.unproven_network(self.preset, found.nccl))
        if verdict.after_checks(self.preset, self.name, checks, cpu_override=self.cpu_override) is None:
            warnings += [line for line in (no_gpu, unproven) if line]  # as the job warns, where it goes on
        machine, took = self._machine(found), time.perf_counter() - started
        previewed = report.build(self._job(), plan, self.device, found, checks, None, warnings, took,
                                 JobStatus.PREVIEW, lint.for_preset(self.preset, machine),
                                 preflight=preflight.expected(self.preset), machine=machine,
                                 provenance=nodes.named(provenance.previewed()))
        previewed.watch = watch.planned(self.preset, "not run: a preview")
        return previewed

    # -- applying ----------------------------------------------------------------------------
    @naming_preset
    def apply(self) -> "Session":
        """Apply the preset to this process; on any failure, put it back and raise."""
        holds = not self._masking_logs  # applied already: push refuses, and the hold it has stays its own
        if holds:
            outbound.MaskedLogs.hold()  # every log record while the job runs, whichever logger made it
            self._masking_logs = True
        try:
            active.push(self, self._apply)
        except BaseException:
            if holds:
                self._release_logs()
            raise
        phases.listen(self)  # the task's first step ends the start's timeline
        return self

    def _release_logs(self) -> None:
        if self._masking_logs:
            self._masking_logs = False
            outbound.MaskedLogs.release()

    def _apply(self) -> None:
        started, warnings = time.perf_counter(), list[str]()
        started_ns = time.time_ns()  # the flight recorder's entries from here on are this job's
        phases.session_starts()  # at started_ns: the plan phase's start on the process's clock
        self.report, self._provenance, self._watching = None, None, None  # this start's (applied again: anew)
        with refusal.recorded(self):  # a plan that cannot hold is recorded too
            plan = self._make_plan(os.environ, warnings)
        refused = verdict.before_apply(self.preset, plan, os.environ)  # the doctor's verdict too
        if refused:  # the lint's stops and values torch would refuse: nothing is applied yet
            self._record(plan, versions.detect(), [], None, warnings, started, JobStatus.CHECK_FAILED,
                         refused[0].message, lint=refused[0].lint, started_ns=started_ns)
            raise refused[0].exception()
        self._changes = ProcessChanges(self.env_set, self._close_interrupted)
        found, checks = None, []
        try:
            self._changes.guard.install()  # first: a signal during start-up (a rendezvous) ends the job restored
            if self.output_dir is not None and (plan.nccl_log_dir or plan.dump_dir):
                # NCCL opens its log, and its watchdog its dump, in the job's directory: with no such
                # directory NCCL writes its log to the terminal (seen on an H200) and the dump is lost.
                outbound.make_directory(self.output_dir)
            environ.apply_vars(plan.vars)
            runtime.apply_late_values()
            # Detect after the variables are set: on a GPU, reading the compute capability
            # creates the CUDA context, which reads CUDA_* variables.
            found = versions.detect()
            checks = versions.check(self.preset.requires, found, plan.device_type)
            mismatch = verdict.after_checks(self.preset, self.name, checks, cpu_override=self.cpu_override) or \
                verdict.listed(self.preset, self.key, warnings, agreement.host(), os.environ)  # before the group
            if mismatch:
                self._record(plan, found, checks, None, warnings, started, JobStatus.CHECK_FAILED, mismatch.message,
                             started_ns=started_ns)
                raise mismatch.exception()
            report.warn(warnings, self.named(verdict.mismatch_warning(self.name, checks)))
            report.warn(warnings, self.named(verdict.unproven_network(self.preset, found.nccl)))  # the doctor's too
            report.warn(warnings, self._device(plan, found))
            device = self.device
            intra, inter, inter_note = runtime.apply_settings(plan.torch, plan.threads.intra_op, plan.threads.inter_op)
            report.warn(warnings, inter_note, once=True)  # the same in every job of a one-process sweep
            phases.mark("plan")
            backend, group_state = None, GroupState.NONE
            if plan.distributed:
                from bootstrap.distributed import group

                group.export_rendezvous(plan.launch)
            agreed, store = self._agree(plan, found, intra, inter)  # before anything that could hang on a difference
            if self.world_size > 1:
                phases.mark("agreement")
            if agreed.status == agreement.Status.STOPPED:
                self._record(plan, found, checks, None, warnings, started, JobStatus.CHECK_FAILED, agreed.message,
                             started_ns=started_ns, agreed=agreed)
                raise DisagreementError(agreed.message)
            report.warn(warnings, agreed.message)
            if plan.distributed:
                self._changes.group = group.start(plan.launch, plan.backend_for(device),
                                                  self.preset.distributed.timeout_s, device, plan.mesh,
                                                  plan.create_group, store)
                group_state, backend = self._group.state, self._group.backend
                if group_state is not GroupState.NONE:
                    phases.mark("init_process_group")
            if plan.dump_dir:
                from bootstrap.distributed import flightrec

                self._changes.recorder = flightrec.JobRecorder(Path(plan.dump_dir), self.rank, self.world_size,
                                                               started_ns, self.preset.distributed.timeout_s)
                self._changes.watcher = flightrec.Watcher(self._changes.recorder,
                                                             functools.partial(ending.end_stuck, self))
                self._changes.watcher.start()
            checked = preflight.run(self.preset, plan, device, self._group, self.key, self.preflight_always)
            if checked.status != records.PreflightStatus.SKIPPED:
                phases.mark("preflight")
            stopped = nodes.after_preflight(self.preset, plan, checked, preflight.refusal(checked, self.key), self.key,
                                            warnings)  # the bad nodes recorded; the error a stop raises
            if stopped:
                self._record(plan, found, checks, None, warnings, started, JobStatus.CHECK_FAILED, str(stopped.args[0]),
                             started_ns=started_ns, agreed=agreed, checked=checked)
                raise stopped
            for found_slow in checked.findings:
                report.warn(warnings, f"preflight: {found_slow.message}")
            for line in preflight.warnings(checked):
                report.warn(warnings, line)
            seeded = seeding.seed_everything(plan.global_seed) if plan.global_seed is not None else []
            self._torch_seed = seeding.torch_seed()  # a different one at job end: the task re-seeded
            for line in environ.late_warnings(plan.vars):
                report.warn(warnings, line)
            findings = lint.for_preset(self.preset, self._machine(found))
            for finding in findings:
                log.warning("lint: %s", finding)
            applied = Applied(intra, inter, tuple(seeded), group_state, backend, self.mesh is not None)
            self._on_step[:] = [told for told in self._on_step if not isinstance(told, watch.Watching)]
            self._watching = watch.Watching(self)  # starts at the first step, where a group of several ranks exists
            self._on_step.append(self._watching)
            record = self._record(plan, found, checks, applied, warnings, started, lint=findings,  # unwritable: fails
                                  started_ns=started_ns, agreed=agreed, checked=checked)
            log.info("bootstrap\n%s", report.format_table(record))
            if self.preset.provenance.enabled:  # now: the job has started, and bootstrap_s is measured
                self._provenance = provenance.Collection(provenance.app_directory(), self.output_dir,
                                                         self.preset.provenance.seconds, self.rank, self.world_size)
        except BaseException as error:
            teardown = self._undo()
            if teardown is not None and self.report is not None:  # refused once the group existed (the preflight)
                self._end(JobEnd(self.report.job.status or JobStatus.CHECK_FAILED, error=self.report.job.error,
                                 teardown=teardown))
            if isinstance(error, (KeyboardInterrupt, SystemExit)) and self.report is None:
                try:  # a signal before the job started (a rendezvous waiting for a peer): say so
                    self._record(plan, found or versions.detect(), checks, None, warnings, started,
                                 JobStatus.INTERRUPTED, f"stopped during start-up ({type(error).__name__})",
                                 started_ns=started_ns)
                except Exception as write_error:  # noqa: BLE001 - the interrupt matters; the record is a courtesy
                    log.warning("could not record the interrupted start: %s", write_error)
            raise

    def _agree(self, plan: Plan, found: versions.Found, intra_op: int,
               inter_op: int) -> Tuple[records.Agreement, Optional[Store]]:
        """Compare this rank with rank 0; returns the outcome and the store it made for the group, if any."""
        facts = startup.agreement_facts(
            {"python": found.python, "torch": found.torch, "cuda": found.cuda, "cudnn": found.cudnn,
             "nccl": found.nccl, "hip": found.hip, "bootstrap": found.bootstrap},
            self.name, self.preset_digest or "", plan, intra_op, inter_op, runtime.debug_level())
        agreed, store = agreement.check(
            self.preset.distributed.agree.value, plan.launch, facts, self.output_dir,
            bool(plan.distributed and plan.create_group), self.preset.distributed.timeout_s,
            [decision.name for decision in plan.vars if decision.source != environ.PROCESS])
        agreed.message = self.named(agreed.message)
        return agreed, store

    def _record(self, plan: Plan, found: versions.Found, checks: list, applied: Optional[Applied], warnings: List[str],
                started: float, status: JobStatus = JobStatus.RUNNING, error: Optional[str] = None,
                lint: Sequence[Any] = (), started_ns: Optional[int] = None, agreed: Optional[records.Agreement] = None,
                checked: Optional[records.Preflight] = None) -> Report:
        """This start's report so far (``agreed``: the ranks' comparison, ``checked``: the preflight), written."""
        self.report = report.build(self._job(), plan, self.device, found, checks, applied, warnings,
                                   time.perf_counter() - started, status, lint, started_ns, agreed, checked,
                                   self._machine(found), self._provenance_so_far()[0])
        phases.record(self.report, self.launch, stopped=status is not JobStatus.RUNNING)
        return self._end(JobEnd(status, error=self.named(error)))

    # -- closing -----------------------------------------------------------------------------
    def _close_interrupted(self) -> None:
        self.close(JobStatus.INTERRUPTED, error="the process was stopped by a signal or exit before the job ended")

    def close(self, status: JobStatus = JobStatus.COMPLETED, metrics: Any = None, error: Any = None) -> None:
        """Restore the process and record how the job ended. Safe to call twice.

        Sessions applied after this one and still open are closed first (status ``failed``)."""
        if self._changes is None:
            return
        with sigterm_held():  # a SIGTERM now waits until the process is restored (torchrun's, after a peer failed)
            for session in reversed(cast(List[Session], active.inside(self))):
                session.close(JobStatus.FAILED, error="closed because an outer session was closed first")
            job_end = JobEnd(JobStatus(status), metrics, error)
            try:  # a record must never keep the process from being restored
                phases.at_end(self)
                ending.task_effects(self, job_end)
                ending.failure(self, job_end)
            except Exception as record_error:  # noqa: BLE001 - the store may be gone with a peer: still restore
                log.warning("could not record the task's effects or the failing rank: %s", record_error)
            finally:  # also when Ctrl-C comes while the dumps are gathered
                job_end.teardown = self._undo()
                if self.report is not None:  # whatever the task returned, the record ends
                    # a stopped job (Ctrl-C, SIGTERM) does not wait for the collection: it is recorded as it is
                    job_end.provenance, job_end.provenance_s = self._provenance_so_far(
                        wait=job_end.status is not JobStatus.INTERRUPTED)
                    self._end(job_end)
                    if self.output_dir is not None:  # where did my run go? the job's last line names its record
                        log.info("report: %s", ending.shown_path(
                            self.output_dir / records.report_name(self.rank, self.world_size)))

    def _provenance_so_far(self, wait: bool = False) -> Tuple[records.Provenance, Optional[float]]:
        # the job's provenance: collected (wait: up to env.provenance.seconds for it), still collecting, or off
        found, seconds = provenance.so_far(self._provenance, self.preset.provenance.enabled, wait)
        return nodes.named(found), seconds

    def _undo(self):
        """Put the process back (see ProcessChanges.undo); returns what became of the group."""
        active.remove(self)
        changes, self._changes = self._changes, None
        if self._watching is not None:  # before the group goes: the watch's thread uses its store
            self._watching.stop()
        apart.flush()  # the pictures asked for while the job ran, drawn now that it has ended
        try:
            return changes.undo() if changes is not None else None
        finally:
            self._release_logs()

    def _end(self, job_end: JobEnd) -> Report:
        """The record's end, in one call (report.end), then written: rank N of a world writes
        bootstrap.rank<N>.json, cleaned on the way out."""
        assert (record := self.report) is not None, "a report is made before its end is written"
        report.end(record, job_end)
        record.watch = self._watching.record() if self._watching is not None else None
        if self.output_dir is not None:
            outbound.write_json(self.output_dir / records.report_name(self.rank, self.world_size), record.to_json())
        return record


def current() -> Session:
    """The session of the running job: ``bootstrap.current().device`` is where the model goes."""
    session = active.innermost()
    if not isinstance(session, Session):
        raise RuntimeError("No bootstrap session is active. Enable the callback (hydra/callbacks=bootstrap) "
                           "or wrap the code in `with bootstrap.initialize(cfg.env):`.")
    return session


def initialize(env_cfg: Any, *, name: Optional[str] = None, key: str = "env",
               env_set: Optional[Mapping[str, Any]] = None, explicit_vars: Collection[str] = (),
               job_overrides: Sequence[str] = (), output_dir: Optional[os.PathLike] = None,
               job_num: Optional[int] = None) -> Session:
    """Validate ``env_cfg`` now; apply it on ``with``, restore on exit (see :class:`Session`).

    >>> with bootstrap.initialize(cfg.env, output_dir="out") as session:
    ...     train()
    """
    return Session(env_cfg, name=name, key=key, env_set=env_set, explicit_vars=explicit_vars,
                   job_overrides=job_overrides, output_dir=output_dir, job_num=job_num)
