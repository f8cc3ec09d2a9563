"""Do the ranks start alike? Each rank's fingerprint, compared with rank 0's before anything can hang on it.

The fingerprint holds what must be the same on every rank (docs/distributed.md#ranks-that-disagree):
the versions, the preset's name and digest, the device type, the threads, the torch settings, every
known variable set in the rank's environment with its final value, and the debug level torch runs
at (``torch.distributed.get_debug_level()``, which can differ from the variable's text). What
legitimately differs per rank is left out: rank numbers, the local device, the host, the
launcher's own variables and the variables the table marks ``per_rank``.

Each key has a kind (:func:`kind_of`). Under ``env.distributed.agree=error`` a difference of kind
version, preset, device or collective stops the job on every rank, since every rank sees the same
differences and so makes the same decision; the others warn. The comparison itself runs through
a store (:mod:`bootstrap.distributed.agree_store`), or against rank 0's report where a framework
starts the ranks itself (Lightning). :func:`check` picks the way; the rest is pure.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Collection, Dict, List, Mapping, Optional, Sequence, Tuple

from bootstrap.doors import outbound, records
from bootstrap.doors.errors import PRESET, BootstrapError
from bootstrap.doors.masking import MASK, masked
from bootstrap.doors.statuses import AgreementStatus as Status
from bootstrap.variables import agreement as variable_kinds  # imports no table until asked

if TYPE_CHECKING:
    from torch.distributed import Store

    from bootstrap.distributed.launcher import Launch


# What stops a job under agree=error: these facts of the rank, and the variables' stopping kinds (the table's rule).
STOPPING = ("version", "preset", "device", *sorted(variable_kinds.STOPPING))
POLICY = "policy"  # the kind of a difference in env.distributed.agree itself, which stops the job under any policy
SECRET = "\0secret:"  # a secret's place in a fingerprint sent to peers: an HMAC, never shown
# A message is one line that every rank prints and torchrun's summary quotes, whatever the peers sent:
MAX_SAID = 8  # differing keys a message names; the rest are counted (every one is in the report, up to MAX_RECORDED)
MAX_RECORDED = 64  # differences a report lists; the rest are counted (records.Agreement.more_differences)
MAX_HOST = 64  # characters of a host's name
MAX_KEY = 200  # characters of a key a report keeps


@dataclass(frozen=True)
class Facts:
    """What this rank starts with, before any peer is asked."""

    versions: Mapping[str, Optional[str]]  # python, torch, cuda, cudnn, nccl, bootstrap
    preset: str
    preset_digest: str
    device_type: str
    intra_op: int
    inter_op: int
    torch: Mapping[str, Any]  # each env.torch setting as applied
    debug_level: Optional[str]  # torch.distributed.get_debug_level(), None without torch.distributed


def fingerprint(facts: Facts, environ: Mapping[str, str],
                secret: Callable[[str], str] = lambda value: MASK) -> Dict[str, str]:
    """Key -> value text. ``secret`` turns a secret's value into what is compared: the report's
    fingerprint masks it; the one sent to peers holds an HMAC keyed by the run's salt."""
    prints = {f"version.{name}": value for name, value in facts.versions.items() if value is not None}
    prints.update({"preset.name": facts.preset, "preset.digest": facts.preset_digest,
                   "device.type": facts.device_type, "threads.intra_op": str(facts.intra_op),
                   "threads.inter_op": str(facts.inter_op)})
    prints.update({f"torch.{name}": str(value) for name, value in facts.torch.items()})
    if facts.debug_level is not None:
        prints["effective.distributed_debug"] = facts.debug_level
    for name, value in variable_kinds.known_set(environ).items():
        shown = masked(name, value)
        prints[f"var.{name}"] = value if shown == value else secret(value)
    return prints


def salted(salt: str) -> Callable[[str], str]:
    """A secret as peers compare it: an HMAC keyed by this run's salt, meaningless outside the run."""
    return lambda value: SECRET + hmac.new(salt.encode(), value.encode(), hashlib.sha256).hexdigest()[:32]


def digest(prints: Mapping[str, str]) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(dict(prints), sort_keys=True).encode()).hexdigest()[:16]


