"""The start, phase by phase, from the process's start to the first finished step: what each phase is
(:data:`PHASES`), this rank's phases in its report, the task's own phases (:func:`task_phase`), and at the first
step every rank's phases gathered on rank 0 and the one line it logs (docs/report.md#the-start-phase-by-phase).

The marks are made on one clock (:mod:`bootstrap.doors.timeline`) by the code that knows what just ended: Hydra's
plugin scan (``hydra_plugins/hydra_train_bootstrap/searchpath.py``), the callback, the session's start
(``Session._apply``), the agreement, the preflight, Lightning's hooks (``BootstrapLogging``) and the task's loop
(``Session.watch``, ``Session.phase``, ``Session.step``). Accounting, apart from :func:`first_step`'s exchange
(``bootstrap.distributed.phase_exchange``), which never stops the job: what it cannot do, it says in the report.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, TypeVar

from bootstrap.core.phase_world import World, headline
from bootstrap.doors import outbound, records
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.timeline import TIMELINE, launcher_started, now

if TYPE_CHECKING:
    from bootstrap.distributed.launcher import Launch

log = logging.getLogger(__name__)
Batch = TypeVar("Batch")


@lean_dataclass(frozen=True)
class Kind:
    """One of the bootstrap's own phases: its name, what it holds, and whether it ends where the ranks meet."""

    name: str
    what: str
    waits: bool = False  # a rank that arrives early waits here for the others (phase_world.headline)


PHASES = (
    Kind("launcher", "before this process existed: the launcher's own process from its start (torchrun's agent: its "
         "rendezvous and store; SLURM's slurmstepd: the step's start on this node)", waits=True),
    Kind("earlier_jobs", "the jobs this process ran before this one (a sweep's jobs in one process)"),
    Kind("interpreter", "the interpreter and the imports before the app's main (Hydra's plugin scan marks its end; "
         "without Hydra, the bootstrap's start)"),
    Kind("compose", "Hydra's compose, from its plugin scan to the callback (with the plain API: to the bootstrap's "
         "start)"),
    Kind("callback", "the callback's start: its on_run_start (rank 0's run directory through torchrun's store), "
         "Hydra's job set-up (directory, logging, config files), the job's config read and its preset validated",
         waits=True),
    Kind("plan", "the plan and its application: the launch, the variables, the machine's checks, torch's settings"),
    Kind("store", "the rendezvous store: a client of torchrun's agent store, or rank 0's TCPStore", waits=True),
    Kind("agreement", "the ranks compare how they started", waits=True),
    Kind("init_process_group", "init_process_group (gloo connects its ranks here, and NCCL makes its communicator "
         "here when given the rank's device, as the bootstrap does) and the device mesh", waits=True),
    Kind("first_collective", "the first collective, the preflight's first gather (a lazily made NCCL communicator is "
         "made here)", waits=True),
    Kind("preflight", "the preflight check: each rank's matmul, then its collectives", waits=True),
    Kind("hand_off", "the hand-off to the task: the bad nodes, seeding, the lint, the report's first write"),
    Kind("task", "the task's own code where it named no phase (session.phase)"),
    Kind("stopped", "a job stopped before its first step (a check, a signal): from its last phase to the stop"),
    Kind("setup", "Lightning: from the hand-off to the trainer's setup (the task's code before fit, then fit's "
         "start: its ranks started, its process group made)", waits=True),
    Kind("restore", "Lightning: from the setup to the start of training (the model's setup, the checkpoint "
         "restored, the model wrapped, the sanity check)"),
    Kind("first_batch", "the first batch: from the training loop's start to its first batch"),
    Kind("first_step", "the first step, from its batch to its end (its optimizer step included)", waits=True),
)
BY_NAME = {kind.name: kind for kind in PHASES}
MAX_NAME = 64  # characters of a task's own phase name


def waits(name: str) -> bool:
    kind = BY_NAME.get(name)
    return kind is not None and kind.waits


def mark(name: str) -> None:
    """The bootstrap's phase ``name`` ends now."""
    TIMELINE.mark(name)


def session_starts() -> None:
    """The session's start (``Session._apply``): names what ran since the last mark, by the last mark."""
    TIMELINE.own_process()  # a forked child's marks and start are not its parent's
    before = {None: "interpreter", "interpreter": "compose", "compose": "callback", "earlier_jobs": "callback"}
    TIMELINE.mark(before.get(TIMELINE.last(), "task"))


