"""One rank's watch while the job trains: the steps it marks, a thread that measures each window, exchanges it and,
on rank 0, judges it. Touches the process (a thread, the store, the flight recorder, sockets).

The training loop pays one clock read and one append a step (:meth:`Watch.mark`); everything else runs in the
thread ``bootstrap-watch``, once a window (``env.watch.window_s``, from this rank's first step): the steps' own
times (:mod:`bootstrap.watch.steps` over :mod:`bootstrap.watch.recorder`), the link to the next node
(:mod:`bootstrap.watch.probe`, a node's first rank only), this rank's record in the store
(:mod:`bootstrap.watch.exchange`), rank 0's verdict (:mod:`bootstrap.watch.scores`), and the verdict read back.
The thread never waits for another rank: rank 0 judges a window when every rank's record is there, or a window
later with those that are, and names a rank absent once ``env.distributed.timeout_s`` passed without its record.
A failure in the thread (the store gone with rank 0) ends the watch with a note, never the job.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Callable, Deque, Dict, List, Optional

from bootstrap.doors import outbound
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.statuses import WatchStatus
from bootstrap.doors.watch_report import Watch as WatchRecord
from bootstrap.doors.watch_report import WatchFinding, WatchLink
from bootstrap.preflight import links as node_links
from bootstrap.watch import figures, probe, recorder, steps
from bootstrap.watch.exchange import Exchange
from bootstrap.watch.scores import Judge
from bootstrap.watch.series import Series

if TYPE_CHECKING:
    from torch.distributed import Store

log = logging.getLogger(__name__)
JOIN_S = 5.0  # the most the job's end waits for the thread (a window's work in flight)


@lean_dataclass(frozen=True)
class Settings:
    """``env.watch`` and what it needs from the rest of the preset."""

    mode: str
    window_s: float
    threshold: float
    consecutive: int
    links: bool
    timeout_s: float
    key: str = "env"  # the preset's key, for messages
    buffer_size: int = 0  # the flight recorder's (0: off, and the steps' waits are not known)


@lean_dataclass(frozen=True)
class Place:
    """Where this rank is: its rank and node, and the node's neighbours for the links."""

    rank: int
    world_size: int
    host: str
    node_rank: int = 0
    local_rank: int = 0
    local_world_size: int = 1
    master_addr: Optional[str] = None

    @property
    def leader(self) -> bool:
        """The first rank of its node: it times the link to the next node."""
        return self.local_rank == 0 and self.world_size > self.local_world_size

    @property
    def next_leader(self) -> int:
        return (self.rank + self.local_world_size) % self.world_size