# -- what a difference means ---------------------------------------------------------------------
_TORCH_SPEED = ("cudnn_benchmark", "detect_anomaly")


def kind_of(key: str) -> str:
    """Why a key matters: policy | version | preset | device | collective | numerics | speed | logging."""
    group, _, name = key.partition(".")
    if group in ("version", "preset", "device"):
        return group
    if group == "agree":  # env.distributed.agree itself: ranks that decide differently would wait for each other
        return POLICY
    if group == "effective":  # the debug level torch runs at: it adds a wrapper's collectives
        return "collective"
    if group == "threads" or (group == "torch" and name in _TORCH_SPEED):
        return "speed"
    if group == "torch":
        return "numerics"
    return variable_kinds.kind_of(name) or "speed"


def label(key: str) -> str:
    """A key as a user knows it (a peer's key is shown visible, one line and bounded: it is its text)."""
    group, _, name = key.partition(".")
    name = outbound.shown(name, limit=80)
    return {"var": name, "version": name, "threads": f"{PRESET}.threads.{name}", "torch": f"{PRESET}.torch.{name}",
            "effective": "torch.distributed.get_debug_level()", "device": f"{PRESET}.device",
            "agree": f"{PRESET}.distributed.agree"}.get(
        group, "preset" if key == "preset.name" else "preset digest")


def shown(key: str, value: Optional[str]) -> str:
    """A rank's value as messages and reports show it: masked by its key and its shape, and visible, so that
    two values that differ never look alike (``'Ring '`` against ``Ring``, ``'a\\nb'``)."""
    if value is None:
        return "unset"
    if value.startswith(SECRET):
        return MASK
    return outbound.shown(value, name=key)


def _host(host: str) -> str:
    return outbound.shown(host, limit=MAX_HOST)


def differences(reference: Mapping[str, str], reference_host: str, odd: Sequence[Any], odd_count: int,
                world_size: int, policy: str) -> Tuple[List[records.Difference], int]:
    """Each key some rank differs on, its values grouped with the ranks that hold them, those that stop the job
    first; at most :data:`MAX_RECORDED`, and how many more there are. ``odd``: the differing ranks' records
    (``rank``, ``host``, ``values``: their values where they differ)."""
    def stops(key: str) -> bool:  # a difference in the policy stops every rank, whatever the policy
        kind = kind_of(key)
        return kind == POLICY or (policy == "error" and kind in STOPPING)

    keys = sorted({key for record in odd for key in record.values}, key=lambda key: (not stops(key), key))
    found = []
    for key in keys[:MAX_RECORDED]:
        groups: Dict[Optional[str], records.ValueGroup] = {}
        same = groups[reference.get(key)] = records.ValueGroup(value=shown(key, reference.get(key)), ranks=[0],
                                                               hosts=[_host(reference_host)])
        same.others = world_size - 1 - odd_count  # ranks never read: they agreed with rank 0 on everything
        for record in odd:
            value = record.values[key] if key in record.values else reference.get(key)
            group = groups.setdefault(value, records.ValueGroup(value=shown(key, value)))
            group.ranks.append(record.rank)
            group.hosts.append(_host(record.host))
        found.append(records.Difference(name=key[:MAX_KEY], kind=kind_of(key), stops=stops(key),
                                        values=sorted(groups.values(), key=lambda g: (0 in g.ranks, len(g.ranks)))))
    return found, len(keys) - len(found)


def _ranks(ranks: Sequence[int], hosts: Sequence[str], others: int = 0) -> str:
    named = ", ".join(f"{rank} ({host})" for rank, host in zip(ranks, hosts, strict=True))
    return f"rank{'s' if len(ranks) + others > 1 else ''} {named}" + (f" and {others} others" if others else "")


_FIXES = {
    POLICY: f"start every rank with the same {PRESET}.distributed.agree (error, warn or off): ranks that decide "
            "differently would wait for each other",
    "version": "install the same python, torch and hydra-train-bootstrap on every node (CUDA, cuDNN and NCCL come "
               "with the torch build)",
    "preset": "start every rank with the same preset and overrides",
    "device": f"give every rank the same {PRESET}.device, on nodes of the same kind",
    "numerics": f"start every rank with the same {PRESET}.torch settings",
    "speed": f"give every rank the same thread counts ({PRESET}.threads.intra_op=N)",
}
_DEBUG_LEVEL = "effective.distributed_debug"  # said through its variable when that differs too