_launchers: Dict[str, Optional[float]] = {}  # the variable the launcher's process lacks -> when it started


def rank_phases(launch: Optional[Launch]) -> List[records.Phase]:
    """This rank's phases so far, in order, from its process's start; the launcher's own first, where its process
    is known (its row's ``own_process_lacks``) and this is the process's first job."""
    out = []
    lacking = launch.row.own_process_lacks if launch is not None else None
    began = None
    if lacking and not any(m.name == "earlier_jobs" for m in TIMELINE.marks):
        if lacking not in _launchers:
            _launchers[lacking] = launcher_started(lacking)
        began = _launchers[lacking]
    if began is not None and began <= TIMELINE.origin:
        out.append(records.Phase(name="launcher", start_s=round(began - TIMELINE.origin, 6),
                                 seconds=round(TIMELINE.origin - began, 6)))
    for name, start, seconds, ops in TIMELINE.phases():
        out.append(records.Phase(name=name, start_s=round(start, 6), seconds=round(seconds, 6), store_ops=ops))
    return out


def record(report: Optional[records.Report], launch: Optional[Launch], stopped: bool = False) -> None:
    """The report's ``timings.phases``: as far as this rank got; a job that ``stopped`` before its first step with
    the time from its last mark to the stop as ``stopped``."""
    if report is None or not TIMELINE.enabled:
        return
    found = rank_phases(launch)
    if stopped and not TIMELINE.finished:
        end = found[-1].start_s + found[-1].seconds if found else 0.0
        found.append(records.Phase(name="stopped", start_s=end, seconds=round(now() - TIMELINE.origin - end, 6)))
    report.timings.phases = found


@contextlib.contextmanager
def task_phase(name: str) -> Iterator[None]:
    """``with session.phase("load_checkpoint"):``: the task's own phase, up to its first step."""
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME or not name.isprintable():
        raise ValueError(f"session.phase({name!r}): a phase's name is a line of text of 1 to {MAX_NAME} "
                         "characters, e.g. session.phase('load_checkpoint')")
    if name in BY_NAME:
        raise ValueError(f"session.phase({name!r}): {name!r} is one of the bootstrap's own phases; give yours "
                         f"another name, e.g. session.phase('my_{name}')")
    TIMELINE.mark("task")
    try:
        yield
    finally:
        TIMELINE.mark(name)


def listen(session: Any) -> None:
    """The session has handed over to the task: its first step (``session.step()``) ends the start."""
    mark("hand_off")

    def at_first_step() -> None:
        _stop_listening(session)
        first_step(session)
    setattr(at_first_step, "_first_step", True)
    _stop_listening(session)  # a session applied again listens once
    session._on_step.append(at_first_step)


def _stop_listening(session: Any) -> None:
    session._on_step[:] = [listener for listener in session._on_step if not getattr(listener, "_first_step", False)]


def at_end(session: Any) -> None:
    """The job ends (``Session.close``): a job that never reached its first step records the phases it reached,
    the task's own time last; what the process does next belongs to its next job."""
    _stop_listening(session)
    report = session.report
    if not TIMELINE.finished and report is not None:
        TIMELINE.mark("task")
        record(report, session.launch)
    TIMELINE.restart("earlier_jobs")


_exchanges = [0]  # exchanges made by this process: each job of a one-process sweep has its own keys


def first_step(session: Any) -> None:
    """The first finished step: the last phase marked, every rank's phases to rank 0 (a world), one line in the log,
    and the report written again. Whatever fails here is one warning: training goes on."""
    TIMELINE.mark("first_step" if TIMELINE.last() == "first_batch" else "task")
    report = session.report
    try:
        if report is None or not TIMELINE.enabled:
            return
        record(report, session.launch)
        world: Optional[World] = None
        try:
            world = _gathered(session, report)
        finally:
            TIMELINE.finish()  # the exchange's store operations are the last phase's
            record(report, session.launch)
        timings = report.timings
        timings.first_step_s = round(timings.phases[-1].start_s + timings.phases[-1].seconds, 6)
        if world is not None:
            timings.world_phases = world.summary()
            if len(timings.world_phases) and session.output_dir is not None:
                _picture(world, timings, session)
        if world is not None or session.rank == 0:
            log.info("%s", line(timings.first_step_s, timings.world_phases, timings.phases))
        from bootstrap.core.report import JobEnd, JobStatus

        session._end(JobEnd(JobStatus.RUNNING))
    except Exception as error:  # noqa: BLE001 - the accounting never stops the training
        log.warning("bootstrap: the start's phases were not recorded at the first step: %s",
                    outbound.finding(f"{type(error).__name__}: {error}", 500))
    finally:
        TIMELINE.finish()


