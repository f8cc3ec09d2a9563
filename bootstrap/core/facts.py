"""A job's facts by section, for comparing two jobs (``bootstrap diff``) or the jobs of one sweep. Pure.

:func:`facts` turns a :class:`~bootstrap.doors.records.Report` into ``{section: {key: text}}``; a fact the
report does not hold is absent (shown as ``unset`` by whoever compares). What differs between any two runs
(times, job number, status, metrics, the master's port) sits in the section :data:`ALWAYS_DIFFERS`, which a
comparison leaves out unless asked. :func:`environment` is the part a job does not choose through its own
overrides: versions, hardware, inherited variables, the commit and the packages (the sweep summary's note,
:mod:`bootstrap.sweep.environments`).

Every value is shown by one rule, whoever wrote the report (this version, another, a hand or a user's tool):
masked by its name and its shape (:func:`bootstrap.doors.masking.masked`: ``WANDB_API_KEY``, an override
``+env.vars.HF_TOKEN=...``, ``DB_PASSWORD=...`` inside a text) and made visible
(:func:`bootstrap.doors.outbound.visible`: ``'Ring '`` against ``Ring``). A value holding the run's own
directory (the flight recorder's ``TORCH_FR_DUMP_TEMP_FILE``) shows it as ``<run dir>``, so two runs compare
alike.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from bootstrap.doors.masking import masked, masked_override
from bootstrap.doors.outbound import visible
from bootstrap.doors import records
from bootstrap.doors.records import PROCESS, Report
from bootstrap.doors.typed import Section

SECTIONS = ("versions", "variables", "threads", "launch", "preset", "seeds", "torch", "lint", "preflight",
            "watch", "provenance")
ALWAYS_DIFFERS = "always_differs"
RUN_DIR = "<run dir>"
INHERITED = "inherited"  # the source shown for a variable the job found set and the bootstrap did not plan
# Facts a preview (``bootstrap doctor``) cannot know: no comparison was made, no group exists yet.
NOT_IN_PREVIEW = (("launch", "agreement"), ("torch", "distributed debug level (effective)"),
                  ("seeds", "generators"),  # seeded only when the job starts
                  # what the task did, seen at job end: its own seeding and thread count (Lightning does both)
                  ("seeds", "task_seed"), ("threads", "intra_op at end"),
                  *(("preflight", key) for key in ("status", "median TFLOP/s", "slowest rank", "bus bandwidth GB/s",
                                                   "network", "findings", "note", "bad nodes", "on_bad",
                                                   "restart_count")),  # measured at job start
                  *(("watch", key) for key in ("status", "windows", "findings", "note", "bad nodes", "on_bad")))

Facts = Dict[str, Dict[str, str]]


MAX_DEPTH = 4  # objects and lists shown inside one another in one fact; deeper ones show as "..."


def text(value: Any, depth: int = 0) -> Optional[str]:
    """A fact as text: None stays None (unset), booleans as true/false, lists joined, nesting bounded."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Section):  # a report's section (distributed.hang): its fields, as in the JSON
        value = value.to_json()
    if isinstance(value, (list, tuple, dict)) and depth >= MAX_DEPTH:
        return "..."
    if isinstance(value, (list, tuple)):
        if not value:
            return None  # nothing listed reads as unset, not as a blank
        try:
            return ", ".join(value)  # a list of text (GPU names) as it is: what text() makes of each item
        except TypeError:  # an item that is not text
            return ", ".join(str(text(item, depth + 1)) for item in value)
    if isinstance(value, dict):
        return ", ".join(f"{key}={text(item, depth + 1)}" for key, item in value.items())
    return str(value)


def shown(name: str, value: Any) -> Optional[str]:
    """A fact's value as it is compared and shown: masked by its name and its shape, then visible."""
    if type(value) is str:  # most facts: no conversion (a sweep summary shows 10,000 jobs' facts)
        return _shown(str(name), value)
    as_text = text(value)
    return None if as_text is None else _shown(str(name), as_text)


