"""Bad nodes as steps of a job's start (``env.nodes``): a rank whose host the shared exclusion file lists stops
before the process group (:func:`at_start`); after the preflight, the nodes its findings name are recorded in the
report, in ``bad_nodes.jsonl`` and ``exclude.txt`` and in the shared file, and a stopping finding stops or requeues
the job (:func:`after_preflight`)."""

from __future__ import annotations

import os
import stat
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence

from bootstrap.core import report
from bootstrap.distributed import badnodes, requeue
from bootstrap.distributed.hostlist import compress
from bootstrap.distributed.launchvars import slurm_attempt
from bootstrap.doors import inbound, outbound, records
from bootstrap.doors.errors import BadNodeError, BootstrapError, ConfigError, PreflightError, RequeuedError

if TYPE_CHECKING:
    from bootstrap.core.plan import Plan
    from bootstrap.core.schema import EnvConfig
    from bootstrap.core.verdict import Refusal


def _now() -> datetime:
    return datetime.now(timezone.utc)


def read_listed(path: str, key: str, warnings: List[str], now: datetime) -> badnodes.Listed:
    """The shared file's entries, read through the one way in; what cannot be read is one warning, never a stop:
    a missing file (no finding yet) lists nothing, silently."""
    where = f"{key}.nodes.exclude_file"
    try:
        data, info = inbound.read_shared_bytes(path)
    except inbound.Unreadable as error:
        if os.path.lexists(path):
            report.warn(warnings, f"{where}: {error}: its entries are not read, and the job goes on")
        return badnodes.Listed()
    if info.st_mode & stat.S_IWOTH:  # anyone could have written what it says: it keeps no node out
        mode = stat.S_IMODE(info.st_mode)
        report.warn(warnings, f"{where}: every user may write {Path(path).name} (mode {mode:o}): its entries are not "
                              f"trusted, and the job goes on; chmod o-w {path}")
        return badnodes.Listed()
    listed = badnodes.parse(data, now)
    skipped = listed.skipped_line(where)
    if skipped:
        report.warn(warnings, skipped)
    return listed


def at_start(preset: EnvConfig, key: str, warnings: List[str], host: str,
             environ: Mapping[str, str] = os.environ) -> Optional[Refusal]:
    """The refusal of a rank whose ``host`` the shared file lists (not expired, not ignored), or None."""
    from bootstrap.core.verdict import Refusal

    wanted = preset.nodes
    if wanted.exclude_file is None:
        return None
    now = _now()
    listed = read_listed(wanted.exclude_file, key, warnings, now)
    entry = badnodes.listing(listed.entries, host, now, wanted.exclude_ttl_h, wanted.ignore)
    if entry is None:
        return None
    return Refusal(badnodes.start_message(entry, host, key, slurm_attempt(environ) is not None, wanted.exclude_ttl_h),
                   BadNodeError)


def after_preflight(preset: EnvConfig, plan: Plan, checked: records.Preflight, stop: Optional[str], key: str,
                    warnings: List[str], environ: Mapping[str, str] = os.environ) -> Optional[BootstrapError]:
    """Record the nodes the findings name (the report's ``preflight.bad_nodes``; rank 0 writes the two files and
    appends to the shared one); returns what the job raises when ``stop`` (the preflight's message) stops it."""
    wanted, now = preset.nodes, _now()
    slurm = slurm_attempt(environ)
    entries = badnodes.from_preflight(checked, now, wanted.exclude_ttl_h, slurm[0] if slurm else plan.launch.job_id,
                                      slurm[1] if slurm else 0)
    checked.restart_count = slurm[1] if slurm else None
    if entries:
        checked.bad_nodes = [records.BadNode(node=e.node, reason=e.reason, ranks=e.ranks, valid_until=e.valid_until)
                             for e in entries]
        checked.on_bad = "recorded"
        if plan.launch.rank == 0:
            _write(plan, wanted.exclude_file, entries, now, wanted.exclude_ttl_h, preset.distributed.timeout_s, key,
                   warnings)
    if not stop:
        return None
    if not entries:
        return PreflightError(stop)
    checked.on_bad = "stopped"
    named = f"{stop}\nbad nodes: {badnodes.exclude_text(e.node for e in entries)} (exclude.txt in the job's directory)"
    if wanted.on_bad.value != "requeue" or plan.launch.rank != 0:
        return PreflightError(named)
    return _requeue(preset, checked, named, [e.node for e in entries], entries[0].reason, key, warnings,
                    slurm[0] if slurm else None)


