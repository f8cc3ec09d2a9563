"""SLURM's retry of a job with bad nodes (``env.nodes.on_bad=requeue``): the ``scontrol`` lines that exclude the
nodes from the job and requeue it, and the drain line for an administrator, decided purely (:func:`decide`), then
run, each bounded by the user's timeout, each command line printed through the one way out (:func:`run`).

SLURM facts, measured on Debian's slurm-wlm 22.05 (tests/cluster/test_bad_nodes.py, docs/preflight.md#bad-nodes):
``scontrol update JobId=N ExcNodeList=...`` on a running job is refused ("Job is no longer pending execution"),
so the job is first put back in the queue held (``scontrol requeuehold N``, which also sends its processes
SIGTERM), then given its exclusion, then released (``scontrol release N``); the next attempt sees
``SLURM_RESTART_COUNT`` (1, 2, ...)."""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import field
from typing import List, Optional, Sequence

from bootstrap.distributed.hostlist import compress, expand
from bootstrap.doors import inbound, outbound
from bootstrap.doors.errors import RequeuedError
from bootstrap.doors.lean import lean_dataclass

REQUEUED_EXIT = RequeuedError.exit_code  # sysexits' EX_TEMPFAIL: "a temporary failure" (docs/errors.md#exit-codes)
_EXCLUDED = re.compile(r"(?:^|\s)ExcNodeList=(\S*)")


@lean_dataclass
class Decision:
    """What rank 0 does about the bad nodes under SLURM, decided before anything runs."""

    requeue: bool  # False: stop (max_requeues reached, or not a batch job)
    excluded: str  # every node the job excludes after this attempt (SLURM's compact form)
    commands: List[List[str]] = field(default_factory=list)  # run in order; the first failure stops the rest
    drain: List[List[str]] = field(default_factory=list)  # the administrator's lines (run only with drain=true)
    message: str = ""  # one line for the log and the report

    @property
    def exit_code(self) -> int:
        return REQUEUED_EXIT if self.requeue else 1


def excluded_now(show_job: str) -> str:
    """The job's ``ExcNodeList`` from ``scontrol show job -o N``'s line; "" where it has none (``(null)``)."""
    found = _EXCLUDED.search(show_job)
    value = found.group(1) if found else ""
    return "" if value in ("", "(null)") else value


def decide(job_id: str, bad: Sequence[str], excluded: str, restarts: int, max_requeues: int, reason: str,
           key: str = "env") -> Decision:
    """Requeue the job excluding ``bad`` (the nodes the evidence excludes) as well as what it ``excluded`` already,
    unless it has been requeued ``max_requeues`` times: then stop, naming every node it excluded. With no ``bad``
    node (soft evidence that does not exclude yet) the job is requeued as it is: SLURM may place it on the same nodes,
    and an observation there again is evidence."""
    merged = compress([*expand(excluded, "the job's ExcNodeList"), *bad]) if excluded else compress(bad)
    drain = [["scontrol", "update", f"NodeName={compress(bad)}", "State=DRAIN",
              f"Reason=hydra-train-bootstrap: {reason} (job {job_id})"]] if bad else []
    if restarts >= max_requeues:
        return Decision(False, merged, [], drain,
                        f"{key}.nodes.max_requeues={max_requeues} reached (SLURM_RESTART_COUNT={restarts}): the job "
                        f"stops. Excluded: {merged or 'nothing'}; resubmit"
                        + (f" with --exclude={merged}" if merged else "") + f", or raise {key}.nodes.max_requeues")
    attempt = f"requeued job {job_id} (attempt {restarts + 1} of at most {max_requeues + 1})"
    if not bad:
        return Decision(True, merged, [["scontrol", "requeuehold", job_id], ["scontrol", "release", job_id]], [],
                        f"{attempt} excluding nothing: no node meets the evidence rule yet; SLURM may place it on the "
                        "same nodes, and an observation there again excludes the node")
    return Decision(True, merged,
                    [["scontrol", "requeuehold", job_id],
                     ["scontrol", "update", f"JobId={job_id}", f"ExcNodeList={merged}"],
                     ["scontrol", "release", job_id]], drain,
                    f"{attempt} excluding {merged}; SLURM places it on other nodes")


def line(command: Sequence[str]) -> str:
    return shlex.join(command)


def run(command: Sequence[str], seconds: float) -> Optional[str]:
    """Run one ``scontrol`` line within ``seconds``, its command line printed first (masked, through the one way
    out); returns why it failed, or None. Never raises for the command's own failure."""
    outbound.say(f"bootstrap: {line(command)}", err=True)
    try:
        done = subprocess.run(list(command), capture_output=True, timeout=seconds, check=False)  # noqa: S603
    except subprocess.TimeoutExpired:
        return f"{line(command)}: no answer within {seconds:g} s"
    except OSError as error:
        return f"{line(command)}: {error.strerror or type(error).__name__}"
    if done.returncode != 0:
        said = inbound.lines(done.stderr.decode("utf-8", "replace").strip())
        return f"{line(command)}: exit {done.returncode}" + (f": {said[-1]}" if said else "")
    return None


def requeue(decision: Decision, seconds: float) -> Optional[str]:
    """Run the decision's lines in order, each within ``seconds``; returns why the requeue failed, or None.

    ``requeuehold`` makes SLURM send the job's processes SIGTERM, this one too: it is ignored while the lines run
    (SLURM sends SIGKILL KillWait seconds later, 30 by default), so that the exclusion and the release are made.
    A failed exclusion never goes on to the release: the job stays held without it, and the line says what to
    run; a failed release says how to release it. A requeue that succeeded says so at once, with its decision's
    message."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGTERM, signal.SIG_IGN) if main else None
    try:
        hold, *exclude, release = decision.commands
        failed = run(hold, seconds)
        if failed:
            return failed
        for update in exclude:
            failed = run(update, seconds)
            if failed:
                return (f"{failed}: the job is held without the exclusion; run `{line(update)} && {line(release)}`, "
                        f"or cancel it (scancel {release[-1]})")
        released = run(release, seconds)
        if released:
            return f"{released}: the job is held; release it with `{line(release)}`"
        # said now, SIGTERM still ignored: once released, srun ends this attempt's step (within KillWait), this
        # process too, maybe before the job's own error line is printed
        outbound.say(f"bootstrap: {decision.message}", err=True)
        return None
    finally:
        if main:  # None: a handler not installed from Python; the default is the nearest Python can put back
            signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)


def show_job(job_id: str, seconds: float) -> Optional[str]:
    """``scontrol show job -o N``'s line, or None when it cannot be had within ``seconds``."""
    try:
        done = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True,  # noqa: S603,S607
                              timeout=seconds, check=False)
    except (subprocess.TimeoutExpired, OSError):
        return None
    return done.stdout.decode("utf-8", "replace")[:65536] if done.returncode == 0 else None
