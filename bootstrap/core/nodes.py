"""Bad nodes as steps of a job (``env.nodes``): evidence before exclusion.

- At the start, before the process group (:func:`at_start`): a rank on a node that the ledger's evidence excludes
  (:mod:`bootstrap.distributed.ledger`) stops, naming the evidence.
- After the preflight, wherever it ran (at the start, or once a framework's group exists: Lightning's), and after a
  watch finding, the one same step (:func:`after_preflight`, :func:`after_watch`): the nodes the findings name are
  observed (the report, ``bad_nodes.jsonl``, the ledger), judged systemic or past the job's cap, and excluded only
  where the evidence says so (``exclude.txt``; ``ExcNodeList`` under ``on_bad=requeue``); a stopping finding stops
  or requeues the job.
- The ledger is a file many users share, read and written through the doors as one (:func:`read_ledger`,
  :func:`add`): never through a link, its writers checked on the open descriptors, under a lock any writer of the
  list may take. ``bootstrap nodes`` reads and adds to it the same way.
"""

from __future__ import annotations

import errno
import os
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from bootstrap.core import report
from bootstrap.distributed import badnodes, hostlist, ledger, nodename, requeue
from bootstrap.distributed.launchvars import slurm_attempt
from bootstrap.doors import inbound, outbound, records
from bootstrap.doors.errors import BadNodeError, BootstrapError, ConfigError, PreflightError, RequeuedError

if TYPE_CHECKING:
    from bootstrap.core.plan import Plan
    from bootstrap.core.schema import EnvConfig
    from bootstrap.doors.errors import Refusal


def _now() -> datetime:
    return datetime.now(timezone.utc)


def rule(preset: EnvConfig) -> ledger.Rule:
    """The evidence rule of ``preset.nodes``."""
    return ledger.Rule(ttl_h=preset.nodes.exclude_ttl_h, min_observations=preset.nodes.min_observations)


def load_ledger(path: inbound.StrPath, now: datetime) -> ledger.Ledger:
    """The ledger's entries, read through the one way in as a shared file (:func:`inbound.read_shared_bytes`);
    a missing file holds nothing. What cannot be read or believed is :class:`inbound.Unreadable`, with why."""
    try:
        data, _, _ = inbound.read_shared_bytes(path)
    except inbound.Unreadable:
        if os.path.lexists(path):
            raise
        return ledger.Ledger()
    return ledger.parse(data, now)


def read_ledger(path: str, where: str, warnings: List[str], now: datetime) -> ledger.Ledger:
    """:func:`load_ledger` for a job: what cannot be read or believed is one warning (``where``: its key), never a
    stop; the lines dropped are counted in one warning."""
    try:
        read = load_ledger(path, now)
    except inbound.Unreadable as error:
        report.warn(warnings, f"{where}: {error}: its observations are not read, and the job goes on")
        return ledger.Ledger()
    report.warn(warnings, read.dropped_line(where))
    return read


def _names(host: str, here: bool = True) -> List[str]:
    """This node's names: the scheduler's (``host``), and, for a rank on this machine (``here``), the kernel's where it
    differs (an observation made outside the scheduler, or before issue 45, names it so)."""
    return list(dict.fromkeys([host, *([nodename.kernel_host()] if here else [])]))


def at_start(preset: EnvConfig, key: str, warnings: List[str], host: str,
             environ: Mapping[str, str] = os.environ, here: bool = True) -> Optional[Refusal]:
    """The refusal of a rank on ``host`` (the scheduler's name for its node) that the ledger's evidence excludes (and
    ``ignore`` does not name), or None. ``here``: the rank runs on this machine, whose kernel's name is its node's
    too (the dry run's nodes are named by ``host`` alone)."""
    from bootstrap.doors.errors import Refusal

    wanted = preset.nodes
    names = _names(host, here)
    if wanted.exclude_file is None or set(names) & set(wanted.ignore):
        return None
    now = _now()
    read = read_ledger(wanted.exclude_file, f"{key}.nodes.exclude_file", warnings, now)
    standing = ledger.judge(read, now, rule(preset), names)
    found = next((standing[name] for name in names if name in standing and standing[name].state == "excluded"), None)
    if found is None:
        return None
    until = ledger.stamp(found.until) if found.until else "it is cleared"
    fix = f"resubmit with --exclude={found.node} (sbatch) or " if slurm_attempt(environ) else "run elsewhere, or "
    return Refusal(f"{key}.nodes.exclude_file: this node {found.node} is excluded: {found.summary(now)}; kept out "
                   f"until {until}: {fix}set {key}.nodes.ignore=[{found.node}] to run here anyway (`bootstrap nodes "
                   f"{wanted.exclude_file} --explain {found.node}` shows the evidence)", BadNodeError)


