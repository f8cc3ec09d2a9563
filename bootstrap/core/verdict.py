"""Would the job start? The reasons a job stops at start, decided once, for the job and for the doctor.

``Session.apply()`` stops on the first reason; ``bootstrap doctor`` lists them all and exits 1
when there is one. Both take them from here, so the doctor cannot pass a job that stops.
Pure, apart from :func:`of_preview`, which reads the machine as the job would.

Where a job stops, in order:

1. building the session and its plan: a preset that does not validate, launcher variables that
   do not add up (a bad ``MASTER_PORT``), a plan that cannot hold (thread counts, the mesh, the
   flight recorder's size). These raise ``ConfigError`` in ``Session(...)`` and its plan, which
   ``Session.preview()`` builds the same way: the doctor meets the same error.
2. :func:`before_apply`, before anything is applied: the ``env.lint=error`` findings it refuses,
   and values torch would refuse when the bootstrap makes it re-read a variable in this
   process (``TORCH_DISTRIBUTED_DEBUG``), whoever set them (the preset, the shell, ``env_set``).
3. :func:`after_checks`, once the machine is read: a failed requirement under
   ``on_mismatch=error``.

What cannot be known before the job runs is not here: a peer that never comes, an output
directory that cannot be written.

Every reason has one source, which the job, ``bootstrap doctor`` and ``bootstrap dryrun`` all call
(:data:`STOP_REASONS` says where each decides it; ``tests/unit/test_verdict.py`` walks each through the three).
"""

from __future__ import annotations

import fnmatch
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence

from bootstrap.doors.errors import PRESET_KEY, BootstrapError, ConfigError, LintError, MismatchError, Refusal
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.masking import masked

if TYPE_CHECKING:
    from bootstrap.core.plan import Plan
    from bootstrap.core.schema import EnvConfig
    from bootstrap.core.versions import Check


# -- values torch would refuse ----------------------------------------------------------------
DEBUG_LEVELS = ("OFF", "INFO", "DETAIL")


def debug_level_problem(name: str, value: str) -> Optional[str]:
    """torch.distributed.set_debug_level_from_env() takes OFF, INFO or DETAIL in any case, nothing else
    (not even surrounding spaces); ``tests/unit/test_verdict.py`` holds this against torch itself."""
    if value.isascii() and value.upper() in DEBUG_LEVELS:
        return None
    return (f"{name}={masked(name, value)!r} is not a debug level torch accepts. Use OFF, INFO or DETAIL "
            f"({PRESET_KEY}.vars.{name}=INFO, or in the shell), or null to leave it unset.")


# Reader.apply_now -> the check of the value that call will give torch (bootstrap.core.runtime.APPLY_NOW
# holds the calls; tests/unit/test_verdict.py checks each has its check here).
LATE_VALUE_CHECKS: Dict[str, Callable[[str, str], Optional[str]]] = {
    "distributed_debug": debug_level_problem,
}


def value_after_apply(name: str, decisions: Sequence[Any], environ_now: Mapping[str, str]) -> Optional[str]:
    """What ``os.environ[name]`` holds once the plan is applied: the plan's value where it writes one,
    else what is there already."""
    for d in decisions:
        if d.name == name and d.changes_environ:
            return d.value
    return environ_now.get(name)


def late_value_problems(decisions: Sequence[Any], environ_now: Mapping[str, str]) -> List[str]:
    """For each variable torch re-reads now (``Reader.apply_now``), why its value would be refused."""
    from bootstrap.variables.readers import READERS

    names = {d.name for d in decisions} | set(environ_now)
    problems = []
    for reader in READERS:
        check = LATE_VALUE_CHECKS.get(reader.apply_now) if reader.apply_now else None
        if check is None:
            continue
        for name in sorted(n for n in names if any(fnmatch.fnmatchcase(n, p) for p in reader.patterns)):
            value = value_after_apply(name, decisions, environ_now)
            problem = check(name, value) if value is not None else None
            if problem:
                problems.append(problem)
    return problems


# -- the verdict -------------------------------------------------------------------------------
def before_apply(preset: EnvConfig, plan: Plan, environ_now: Mapping[str, str]) -> List[Refusal]:
    """What the job refuses before it changes anything. ``preset``: the validated EnvConfig;
    ``plan``: its Plan; ``environ_now``: the environment the plan was made from (``env_set`` included)."""
    lint_stop = lint_refusal(preset)
    return ([lint_stop] if lint_stop else []) + late_refusals(plan, environ_now)


def late_refusals(plan: Plan, environ_now: Mapping[str, str]) -> List[Refusal]:
    """The values torch would refuse once this rank's plan is applied (:func:`late_value_problems`): the rank's own
    part of :func:`before_apply`, which the dry run asks of each rank."""
    return [Refusal(problem, ConfigError) for problem in late_value_problems(plan.vars, environ_now)]


def lint_refusal(preset: EnvConfig) -> Optional[Refusal]:
    """The lint's findings that stop a job under ``env.lint=error``: the preset's alone (the same on every rank of a
    world, which the dry run asks once), never the machine's hardware findings."""
    from bootstrap.core.schema import LintPolicy
    from bootstrap.variables import lint

    if preset.lint is not LintPolicy.error:
        return None
    stop = lint.stopping(lint.for_preset(preset))
    return Refusal(lint.stop_message(stop), LintError, tuple(stop)) if stop else None


