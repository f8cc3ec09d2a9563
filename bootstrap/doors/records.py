"""The job's record, ``bootstrap.json``, as a typed value: :class:`Report`. Pure, apart from :func:`read_report`.

Every section is a dataclass whose fields carry the JSON names (``from`` is ``Resolved.from_``),
in the order they are written. :meth:`Report.to_json` gives the JSON the bootstrap has always
written; :meth:`Report.from_json` reads it back strictly:

- a field of the wrong type raises :class:`bootstrap.doors.inbound.Unreadable` naming it
  (``job.metrics.loss: not a finite number``, ``checks[1].ok: not true or false``);
- numbers must fit what the bootstrap writes (:mod:`bootstrap.doors.typed`): counts are whole numbers
  from 0 to 2**53, metrics finite floats, any other whole number within 64 bits;
- an absent field takes its default, so reports written before a field existed still read;
  a key this version does not know is ignored, so reports of a later version read too;
- a report of an older ``schema_version`` is first brought to today's shape (:data:`bootstrap.doors.upgrades.UPGRADES`):
  every report this package has written reads (``tests/data/reports`` keeps a real one of each version).

:func:`read_report` reads a file through :mod:`bootstrap.doors.inbound` (bounded size, strict JSON, no NaN, bounded
nesting) and raises only ``Unreadable``. The report's fields are documented in docs/report.md.
"""

import os
import re
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional

from bootstrap.doors import inbound
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.statuses import (AgreementStatus, ComputeVerdict, GroupOwner, GroupState, JobStatus,
                                      PreflightStatus, ProvenanceStatus, Teardown)
from bootstrap.doors.torch_settings import SETTINGS
from bootstrap.doors.timings import Phase, Timings, WorldPhase  # noqa: F401 - sections of the report
from bootstrap.doors.typed import Count
from bootstrap.doors.typed import Section as _Section
from bootstrap.doors.typed import section as _section
from bootstrap.doors.typed import when_set as _when_set
from bootstrap.doors.upgrades import upgraded
from bootstrap.doors.watch_report import Watch

SCHEMA_VERSION = 5
# What each version added that an earlier report cannot show: what `bootstrap diff` leaves out between versions.
ADDED_IN = {2: ("the lint", "node_rank", "global_seed"), 3: ("the preflight check",), 4: ("the provenance",),
            5: ("the preflight's links between nodes", "the bad nodes")}
REPORT_NAME = "bootstrap.json"


@_section
class Resolved(_Section):
    """``resolved``: what ``env=auto`` chose (shown as ``auto -> cpu_debug (no CUDA device)``)."""

    from_: str = field(metadata={"json": "from"})
    preset: str
    reason: str

    def describe(self) -> str:
        return f"{self.from_} -> {self.preset} ({self.reason})"


@_section
class Found(_Section):
    """``found``: the machine."""

    python: Optional[str] = None
    torch: Optional[str] = None
    cuda: Optional[str] = None
    nccl: Optional[str] = None
    cudnn: Optional[str] = None
    bootstrap: Optional[str] = None  # this package's version
    compute_capability: Optional[str] = None
    gpus: Count = 0
    gpu_names: List[str] = field(default_factory=list)
    cpus: Optional[Count] = None
    cpus_usable: Optional[Count] = None
    cpu_affinity: Optional[str] = None


@_section
class Check(_Section):
    """One entry of ``checks``: a requirement and what was found."""

    name: str
    required: str = ""
    found: Optional[str] = None
    ok: bool


@_section
class LintFinding(_Section):
    """One entry of ``lint`` (docs/lint.md)."""

    name: str
    kind: str
    message: str


@_section
class Var(_Section):
    """One entry of ``vars``: a variable's value (masked if secret), where it came from, whether it took effect."""

    value: str
    source: str
    effective: bool
    note: str = ""
    withheld: bool = _when_set(False)
    does_nothing_here: str = _when_set("")  # what this machine lacks for it to matter (then effective is false)