def named(found: records.Provenance) -> records.Provenance:
    """``found`` with its ``host`` the node's name as the scheduler gives it, and the kernel's beside it where the two
    differ (:mod:`bootstrap.distributed.nodename`)."""
    node, kernel = nodename.node(), nodename.kernel_host()
    found.host, found.kernel_host = node, kernel if kernel != node else None
    return found


# -- after the preflight, or a watch finding: one step ------------------------------------------------------------
class Outcome:
    """What a stop did about the bad nodes (a preflight's ``preflight.on_bad``)."""

    on_bad: Optional[str] = None


def after_preflight(preset: EnvConfig, plan: Plan, checked: records.Preflight, stop: Optional[str], key: str,
                    warnings: List[str], environ: Mapping[str, str] = os.environ) -> Optional[BootstrapError]:
    """Observe the nodes the preflight's findings name (:func:`observe`), into the report's ``preflight.bad_nodes``;
    returns what the job raises when ``stop`` (the preflight's message) stops it."""
    slurm = slurm_attempt(environ)
    made = badnodes.from_preflight(checked, _now(), preset.nodes.exclude_ttl_h,
                                   slurm[0] if slurm else plan.launch.job_id, slurm[1] if slurm else 0,
                                   plan.launch.world_size)
    checked.restart_count = slurm[1] if slurm else None
    observed, excluded, said = observe(preset, plan, made, key, warnings)
    if observed:
        checked.bad_nodes = [records.BadNode(node=o.node, reason=o.reason, ranks=o.ranks, valid_until=o.valid_until,
                                             evidence="hard" if o.hard else "soft", excluded=o.node in excluded,
                                             note=o.note or None) for o in observed]
        checked.on_bad = "recorded" + (f" ({said})" if said else "")
    outcome = Outcome()
    stopped = _stop(preset, plan, observed, excluded, stop, key, warnings, outcome, slurm)
    if outcome.on_bad is not None:
        checked.on_bad = outcome.on_bad
    return stopped


def after_watch(preset: EnvConfig, plan: Plan, findings: Sequence[Any], key: str, warnings: List[str],
                environ: Mapping[str, str] = os.environ) -> Optional[BootstrapError]:
    """The watch's findings (shaped as ``records.PreflightFinding``, each with its ranks' nodes, ``hosts``) observed
    as soft evidence, each kind as ``watch_<kind>`` (:func:`observe`), with what they were judged against; a
    finding that names no node (every rank slowed at once) records nothing. Under ``env.watch.mode=error`` returns
    what the job raises (:class:`~bootstrap.doors.errors.WatchError`; ``env.nodes.on_bad`` applies), else None."""
    from bootstrap.doors.errors import WatchError

    slurm, watched = slurm_attempt(environ), preset.watch
    made = badnodes.from_findings(findings, _now(), preset.nodes.exclude_ttl_h,
                                  slurm[0] if slurm else plan.launch.job_id, slurm[1] if slurm else 0)
    for seen in made:
        seen.against = {"threshold": watched.threshold, "consecutive": watched.consecutive,
                        "window_s": watched.window_s}
    observed, excluded, _ = observe(preset, plan, made, key, warnings)
    stop = "\n".join(f"watch: {finding.message}" for finding in findings) if \
        watched.mode.value == "error" and findings else None
    stopped = _stop(preset, plan, observed, excluded, stop, key, warnings, Outcome(), slurm)
    return stopped if stopped is None or isinstance(stopped, RequeuedError) else WatchError(str(stopped.args[0]))