def _clause(difference: records.Difference) -> str:
    """``rank 1 (node-b): NAME=INFO; rank 0 (node-a): unset [collective]``: the rank 0 group last."""
    name, ordered = label(difference.name), difference.values  # rank 0's side last
    parts = [f"{_ranks(g.ranks, g.hosts, g.others)}: " + (f"{name}={g.value}" if i == 0 and g.value != "unset"
                                                           else f"{name} unset" if i == 0 else g.value)
             for i, g in enumerate(ordered)]
    return f"{'; '.join(parts)} [{difference.kind}]"


def message(found: Sequence[records.Difference], odd: Sequence[Any], odd_count: int, world_size: int,
            reference_host: str, more: int = 0) -> str:
    """One line, bounded whatever the peers sent: the odd ranks out, each key they differ on (at most
    :data:`MAX_SAID`; values masked, visible, grouped by value), and the fix. ``more``: differences the
    report does not list either."""
    keys = {d.name for d in found}
    said = [d for d in found if not (d.name == _DEBUG_LEVEL and "var.TORCH_DISTRIBUTED_DEBUG" in keys)]
    said.sort(key=lambda d: (d.name.startswith("effective."), not d.stops, d.name))
    unsaid, said = len(said) - MAX_SAID + more, said[:MAX_SAID]
    unread = odd_count - len(odd)
    if odd_count > world_size - odd_count:  # most ranks differ from rank 0: rank 0's side is the odd one
        out = f"{_ranks([0], [_host(reference_host)], world_size - 1 - odd_count)} (the others differ from them)"
    else:
        out = _ranks([o.rank for o in odd], [_host(o.host) for o in odd]) + (f" and {unread} more" if unread else "")
    variables = sorted({label(d.name) for d in said if d.name.startswith("var.")}
                       | ({"TORCH_DISTRIBUTED_DEBUG"} if _DEBUG_LEVEL in keys else set()))
    example = variables[0] if len(variables) == 1 else "NAME"
    fixes = ([f"set {', '.join(variables)} alike for every rank: in the preset ({PRESET}.vars.{example}=...), "
              "which every rank applies, or exported the same way for every rank before python starts"]
             if variables else [])
    fixes += [_FIXES[kind] for kind in dict.fromkeys(d.kind for d in said if not d.name.startswith(("var.", "eff")))
              if kind in _FIXES]
    stops = any(d.stops for d in found)
    policy_only = stops and all(d.kind == POLICY for d in found if d.stops)
    head = "the ranks did not start alike" + (f" in {PRESET}.distributed.agree, so they would not decide alike"
                                              if policy_only else " in what collectives depend on" if stops else "")
    tail = f"; or set {PRESET}.distributed.agree=warn to go on anyway" \
        if any(d.stops and d.kind != POLICY for d in found) else ""
    rest = f" | and {unsaid} more differences (distributed.agreement in each rank's report)" if unsaid > 0 else ""
    # Each value and host is shown one line and visible already; the preset's key is named later (PRESET).
    return outbound.cut(f"{head}; odd one out: {out}. {' | '.join(_clause(d) for d in said)}{rest}. "
                        f"Fix: {'; '.join(fixes)}{tail}.", outbound.MAX_FINDING)


# -- where and how to compare ---------------------------------------------------------------------
def host() -> str:
    return socket.gethostname()