def after_checks(preset: EnvConfig, preset_name: str, checks: Sequence[Check], *,
                 cpu_override: str) -> Optional[Refusal]:
    """A failed requirement stops the job under ``on_mismatch=error``; under ``warn`` it goes on."""
    from bootstrap.core import versions
    from bootstrap.core.schema import OnMismatch

    if all(c.ok for c in checks) or preset.on_mismatch is OnMismatch.warn:
        return None
    return Refusal(versions.mismatch_message(preset_name, list(checks), cpu_override=cpu_override), MismatchError)


def mismatch_warning(preset_name: str, checks: Sequence[Check]) -> Optional[str]:
    """What the job logs when a requirement fails under ``on_mismatch=warn``; None when every check passes."""
    from bootstrap.core import versions

    if all(c.ok for c in checks):
        return None
    return versions.mismatch_message(preset_name, list(checks), warn=True)


def listed(preset: EnvConfig, key: str, warnings: List[str], host: str, environ: Mapping[str, str],
           here: bool = True) -> Optional[Refusal]:
    """A rank on a host that ``env.nodes.exclude_file`` lists stops before its process group: the one source is
    :func:`bootstrap.core.nodes.at_start`, which the job calls for its own host, the doctor for this machine's and
    the dry run for each node of ``--nodelist``."""
    from bootstrap.core import nodes

    return nodes.at_start(preset, key, warnings, host, environ, here)


def import_refusal(environ: Mapping[str, str]) -> Optional[str]:
    """A value that ``import torch`` itself refuses (torch.distributed reads ``TORCH_DISTRIBUTED_DEBUG`` when it is
    imported, and raises ValueError): in the shell a job starts from, it stops the job's own script at its
    ``import torch``, before Hydra or the bootstrap run. None when the environment holds none."""
    value = environ.get("TORCH_DISTRIBUTED_DEBUG")
    problem = debug_level_problem("TORCH_DISTRIBUTED_DEBUG", value) if value is not None else None
    if problem is None:
        return None
    return (f"TORCH_DISTRIBUTED_DEBUG={masked('TORCH_DISTRIBUTED_DEBUG', value)!r} in this shell: `import torch` "
            "raises ValueError at once (torch reads it when torch.distributed is imported), before any code of the job "
            "or the bootstrap runs. Unset it, or export OFF, INFO or DETAIL.")


def unproven_network(preset: EnvConfig, nccl: Optional[str]) -> Optional[str]:
    """A warning where the preset expects NCCL to choose a network (``env/fabric=ib``, ``env.preflight.network``) on
    a machine whose torch has no NCCL (``nccl``: its version, None): nothing here can prove the network, so nothing
    here may say it is right."""
    from bootstrap.core.schema import FabricName, Network

    network = preset.preflight.network
    if nccl is not None or network in (None, Network.any):
        return None
    fabric = preset.fabric.name
    what = f"{PRESET_KEY}/fabric={fabric.value}" if fabric is not FabricName.none else \
        f"{PRESET_KEY}.preflight.network={network.value}"
    return (f"{what} expects NCCL to choose {network.value}, but this torch has no NCCL: the network cannot be proven "
            "here (nothing starts NCCL to choose one). Judge the target's NCCL logs (bootstrap doctor --nccl-log "
            "FILE...), or let the job's preflight read them there.")


def of_preview(preset: EnvConfig, plan: Plan, environ_now: Mapping[str, str], name: str, cpu_override: str,
               named: Callable[[Optional[str]], Optional[str]], key: str = "env",
               warnings: Optional[List[str]] = None, host: Optional[str] = None) -> List[Refusal]:
    """Every reason the job would stop, for the doctor's preview, in the job's order: its preset and plan, the
    environment the job would start in (Hydra's ``env_set`` counted in, as it is when a job starts), the preset's
    name, whether ``device=cpu`` is said, and how a message names the preset's key (``key``, ``named``); what
    cannot be read on the way (the exclusion file) is added to ``warnings``. ``host``: this machine's, as the job
    names it (None: ``agreement.host()``)."""
    from bootstrap.core import agreement, versions

    refusals = before_apply(preset, plan, environ_now)
    checks = versions.check(preset.requires, versions.detect(), plan.device_type)
    stops = [after_checks(preset, name, checks, cpu_override=cpu_override),
             listed(preset, key, warnings if warnings is not None else [], host or agreement.host(), environ_now)]
    return [replace(r, message=named(r.message) or r.message) for r in refusals + [r for r in stops if r]]


# Every reason a job stops at its start, and the one function that decides it for the job, the doctor and the dry
# run (the dry run of a target it is not on: what only the target can show is listed as checked there).
STOP_REASONS: Dict[str, str] = {
    "a preset value the schema refuses": "bootstrap.core.schema.load (Session(...), the dry run's rank plan)",
    "launcher variables that do not add up": "bootstrap.core.startup.detect_launch",
    "a plan that cannot hold (threads, mesh, flight recorder)": "bootstrap.core.startup.plan_rank",
    "a lint finding under env.lint=error": "bootstrap.core.verdict.before_apply (lint_refusal)",
    "a value torch would refuse (TORCH_DISTRIBUTED_DEBUG)": "bootstrap.core.verdict.before_apply (late_refusals)",
    "a value import torch refuses, in the shell": "bootstrap.core.verdict.import_refusal",
    "a requirement the machine fails, under on_mismatch=error": "bootstrap.core.verdict.after_checks",
    "a node env.nodes.exclude_file excludes": "bootstrap.core.verdict.listed (bootstrap.core.nodes.at_start)",
}