def job_nodes(plan: Plan) -> int:
    """The nodes of the job: its ranks over the ranks of one node."""
    launch = plan.launch
    return max(1, -(-launch.world_size // max(1, launch.local_world_size)))


def observe(preset: EnvConfig, plan: Plan, made: List[ledger.Observation], key: str, warnings: List[str]
            ) -> Tuple[List[ledger.Observation], Dict[str, str], Optional[str]]:
    """Weigh this job's observations (systemic, the cap: :func:`bootstrap.distributed.badnodes.weigh`; its line
    warned), judge each named node on the ledger's evidence with them, and on rank 0 write ``bad_nodes.jsonl``,
    ``exclude.txt`` (the nodes excluded, if any) and add them to the ledger. Returns (the observations, each node
    the evidence excludes now with the evidence in words, the systemic or cap line)."""
    if not made:
        return [], {}, None
    wanted, now = preset.nodes, _now()
    said = badnodes.weigh(made, job_nodes(plan), wanted.systemic_fraction, wanted.max_per_job, key)
    report.warn(warnings, said)
    where = f"{key}.nodes.exclude_file"
    lines = [outbound.clean(seen.to_json(), one_line=True) for seen in made]  # as written: secrets masked
    past = read_ledger(wanted.exclude_file, where, [], now) if wanted.exclude_file else ledger.Ledger()
    past = ledger.without_own(past, lines, now)  # rank 0 may have added them already
    both = ledger.Ledger(entries=[*past.entries, *((seen, b"") for seen in made)])
    standing = ledger.judge(both, now, rule(preset), [seen.node for seen in made])
    excluded = {seen.node: standing[seen.node].summary(now) for seen in made
                if standing[seen.node].state == "excluded" and seen.node not in wanted.ignore}
    if plan.launch.rank == 0:
        if plan.output_dir:
            _add_to_job_records(Path(plan.output_dir), lines, list(excluded))
        if wanted.exclude_file is not None:
            for line in add(Path(wanted.exclude_file), lines, now, rule(preset), preset.distributed.timeout_s, where):
                report.warn(warnings, line)
    return made, excluded, said


def _add_to_job_records(run_dir: Path, lines: List[str], excluded: List[str]) -> None:
    """Add this job's observations to its ``bad_nodes.jsonl`` and the nodes they exclude to its ``exclude.txt``: the
    preflight writes them first, and the watch adds its findings' to the same job's files as it trains. The files
    are this job's own: what cannot be read back of them (removed, or not the job's) starts them anew."""
    record, exclude = run_dir / badnodes.RECORD_NAME, run_dir / badnodes.EXCLUDE_NAME
    earlier = inbound.lines(_own_text(record, ledger.MAX_LINE * 64))
    outbound.write_text(record, "".join(line + "\n" for line in [*earlier, *lines] if line.strip()))
    if excluded:
        text = _own_text(exclude, 2**16).strip()
        try:
            before = hostlist.expand(text, badnodes.EXCLUDE_NAME) if text else []
        except ConfigError:
            before = []
        outbound.write_text(exclude, badnodes.exclude_text(dict.fromkeys([*before, *excluded])) + "\n")


def _own_text(path: Path, limit: int) -> str:
    try:
        return inbound.read_text(path, limit)
    except inbound.Unreadable:
        return ""


def _stop(preset: EnvConfig, plan: Plan, observed: List[ledger.Observation], excluded: Dict[str, str],
          stop: Optional[str], key: str, warnings: List[str], outcome: Outcome,
          slurm: Optional[Tuple[str, int]]) -> Optional[BootstrapError]:
    """What a stopping finding (``stop``) makes the job raise, the nodes observed named with their standing."""
    if not stop:
        return None
    if not observed:
        return PreflightError(stop)
    outcome.on_bad = "stopped"
    named = f"{stop}\n{_bad_line(observed, excluded, preset, key)}"
    if preset.nodes.on_bad.value != "requeue" or plan.launch.rank != 0:
        return PreflightError(named)
    reason = next((seen.reason for seen in observed if seen.node in excluded), observed[0].reason)
    return _requeue(preset, outcome, named, list(excluded), reason, key, warnings, slurm)


def _bad_line(observed: List[ledger.Observation], excluded: Dict[str, str], preset: EnvConfig, key: str) -> str:
    """``bad nodes: node3 excluded: slow in 2 jobs (41, 42) in the last 1 h (exclude.txt in the job's directory);
    observed, not excluded: node5 (soft evidence, ...)``."""
    parts = [f"{node} excluded: {summary}" for node, summary in excluded.items()]
    parts[-1:] = [f"{parts[-1]} (exclude.txt in the job's directory)"] if parts else []
    kept = [seen for seen in observed if seen.node not in excluded]
    if kept:
        why = "; ".join(dict.fromkeys(seen.note or f"soft evidence, excluded from {key}.nodes.min_observations="
                                      f"{preset.nodes.min_observations} jobs or attempts" for seen in kept))
        parts.append(f"observed, not excluded: {badnodes.exclude_text(seen.node for seen in kept)} ({why})")
    return "bad nodes: " + "; ".join(parts)


def add(path: Path, lines: List[str], now: datetime, rule: ledger.Rule, timeout_s: float, where: str) -> List[str]:
    """Add ``lines`` (entries' JSON, cleaned) to the ledger at ``path``, under an exclusive lock (``<file>.lock``
    beside it, which any writer of the list may take; waited for at most ``timeout_s``), written whole with the
    list's mode and group and renamed over it: two jobs at once lose nothing, and a reader never sees half a file.
    Entries aged out under ``rule`` are dropped on the way, and lines that are no entry too. Returns the warnings:
    what was refused and why (the lines are then not added), and what was dropped; none when all went well."""
    lock = path.with_name(path.name + ".lock")
    try:
        directory = os.stat(path.parent)
        before = _regular(path)
        with outbound.locked(lock, timeout_s, before, directory):
            try:
                existing, info, directory = inbound.read_shared_bytes(path)
            except inbound.Unreadable:
                if os.path.lexists(path):  # a link, a device, a file past its cap, writers not trusted: not replaced
                    raise
                existing, info = b"", None
            read = ledger.parse(existing, now)
            data = b"".join(line + b"\n" for line in [*ledger.kept(read, now, rule), *(s.encode() for s in lines)])
            if len(data) > inbound.MAX_SHARED_BYTES:
                return [f"{where}: {len(lines)} observations were not added: the ledger would hold {len(data)} bytes "
                        f"of live entries, past its cap of {inbound.MAX_SHARED_BYTES}: clear mended nodes (bootstrap "
                        "nodes FILE --clear NODE --why ...), or lower exclude_ttl_h"]
            outbound.replace_shared(path, data, info, directory)
    except (inbound.Unreadable, OSError) as error:  # TimeoutError is an OSError
        return [f"{where}: the observations were not added: {_why(error, lock)}"]
    return [line for line in [read.dropped_line(where)] if line]


def _regular(path: Path) -> Optional[os.stat_result]:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return info if stat.S_ISREG(info.st_mode) else None


def _why(error: Exception, lock: Path) -> str:
    if isinstance(error, OSError) and error.errno == errno.ELOOP:
        return f"{lock.name}: a link, not followed"
    if isinstance(error, PermissionError) and error.filename is not None and Path(error.filename).name == lock.name:
        try:
            info = os.lstat(lock)
            return (f"{lock.name}: permission denied (uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):o}): its "
                    "owner may give the list's group read access to it (chmod g+r), or remove it")
        except OSError:
            pass
    if isinstance(error, OSError) and not isinstance(error, TimeoutError):
        return f"{Path(error.filename or lock).name}: {error.strerror or type(error).__name__}"
    return str(error)


def _requeue(preset: EnvConfig, outcome: Outcome, named: str, bad: List[str], reason: str, key: str,
             warnings: List[str], slurm: Optional[Tuple[str, int]]) -> BootstrapError:
    """Rank 0 under ``on_bad=requeue``: exclude the nodes the evidence excludes (``bad``; none: the next attempt may
    run on the same nodes) and requeue the job, within the user's timeout."""
    wanted, seconds = preset.nodes, float(preset.distributed.timeout_s)
    if slurm is None:
        outcome.on_bad = "stopped (on_bad=requeue needs a SLURM batch job)"
        return PreflightError(f"{named}\n{key}.nodes.on_bad=requeue: not a SLURM job (no SLURM_JOB_ID): stopped")
    job_id = slurm[0]
    shown = requeue.show_job(job_id, seconds) if bad else ""
    if shown is None:  # `scontrol update ExcNodeList=` replaces the list: without the job's own, nothing is run
        outcome.on_bad = "stopped (the job's ExcNodeList could not be read)"
        return PreflightError(f"{named}\n{key}.nodes.on_bad=requeue: `scontrol show job -o {job_id}` gave no answer "
                              f"within {seconds:g} s, so the job's own exclusions are unknown: stopped, not requeued; "
                              f"resubmit with --exclude={badnodes.exclude_text(bad)}")
    try:
        decision = requeue.decide(job_id, bad, requeue.excluded_now(shown), slurm[1], wanted.max_requeues, reason,
                                  key)
    except ConfigError as error:  # the job's ExcNodeList is beyond what the nodelist reader takes
        outcome.on_bad = "stopped (the job's ExcNodeList could not be read)"
        return PreflightError(f"{named}\n{key}.nodes.on_bad=requeue: {error}: stopped, not requeued")
    for drain in decision.drain:
        if not wanted.drain:
            outbound.say(f"bootstrap: an administrator can drain the node: {requeue.line(drain)}", err=True)
            continue
        failed = requeue.run(drain, seconds)
        if failed:
            report.warn(warnings, f"{key}.nodes.drain: the node was not drained: {failed}")
    if not decision.requeue:
        outcome.on_bad = f"stopped: max_requeues reached, excluded {decision.excluded or 'nothing'}"
        return PreflightError(f"{named}\n{decision.message}")
    failed = requeue.requeue(decision, seconds)
    if failed:
        outcome.on_bad = f"stopped: the requeue failed ({failed})"
        return PreflightError(f"{named}\n{key}.nodes.on_bad=requeue failed: {failed}")
    outcome.on_bad = f"requeued excluding {decision.excluded}" if bad else "requeued excluding nothing"
    return RequeuedError(f"{named}\n{decision.message} (exit {RequeuedError.exit_code})")