PROCESS = "process"  # the Var.source of a value the process set for itself before the job started


@_section
class ThreadCounts(_Section):
    """``threads.requested``: the thread counts the preset asked for (null: left to torch)."""

    intra_op: Optional[Count] = None
    inter_op: Optional[Count] = None


@_section
class Threads(_Section):
    """``threads``: in effect once applied (else planned), as requested, and whether applied."""

    intra_op: Optional[Count] = None
    inter_op: Optional[Count] = None
    requested: ThreadCounts = field(default_factory=ThreadCounts)
    applied: bool = False
    intra_op_at_end: Optional[Count] = _when_set()  # the task changed the count (Lightning does)


# ``torch``: a field per env.torch setting, as the plan applied it; null in a report from before the setting.
if TYPE_CHECKING:  # its fields are made from SETTINGS at import, which a type checker does not run
    class Torch(_Section):
        def __getattr__(self, name: str) -> Any: ...
else:
    Torch = _section(type("Torch", (_Section,), {
        "__module__": __name__, "__doc__": "``torch``: each env.torch setting (bootstrap.doors.torch_settings).",
        "__annotations__": {s.name: Optional[s.kind] for s in SETTINGS}, **dict.fromkeys(s.name for s in SETTINGS)}))


@_section
class GroupAtEnd(_Section):
    """``distributed.group_at_end``: the process group in use when the job ended, whoever made it."""

    owner: Optional[GroupOwner] = None
    backend: Optional[str] = None
    world_size: Optional[Count] = None
    rank: Optional[Count] = None


@_section
class ValueGroup(_Section):
    """One value of a key the ranks disagree on, and the ranks that hold it."""

    value: str  # masked; "unset" where the variable is not set
    ranks: List[Count] = field(default_factory=list)  # the ranks named (rank 0 and the odd ones)
    hosts: List[str] = field(default_factory=list)  # their hosts, in the same order
    others: Count = 0  # ranks that hold it too without being named (they agreed with rank 0)


@_section
class Difference(_Section):
    """One entry of ``distributed.agreement.differences``."""

    name: str  # a fingerprint key: version.torch, var.NCCL_ALGO, threads.intra_op, ...
    kind: str  # why it matters: policy | version | preset | device | collective | numerics | speed | logging
    stops: bool  # under agree=error this difference stops the job
    values: List[ValueGroup] = field(default_factory=list)


@_section
class Agreement(_Section):
    """``distributed.agreement``: did the ranks start alike (docs/distributed.md#ranks-that-disagree)."""

    status: AgreementStatus = AgreementStatus.NOT_CHECKED
    policy: Optional[str] = None  # env.distributed.agree: error | warn | off
    via: Optional[str] = None  # store | group_store | rank0_report
    when: Optional[str] = None  # the moment of the comparison, in words
    ranks: Optional[Count] = None  # the world compared
    host: Optional[str] = None  # this rank's host, as the other ranks' messages name it
    digest: Optional[str] = None  # sha256 of this rank's fingerprint (secrets masked)
    fingerprint: Dict[str, str] = field(default_factory=dict)  # what must agree; secrets masked
    differences: List[Difference] = field(default_factory=list)  # those that stop first, at most 64
    more_differences: Count = _when_set(0)  # differences beyond those listed (a peer that differs in thousands)
    message: Optional[str] = None  # what the job logged or stopped with
    note: Optional[str] = None  # why it was not compared


@_section
class Hang(_Section):
    """``distributed.hang``: what the flight recorder's dumps of a failed run show (docs/hangs.md); every text
    one cleaned line."""

    dump_dir: str = ""  # where the dumps are (``bootstrap hang DUMP_DIR``)
    dumps: List[str] = field(default_factory=list)  # this run's dumps, by name
    ranks: List[Count] = field(default_factory=list)  # ranks with a readable dump of this run
    world_size: Optional[Count] = None
    finding: Optional[str] = None  # the findings as one line (torchrun's summary); null: no divergence
    findings: List[str] = field(default_factory=list)  # one sentence each
    groups: List[str] = field(default_factory=list)  # one line per process group: the last collective in common
    missing: Optional[str] = None  # ranks of the world without a dump of this run, as ranges
    stale: List[str] = field(default_factory=list)  # dumps from an earlier run: left in place, not analysed
    unreadable: List[str] = field(default_factory=list)  # "name: reason"
    notes: List[str] = field(default_factory=list)  # what was not analysed, and why
    run_started_ns: Optional[int] = None  # the run's start the dumps were judged by; null: unknown