def _gathered(session: Any, report: records.Report) -> Optional[World]:
    """Every rank's phases on rank 0, through the process group's store (the group in use now: a framework's
    too); None on the other ranks and without a group of several."""
    from bootstrap.distributed import group

    if not group.in_use():
        return None
    import torch.distributed as dist

    rank, world_size = dist.get_rank(), dist.get_world_size()
    if world_size < 2:
        return None
    from bootstrap.distributed.nodename import node as host
    from bootstrap.distributed.store_keys import run_key
    from bootstrap.distributed import phase_exchange
    from bootstrap.distributed.waits import Deadline
    from bootstrap.doors.inbound import Unreadable
    from bootstrap.doors.timeline import counted

    _exchanges[0] += 1
    store = counted(group.default_store())
    key = run_key(os.environ, session.launch, _exchanges[0], phase_exchange.PREFIX)
    own = phase_exchange.pack(host(), [(phase.name, phase.seconds) for phase in report.timings.phases])
    phase_exchange.send(store, key, rank, own)
    if rank != 0:
        return None
    timeout_s = session.preset.distributed.timeout_s
    arrived, absent, complete = phase_exchange.gather(store, key, world_size, Deadline(timeout_s))
    world = World(world_size)
    for sender, data in arrived:
        try:
            world.add(sender, *phase_exchange.unpack(sender, data))
        except Unreadable as error:
            world.refuse(sender, str(error))
    notes = [f"{absent.text() if complete else 'more than 16 ranks'} of {world_size} did not send their phases within "
             f"{session.key}.distributed.timeout_s={timeout_s}"] if absent or not complete else []
    if world.unreadable_count:
        notes.append(f"{world.unreadable_count} records could not be read ({'; '.join(world.unreadable)})")
    report.timings.world_phases_note = outbound.finding("; ".join(notes)) if notes else None
    return world if world.ranks else None


def line(first_step_s: float, world: List[records.WorldPhase], own: List[records.Phase]) -> str:
    """The first step's line: ``first step at 41.2 s: slowest phase init_process_group (max 30.1 s, rank 917 on
    gpu115; median 2.0 s)``; for one process, its own slowest phase."""
    said = f"first step at {first_step_s:.1f} s"
    top = headline(world, waits)
    if top is not None:
        return outbound.finding(f"{said}: slowest phase {top.name} (max {top.max_s:.1f} s, rank {top.slowest_rank} on "
                                f"{top.slowest_host}; median {top.median_s:.1f} s)")
    slowest = max(own, key=lambda phase: phase.seconds, default=None)
    return said if slowest is None else outbound.finding(f"{said}: slowest phase {slowest.name} "
                                                         f"({slowest.seconds:.1f} s)")


def _picture(world: World, timings: records.Timings, session: Any) -> None:
    """Rank 0 draws the world's phases into the job's directory, by a process of its own (the ``plot`` extra)."""
    from bootstrap.pictures import phases as picture

    lanes = [picture.Lane(label=lane.label, seconds=list(lane.seconds)) for lane in world.lanes(picture.MAX_LANES)]
    said = [line(timings.first_step_s or 0.0, timings.world_phases, timings.phases)]
    picture.start(picture.Picture(title=f"the start, phase by phase, to the first step: {world.world_size} ranks",
                                  names=world.names[:picture.MAX_PHASES], lanes=lanes,
                                  notes=said + ([timings.world_phases_note] if timings.world_phases_note else [])),
                  session.output_dir / picture.NAME)


def stepped(batches: Iterable[Batch], step: Callable[[], None]) -> Iterator[Batch]:
    """``session.watch(batches)``: each batch of ``batches``, with ``step()`` called each time the loop comes back
    for the next one and when it has done the last; the task's phase ends at the first ``next()``, the first
    batch's when it arrives."""
    started = False
    mark("task")  # the loop's first next(): the task's code before its loop ends here
    for batch in batches:
        step() if started else mark("first_batch")
        started = True
        yield batch
    if started:
        step()
