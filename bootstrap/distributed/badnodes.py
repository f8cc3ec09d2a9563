"""Bad nodes: the nodes a preflight finding names, as records a scheduler and a person read (one JSON object per
node, NVRx's field names), and the shared exclusion list's entries, read strictly and judged by their time to live.
Pure.

The record's fields take the names of NVIDIA's resilience extension's scheduler-exclusion observations where they
fit (nvidia-resiliency-ext ``docs/source/fault_tolerance/integration/scheduler_exclusion_service.rst``:
``type``, ``schema_version``, ``node``, ``reason``, ``observed_at``, ``valid_until``, ``job_id``,
``restart_count``); the rest are this package's own (``kinds``, ``ranks``, ``figures``, ``against``,
``message``).
"""

from __future__ import annotations

import json
import re
from dataclasses import field
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from bootstrap.distributed.hostlist import compress
from bootstrap.doors import inbound, records
from bootstrap.doors.lean import lean_dataclass

RECORD_NAME = "bad_nodes.jsonl"  # in the run directory, written by rank 0
EXCLUDE_NAME = "exclude.txt"  # the same hosts in SLURM's --exclude form
SCHEMA = 1  # the record's schema_version
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # NVRx's: UTC, whole seconds
MAX_LINE = 64 * 2**10  # one entry; a longer line is skipped
MAX_SKEW_S = 300  # an entry observed further in the future than this is skipped (a forged or broken clock)
HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}", re.ASCII)  # a hostname SLURM and socket.gethostname() give
REASON = re.compile(r"[a-z][a-z_]{0,31}", re.ASCII)  # a finding's kind
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}", re.ASCII)  # SLURM's 12_3, torchrun's run ids
# The findings that name a node through its ranks; the world's bus bandwidth names no rank, so no node.
NODE_KINDS = ("faulty", "unfinished", "slow", "min_tflops", "min_node_busbw_gbps", "network", "slow_link", "absent",
              "invalid")


@lean_dataclass
class Entry:
    """One node's record: a line of ``bad_nodes.jsonl`` and of the shared exclusion file."""

    node: str
    reason: str  # the first (most severe) finding's kind
    observed_at: str  # TIME_FORMAT
    valid_until: str  # observed_at + env.nodes.exclude_ttl_h
    job_id: Optional[str] = None
    restart_count: int = 0  # SLURM_RESTART_COUNT (or torchrun's restart) of the attempt that observed it
    kinds: List[str] = field(default_factory=list)  # every finding kind that named the node
    ranks: List[int] = field(default_factory=list)
    figures: List[Dict[str, Any]] = field(default_factory=list)  # each named rank's figures
    against: Dict[str, Any] = field(default_factory=dict)  # the others' median and the floors
    message: str = ""  # the first finding's line

    def to_json(self) -> str:
        data = {"type": "observation", "schema_version": SCHEMA, "node": self.node, "reason": self.reason,
                "observed_at": self.observed_at, "valid_until": self.valid_until, "job_id": self.job_id,
                "restart_count": self.restart_count, "kinds": self.kinds, "ranks": self.ranks,
                "figures": self.figures, "against": self.against, "message": self.message}
        return json.dumps(data, allow_nan=False, sort_keys=False)


def stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime(TIME_FORMAT)


def when(text: Any) -> Optional[datetime]:
    """A TIME_FORMAT stamp as an aware datetime; None for anything else."""
    if not isinstance(text, str) or len(text) != 20:
        return None
    try:
        return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _rank_figures(rank: records.PreflightRank) -> Dict[str, Any]:
    return {"rank": rank.rank, "tflops": rank.tflops, "busbw_gbps": rank.busbw_gbps,
            "node_busbw_gbps": rank.node_busbw_gbps, "compute": str(rank.compute)}


def _against(record: records.Preflight) -> Dict[str, Any]:
    shown = {"median_tflops": record.median_tflops, "busbw_gbps": record.busbw_gbps, "max_skew": record.max_skew,
             "min_tflops": record.min_tflops, "min_busbw_gbps": record.min_busbw_gbps,
             "min_node_busbw_gbps": record.min_node_busbw_gbps}
    return {name: value for name, value in shown.items() if value is not None}


def from_preflight(record: records.Preflight, now: datetime, ttl_h: float, job_id: Optional[str] = None,
                   restart_count: int = 0) -> List[Entry]:
    """One entry per node that a finding of ``record`` names through its ranks, in the findings' order (faulty
    first). A rank whose host the record does not hold (one that never sent its figures) names no node."""
    hosts = {rank.rank: rank for rank in record.ranks}
    by_node: Dict[str, Entry] = {}
    observed, until = stamp(now), stamp(now + timedelta(hours=ttl_h))
    for finding in record.findings:
        if finding.kind not in NODE_KINDS:
            continue
        for number in finding.ranks:
            rank = hosts.get(number)
            if rank is None or not HOST.fullmatch(rank.host or ""):
                continue
            entry = by_node.get(rank.host)
            if entry is None:
                entry = by_node[rank.host] = Entry(rank.host, finding.kind, observed, until, job_id, restart_count,
                                                   against=_against(record), message=finding.message)
            if finding.kind not in entry.kinds:
                entry.kinds.append(finding.kind)
            if number not in entry.ranks:
                entry.ranks.append(number)
                entry.figures.append(_rank_figures(rank))
    return list(by_node.values())