@_section
class Distributed(_Section):
    """``distributed``: how the process was launched, the group, and after a failure under a group the dumps."""

    launcher: str = "single"
    rank: Count = 0
    local_rank: Count = 0
    world_size: Count = 1
    local_world_size: Count = 1
    node_rank: Count = 0
    master_addr: Optional[str] = None
    master_port: Optional[int] = None
    job_id: Optional[str] = None
    backend: Optional[str] = None
    process_group: GroupState = GroupState.NONE  # when the job started
    teardown: Optional[Teardown] = None  # at job end
    mesh: Optional[Dict[str, Count]] = None
    group_at_end: Optional[GroupAtEnd] = None
    hang: Optional[Hang] = None  # after a failure under a group: what the flight recorder's dumps show
    agreement: Optional[Agreement] = None  # null in a report written before the check existed, and in a preview


@_section
class PreflightRank(_Section):
    """One rank's figures in ``preflight`` (docs/preflight.md)."""

    rank: Count
    host: str = ""
    compute: ComputeVerdict = ComputeVerdict.NOT_RUN  # the matmul's result against float64
    tflops: Optional[float] = None  # the matmul's speed
    busbw_gbps: Optional[float] = None  # the world's all_reduce, as this rank timed it (largest message)
    node_busbw_gbps: Optional[float] = None  # the all_reduce within its node (more than one node only)


@_section
class CollectiveSize(_Section):
    """One message size of this rank's timed all_reduce (nccl-tests' algbw and busbw)."""

    size_mb: float
    reps: Count
    seconds: float
    algbw_gbps: float
    busbw_gbps: float


@_section
class PreflightLink(_Section):
    """One link between two nodes in ``preflight.links``: the first ranks that exchanged over it, their hosts, and
    its speed one way (the faster of the two ends' figures)."""

    ranks: List[Count] = field(default_factory=list)  # the first rank of each node, in the ring's order
    hosts: List[str] = field(default_factory=list)
    gbps: Optional[float] = None  # null: neither end measured it (the check stopped before)


@_section
class PreflightFinding(_Section):
    """One entry of ``preflight.findings``: what failed, and on which ranks."""

    kind: str  # faulty | slow | min_tflops | min_busbw_gbps | min_node_busbw_gbps | network | unfinished | invalid
    #            | slow_link
    message: str
    ranks: List[Count] = field(default_factory=list)
    against: List[float] = _when_set(factory=list)  # what each rank named was judged against (slow: the others')


@_section
class BadNode(_Section):
    """One entry of ``preflight.bad_nodes``: a node a finding named, as ``bad_nodes.jsonl`` holds its observation."""
    node: str  # the scheduler's name for it (SLURMD_NODENAME), else the kernel's host name
    reason: str  # the first finding's kind that named it (faulty | slow | ... | slow_link | absent)
    ranks: List[Count] = field(default_factory=list)
    valid_until: Optional[str] = None  # the observation counts as evidence until (UTC): env.nodes.exclude_ttl_h
    evidence: Optional[str] = None  # hard (faulty, invalid: one observation excludes) | soft (docs/preflight.md)
    excluded: Optional[bool] = None  # whether the evidence, this observation's and the ledger's, keeps it out now
    note: Optional[str] = None  # why this observation does not count: systemic, or past env.nodes.max_per_job