class Watch:
    """See the module's docstring. :meth:`mark` from the training loop; :meth:`stop` at the job's end."""

    def __init__(self, settings: Settings, place: Place, store: Store, key: str):
        self.settings, self.place = settings, place
        self.exchange = Exchange(store, key, place.rank, place.world_size)
        self.marks: Deque[int] = deque()  # the ends of steps not yet measured (time.time_ns)
        self.steps = 0
        self.windows = 0
        self.seconds = 0.0
        self.note: Optional[str] = None
        self.findings: List[WatchFinding] = []  # as this rank knows them: rank 0's verdict
        self.fresh: List[WatchFinding] = []  # new findings the training loop has not taken yet (take())
        self.stopping = False  # env.watch.mode=error and a finding: the loop stops at its next step
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._last_mark: Optional[int] = None
        self._judge = Judge(settings.threshold, settings.consecutive, settings.key) if place.rank == 0 else None
        self._rank0 = _Rank0(self) if place.rank == 0 else None
        self._listener: Optional[probe.Listener] = None
        self._prober: Optional[probe.Prober] = None
        self._thread = threading.Thread(target=self._run, name="bootstrap-watch", daemon=True)
        self._started_s = time.monotonic()

    def mark(self) -> None:
        """One step ended (the training loop's thread). Starts the thread at the first."""
        self.marks.append(time.time_ns())
        self.steps += 1
        if self.steps == 1:
            self._started_s = time.monotonic()
            self._thread.start()

    @property
    def series(self) -> Optional[Series]:
        """Rank 0: every window's scores, bounded (the picture's); None on any other rank."""
        return self._rank0.series if self._rank0 is not None else None

    def take(self) -> List[WatchFinding]:
        """The findings the loop has not seen yet."""
        with self._lock:
            fresh, self.fresh = self.fresh, []
        return fresh

    def stop(self) -> None:
        """End the thread (the job's end), waiting at most JOIN_S for a window's work in flight."""
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=JOIN_S)
        if self._prober is not None:
            self._prober.close()
        if self._listener is not None:
            self._listener.stop()

    # -- the thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        window = 0
        while not self._stopped.wait(max(0.0, self._started_s + (window + 1) * self.settings.window_s
                                         - time.monotonic())):
            if not self._call(window, functools.partial(self._window, window)):
                return
            window += 1
            missed = int((time.monotonic() - self._started_s) // self.settings.window_s) - window
            window += max(0, missed)  # a window the thread slept through (a stalled machine) is skipped
        # A window with a rank's record still to come is judged at the next window, not after a shorter grace: the
        # rank starved of CPU is the one whose thread posts late (on the namespace cluster, a rank left a sixth of its
        # core missed every other window under a grace of window_s / 4, and was named after 7 windows, not 3).
        if self._rank0 is not None and self._rank0.pending:
            self._call(window, functools.partial(self._rank0.judge, final=True))  # the job's end: with those there

    def _call(self, window: int, work: Callable[[], None]) -> bool:
        """Run a window's ``work``, timed; False when it failed, and the watch ends (a note, never the job)."""
        started = time.perf_counter()
        try:
            work()
        except Exception as error:  # noqa: BLE001 - the store went with rank 0, a peer vanished: the job goes on
            self.note = outbound.finding(f"the watch stopped at window {window}: {type(error).__name__}: {error}")
            log.warning("watch: %s", self.note)
            return False
        finally:
            self.seconds += time.perf_counter() - started
        return True

    def _window(self, window: int) -> None:
        own = self._measure(window)
        if window == 0:
            self.exchange.announce(figures.header(own))
            if self.place.leader and self.settings.links:
                self._listener = probe.Listener("", self.settings.timeout_s)
                self.exchange.offer_probe(f"{probe.local_address(self.place.master_addr)}:"
                                          f"{self._listener.address.split(':', 1)[1]}")
        own.link_next_gbps = self._link()
        self.exchange.publish(window, figures.pack(own))
        self.windows += 1
        if self._rank0 is not None:
            self._rank0.add(window)
            self._rank0.judge(final=False)
        else:
            self._follow()

    def _measure(self, window: int) -> figures.WindowFigures:
        """This rank's steps since the last window, with their own times."""
        cutoff = time.time_ns()
        marks = [self._last_mark] if self._last_mark is not None else []
        while self.marks and self.marks[0] <= cutoff:
            marks.append(self.marks.popleft())
        if marks:
            self._last_mark = marks[-1]
        measured_waits = self.settings.buffer_size > 0
        waits = recorder.read(marks[0], self.settings.buffer_size) if measured_waits and len(marks) > 1 else \
            recorder.Waits([], None, 0)
        measured = steps.steps(marks, waits.collectives, waits.covered_from)
        step_s, own_s = steps.medians(measured)
        return figures.WindowFigures(rank=self.place.rank, host=self.place.host, window=window,
                                     node_rank=self.place.node_rank, steps=len(measured), step_s=step_s,
                                     own_s=own_s, waits_measured=measured_waits)

    def _link(self) -> Optional[float]:
        if not (self.place.leader and self.settings.links):
            return None
        if self._prober is None:
            text = self.exchange.probe_address(self.place.next_leader)
            address = probe.parse_address(text) if text else None
            if address is None:
                return None
            self._prober = probe.Prober(address, min(self.settings.window_s / 2, self.settings.timeout_s))
        return self._prober.time()

    def _follow(self) -> None:
        """Any other rank: rank 0's verdict, when it posted a new one."""
        verdict = self.exchange.verdict()
        if verdict is not None:
            self._heard(*verdict)

    def _heard(self, stop: bool, findings: List[WatchFinding]) -> None:
        with self._lock:
            known = {(f.kind, f.message) for f in self.findings}
            new = [f for f in findings if (f.kind, f.message) not in known]
            self.findings = list(findings)
            self.fresh.extend(new)
            self.stopping = self.stopping or (stop and self.settings.mode == "error")

    # -- the report --------------------------------------------------------------------------------
    def record(self) -> WatchRecord:
        """What this rank saw, as the report's ``watch`` section."""
        judged = self._rank0
        findings = list(self.findings)
        windows_made = max(1, self.windows)
        return WatchRecord(
            status=WatchStatus.SLOW if findings else WatchStatus.OK if self.windows else WatchStatus.SKIPPED,
            mode=self.settings.mode, window_s=self.settings.window_s, threshold=self.settings.threshold,
            consecutive=self.settings.consecutive, note=self.note if self.windows else (
                self.note or f"no window ended: the job trained less than {self.settings.window_s:g} s"),
            measured="flight_recorder" if self.settings.buffer_size > 0 else "steps", steps=self.steps,
            windows=self.windows, judged=judged.judged if judged else 0, findings=findings,
            kept=self._judge.kept.windows() if self._judge else [],
            links=judged.links if judged else [], exchange_bytes=self.exchange.sent // windows_made,
            seconds=round(self.seconds, 4))


class _Rank0:
    """Rank 0's part: which ranks sent which window, and the verdict on each (see the module's docstring)."""

    def __init__(self, watch: Watch):
        self.watch = watch
        world = watch.place.world_size
        self.expected = list(range(world))  # ranks not named absent
        self.hosts: Dict[int, str] = {}  # ranks whose header matched, with their node
        self.node_ranks: Dict[int, int] = {}
        self.seen_s: Dict[int, float] = dict.fromkeys(range(world), time.monotonic())
        self.pending: List[int] = []  # windows published by rank 0 and not judged yet
        self.judged = 0
        self.links: List[WatchLink] = []
        self.series = Series(world)
        self.found: List[WatchFinding] = []  # made between two verdicts (a header that cannot be read)

    def add(self, window: int) -> None:
        """Rank 0 published ``window``: it waits to be judged."""
        self.pending.append(window)

    def judge(self, final: bool) -> None:
        """Judge the windows waiting, oldest first: each once every rank's record is there, or, when ``final`` or a
        later window waits too, with the records there now (a rank without one is late, and absent once
        ``timeout_s`` has passed since its last)."""
        assert (judge := self.watch._judge) is not None
        if self.pending:
            self._headers(self.pending[-1])  # those that came since
        settings, found = self.watch.settings, self.found
        while self.pending:
            number = self.pending[0]
            sent = self.watch.exchange.records(number, [r for r in self.expected if r in self.hosts])
            world = self._world(number, sent)
            waiting = [r for r in self.expected if r not in sent]
            if waiting and not final and len(self.pending) == 1:
                break  # the others end this window about now
            now = time.monotonic()
            for rank in sent:
                self.seen_s[rank] = now
            gone = [r for r in waiting if now - self.seen_s[r] >= settings.timeout_s]
            found += judge.absent(number, [(r, self.hosts.get(r, "?")) for r in gone], settings.timeout_s)
            self.expected = [r for r in self.expected if r not in gone]
            end_s = now - self.watch._started_s
            found += judge.window(number, end_s, world)
            self.series.add(end_s, [(s.figures.rank, s.relative, s.individual) for s in judge.scored])
            self._links(world)
            self.pending.pop(0)
            self.judged += 1
        if found:
            self.found = []
            self.watch._heard(settings.mode == "error", judge.findings)
            self.watch.exchange.post_verdict(self.judged, judge.findings, settings.mode == "error")

    def _headers(self, window: int) -> None:
        missing = [r for r in self.expected if r not in self.hosts and r not in self.node_ranks]
        if not missing:
            return
        bad = []
        for rank, data in self.watch.exchange.headers(missing).items():
            header = figures.read_header(rank, data)
            why = figures.problem(header)
            if why:
                self.node_ranks[rank] = -1  # read, and left out
                bad.append((rank, header.host, why))
            else:
                self.hosts[rank], self.node_ranks[rank] = header.host, header.node_rank
        assert self.watch._judge is not None
        self.found += self.watch._judge.invalid(window, bad)
        self.expected = [r for r in self.expected if self.node_ranks.get(r, 0) >= 0]

    def _world(self, number: int, sent: Dict[int, bytes]) -> List[figures.WindowFigures]:
        """Every rank's figures of window ``number``, in rank order: a placeholder with no step for a rank whose
        record is not there (or is of another window)."""
        world, bad = [], []
        for rank in range(self.watch.place.world_size):
            host, node_rank = self.hosts.get(rank, "?"), max(0, self.node_ranks.get(rank, 0))
            read = figures.unpack(rank, number, sent[rank]) if rank in sent else None
            if read is not None and not read.invalid and read.window == number:
                read.host, read.node_rank = host, node_rank  # the header's, agreed once
                world.append(read)
                continue
            if read is not None and read.window != number:
                sent.pop(rank)  # another window's record: this one's is not there
            elif read is not None:
                bad.append((rank, host, "; ".join(read.invalid[:3])))
            world.append(figures.WindowFigures(rank=rank, host=host, window=number, node_rank=node_rank))
        assert self.watch._judge is not None
        self.found += self.watch._judge.invalid(number, bad)
        return world

    def _links(self, world: List[figures.WindowFigures]) -> None:
        if node_links.measured_any(world):  # type: ignore[arg-type]  # WindowFigures has the link fields
            self.links = [WatchLink(ranks=[link.a.leader, link.b.leader], hosts=[link.a.host, link.b.host],
                                    gbps=link.gbps) for link in node_links.links(world)]  # type: ignore[arg-type]