@functools.lru_cache(maxsize=8192)  # pure; the jobs of one sweep share most facts (versions, CPUs, variables)
def _shown(name: str, as_text: str) -> str:
    return visible(masked(name, as_text))


def _present(pairs: Iterable[Tuple[str, Any]]) -> Dict[str, str]:
    return {key: fact for key, value in pairs if (fact := shown(key, value)) is not None}


def _versions(report: Report) -> Dict[str, str]:
    found = report.found
    return _present([("python", found.python), ("torch", found.torch), ("CUDA", found.cuda), ("cuDNN", found.cudnn),
                     ("NCCL", found.nccl), ("bootstrap", found.bootstrap),
                     ("compute capability", found.compute_capability), ("GPUs", found.gpus),
                     ("GPU names", found.gpu_names or None), ("device", report.device)])


def _fingerprint(report: Report) -> Dict[str, str]:
    agreement = report.distributed.agreement
    return agreement.fingerprint if agreement is not None else {}


def set_by_process(report: Report) -> List[str]:
    """The variables the job's own process set for itself before the job started (source ``process``: an
    import such as ``import lightning``, or the app's code). Not the shell's: a preview, which runs neither,
    has none of them."""
    return [name for name, var in report.vars.items() if var.source == PROCESS]


JOINED = ("launcher", "world_size", "local_world_size", "rank", "local_rank", "node_rank")  # the launch facts


def world_joined(report: Report) -> bool:
    """Was this run rank 0 of a world its framework started from rank 0's own process after the job started
    (Lightning's ``ddp``: ``bootstrap.core.joined``)? Its launch facts then came from the framework, which a preview,
    one process that runs no app code, never starts."""
    from bootstrap.distributed.launcher import ROW_OF, Launcher

    dist = report.distributed
    try:
        row = ROW_OF[Launcher(dist.launcher)]
    except ValueError:  # a launcher a newer version knows
        return False
    return row.started_by_rank0 and dist.rank == 0 and dist.world_size > 1


def _inherited(report: Report) -> Dict[str, str]:
    """Known variables set in the job's environment that the bootstrap did not plan: the fingerprint's ``var.*``
    (shown)."""
    return {name: str(shown(name, value)) for key, value in _fingerprint(report).items()
            if key.startswith("var.") and (name := key[len("var."):]) not in report.vars}


def _variables(report: Report) -> Dict[str, str]:
    planned = {name: f"{shown(name, var.value)} ({visible(var.source)})" for name, var in report.vars.items()}
    return {**planned, **{name: f"{value} ({INHERITED})" for name, value in _inherited(report).items()}}


def _cpus(report: Report) -> list:
    found = report.found
    return [("cpus", found.cpus), ("cpus_usable", found.cpus_usable), ("cpu_affinity", found.cpu_affinity)]


def _threads(report: Report) -> Dict[str, str]:
    threads = report.threads
    return _present([("intra_op", threads.intra_op), ("inter_op", threads.inter_op),
                     ("requested intra_op", threads.requested.intra_op),
                     ("requested inter_op", threads.requested.inter_op),
                     ("intra_op at end", threads.intra_op_at_end), *_cpus(report)])


def _launch(report: Report) -> Dict[str, str]:
    dist = report.distributed
    return _present([("launcher", dist.launcher), ("world_size", dist.world_size),
                     ("local_world_size", dist.local_world_size), ("rank", dist.rank), ("local_rank", dist.local_rank),
                     ("node_rank", dist.node_rank), ("backend", dist.backend), ("process_group", dist.process_group),
                     ("mesh", dist.mesh), ("agreement", dist.agreement.status if dist.agreement else None)])


def _preset(report: Report) -> Dict[str, str]:
    overrides = " ".join(visible(masked_override(o)) for o in report.overrides)
    return {**_present([("name", report.preset), ("digest", report.preset_digest),
                        ("resolved", report.resolved.describe() if report.resolved else None)]),
            **({"overrides": overrides} if overrides else {})}