def compare_with_report(reference: records.Report, own: Dict[str, str], rank: int, world_size: int,
                        policy: str, planned: Collection[str] = ()) -> records.Agreement:
    """A rank that a framework started after rank 0 (Lightning): compared with rank 0's report.

    Rank 0 planned its threads and the variables the bootstrap sets for one process (it could not know
    the world to come), so those are left out: the preset's digest covers what the preset set, and
    what remains (versions, device, torch settings, the debug level, every variable the bootstrap did
    not plan: an export in the task before the framework starts its ranks) must agree."""
    from bootstrap.distributed.agree_store import OddRank, differing

    theirs: records.Agreement = reference.distributed.agreement  # type: ignore[assignment]  # the caller checked
    # what rank 0's process set for itself (source process) rank 0's bootstrap did not plan: compared, as before
    left_out = {f"var.{name}" for name in (*planned, *(name for name, var in reference.vars.items()
                                                       if var.source != records.PROCESS))}

    def compared(prints: Mapping[str, str]) -> Dict[str, str]:
        return {key: value for key, value in prints.items() if key not in left_out and not key.startswith("threads.")}

    differs = differing(compared(theirs.fingerprint), compared(own))
    odd = [OddRank(rank=rank, host=host(), values=differs)] if differs else []
    return outcome(theirs.fingerprint, theirs.host or "?", odd, len(odd), world_size, policy)


def outcome(reference: Mapping[str, str], reference_host: str, odd: Sequence[Any], odd_count: int,
            world_size: int, policy: str) -> records.Agreement:
    found, more = differences(reference, reference_host, odd, odd_count, world_size, policy)
    if not found:
        return records.Agreement(status=Status.AGREED)
    status = Status.STOPPED if any(d.stops for d in found) else Status.DIFFERS
    return records.Agreement(status=status, differences=found, more_differences=more,
                             message=message(found, odd, odd_count, world_size, reference_host, more))


def run_key(environ: Mapping[str, str], launch: Launch, number: int, prefix: Optional[str] = None) -> str:
    """One store key per check: the run, the restart, and the check's number in this process (each job of
    a one-process sweep checks again, in the same order on every rank). ``prefix``: the check's (default: this
    comparison's)."""
    from bootstrap.distributed.agree_store import PREFIX

    run = environ.get("TORCHELASTIC_RUN_ID") or launch.job_id or "run"
    return f"{prefix or PREFIX}/{run}/{environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/{number}"


_checks = [0]  # checks made by this process


def check(policy: str, launch: Launch, facts: Facts, output_dir: Optional[os.PathLike], creates_group: bool,
          timeout_s: int, planned: Collection[str] = ()) -> Tuple[records.Agreement, Optional[Store]]:
    """Compare this rank with rank 0, the best way the launch allows. Returns the record (its ``status``
    says what to do) and the store it made, for the process group to use (None where it made none).
    ``planned``: the variables this job's plan decided (see :func:`compare_with_report`).

    Under ``off`` nothing is compared, but where the ranks meet in a store a rank still says its policy
    there: a rank under ``error`` waits for every rank, and must learn that one runs under ``off``."""
    base: Dict[str, Any] = dict(policy=policy, ranks=launch.world_size, host=host())
    own: Dict[str, str] = {}
    if policy != "off":
        own = fingerprint(facts, os.environ)
        base.update(digest=digest(own), fingerprint=own)
    off = records.Agreement(status=Status.OFF, **base)
    if launch.world_size == 1:
        return (off if policy == "off" else records.Agreement(status=Status.SINGLE, **base)), None
    from bootstrap.distributed import group

    if group.in_use():  # a framework made the group before the job started (Ray Train): its store
        when = f"after the process group, which {launch.launcher.value} made before the job started"
        return _exchange(facts, launch, base, "group_store", when, timeout_s)
    if launch.row.framework_makes_group:  # Lightning: rank 0's report is in the shared run directory
        return (off if policy == "off" else _against_report(output_dir, own, launch, base, planned)), None
    if creates_group or launch.row.agent_store(os.environ):
        group.check_no_abandoned_rendezvous()  # rank 0 may host the store at MASTER_PORT
        when = "before the process group" if creates_group else "at job start (no process group is made)"
        return _exchange(facts, launch, base, "store", when, timeout_s)
    if policy == "off":
        return off, None
    return records.Agreement(status=Status.NOT_CHECKED, note=(
        "no store exists before the task runs: the bootstrap makes no process group "
        f"({PRESET}.distributed.init=never) and {launch.launcher.value} offers none"), **base), None


