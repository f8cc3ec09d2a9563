"""Do the ranks start alike? The pure comparison: each rank's fingerprint, what a difference between two
ranks means, and the one line that says so. Nothing here reaches a peer: :mod:`bootstrap.core.agreement`
picks the way the fingerprints travel (a store, or rank 0's report) and :mod:`bootstrap.distributed.agree_store`
carries them through the store.

The fingerprint holds what must be the same on every rank (docs/distributed.md#ranks-that-disagree):
the versions, the preset's name and digest, the device type, the threads, the torch settings, every
known variable set in the rank's environment with its final value, and the debug level torch runs
at (``torch.distributed.get_debug_level()``, which can differ from the variable's text). What
legitimately differs per rank is left out: rank numbers, the local device, the host, the
launcher's own variables and the variables the table marks ``per_rank``.

Each key has a kind (:func:`kind_of`). Under ``env.distributed.agree=error`` a difference of kind
version, preset, device or collective stops the job on every rank, since every rank sees the same
differences and so makes the same decision; the others warn.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from bootstrap.doors import outbound, records
from bootstrap.doors.errors import PRESET_KEY
from bootstrap.doors.masking import MASK, masked
from bootstrap.doors.statuses import AgreementStatus as Status
from bootstrap.doors.torch_settings import SETTINGS
from bootstrap.variables import difference_kinds as variable_kinds  # imports no table until asked

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
# What a difference in each torch setting means (its row's own word): an unknown one (a newer peer's) numerics.
_TORCH_KINDS = {setting.name: setting.difference_kind for setting in SETTINGS}


def kind_of(key: str) -> str:
    """Why a key matters: policy | version | preset | device | collective | numerics | speed | logging."""
    group, _, name = key.partition(".")
    if group in ("version", "preset", "device"):
        return group
    if group == "agree":  # env.distributed.agree itself: ranks that decide differently would wait for each other
        return POLICY
    if group == "effective":  # the debug level torch runs at: it adds a wrapper's collectives
        return "collective"
    if group == "threads":
        return "speed"
    if group == "torch":
        return _TORCH_KINDS.get(name, "numerics")
    return variable_kinds.kind_of(name) or "speed"


def label(key: str) -> str:
    """A key as a user knows it (a peer's key is shown visible, one line and bounded: it is its text)."""
    group, _, name = key.partition(".")
    name = outbound.shown(name, limit=80)
    return {"var": name, "version": name, "threads": f"{PRESET_KEY}.threads.{name}",
            "torch": f"{PRESET_KEY}.torch.{name}",
            "effective": "torch.distributed.get_debug_level()", "device": f"{PRESET_KEY}.device",
            "agree": f"{PRESET_KEY}.distributed.agree"}.get(
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
    POLICY: f"start every rank with the same {PRESET_KEY}.distributed.agree (error, warn or off): ranks that decide "
            "differently would wait for each other",
    "version": "install the same python, torch and hydra-train-bootstrap on every node (CUDA, cuDNN and NCCL come "
               "with the torch build)",
    "preset": "start every rank with the same preset and overrides",
    "device": f"give every rank the same {PRESET_KEY}.device, on nodes of the same kind",
    "numerics": f"start every rank with the same {PRESET_KEY}.torch settings",
    "speed": f"give every rank the same thread counts ({PRESET_KEY}.threads.intra_op=N)",
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
    fixes = ([f"set {', '.join(variables)} alike for every rank: in the preset ({PRESET_KEY}.vars.{example}=...), "
              "which every rank applies, or exported the same way for every rank before python starts"]
             if variables else [])
    fixes += [_FIXES[kind] for kind in dict.fromkeys(d.kind for d in said if not d.name.startswith(("var.", "eff")))
              if kind in _FIXES]
    stops = any(d.stops for d in found)
    policy_only = stops and all(d.kind == POLICY for d in found if d.stops)
    head = "the ranks did not start alike" + (f" in {PRESET_KEY}.distributed.agree, so they would not decide alike"
                                              if policy_only else " in what collectives depend on" if stops else "")
    tail = f"; or set {PRESET_KEY}.distributed.agree=warn to go on anyway" \
        if any(d.stops and d.kind != POLICY for d in found) else ""
    rest = f" | and {unsaid} more differences (distributed.agreement in each rank's report)" if unsaid > 0 else ""
    # Each value and host is shown one line and visible already; the preset's key is named later (PRESET_KEY).
    return outbound.cut(f"{head}; odd one out: {out}. {' | '.join(_clause(d) for d in said)}{rest}. "
                        f"Fix: {'; '.join(fixes)}{tail}.", outbound.MAX_FINDING)


def outcome(reference: Mapping[str, str], reference_host: str, odd: Sequence[Any], odd_count: int,
            world_size: int, policy: str) -> records.Agreement:
    found, more = differences(reference, reference_host, odd, odd_count, world_size, policy)
    if not found:
        return records.Agreement(status=Status.AGREED)
    status = Status.STOPPED if any(d.stops for d in found) else Status.DIFFERS
    return records.Agreement(status=status, differences=found, more_differences=more,
                             message=message(found, odd, odd_count, world_size, reference_host, more))
