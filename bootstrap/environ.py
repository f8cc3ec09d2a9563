"""Environment variables: normalise, decide by precedence (pure), apply and restore.

Precedence, highest first:

1. ``override``: the user asked for ``env.vars.NAME=...`` on the command line for
   this job. It is the most explicit request there is, so it wins even over a
   value already in the environment (otherwise a sweep over a variable the shell
   happens to set would silently do nothing).
2. ``env_set`` / ``shell``: a value already in the process environment wins over
   the preset, as in Megatron-LM's ``os.environ[k] = os.getenv(k, default)``.
   Hydra applies ``hydra.job.env_set`` on top of the shell before any callback
   runs, so a name listed there is reported as ``env_set``.
3. ``preset``: the value from the ``env`` preset.

A value that a parent process's bootstrap exported (a rank that Lightning
re-launched inherits rank 0's whole environment) is not the user's: its name is
listed in :data:`EXPORTED`, and the plan treats it as absent.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Collection, Dict, Iterable, List, Mapping, MutableMapping, Optional

from bootstrap.errors import ConfigError
from bootstrap.masking import masked  # notes quote values: a secret's must not appear
from bootstrap.readers import ProcessState, reader_for

# Names of the variables the bootstrap wrote into this environment, comma-separated,
# so that a child process can tell them from the user's own. Names only: never values.
EXPORTED = "HYDRA_TRAIN_BOOTSTRAP_EXPORTED"

# POSIX portable names; anything else (``=``, spaces, NUL) breaks os.environ or the shell.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def normalize(name: str, value: Any, key: str = "env") -> Optional[str]:
    """The string a variable gets: ints as digits, bools as 1/0; None means "do not set"."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"{key}.vars.{name!s}: {name!r} is not a valid environment variable name. "
            "Use letters, digits and underscores, not starting with a digit (e.g. MY_VAR)."
        )
    if value is None:
        return None
    if isinstance(value, bool):  # before int: bool is an int subclass
        text = "1" if value else "0"
    elif isinstance(value, (int, float, str)):
        text = str(value)
    else:
        raise ConfigError(
            f"{key}.vars.{name} is a {type(value).__name__}; an environment variable holds one string. "
            f"Give a single value, e.g. {key}.vars.{name}='a,b' if the library reads a comma list."
        )
    if "\0" in text:
        raise ConfigError(f"{key}.vars.{name} contains a NUL byte, which no environment variable can hold. Remove it.")
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        raise ConfigError(f"{key}.vars.{name} cannot be encoded for the environment "
                          f"(filesystem encoding {sys.getfilesystemencoding()}). Use valid Unicode text.") from None
    return text


@dataclass(frozen=True)
class VarDecision:
    name: str
    value: str  # the value the job sees (unless withheld)
    source: str  # "override" | "shell" | "env_set" | "preset"
    changes_environ: bool  # does the bootstrap write this value? (False also when withheld)
    effective: bool  # does it take effect in this process (not only in child processes)?
    note: str
    warn: bool = False  # log a one-line warning: set too late to matter here
    withheld: bool = False  # not written: too late here, and ranks or children must agree on it


def plan_vars(
    requested: Mapping[str, Optional[str]],
    environ: Mapping[str, str],
    env_set: Mapping[str, Any],
    overrides: Collection[str],
    state: ProcessState,
) -> List[VarDecision]:
    """Decide every variable. Pure: reads only its arguments.

    ``requested`` holds normalised preset values (None: dropped by the user).
    ``overrides`` names the variables given explicitly on the command line.
    """
    inherited = inherited_names(environ)
    decisions: List[VarDecision] = []
    for name, wanted in requested.items():
        if wanted is None:
            continue
        existing = environ.get(name)
        users = existing is not None and name not in inherited
        if name in overrides:
            source, value = "override", wanted
        elif users:
            source, value = ("env_set" if name in env_set else "shell"), existing
        else:
            source, value = "preset", wanted
        changes = value != existing
        reader = reader_for(name)
        late = not reader.still_read(state)
        withheld = changes and late and reader.apply_now is None and reader.must_agree
        notes = []
        if source in ("shell", "env_set") and existing != wanted:
            notes.append(f"kept the {source} value over the preset's {masked(name, wanted)!r}")
        if existing is not None and not users and existing != value:
            notes.append("replaced the value a parent process's bootstrap exported")
        elif source == "override" and existing is not None and existing != wanted:
            notes.append(f"replaced the existing value {masked(name, existing)!r}")
        if withheld:
            notes.append(f"not set: read {reader.read_when}, already past here, and a rank or child started with "
                         "it would disagree with this process")
        elif late:
            notes.append(f"read {reader.read_when}: {reader.applied_by}")
        decisions.append(VarDecision(
            name, value, source, changes and not withheld, effective=not late or reader.apply_now is not None,
            note="; ".join(notes), warn=withheld or (late and changes and reader.warn_when_late
                                                     and reader.apply_now is None), withheld=withheld))
    return decisions


def late_warnings(decisions: Iterable[VarDecision]) -> List[str]:
    """One line for each variable set too late to take effect here, or withheld; values masked."""
    return [f"{d.name}={masked(d.name, d.value)} is "
            f"{'not set' if d.withheld else 'exported for child processes only'}: "
            f"{d.note}" for d in decisions if d.warn]


def inherited_names(environ: Mapping[str, str]) -> frozenset:
    """Variables a parent process's bootstrap exported (see :data:`EXPORTED`)."""
    return frozenset(name for name in environ.get(EXPORTED, "").split(",") if name)


class EnvironSnapshot:
    """The process environment as it was, restored exactly on :meth:`restore`.

    ``foreign`` names keys someone else restores: Hydra puts back its ``env_set``
    keys itself *before* ``on_job_end``, so writing our snapshot of them back would
    leak them into the next job.
    """

    def __init__(self, environ: MutableMapping[str, str] = os.environ, foreign: Iterable[str] = ()):
        self._environ = environ
        self._saved: Dict[str, str] = dict(environ)
        self._foreign = frozenset(foreign)

    def restore(self) -> None:
        env = self._environ
        for name in [n for n in env if n not in self._saved and n not in self._foreign]:
            del env[name]
        for name, value in self._saved.items():
            if name not in self._foreign and env.get(name) != value:
                env[name] = value


def apply_vars(decisions: Iterable[VarDecision], environ: MutableMapping[str, str] = os.environ) -> None:
    """Write the decided values, and list them in :data:`EXPORTED` for child processes."""
    written = {d.name for d in decisions if d.changes_environ}
    for d in decisions:
        if d.changes_environ:
            environ[d.name] = d.value
    exported = (inherited_names(environ) & environ.keys()) | written
    if exported:
        environ[EXPORTED] = ",".join(sorted(exported))