def _exchange(facts: Facts, launch: Launch, base: dict, via: str, when: str,
              timeout_s: int) -> Tuple[records.Agreement, Any]:
    """Through the store the rendezvous makes (``via`` store) or the existing group's (``group_store``); every
    wait within one ``timeout_s``."""
    from bootstrap.distributed import agree_store, group
    from bootstrap.distributed.waits import Deadline

    _checks[0] += 1
    key, deadline, policy = run_key(os.environ, launch, _checks[0]), Deadline(timeout_s), base["policy"]
    ours = via == "store"

    def work():
        store = group.rendezvous_store(launch, deadline) if ours else group.default_store()
        # The group's store keeps its own timeout; a store made here gets the group's. (torch's stubs lack it.)
        own_timeout = store.timeout  # type: ignore[attr-defined]
        try:
            return store, agree_store.exchange(store, key, launch.rank, launch.world_size, base["host"], policy,
                                               lambda salt: fingerprint(facts, os.environ, salted(salt)), deadline)
        finally:
            store.set_timeout(datetime.timedelta(seconds=timeout_s) if ours else own_timeout)

    try:
        store, exchanged = group.run_interruptibly(work, lambda made: None, "bootstrap-agreement")
    except agree_store.Absent as absent:
        raise BootstrapError(
            f"the ranks could not compare how they started ({PRESET}.distributed.agree): {absent} "
            f"({PRESET}.distributed.timeout_s={timeout_s}); the ranks not named did. A rank that was not started, "
            "crashed before its job, or cannot reach MASTER_ADDR:MASTER_PORT keeps the others waiting until then."
        ) from None
    except (RuntimeError, ValueError, records.Unreadable) as error:  # no store to reach, or a peer wrote garbage
        first = outbound.finding(str(error).splitlines()[0] if str(error) else type(error).__name__, 300)
        where = f"the store at {launch.master_addr}:{launch.master_port}" if ours else "the process group's store"
        host = ("torchrun's agent hosts it" if launch.row.agent_store(os.environ) else
                "rank 0 hosts it: check that rank 0 started and that MASTER_ADDR and MASTER_PORT name it") if ours \
            else f"{launch.launcher.value} made it"
        raise BootstrapError(
            f"the ranks could not compare how they started ({PRESET}.distributed.agree): {where} could not be used "
            f"within {PRESET}.distributed.timeout_s={timeout_s}: {first}. ({host}.)") from None
    reference = exchanged.reference
    compared = {**reference.fingerprint, agree_store.POLICY_KEY: reference.policy} if reference.policy else \
        reference.fingerprint
    record = outcome(compared, reference.host, exchanged.odd, exchanged.odd_count, launch.world_size, policy)
    if policy == "off" and record.status == Status.AGREED:
        record.status = Status.OFF  # every rank runs under off: nothing was compared
    return _with(record, base, via=via, when=when), (store if ours else None)


def _against_report(output_dir: Optional[os.PathLike], own: Dict[str, str], launch: Launch, base: dict,
                    planned: Collection[str]) -> records.Agreement:
    from pathlib import Path

    when = "at this rank's start, against rank 0's report"
    if output_dir is None:
        return _with(records.Agreement(status=Status.NOT_CHECKED,
                                       note="no output directory: rank 0's report cannot be read"), base, when=when)
    path = Path(output_dir) / records.REPORT_NAME
    try:
        reference = records.read_report(path)
    except records.Unreadable as error:
        return _with(records.Agreement(status=Status.NOT_CHECKED,
                                       note=f"rank 0's report could not be read: {error}"), base, when=when)
    theirs = reference.distributed.agreement
    if theirs is None or not theirs.fingerprint:
        return _with(records.Agreement(status=Status.NOT_CHECKED, note=(
            f"rank 0's report ({path.name}) holds no fingerprint (rank 0 ran with {PRESET}.distributed.agree=off, "
            "or an older bootstrap)")), base, when=when)
    # Secrets are masked in a report: under Lightning every rank inherits rank 0's environment anyway.
    record = compare_with_report(reference, own, launch.rank, launch.world_size, base["policy"], planned)
    return _with(record, base, via="rank0_report", when=when)


def _with(record: records.Agreement, base: dict, **fields: Any) -> records.Agreement:
    for name, value in {**base, **fields}.items():
        setattr(record, name, value)
    return record