def after_watch(preset: EnvConfig, plan: Plan, findings: Sequence[Any], key: str, warnings: List[str],
                environ: Mapping[str, str] = os.environ) -> Optional[BootstrapError]:
    """The watch's findings (``kind``, ``message``, ``ranks`` and ``hosts``, as ``records.PreflightFinding`` with
    hosts) as observations of kind ``watch_<kind>``: rank 0 adds them to ``bad_nodes.jsonl`` and ``exclude.txt``
    and appends them to the shared file; returns what the job raises under ``env.watch.mode=error``, where
    ``env.nodes.on_bad`` applies as after the preflight. Soft evidence (issue 47 weighs it); a finding that names
    no node (every rank slowed at once) records nothing."""
    from bootstrap.doors.errors import WatchError

    wanted, now, watched = preset.nodes, _now(), preset.watch
    slurm = slurm_attempt(environ)
    observed, until = badnodes.stamp(now), badnodes.stamp(now + timedelta(hours=wanted.exclude_ttl_h))
    against = {"threshold": watched.threshold, "consecutive": watched.consecutive, "window_s": watched.window_s}
    by_node: Dict[str, badnodes.Entry] = {}
    for finding in findings:
        for rank, host in zip(finding.ranks, finding.hosts, strict=False):
            if not badnodes.HOST.fullmatch(host or ""):
                continue
            entry = by_node.setdefault(host, badnodes.Entry(
                host, f"watch_{finding.kind}", observed, until, slurm[0] if slurm else plan.launch.job_id,
                slurm[1] if slurm else 0, against=against, message=finding.message))
            if f"watch_{finding.kind}" not in entry.kinds:
                entry.kinds.append(f"watch_{finding.kind}")
            if rank not in entry.ranks:
                entry.ranks.append(rank)
    entries = list(by_node.values())
    if entries and plan.launch.rank == 0:
        _write(plan, wanted.exclude_file, entries, now, wanted.exclude_ttl_h, preset.distributed.timeout_s, key,
               warnings, append=True)
    if watched.mode.value != "error" or not findings:
        return None
    stop = "\n".join(f"watch: {finding.message}" for finding in findings)
    if not entries:
        return WatchError(stop)
    named = f"{stop}\nbad nodes: {badnodes.exclude_text(e.node for e in entries)} (exclude.txt in the job's directory)"
    if wanted.on_bad.value != "requeue" or plan.launch.rank != 0:
        return WatchError(named)
    done = _requeue(preset, records.Preflight(), named, [e.node for e in entries], entries[0].reason, key, warnings,
                    slurm[0] if slurm else None)
    return done if isinstance(done, RequeuedError) else WatchError(str(done.args[0]))


def _write(plan: Plan, shared: Optional[str], entries: List[badnodes.Entry], now: datetime, ttl_h: float,
           timeout_s: float, key: str, warnings: List[str], append: bool = False) -> None:
    """``append``: after the ones the job's directory holds already (the preflight's, the watch's earlier)."""
    cleaned = [outbound.clean(entry.to_json(), one_line=True) for entry in entries]  # secrets masked
    lines = "".join(line + "\n" for line in cleaned)
    if plan.output_dir:
        record, excluded = Path(plan.output_dir) / badnodes.RECORD_NAME, Path(plan.output_dir) / badnodes.EXCLUDE_NAME
        hosts = [e.node for e in entries]
        if append:
            earlier = _text(record)
            lines = earlier + lines
            hosts = [e.node for e in badnodes.parse(earlier.encode(), now).entries] + hosts
        outbound.write_text(record, lines)
        outbound.write_text(excluded, badnodes.exclude_text(dict.fromkeys(hosts)) + "\n")
    if shared is not None:
        failed = append_shared(Path(shared), cleaned, now, ttl_h, timeout_s)
        if failed:
            report.warn(warnings, f"{key}.nodes.exclude_file: the bad nodes were not added: {failed}")


