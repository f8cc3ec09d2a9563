"""The watch as a part of a job (``env.watch``): started at the first step where a process group of several ranks
exists, told of every step (``Session.step``), its findings warned of, recorded and, under ``mode=error``, the
job's stop. The watch itself is :mod:`bootstrap.watch`, loaded only when a job watches."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

from bootstrap.core import nodes, report
from bootstrap.core.report import JobEnd, JobStatus
from bootstrap.core.schema import EnvConfig
from bootstrap.doors import outbound
from bootstrap.doors.errors import BootstrapError, RequeuedError
from bootstrap.doors.statuses import WatchStatus
from bootstrap.doors.watch_report import Watch as WatchRecord
from bootstrap.doors.watch_report import WatchFinding

if TYPE_CHECKING:
    from bootstrap.watch.watcher import Watch

Session = Any  # bootstrap.core.session.Session, which makes a Watching: not imported, imports point one way
log = logging.getLogger(__name__)
PREFIX = "hydra_train_bootstrap/watch"
PICTURE = "watch.png"  # rank 0's picture, in the job's directory, when the watch found something
_watches = [0]  # watches started by this process: each job of a one-process sweep watches again, in the same order


def planned(preset: EnvConfig, note: str) -> WatchRecord:
    """The watch's record before it judged anything: its settings, and why (``note``)."""
    wanted = preset.watch
    return WatchRecord(status=WatchStatus.SKIPPED, mode=wanted.mode.value, window_s=wanted.window_s,
                       threshold=wanted.threshold, consecutive=wanted.consecutive, note=note)


class Watching:
    """A session's watch: one of the callables ``Session.step`` calls. It costs nothing until the first step, and
    then one clock read and one append a step (:meth:`bootstrap.watch.watcher.Watch.mark`)."""

    def __init__(self, session: Session):
        self.session = session
        self.watch: Optional[Watch] = None
        self.note = "watching from the first step" if session.preset.watch.mode.value != "off" else \
            f"{session.key}.watch.mode=off"
        self.on_bad: Optional[str] = None
        self.bad_nodes: List[str] = []
        self._waiting = session.preset.watch.mode.value != "off"  # for the first step

    def __call__(self) -> None:
        watch = self.watch
        if watch is not None:
            watch.mark()
            if watch.fresh or watch.stopping:
                self._found(watch)
        elif self._waiting:
            self._waiting = False
            self._start()

    def _start(self) -> None:
        import torch.distributed as dist

        from bootstrap.core.preflight import grouped_launch
        from bootstrap.distributed.group import default_store
        from bootstrap.distributed.nodename import node as host
        from bootstrap.distributed.store_keys import run_key
        from bootstrap.watch.watcher import Place, Settings, Watch

        session = self.session
        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
            self.note = "one process: no rank to compare with"
            return
        preset, plan = session.preset, session.plan
        launch = grouped_launch(preset, plan)
        recorder = preset.distributed.flight_recorder
        _watches[0] += 1
        wanted = preset.watch
        settings = Settings(mode=wanted.mode.value, window_s=wanted.window_s, threshold=wanted.threshold,
                            consecutive=wanted.consecutive, links=wanted.links,
                            timeout_s=float(preset.distributed.timeout_s), key=session.key,
                            buffer_size=recorder.buffer_size if recorder.enabled else 0)
        place = Place(rank=launch.rank, world_size=launch.world_size, host=host(), node_rank=launch.node_rank,
                      local_rank=launch.local_rank, local_world_size=launch.local_world_size,
                      master_addr=os.environ.get("MASTER_ADDR"))
        self.note = "" if recorder.enabled else (
            f"{session.key}.distributed.flight_recorder.enabled=false: the watch times whole steps, which a "
            "collective makes alike on every rank (docs/watch.md)")
        self.watch = Watch(settings, place, default_store(), run_key(os.environ, launch, _watches[0], PREFIX))
        self.watch.mark()

    def _found(self, watch: Watch) -> None:
        """New findings (the training loop's thread): warned of, recorded, and the bad nodes written; the job's
        stop under ``mode=error``."""
        session, record = self.session, self.session.report
        fresh = watch.take()
        if record is None:
            return
        for finding in fresh:
            report.warn(record.warnings, f"watch: {finding.message}")
        warnings: List[str] = []
        stop = nodes.after_watch(session.preset, session.plan, fresh, session.key, warnings) if fresh else None
        for line in warnings:
            report.warn(record.warnings, line)
        self.bad_nodes = list(dict.fromkeys([*self.bad_nodes, *(h for f in fresh for h in f.hosts if h != "?")]))
        if self.bad_nodes:
            self.on_bad = "recorded"
        if watch.stopping:
            self._stop(stop or _first(watch.findings))
            return
        self._draw(watch)  # the job trains on: what was seen so far, drawn at its end (apart.later)
        session._end(JobEnd(JobStatus.RUNNING))  # written again, with what the watch found

    def _stop(self, error: BootstrapError) -> None:
        """End the job as a preflight finding does: recorded, the process restored, one line, no traceback."""
        self.on_bad = "requeued" if isinstance(error, RequeuedError) else "stopped"
        message = self.session.named(str(error))
        self.session.close(JobStatus.CHECK_FAILED, error=message)
        outbound.stop(f"Error: {message}", getattr(error, "exit_code", 1))

    def stop(self) -> None:
        """The job's end: the thread ends (its window in flight is waited for, briefly), and rank 0 draws what it
        saw when it found something."""
        if self.watch is not None:
            self.watch.stop()
            self._draw(self.watch)

    def _draw(self, watch: Watch) -> None:
        """Rank 0, with findings: every rank's scores over time, into the job's directory, by a process of its own."""
        series, output_dir = watch.series, self.session.output_dir
        if series is None or not watch.findings or output_dir is None:
            return
        from bootstrap.preflight import picture as drawing
        from bootstrap.watch.series import picture

        drawing.draw(picture(series, watch.findings, watch.settings.threshold, self.session.device),
                     Path(output_dir) / PICTURE, "watch", "watch", "every rank's scores")

    def record(self) -> WatchRecord:
        """The report's ``watch`` section as it stands."""
        if self.watch is None:
            return planned(self.session.preset, self.note)
        seen = self.watch.record()
        seen.note = "; ".join(filter(None, [self.note, seen.note])) or None
        seen.bad_nodes, seen.on_bad = list(self.bad_nodes), self.on_bad
        return seen


def _first(findings: List[WatchFinding]) -> BootstrapError:
    from bootstrap.doors.errors import WatchError

    return WatchError("\n".join(f"watch: {f.message}" for f in findings) or "watch: a rank was named")