def _seeds(report: Report) -> Dict[str, str]:
    seed = report.seed
    return _present([("value", seed.value), ("global_seed", seed.global_seed), ("generators", seed.generators),
                     ("data_seed", seed.data_seed), ("task_seed", seed.task_seed)])


def _torch(report: Report) -> Dict[str, str]:
    level = _fingerprint(report).get("effective.distributed_debug")
    return _present([*report.torch.to_json().items(), ("distributed debug level (effective)", level)])


def _lint(report: Report) -> Dict[str, str]:
    findings: Dict[str, str] = {}
    for finding in report.lint:  # a variable may have several findings: each keeps its own key
        key, count = f"{finding.name} ({finding.kind})", 2
        while key in findings:
            key, count = f"{finding.name} ({finding.kind}) #{count}", count + 1
        findings[key] = str(shown(key, finding.message))
    return findings


def _figure(value: Optional[float]) -> Optional[str]:
    return None if value is None else f"{value:.3g}"  # 3 digits: a run's noise should not fill a comparison


def _preflight(report: Report) -> Dict[str, str]:
    """What the preflight check expected and measured (why was Tuesday's job slower?)."""
    check = report.preflight
    if check is None:
        return {}
    slowest = check.slowest
    return _present([
        ("mode", check.mode), ("max_skew", check.max_skew), ("min_tflops", check.min_tflops),
        ("min_busbw_gbps", check.min_busbw_gbps), ("min_node_busbw_gbps", check.min_node_busbw_gbps),
        ("network expected", check.network_expected), ("status", check.status),
        ("median TFLOP/s", _figure(check.median_tflops)),
        ("slowest rank", f"{slowest.rank} ({slowest.host}) {_figure(slowest.tflops)} TFLOP/s"
         if slowest is not None else None),
        ("bus bandwidth GB/s", _figure(check.busbw_gbps)), ("network", check.network),
        ("findings", [finding.message for finding in check.findings] or None), ("note", check.note),
        ("bad nodes", bad_nodes(check) or None), ("on_bad", check.on_bad), ("restart_count", check.restart_count)])


def _watch(report: Report) -> Dict[str, str]:
    """What the watch was set to and what it found while the job trained."""
    seen = report.watch
    if seen is None:
        return {}
    return _present([
        ("mode", seen.mode), ("window_s", seen.window_s), ("threshold", seen.threshold),
        ("consecutive", seen.consecutive), ("status", seen.status), ("windows", seen.windows or None),
        ("findings", [finding.message for finding in seen.findings] or None), ("note", seen.note),
        ("bad nodes", watch_findings(seen) or None), ("on_bad", seen.on_bad)])


def watch_findings(seen: Optional[records.Watch]) -> str:
    """``slow: rank 1 (node2); slow_link: rank 2 (node3)``: what the watch named, by kind; "" where nothing."""
    if seen is None:
        return ""
    return "; ".join(f"{f.kind}: " + (", ".join(f"rank {rank} ({host})" for rank, host in
                                                zip(f.ranks, f.hosts, strict=False)) or "no node")
                     for f in seen.findings)


def bad_nodes(check: Optional[records.Preflight]) -> str:
    """``node3 (slow), node7 (faulty)``: the nodes the findings named, with why; "" where none."""
    return ", ".join(f"{bad.node} ({bad.reason})" for bad in check.bad_nodes) if check is not None else ""


def _short(digest: Optional[str]) -> str:
    return digest[:12] if digest else "-"


def _provenance(report: Report) -> Dict[str, str]:
    """Where the job came from: its commit and tree, the packages (by digest: ``bootstrap diff`` names each
    package that changed, from the runs' packages.txt), the host, the container and the driver."""
    found = report.provenance
    if found is None:
        return {}
    git = found.git
    return _present([
        ("host", found.host), ("container", found.container), ("gpu driver", found.gpu_driver),
        ("git", found.git_missing), ("git commit", git.commit if git else None),
        ("git branch", git.branch if git else None),
        ("git tree", (f"dirty (diff {_short(git.diff_digest)})" if git.dirty else "clean") if git else None),
        ("git untracked files", f"{git.untracked} ({_short(git.untracked_digest)})" if git and git.untracked else None),
        ("packages", f"{found.packages} ({_short(found.packages_digest)})" if found.packages is not None else None)])


