"""The report's status fields, each an enumeration: what ``bootstrap.json`` may say, in one place. Pure.

The report's types (:mod:`bootstrap.doors.records`) and its JSON Schema (:mod:`bootstrap.doors.json_schema`)
read them, and so does the code that decides each status. A value outside its enumeration does not read
(``job.status: not one of running, completed, ...``)."""

from bootstrap.doors.textenum import TextEnum


class JobStatus(TextEnum):
    """``job.status``: how a job ended, or that it is still running."""

    RUNNING = "running"  # the job started; killed before it ended (SIGKILL), a report stays at this
    COMPLETED = "completed"
    FAILED = "failed"  # the task raised
    CHECK_FAILED = "check_failed"  # a requirement failed with on_mismatch=error: the task did not run
    INTERRUPTED = "interrupted"  # SIGTERM, Ctrl-C or exit before the job ended
    PREVIEW = "preview"  # bootstrap doctor: worked out, nothing applied


class GroupState(TextEnum):
    """``distributed.process_group``: the default process group when the job started."""

    CREATED = "created"  # the bootstrap made it (and destroys it at job end)
    EXISTING = "existing"  # someone else's (the app's, Ray's): used, left alone
    NONE = "none"


class Teardown(TextEnum):
    """``distributed.teardown``: what the bootstrap did with the group at job end."""

    DESTROYED = "destroyed"
    LEFT = "left"  # not the bootstrap's to destroy


class GroupOwner(TextEnum):
    """``distributed.group_at_end.owner``: who made the group in use at job end."""

    BOOTSTRAP = "bootstrap"
    FRAMEWORK = "framework"  # Lightning's, the app's own


class AgreementStatus(TextEnum):
    """``distributed.agreement.status``."""

    AGREED = "agreed"
    DIFFERS = "differs"  # differences that only warn (or agree=warn): recorded, the job runs
    STOPPED = "stopped"  # a difference that stops, under agree=error: the task did not run
    OFF = "off"  # env.distributed.agree=off
    SINGLE = "single"  # one rank: nothing to compare (the fingerprint is recorded for a framework's later ranks)
    NOT_CHECKED = "not_checked"  # no store and no report to compare with: `note` says why


class PreflightStatus(TextEnum):
    """``preflight.status``."""

    OK = "ok"
    SLOW = "slow"  # a rank or the network below a floor or too far behind the others
    FAULTY = "faulty"  # a wrong or non-finite matmul, or a collective that did not finish
    SKIPPED = "skipped"  # ``preflight.note`` says why


class ComputeVerdict(TextEnum):
    """``preflight.ranks[].compute``: a rank's matmul against float64."""

    OK = "ok"
    NOT_FINITE = "not_finite"
    WRONG = "wrong"
    NOT_RUN = "not_run"


class ProvenanceStatus(TextEnum):
    """``provenance.status``: whether the job's provenance (git, packages, container, driver) was collected."""

    COLLECTED = "collected"
    OFF = "off"  # env.provenance.enabled=false: only the host is recorded
    UNFINISHED = "unfinished"  # still being collected when the job ended (bounded by env.provenance.seconds)
    FAILED = "failed"  # collecting it raised: the log says why; only the host is recorded
    PREVIEW = "preview"  # bootstrap doctor: nothing collected


class WatchStatus(TextEnum):
    """``watch.status``."""

    OK = "ok"  # windows judged, nothing found
    SLOW = "slow"  # a finding: a rank, node or link stayed slow, or a rank left (``watch.findings``)
    SKIPPED = "skipped"  # nothing judged: ``watch.note`` says why (off, one process, no step yet)
