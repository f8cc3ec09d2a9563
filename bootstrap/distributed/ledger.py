"""The bad-node ledger (``env.nodes.exclude_file``): observations, not verdicts. Each line is one job's observation of
one node (its kind, figures, job, attempt and time) or a person's clearance of a node; the evidence rule (:func:`judge`)
decides from them, at each job start and in ``bootstrap nodes``, which nodes are kept out. Pure.

The rule (docs/preflight.md#bad-nodes):

- **hard** evidence (:data:`HARD`: a rank that computed wrong numbers, ``faulty``; a record that cannot be a
  measurement, ``invalid``; a person's ``by_hand``): one observation excludes the node;
- **soft** evidence (every other kind that names a node, the watch's ``watch_*`` among them): the node is excluded
  once its observations come from ``min_observations`` occasions. An occasion is one attempt of one job (its
  ``job_id`` and ``restart_count``); within one attempt, observations at least ``apart_s`` apart (the watch's
  windows) are occasions of their own;
- an observation counts as evidence for ``ttl_h`` hours after it was made, and never past its own ``valid_until``
  (a person's ``by_hand`` lasts until its own ``valid_until``); one its job recorded as not counting (``counts:
  false``: a systemic fault, or past the job's cap) never does; a clearance hides every earlier observation of
  its node.

Field names follow NVIDIA's resilience extension's scheduler-exclusion observations where they fit (``type``,
``schema_version``, ``node``, ``reason``, ``observed_at``, ``valid_until``, ``job_id``, ``restart_count``). Version 1's
lines (issue 39's exclusion list, one per node a finding named) read as observations: their ``reason`` makes them
hard or soft.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import field
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from bootstrap.distributed.nodename import NAME
from bootstrap.doors import inbound
from bootstrap.doors.lean import lean_dataclass

SCHEMA = 2  # 1: issue 39's entries (one per node, a ban for valid_until); 2: observations and clearances
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # NVRx's: UTC, whole seconds
MAX_LINE = 64 * 2**10  # one line; a longer one is dropped
MAX_SKEW_S = 300  # a line dated further in the future than this is dropped (a forged or broken clock)
MAX_TEXT = 500  # characters of a message or a person's reason kept
REASON = re.compile(r"[a-z][a-z_]{0,31}", re.ASCII)  # a finding's kind
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}", re.ASCII)  # SLURM's 12_3, torchrun's run ids
PERSON = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}", re.ASCII)  # a user name, as `bootstrap nodes` records it
HARD = frozenset({"faulty", "invalid", "by_hand"})  # one observation excludes
APART_S = 1800.0  # within one attempt, observations this far apart are two occasions (the watch's windows)


def stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime(TIME_FORMAT)


_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", re.ASCII)  # TIME_FORMAT's shape


def when(text: Any) -> Optional[datetime]:
    """A TIME_FORMAT stamp as an aware datetime; None for anything else. (``fromisoformat`` on the checked shape: a
    tenth of ``strptime``'s time, which a ledger of thousands of lines read at every job start would feel.)"""
    if not isinstance(text, str) or not _STAMP.fullmatch(text):
        return None
    try:
        return datetime.fromisoformat(text[:-1]).replace(tzinfo=timezone.utc)
    except ValueError:  # a 30th of February
        return None


@lean_dataclass
class Observation:
    """One node observed by one job (or excluded by a person): a line of the ledger and of ``bad_nodes.jsonl``."""

    node: str  # the scheduler's name for it (bootstrap.distributed.nodename)
    reason: str  # the first (most severe) kind that named it; HARD or soft
    observed_at: str  # TIME_FORMAT
    valid_until: str  # observed_at + the writer's env.nodes.exclude_ttl_h
    job_id: Optional[str] = None
    restart_count: int = 0  # SLURM_RESTART_COUNT (or torchrun's restart) of the attempt that observed it
    kinds: List[str] = field(default_factory=list)  # every kind that named the node
    ranks: List[int] = field(default_factory=list)
    figures: List[Dict[str, Any]] = field(default_factory=list)  # each named rank's figures
    against: Dict[str, Any] = field(default_factory=dict)  # what they were judged against: the others', the floors
    message: str = ""  # the first finding's line
    counts: bool = True  # False: recorded, and never evidence (note says why: systemic, over the job's cap)
    note: str = ""
    by: Optional[str] = None  # by_hand: who
    why: Optional[str] = None  # by_hand: the person's reason

    @property
    def hard(self) -> bool:
        return self.reason in HARD

    def data(self) -> Dict[str, Any]:
        """The line's fields, in their order."""
        data: Dict[str, Any] = {
            "type": "observation", "schema_version": SCHEMA, "node": self.node, "reason": self.reason,
            "evidence": "hard" if self.hard else "soft", "observed_at": self.observed_at,
            "valid_until": self.valid_until, "job_id": self.job_id, "restart_count": self.restart_count,
            "kinds": self.kinds, "ranks": self.ranks, "figures": self.figures, "against": self.against,
            "message": self.message, "counts": self.counts}
        data.update({name: value for name, value in (("note", self.note), ("by", self.by), ("why", self.why))
                     if value})
        return data

    def to_json(self) -> str:
        return json.dumps(self.data(), allow_nan=False)


@lean_dataclass
class Clearance:
    """A person's clearance of a node (``bootstrap nodes FILE --clear NODE --why ...``): every observation of the node
    made before it stops counting; later ones count again."""

    node: str
    cleared_at: str  # TIME_FORMAT
    by: str
    why: str

    def data(self) -> Dict[str, Any]:
        return {"type": "clearance", "schema_version": SCHEMA, "node": self.node, "cleared_at": self.cleared_at,
                "by": self.by, "why": self.why}

    def to_json(self) -> str:
        return json.dumps(self.data())


@lean_dataclass
class Ledger:
    """What the ledger's bytes hold, read strictly: its observations and clearances, each with its line as written,
    in the file's order, and the lines dropped with why."""

    entries: List[Tuple[Union[Observation, Clearance], bytes]] = field(default_factory=list)
    dropped: List[Tuple[int, str]] = field(default_factory=list)  # (line number, why)

    @property
    def observations(self) -> List[Observation]:
        return [entry for entry, _ in self.entries if isinstance(entry, Observation)]

    @property
    def clearances(self) -> List[Clearance]:
        return [entry for entry, _ in self.entries if isinstance(entry, Clearance)]

    def dropped_line(self, name: str) -> Optional[str]:
        """One line counting the lines dropped (the first with its reason), or None."""
        if not self.dropped:
            return None
        line, why = self.dropped[0]
        more = f" and {len(self.dropped) - 1} more" if len(self.dropped) > 1 else ""
        return f"{name}: line {line} dropped ({why}){more}: not an observation or a clearance; the others are read"


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _moment(data: Dict[str, Any], name: str, now: datetime) -> Tuple[Optional[datetime], str]:
    moment = when(data.get(name))
    if moment is None:
        return None, f"'{name}' must be a UTC time as {TIME_FORMAT}"
    if moment > now + timedelta(seconds=MAX_SKEW_S):
        return None, f"'{name}' is in the future"
    return moment, ""


def _observation(data: Dict[str, Any], now: datetime) -> Tuple[Optional[Observation], str]:
    reason = data.get("reason")
    if not isinstance(reason, str) or not REASON.fullmatch(reason):
        return None, "no valid 'reason'"
    observed, why = _moment(data, "observed_at", now)
    until = when(data.get("valid_until"))
    if observed is None or until is None:
        return None, why or f"'valid_until' must be a UTC time as {TIME_FORMAT}"
    job_id, restart, ranks, kinds = (data.get(name) for name in ("job_id", "restart_count", "ranks", "kinds"))
    by = data.get("by") if isinstance(data.get("by"), str) and PERSON.fullmatch(data["by"]) else None
    figures, against = data.get("figures"), data.get("against")
    return Observation(
        data["node"], reason, stamp(observed), stamp(until),
        job_id if isinstance(job_id, str) and JOB_ID.fullmatch(job_id) else None,
        restart if type(restart) is int and restart >= 0 else 0,
        kinds=[k for k in kinds[:16] if isinstance(k, str) and REASON.fullmatch(k)] if isinstance(kinds, list) else [],
        ranks=[r for r in ranks[:64] if type(r) is int] if isinstance(ranks, list) else [],
        figures=[f for f in figures[:64] if isinstance(f, dict)] if isinstance(figures, list) else [],
        against=against if isinstance(against, dict) else {}, message=_text(data.get("message")),
        counts=data.get("counts", True) is not False, note=_text(data.get("note")), by=by,
        why=_text(data.get("why")) or None), ""


def _clearance(data: Dict[str, Any], now: datetime) -> Tuple[Optional[Clearance], str]:
    cleared, why = _moment(data, "cleared_at", now)
    if cleared is None:
        return None, why
    by = data.get("by")
    if not isinstance(by, str) or not PERSON.fullmatch(by):
        return None, "a clearance names no valid 'by'"
    return Clearance(data["node"], stamp(cleared), by, _text(data.get("why"))), ""


def _entry(data: Any, now: datetime) -> Tuple[Optional[Any], str]:
    if not isinstance(data, dict):
        return None, "not a JSON object"
    node = data.get("node")
    if not isinstance(node, str) or not NAME.fullmatch(node):
        return None, "no valid 'node'"
    kind = data.get("type", "observation")
    if kind == "clearance":
        return _clearance(data, now)
    if kind != "observation":
        return None, "'type' is neither observation nor clearance"
    return _observation(data, now)


def parse(data: bytes, now: datetime) -> Ledger:
    """Every entry of the ledger's bytes; a line that is not one (not UTF-8, not JSON, not an entry, too long, dated
    in the future) is dropped with its reason. Blank lines are nothing."""
    ledger = Ledger()
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = inbound.parse_json_bytes(raw, MAX_LINE, "line")
        except inbound.Unreadable as error:
            ledger.dropped.append((number, str(error).removeprefix("line: ")))
            continue
        entry, why = _entry(value, now)
        if entry is None:
            ledger.dropped.append((number, why))
        else:
            ledger.entries.append((entry, raw.strip()))
    return ledger


# -- the evidence rule ----------------------------------------------------------------------------------------------
@lean_dataclass(frozen=True)
class Rule:
    """The evidence rule's settings (``env.nodes``)."""

    ttl_h: float = 24.0  # exclude_ttl_h: hours an observation counts as evidence after it was made
    min_observations: int = 2  # occasions of soft evidence that exclude a node
    apart_s: float = APART_S


def expires(observation: Observation, ttl_h: float) -> datetime:
    """When ``observation`` stops counting: ``ttl_h`` after it was made, never past its own ``valid_until`` (a forged
    "ban for ever" is bounded by the reader's rule); a person's ``by_hand`` at its own ``valid_until``."""
    observed, until = when(observation.observed_at), when(observation.valid_until)
    assert observed is not None and until is not None  # parse() kept only observations with both
    return until if observation.reason == "by_hand" else min(until, observed + timedelta(hours=ttl_h))


def occasions(observations: Iterable[Observation], apart_s: float = APART_S) -> List[Observation]:
    """One observation per occasion, in time order: per attempt of a job (``job_id``, ``restart_count``; an
    observation with no job id is an attempt of its own), the first, then each at least ``apart_s`` after the last
    one counted."""
    attempts: Dict[Tuple[str, int], List[Observation]] = {}
    for seen in sorted(observations, key=lambda o: o.observed_at):
        attempts.setdefault((seen.job_id or f"@{seen.observed_at}", seen.restart_count), []).append(seen)
    counted = []
    for attempt in attempts.values():
        last: Optional[datetime] = None
        for seen in attempt:
            moment = when(seen.observed_at)
            assert moment is not None
            if last is None or (moment - last).total_seconds() >= apart_s:
                counted.append(seen)
                last = moment
    return sorted(counted, key=lambda o: o.observed_at)


@lean_dataclass
class Evidence:
    """One node's standing under the rule: ``excluded``, ``suspect`` (evidence that does not exclude yet) or
    ``clear``, from what the ledger holds now."""

    node: str
    state: str  # excluded | suspect | clear
    hard: List[Observation] = field(default_factory=list)  # live hard observations
    soft: List[Observation] = field(default_factory=list)  # live soft observations that count
    counted: List[Observation] = field(default_factory=list)  # one of ``soft`` per occasion
    ignored: List[Observation] = field(default_factory=list)  # live ones their job recorded as not counting
    cleared: Optional[Clearance] = None  # the latest clearance
    until: Optional[datetime] = None  # when the state lapses: excluded or suspect until then

    def summary(self, now: datetime) -> str:
        """``slow in 3 jobs (4242, 4250, 4311) in the last 6 h``; ``faulty in job 4242``; ``by hand by ops: ...``."""
        if self.hard:
            first = max(self.hard, key=lambda o: o.observed_at)
            if first.reason == "by_hand":
                return f"excluded by hand by {first.by or 'someone'} at {first.observed_at}: {first.why or 'no reason'}"
            return f"{first.reason} in job {first.job_id or '(no id)'} at {first.observed_at}"
        if not self.counted:
            return "no evidence"
        kinds = ", ".join(dict.fromkeys(kind for o in self.soft for kind in (o.kinds or [o.reason])))
        jobs = list(dict.fromkeys(o.job_id or "(no id)" for o in self.counted))
        earliest = when(self.counted[0].observed_at)
        assert earliest is not None
        hours = max(1, math.ceil(((now - earliest).total_seconds() - 60) / 3600))  # a minute's grace: 3 h, not 4
        shown = ", ".join(jobs[:5]) + (f" and {len(jobs) - 5} more" if len(jobs) > 5 else "")
        times = "" if len(self.counted) == len(jobs) else f" {len(self.counted)} times"
        plural = "s" if len(jobs) > 1 else ""
        return f"{kinds}{times} in {len(jobs)} job{plural} ({shown}) in the last {hours} h"


def evidence(node: str, observations: Sequence[Observation], clearances: Sequence[Clearance], now: datetime,
             rule: Rule) -> Evidence:
    """``node``'s standing from its own observations and clearances."""
    cleared = max(clearances, key=lambda c: c.cleared_at) if clearances else None
    live = [o for o in observations if expires(o, rule.ttl_h) > now
            and (cleared is None or o.observed_at > cleared.cleared_at)]
    found = Evidence(node, "clear", cleared=cleared, ignored=[o for o in live if not o.counts])
    found.hard = [o for o in live if o.counts and o.hard]
    found.soft = [o for o in live if o.counts and not o.hard]
    found.counted = occasions(found.soft, rule.apart_s)
    lapses = sorted((expires(o, rule.ttl_h) for o in found.counted), reverse=True)
    if found.hard or len(found.counted) >= rule.min_observations:
        found.state = "excluded"
        ends = [expires(o, rule.ttl_h) for o in found.hard]
        if len(lapses) >= rule.min_observations:
            ends.append(lapses[rule.min_observations - 1])  # fewer than min_observations occasions are left then
        found.until = max(ends)
    elif found.soft:
        found.state, found.until = "suspect", lapses[0]
    return found


def without_own(past: Ledger, written: Sequence[str], now: datetime) -> Ledger:
    """``past`` less the observations that are this job's own as ``written`` (its lines as they go into the ledger):
    each rank judges the job's verdict with the ledger, and rank 0 adds the job's lines, so a rank that reads the
    ledger after rank 0 added them would count the job twice (with no job id, each copy is an attempt of its own:
    CI saw a slow Lightning rank say its node was excluded after one job). An entry is the job's own when all it
    says but its times is what a written line says. Pure."""
    own = {_timeless(entry) for entry in parse("\n".join(written).encode() + b"\n", now).observations}
    return Ledger(entries=[(entry, raw) for entry, raw in past.entries
                           if not (isinstance(entry, Observation) and _timeless(entry) in own)], dropped=past.dropped)


def _timeless(seen: Observation) -> str:
    data = seen.data()
    del data["observed_at"], data["valid_until"]
    return json.dumps(data, sort_keys=True)


def judge(ledger: Ledger, now: datetime, rule: Rule, nodes: Optional[Iterable[str]] = None) -> Dict[str, Evidence]:
    """Every node's standing (or only ``nodes``'), by name, sorted."""
    wanted = set(nodes) if nodes is not None else None
    seen: Dict[str, Tuple[List[Observation], List[Clearance]]] = {}
    for observation in ledger.observations:
        if wanted is None or observation.node in wanted:
            seen.setdefault(observation.node, ([], []))[0].append(observation)
    for clearance in ledger.clearances:
        if wanted is None or clearance.node in wanted:
            seen.setdefault(clearance.node, ([], []))[1].append(clearance)
    return {node: evidence(node, *seen[node], now, rule) for node in sorted(seen)}


def excluded(ledger: Ledger, now: datetime, rule: Rule, ignore: Iterable[str] = ()) -> List[str]:
    """Every node the rule keeps out now, sorted, but those in ``ignore``."""
    ignored = set(ignore)
    return [node for node, found in judge(ledger, now, rule).items()
            if found.state == "excluded" and node not in ignored]


# -- writing ---------------------------------------------------------------------------------------------------------
def kept(ledger: Ledger, now: datetime, rule: Rule) -> List[bytes]:
    """The lines a writer keeps, in their order: every entry that still matters (an observation until it ages out; a
    clearance while it is younger than ``ttl_h`` or hides an observation that has not), as it was written. A line
    that is no entry is dropped: another user's text is never carried from one file to the next."""
    live = [o for o in ledger.observations if expires(o, rule.ttl_h) > now]
    oldest = {o.node: o.observed_at for o in sorted(live, key=lambda o: o.observed_at, reverse=True)}
    horizon = stamp(now - timedelta(hours=rule.ttl_h))
    return [raw for entry, raw in ledger.entries
            if (isinstance(entry, Observation) and expires(entry, rule.ttl_h) > now)
            or (isinstance(entry, Clearance) and (entry.cleared_at > horizon or oldest.get(entry.node, "~") <=
                                                   entry.cleared_at))]