def exclude_text(hosts: Iterable[str]) -> str:
    """The hosts as ``sbatch --exclude`` reads them (``node[3,7]``)."""
    return compress(hosts)


# -- the shared exclusion file ------------------------------------------------------------------------------------
@lean_dataclass
class Listed:
    """What the shared exclusion file holds, read strictly: its entries, and the lines skipped with why."""

    entries: List[Entry] = field(default_factory=list)
    skipped: List[Tuple[int, str]] = field(default_factory=list)  # (line number, why)

    def skipped_line(self, name: str) -> Optional[str]:
        """One line naming the skipped lines (the first with its reason), or None."""
        if not self.skipped:
            return None
        line, why = self.skipped[0]
        more = f" and {len(self.skipped) - 1} more" if len(self.skipped) > 1 else ""
        return f"{name}: line {line} skipped ({why}){more}; the other entries are read"


def _entry(data: Any, now: datetime) -> Tuple[Optional[Entry], str]:
    if not isinstance(data, dict):
        return None, "not a JSON object"
    node, reason = data.get("node"), data.get("reason")
    if not isinstance(node, str) or not HOST.fullmatch(node):
        return None, "no valid 'node'"
    if not isinstance(reason, str) or not REASON.fullmatch(reason):
        return None, "no valid 'reason'"
    observed, until = when(data.get("observed_at")), when(data.get("valid_until"))
    if observed is None or until is None:
        return None, f"'observed_at' and 'valid_until' must be UTC times as {TIME_FORMAT}"
    if observed > now + timedelta(seconds=MAX_SKEW_S):
        return None, "observed in the future"
    job_id = data.get("job_id")
    restart = data.get("restart_count", 0)
    ranks = data.get("ranks", [])
    return Entry(node, reason, stamp(observed), stamp(until),
                 job_id if isinstance(job_id, str) and JOB_ID.fullmatch(job_id) else None,
                 restart if type(restart) is int and restart >= 0 else 0,
                 ranks=[r for r in ranks[:64] if type(r) is int] if isinstance(ranks, list) else [],
                 message=data["message"][:500] if isinstance(data.get("message"), str) else ""), ""


def parse(data: bytes, now: datetime) -> Listed:
    """Every entry of the shared file's bytes; a line that is not one (not UTF-8, not JSON, not an entry, too
    long) is skipped with its reason. Blank lines are nothing."""
    listed = Listed()
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = inbound.parse_json_bytes(raw, MAX_LINE, "line")
        except inbound.Unreadable as error:
            listed.skipped.append((number, str(error).removeprefix("line: ")))
            continue
        entry, why = _entry(value, now)
        if entry is None:
            listed.skipped.append((number, why))
        else:
            listed.entries.append(entry)
    return listed


def expiry(entry: Entry, ttl_h: float) -> datetime:
    """When the entry stops counting: its own ``valid_until``, and never later than the reader's TTL after it
    was observed (an entry that claims a longer ban, or a forged one, is bounded by the reader's own rule)."""
    observed, until = when(entry.observed_at), when(entry.valid_until)
    assert observed is not None and until is not None  # parse() kept only entries with both
    return min(until, observed + timedelta(hours=ttl_h))


def listing(entries: Sequence[Entry], host: str, now: datetime, ttl_h: float, ignore: Iterable[str] = ()
            ) -> Optional[Entry]:
    """The entry that keeps ``host`` out now (the one that lasts longest), or None: not listed, expired, or in
    ``ignore`` (the user's override)."""
    if host in set(ignore):
        return None
    live = [entry for entry in entries if entry.node == host and expiry(entry, ttl_h) > now]
    return max(live, key=lambda entry: expiry(entry, ttl_h)) if live else None


def live_nodes(entries: Sequence[Entry], now: datetime, ttl_h: float, ignore: Iterable[str] = ()) -> List[str]:
    """Every node the entries keep out now, sorted."""
    ignored = set(ignore)
    return sorted({e.node for e in entries if e.node not in ignored and expiry(e, ttl_h) > now})


def appended(existing: bytes, new: Sequence[str], now: datetime, ttl_h: float) -> bytes:
    """The shared file after the ``new`` lines (entries' JSON, cleaned) are added: the existing lines kept as they
    were, but for entries expired under ``ttl_h`` (so the file stays as small as the live list)."""
    kept: List[bytes] = []
    for raw in existing.split(b"\n"):
        if not raw.strip():
            continue
        listed = parse(raw, now)
        if listed.entries and expiry(listed.entries[0], ttl_h) <= now:
            continue  # expired: dropped
        kept.append(raw)  # a line this reader cannot read is another writer's: kept as it was
    return b"".join(line + b"\n" for line in [*kept, *(line.encode("utf-8") for line in new)])


def start_message(entry: Entry, host: str, key: str, slurm: bool, ttl_h: float) -> str:
    """The one line a rank on a listed host stops with."""
    until = stamp(expiry(entry, ttl_h))
    job = f" by job {entry.job_id}" if entry.job_id else ""
    fix = f"resubmit with --exclude={exclude_text([host])} (sbatch) or " if slurm else "run elsewhere, or "
    return (f"{key}.nodes.exclude_file lists this host {host}: {entry.reason} at {entry.observed_at}{job}, kept out "
            f"until {until}: {fix}set {key}.nodes.ignore=[{host}] to run here anyway")