@_section
class Preflight(_Section):
    """``preflight``: did every rank compute right and fast, and the network carry what the preset expects."""

    status: PreflightStatus = PreflightStatus.SKIPPED
    mode: Optional[str] = None  # env.preflight.mode
    note: Optional[str] = None  # why it was skipped, or which part was
    budget_s: Optional[float] = None  # env.preflight.seconds (within distributed.timeout_s)
    seconds: Optional[float] = None  # spent (timings.preflight_s)
    max_skew: Optional[float] = None
    min_tflops: Optional[float] = None
    min_busbw_gbps: Optional[float] = None
    min_node_busbw_gbps: Optional[float] = None
    precision: Optional[str] = None  # the float32 matmul precision measured (highest | high | medium)
    matrix: Optional[Count] = None  # n of the n x n matmul
    compute_error: Optional[float] = None  # this rank's relative error against float64 (null: NaN or Inf)
    collective: List[CollectiveSize] = field(default_factory=list)  # this rank's timed all_reduce
    world_size: Optional[Count] = None  # ranks whose figures were gathered
    median_tflops: Optional[float] = None
    busbw_gbps: Optional[float] = None  # the world's bus bandwidth: the median of the ranks' figures
    slowest: Optional[PreflightRank] = None  # the rank of lowest TFLOP/s
    ranks: List[PreflightRank] = field(default_factory=list)  # rank 0, this rank, the slowest and those named
    network: Optional[str] = None  # NCCL's "Using network" name(s)
    network_kind: Optional[str] = None  # ib | roce | efa | ofi | socket | fastrak | tcpx | other (nccl_log.Network.kind)
    network_expected: Optional[str] = None  # env.preflight.network
    findings: List[PreflightFinding] = field(default_factory=list)
    links: List[PreflightLink] = field(default_factory=list)  # between nodes (schema 5): the slowest first, at most 64
    bad_nodes: List[BadNode] = field(default_factory=list)  # the nodes the findings name (bad_nodes.jsonl)
    on_bad: Optional[str] = None  # what was done about them (env.nodes.on_bad): recorded, stopped, requeued, ...
    restart_count: Optional[Count] = None  # SLURM_RESTART_COUNT: this attempt's number (0: the first)


@_section
class Seed(_Section):
    """``seed``: what seeded which generators, on this rank (docs/report.md)."""

    value: Optional[int] = None
    global_seed: Optional[int] = None
    generators: List[str] = field(default_factory=list)
    data_seed: Optional[int] = None
    task_seed: Optional[int] = None


@_section
class Git(_Section):
    """``provenance.git``: the app's own repository when the job started (docs/report.md#provenance)."""

    root: str  # the repository's top directory
    commit: Optional[str] = None  # null: a repository with no commit yet
    branch: Optional[str] = None  # null: a detached HEAD
    dirty: bool = False  # tracked files differ from the commit (staged or not); untracked files are counted apart
    diff_digest: Optional[str] = None  # sha256 of `git diff HEAD`, whole; null when clean
    diff_bytes: Count = 0  # the size of `git diff HEAD`
    diff_file: Optional[str] = None  # git.diff in the job's directory (masked), when dirty
    diff_cut: bool = _when_set(False)  # git.diff holds only the diff's first MAX_DIFF_BYTES, and says so
    untracked: Count = 0  # untracked files (not ignored)
    untracked_digest: Optional[str] = None  # sha256 of their sorted names; null when none


@_section
class Provenance(_Section):
    """``provenance``: where the job came from: the code, the packages, the host, the container, the driver."""

    status: ProvenanceStatus
    host: Optional[str] = None  # the node's name (the scheduler's: SLURMD_NODENAME), in every report
    kernel_host: Optional[str] = _when_set()  # the kernel's host name, where it is not the node's name
    git: Optional[Git] = None
    git_missing: Optional[str] = None  # why there is no `git`: no git on PATH, not a repository, timed out
    packages: Optional[Count] = None  # installed distributions
    packages_digest: Optional[str] = None  # sha256 of packages.txt's lines (name==version, sorted)
    packages_file: Optional[str] = None  # packages.txt in the job's directory
    container: Optional[str] = None  # kubernetes | apptainer | podman | docker, from their documented markers
    gpu_driver: Optional[str] = None  # the NVIDIA driver's version, where one is loaded
    reused: bool = _when_set(False)  # collected once per process: an earlier job of this sweep collected it


