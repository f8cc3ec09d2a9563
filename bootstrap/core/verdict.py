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
"""

from __future__ import annotations

import fnmatch
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type

from bootstrap.doors.errors import PRESET_KEY, BootstrapError, ConfigError, LintError, MismatchError
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.masking import masked

if TYPE_CHECKING:
    from bootstrap.core.plan import Plan
    from bootstrap.core.schema import EnvConfig
    from bootstrap.core.versions import Check


@lean_dataclass(frozen=True)
class Refusal:
    """One reason the job stops, as the job says it."""

    message: str  # values masked; names the key and the fix
    error: Type[BootstrapError]  # what the job raises
    lint: Tuple[Any, ...] = ()  # the lint findings it stops for, for the report

    def exception(self) -> BootstrapError:
        return self.error(self.message)


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
    from bootstrap.core.schema import LintPolicy
    from bootstrap.variables import lint

    refusals = []
    if preset.lint is LintPolicy.error:  # names only: the machine's hardware findings never stop a job
        stop = lint.stopping(lint.for_preset(preset))
        if stop:
            refusals.append(Refusal(lint.stop_message(stop), LintError, tuple(stop)))
    refusals += [Refusal(problem, ConfigError) for problem in late_value_problems(plan.vars, environ_now)]
    return refusals


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


def of_preview(preset: EnvConfig, plan: Plan, environ_now: Mapping[str, str], name: str, cpu_override: str,
               named: Callable[[Optional[str]], Optional[str]]) -> List[Refusal]:
    """Every reason the job would stop, for the doctor's preview: its preset and plan, the environment the job
    would start in (Hydra's ``env_set`` counted in, as it is when a job starts), the preset's name, whether
    ``device=cpu`` is said, and how a message names the preset's key."""
    from bootstrap.core import versions

    refusals = before_apply(preset, plan, environ_now)
    checks = versions.check(preset.requires, versions.detect(), plan.device_type)
    mismatch = after_checks(preset, name, checks, cpu_override=cpu_override)
    return [replace(r, message=named(r.message) or r.message) for r in refusals + ([mismatch] if mismatch else [])]