def _always_differs(report: Report) -> Dict[str, str]:
    job, dist, timings = report.job, report.distributed, report.timings
    metrics = [(f"metric {name}", value) for name, value in (job.metrics or {}).items()]
    return _present([("bootstrap_s", timings.bootstrap_s), ("started_ns", timings.started_ns), ("job num", job.num),
                     ("status", job.status), *metrics, ("metrics skipped", job.metrics_skipped or None),
                     ("error", job.error), ("master_addr", dist.master_addr), ("master_port", dist.master_port),
                     ("job_id", dist.job_id), ("hang", dist.hang), ("warnings", report.warnings or None),
                     ("group_at_end", dist.group_at_end.to_json() if dist.group_at_end else None),
                     ("preflight_s", timings.preflight_s), ("provenance_s", timings.provenance_s),
                     ("provenance", report.provenance.status if report.provenance else None),
                     ("teardown", dist.teardown), *_phases(timings)])


def _phases(timings: records.Timings) -> List[Tuple[str, Any]]:
    """The start's phases (``bootstrap diff --all``: ``phase init_process_group: 2.0 s -> 30.1 s``), each name's
    seconds summed, and the time to the first step."""
    summed: Dict[str, float] = {}
    for phase in timings.phases:
        summed[phase.name] = summed.get(phase.name, 0.0) + phase.seconds
    first = [("time to first step", f"{timings.first_step_s:.1f} s")] if timings.first_step_s is not None else []
    return first + [(f"phase {name}", f"{seconds:.1f} s") for name, seconds in summed.items()]


_BUILDERS = {"versions": _versions, "variables": _variables, "threads": _threads, "launch": _launch,
             "preset": _preset, "seeds": _seeds, "torch": _torch, "lint": _lint,
             "preflight": _preflight, "watch": _watch, "provenance": _provenance, ALWAYS_DIFFERS: _always_differs}


def _without_run_dir(section: Dict[str, str], run_dir: Optional[os.PathLike]) -> Dict[str, str]:
    """Each whole absolute spelling of ``run_dir`` (a path, or a path's start) shown as ``<run dir>``."""
    spellings = {os.path.abspath(run_dir), os.path.realpath(run_dir)} - {os.sep} if run_dir is not None else set()
    if not spellings:  # no directory, or "/", which alone would eat every path
        return section
    alternatives = "|".join(re.escape(s) for s in sorted(spellings, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w./~-])(?:{alternatives})(?=/|$|[\s,;:'\"])")  # whole paths only
    return {key: pattern.sub(RUN_DIR, value) for key, value in section.items()}


def facts(report: Report, run_dir: Optional[os.PathLike] = None) -> Facts:
    """The report's facts by section (:data:`SECTIONS`, then :data:`ALWAYS_DIFFERS`); ``run_dir``, the
    directory the report was written in, is shown as ``<run dir>`` wherever a value holds it."""
    return {name: _without_run_dir(build(report), run_dir) for name, build in _BUILDERS.items()}


def environment(report: Report) -> Dict[str, str]:
    """What the job found rather than chose: versions, hardware, inherited variables (those from the
    shell or set by the process itself, and known variables set that no override, preset or launcher of the
    job's own set), and the code and packages it ran (its git commit and tree, its packages' digest)."""
    found = report.found
    versions = {key: value for key, value in _versions(report).items() if key != "device"}  # the preset's choice
    hardware = _present([("CPUs", found.cpus), ("usable CPUs", found.cpus_usable),
                         ("CPU affinity", found.cpu_affinity)])
    shell = _present((name, var.value) for name, var in report.vars.items() if var.source in ("shell", PROCESS))
    code = {key: value for key, value in _provenance(report).items() if key.startswith(("git", "packages"))}
    return {**versions, **hardware, **shell, **_inherited(report), **code}