@_section
class Job(_Section):
    """``job``: how the job ended, and the task's metrics."""

    num: Optional[Count] = None
    status: Optional[JobStatus] = None
    metrics: Optional[Dict[str, float]] = None
    metrics_skipped: List[str] = _when_set(factory=list)
    error: Optional[str] = _when_set()


@_section
class Report(_Section):
    """``bootstrap.json`` (docs/report.md)."""

    schema_version: int = SCHEMA_VERSION
    preset: Optional[str] = None
    preset_digest: Optional[str] = None  # sha256 of the validated preset (secrets masked): same digest, same preset
    resolved: Optional[Resolved] = None
    overrides: List[str] = field(default_factory=list)
    device: Optional[str] = None
    found: Found = field(default_factory=Found)
    checks: List[Check] = field(default_factory=list)
    lint: List[LintFinding] = field(default_factory=list)
    vars: Dict[str, Var] = field(default_factory=dict)
    threads: Threads = field(default_factory=Threads)
    torch: Torch = field(default_factory=Torch)
    distributed: Distributed = field(default_factory=Distributed)
    seed: Seed = field(default_factory=Seed)
    preflight: Optional[Preflight] = None  # null in a preview and in a report written before the check existed
    provenance: Optional[Provenance] = None  # null in a report written before schema 4
    watch: Optional[Watch] = None  # null in a preview, and in a report written before the watch existed
    warnings: List[str] = field(default_factory=list)
    timings: Timings = field(default_factory=Timings)
    job: Job = field(default_factory=Job)

    @property
    def checks_ok(self) -> bool:
        return all(check.ok for check in self.checks)


# -- files ------------------------------------------------------------------------------------
_RANK_FILE = re.compile(r"bootstrap\.rank([0-9]{1,9})\.json")


def report_name(rank: int, world_size: int) -> str:
    """``bootstrap.json`` for a single process; ``bootstrap.rank<N>.json`` for each rank of a group."""
    return REPORT_NAME if world_size == 1 else f"bootstrap.rank{rank}.json"


def report_names(names: Iterable[str]) -> List[str]:
    """Of a directory's entry names, the reports': ``bootstrap.json``, then ``bootstrap.rank<N>.json`` in
    rank order. Only names the bootstrap writes count: ``bootstrap.rankX.json`` is a stray file."""
    names = list(names)
    ranks = sorted((int(m.group(1)), name) for name in names
                   if name.startswith("bootstrap.rank") and (m := _RANK_FILE.fullmatch(name)))
    return ([REPORT_NAME] if REPORT_NAME in names else []) + [name for _, name in ranks]


def report_paths(job_dir: inbound.StrPath) -> List[Path]:
    """The reports in ``job_dir`` (see :func:`report_names`); none when it cannot be listed."""
    try:
        names = os.listdir(job_dir)
    except OSError:
        return []
    return [Path(job_dir) / name for name in report_names(names)]


def read_report(path: inbound.StrPath) -> Report:
    """The report in ``path``, of any schema version this package has written; raises only
    :class:`~bootstrap.doors.inbound.Unreadable` (``bootstrap.json: job.num: ...``)."""
    data = inbound.read_json(path, typed=True)  # the typed Report bounds every field's depth
    try:
        return Report.from_json(upgraded(data))
    except Unreadable as error:
        version = data.get("schema_version") if type(data) is dict else None
        newer = f" (written by a newer hydra-train-bootstrap, schema_version {version}; this one reads 1 to " \
                f"{SCHEMA_VERSION}: upgrade it)" if type(version) is int and version > SCHEMA_VERSION else ""
        raise Unreadable(f"{os.path.basename(path)}: {error}{newer}") from None