def _text(path: Path) -> str:
    """A file of the job's own directory that this job wrote, or nothing."""
    try:
        return inbound.read_text(path)
    except inbound.Unreadable:
        return ""


def append_shared(path: Path, lines: List[str], now: datetime, ttl_h: float, timeout_s: float) -> Optional[str]:
    """Add ``lines`` (entries' JSON, cleaned) to the shared file, under an exclusive lock (``<file>.lock`` beside
    it, waited for at most ``timeout_s``), written whole and renamed over the old one: two jobs at once lose
    nothing, and a reader never sees half a file. Returns why it could not, or None."""
    try:
        with outbound.locked(path.with_name(path.name + ".lock"), timeout_s):
            try:
                existing, info = inbound.read_shared_bytes(path)
                mode: Optional[int] = stat.S_IMODE(info.st_mode)
            except inbound.Unreadable:
                if os.path.lexists(path):  # not ours to replace: a device, a huge file, a directory
                    raise
                existing, mode = b"", None
            outbound.write_bytes(path, badnodes.appended(existing, lines, now, ttl_h), mode=mode, sync=True)
    except (inbound.Unreadable, OSError) as error:  # TimeoutError is an OSError
        return str(error)
    return None


def _requeue(preset: EnvConfig, checked: records.Preflight, named: str, bad: List[str], reason: str, key: str,
             warnings: List[str], job_id: Optional[str]) -> BootstrapError:
    """Rank 0 under ``on_bad=requeue``: exclude ``bad`` from the job and requeue it, within the user's timeout."""
    wanted, seconds = preset.nodes, float(preset.distributed.timeout_s)
    if job_id is None:
        checked.on_bad = "stopped (on_bad=requeue needs a SLURM batch job)"
        return PreflightError(f"{named}\n{key}.nodes.on_bad=requeue: not a SLURM job (no SLURM_JOB_ID): stopped")
    shown = requeue.show_job(job_id, seconds)
    if shown is None:  # `scontrol update ExcNodeList=` replaces the list: without the job's own, nothing is run
        checked.on_bad = "stopped (the job's ExcNodeList could not be read)"
        return PreflightError(f"{named}\n{key}.nodes.on_bad=requeue: `scontrol show job -o {job_id}` gave no answer "
                              f"within {seconds:g} s, so the job's own exclusions are unknown: stopped, not requeued; "
                              f"resubmit with --exclude={compress(bad)}")
    try:
        decision = requeue.decide(job_id, bad, requeue.excluded_now(shown), checked.restart_count or 0,
                                  wanted.max_requeues, reason, key)
    except ConfigError as error:  # the job's ExcNodeList is beyond what the nodelist reader takes
        checked.on_bad = "stopped (the job's ExcNodeList could not be read)"
        return PreflightError(f"{named}\n{key}.nodes.on_bad=requeue: {error}: stopped, not requeued")
    for drain in decision.drain:
        if not wanted.drain:
            outbound.say(f"bootstrap: an administrator can drain the node: {requeue.line(drain)}", err=True)
            continue
        failed = requeue.run(drain, seconds)
        if failed:
            report.warn(warnings, f"{key}.nodes.drain: the node was not drained: {failed}")
    if not decision.requeue:
        checked.on_bad = f"stopped: max_requeues reached, excluded {decision.excluded}"
        return PreflightError(f"{named}\n{decision.message}")
    failed = requeue.requeue(decision, seconds)
    if failed:
        checked.on_bad = f"stopped: the requeue failed ({failed})"
        return PreflightError(f"{named}\n{key}.nodes.on_bad=requeue failed: {failed}; resubmit with "
                              f"--exclude={decision.excluded}")
    checked.on_bad = f"requeued excluding {decision.excluded}"
    return RequeuedError(f"{named}\n{decision.message} (exit {RequeuedError.exit_code})")
