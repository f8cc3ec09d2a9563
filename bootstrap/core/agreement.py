"""Do the ranks start alike? Each rank's fingerprint, compared with rank 0's before anything can hang on it:
where and how the fingerprints travel. :func:`check` picks the way the launch allows: through a store
(:mod:`bootstrap.distributed.agree_store` carries the fingerprints; a framework's group's store, or the one
the rendezvous makes), or against rank 0's report where a framework starts the ranks itself (Lightning).
What a fingerprint holds and what a difference means is the pure comparison, :mod:`bootstrap.core.comparison`.
"""

from __future__ import annotations

import datetime
import os
from typing import TYPE_CHECKING, Any, Collection, Dict, Mapping, Optional, Tuple

from bootstrap.core import phases
from bootstrap.core.comparison import Facts, Status, digest, fingerprint, outcome, salted
from bootstrap.doors import inbound, outbound, records
from bootstrap.doors.errors import PRESET_KEY, BootstrapError
from bootstrap.distributed.store_keys import run_key
from bootstrap.doors.timeline import counted

if TYPE_CHECKING:
    from torch.distributed import Store

    from bootstrap.distributed.launcher import Launch


def host() -> str:
    """This rank's node, as the scheduler names it (:func:`bootstrap.distributed.nodename.node`)."""
    from bootstrap.distributed import nodename

    return nodename.node()


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
        f"({PRESET_KEY}.distributed.init=never) and {launch.launcher.value} offers none"), **base), None


def _exchange(facts: Facts, launch: Launch, base: dict, via: str, when: str,
              timeout_s: int) -> Tuple[records.Agreement, Optional[Store]]:
    """Through the store the rendezvous makes (``via`` store) or the existing group's (``group_store``); every
    wait within one ``timeout_s``."""
    from bootstrap.distributed import agree_store, group
    from bootstrap.distributed.waits import Deadline

    _checks[0] += 1
    key, deadline, policy = run_key(os.environ, launch, _checks[0]), Deadline(timeout_s), base["policy"]
    ours = via == "store"

    def work():
        store = group.rendezvous_store(launch, deadline) if ours else group.default_store()
        if ours:
            phases.mark("store")
        # The group's store keeps its own timeout; a store made here gets the group's. (torch's stubs lack it.)
        own_timeout = store.timeout  # type: ignore[attr-defined]
        try:  # each operation counted in the agreement's phase (bootstrap dryrun predicts them)
            return store, agree_store.exchange(counted(store), key, launch.rank, launch.world_size, base["host"],
                                               policy, lambda salt: fingerprint(facts, os.environ, salted(salt)),
                                               deadline, rank0_hosts=not launch.row.agent_store(os.environ))
        finally:
            store.set_timeout(datetime.timedelta(seconds=timeout_s) if ours else own_timeout)

    try:
        store, exchanged = group.run_interruptibly(work, lambda made: None, "bootstrap-agreement")
    except agree_store.Absent as absent:
        raise BootstrapError(
            f"the ranks could not compare how they started ({PRESET_KEY}.distributed.agree): {absent} "
            f"({PRESET_KEY}.distributed.timeout_s={timeout_s}); the ranks not named did. A rank that was not started, "
            "crashed before its job, or cannot reach MASTER_ADDR:MASTER_PORT keeps the others waiting until then."
        ) from None
    except (RuntimeError, ValueError, records.Unreadable) as error:  # no store to reach, or a peer wrote garbage
        first = outbound.finding(inbound.first_line(error) if str(error) else type(error).__name__, 300)
        where = f"the store at {launch.master_addr}:{launch.master_port}" if ours else "the process group's store"
        host = (f"{launch.launcher.value}'s agent hosts it" if launch.row.agent_store(os.environ) else
                "rank 0 hosts it: check that rank 0 started and that MASTER_ADDR and MASTER_PORT name it") if ours \
            else f"{launch.launcher.value} made it"
        raise BootstrapError(
            f"the ranks could not compare how they started ({PRESET_KEY}.distributed.agree): {where} could not be used "
            f"within {PRESET_KEY}.distributed.timeout_s={timeout_s}: {first}. ({host}.)") from None
    reference = exchanged.reference
    compared = {**reference.fingerprint, agree_store.POLICY_KEY: reference.policy} if reference.policy else \
        reference.fingerprint
    record = outcome(compared, reference.host, exchanged.odd, exchanged.odd_count, launch.world_size, policy)
    if policy == "off" and record.status == Status.AGREED:
        record.status = Status.OFF  # every rank runs under off: nothing was compared
    return _with(record, base, via=via, when=when), (_keyed(store, key) if ours else None)


def _keyed(store: Store, key: str) -> Store:
    """The group's store under this check's own key. torch names every default group "0" again (its counter restarts
    when a group is destroyed), and torchrun's agent hosts one store for the worker's life: so the jobs of a
    one-process sweep under torchrun would each make their group under the same keys, and the third read the
    second's addresses and hung in init_process_group (measured: ``-m`` with three jobs)."""
    import torch.distributed as dist

    return dist.PrefixStore(f"{key}/group", store)


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
            f"rank 0's report ({path.name}) holds no fingerprint (rank 0 ran with {PRESET_KEY}.distributed.agree=off, "
            "or an older bootstrap)")), base, when=when)
    # Secrets are masked in a report: under Lightning every rank inherits rank 0's environment anyway.
    record = compare_with_report(reference, own, launch.rank, launch.world_size, base["policy"], planned)
    return _with(record, base, via="rank0_report", when=when)


def _with(record: records.Agreement, base: dict, **fields: Any) -> records.Agreement:
    for name, value in {**base, **fields}.items():
        setattr(record, name, value)
    return record
