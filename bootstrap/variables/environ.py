"""Environment variables: normalise, decide by precedence (pure), apply and restore.

Precedence, highest first:

1. ``override``: the user asked for ``env.vars.NAME=...`` on the command line for
   this job. It is the most explicit request there is, so it wins even over a
   value already in the environment (otherwise a sweep over a variable the shell
   happens to set would silently do nothing).
2. ``env_set`` / ``shell`` / ``process``: a value already in the process environment wins
   over the preset, as in Megatron-LM's ``os.environ[k] = os.getenv(k, default)``.
   Hydra applies ``hydra.job.env_set`` on top of the shell before any callback
   runs, so a name listed there is reported as ``env_set``. A value the process set
   for itself before the job started (``import lightning`` sets
   ``PYTORCH_NVML_BASED_CUDA_CHECK=1``; the app's own code) is reported as ``process``:
   :func:`set_by_process` tells it from the shell's by the environment the process was
   started with. The process also records such a known variable the preset does not
   set (:func:`process_decisions`).
3. ``preset``: the value from the ``env`` preset.

A value that a parent process's bootstrap exported (a rank that Lightning
re-launched inherits rank 0's whole environment) is not the user's: :data:`EXPORTED`
records a keyed digest of it, and the plan treats it as absent while the value still
matches. A value changed since (a task that starts a child with ``OMP_NUM_THREADS=3``)
no longer matches: it is the user's, and wins.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import re
import sys
from typing import Any, Collection, Dict, Iterable, List, Mapping, MutableMapping, Optional, Union

from bootstrap.doors import outbound, records
from bootstrap.doors.errors import PRESET_KEY, ConfigError
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.masking import masked  # notes quote values: a secret's must not appear
from bootstrap.variables.readers import ProcessState, reader_for

# The variables the bootstrap wrote into this environment, so that a child process can tell
# them from the user's own: ``NAME:DIGEST,...``, each digest a keyed hash of the value as
# exported (:func:`export_digest`), never the value. The key is not in the environment (see
# bootstrap.variables.exportkey for why). A bare ``NAME`` is an older bootstrap's names-only entry.
EXPORTED = "HYDRA_TRAIN_BOOTSTRAP_EXPORTED"
DIGEST_HEX = 16  # 64 bits: a changed value matches by chance once in 2**64
_OWN_KEY = object()  # "this user's key" (bootstrap.variables.exportkey), read only when a marker needs it
Key = Union[bytes, None, object]  # a key, None (none to be had: nothing verifies), or _OWN_KEY

PROCESS = records.PROCESS  # the source of a value the process set for itself before the job started
USERS = ("shell", "env_set", PROCESS)  # the sources of a value found in the environment that is the user's
_DIGEST = re.compile(r"[0-9a-f]{16}")  # what export_digest writes
# POSIX portable names; anything else (``=``, spaces, NUL) breaks os.environ or the shell.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def normalize(name: str, value: Any) -> Optional[str]:
    """The string a variable gets: ints as digits, bools as 1/0; None means "do not set"."""
    try:
        return _normalized(name, value)
    except TypeError:  # a value that cannot be a key (a list): refused below, with its message
        return _normalize(name, value)


def _normalize(name: str, value: Any) -> Optional[str]:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"{PRESET_KEY}.vars.{outbound.shown(name)}: {name!r} is not a valid environment variable name. "
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
            f"{PRESET_KEY}.vars.{name} is a {type(value).__name__}; an environment variable holds one string. "
            f"Give a single value, e.g. {PRESET_KEY}.vars.{name}='a,b' if the library reads a comma list."
        )
    if "\0" in text:
        raise ConfigError(f"{PRESET_KEY}.vars.{name} contains a NUL byte, which no environment variable can hold. "
                          "Remove it.")
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        raise ConfigError(f"{PRESET_KEY}.vars.{name} cannot be encoded for the environment "
                          f"(filesystem encoding {sys.getfilesystemencoding()}). Use valid Unicode text.") from None
    return text


# Pure: kept for the values last asked (a dry run asks the same of every rank); typed: True, 1 and 1.0 are apart.
_normalized = functools.lru_cache(maxsize=1024, typed=True)(_normalize)


@lean_dataclass(frozen=True)
class VarDecision:
    name: str
    value: str  # the value the job sees (unless withheld)
    source: str  # "override" | "shell" | "env_set" | "process" | "launcher" | "preset"
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
    key: Key = _OWN_KEY,
    by_launcher: Mapping[str, str] = {},  # noqa: B006 - read only
    by_process: Collection[str] = (),
) -> List[VarDecision]:
    """Decide every variable. Pure: reads only its arguments (and, when a parent's marker is
    there, this user's key: see :func:`inherited_names`).

    ``requested`` holds normalised preset values (None: dropped by the user).
    ``overrides`` names the variables given explicitly on the command line.
    ``by_launcher``: the variables whose current value the launcher set, and which launcher
    (``launcher.exported_by_launcher``): like a parent's export, the launcher's value is not the user's.
    ``by_process``: the variables the process set for itself before the job started (:func:`set_by_process`):
    the user's app or an import it made chose them, so they win as the shell's do.
    """
    inherited = inherited_names(environ, key)
    decisions: List[VarDecision] = []
    for name, wanted in requested.items():
        if wanted is None:
            continue
        existing = environ.get(name)
        # env_set is this job's own config: the user's even when it repeats a parent's export
        launchers = by_launcher.get(name) if name not in env_set else None
        users = existing is not None and (name in env_set or (name not in inherited and launchers is None))
        if name in overrides:
            source, value = "override", wanted
        elif users:
            # users: existing is set, which a type checker does not follow through the flag
            source = "env_set" if name in env_set else PROCESS if name in by_process else "shell"
            value = existing  # type: ignore[assignment]
        elif launchers is not None and existing == wanted:
            source, value = "launcher", existing  # the launcher's value, and the preset's too
        else:
            source, value = "preset", wanted
        changes = value != existing
        reader = reader_for(name)
        late = not reader.still_read(state)
        withheld = changes and late and reader.apply_now is None and reader.must_agree
        notes = []
        if source in USERS and existing != wanted:
            whose = "the value this process set itself" if source == PROCESS else f"the {source} value"
            notes.append(f"kept {whose} over the preset's {masked(name, wanted)!r}")
        if launchers is not None and existing != value:
            notes.append(f"replaced the value {launchers} set ({masked(name, existing)!r})")
        elif source == "launcher":
            notes.append(f"set by {launchers}")
        elif existing is not None and not users and existing != value:
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


def set_by_process(environ: Mapping[str, str], start: Optional[Mapping[str, str]],
                   env_set: Collection[str] = ()) -> frozenset:
    """The variables this process set for itself since it started: their value in ``environ`` is not the one in
    ``start``, the environment it was started with (``bootstrap.doors.inbound.read_start_environ``; None where
    that cannot be known: then none, as before it could). Hydra's ``env_set`` is the job's own config, not these."""
    if start is None:
        return frozenset()
    return frozenset(name for name, value in environ.items() if start.get(name) != value and name not in env_set)


def process_decisions(notes: Mapping[str, str], environ: Mapping[str, str]) -> List[VarDecision]:
    """The record of each variable the process set for itself that the preset does not set: ``notes`` maps its name
    to who set it. Nothing is written. It takes effect here unless its reader reads it only as the process starts."""
    fresh = ProcessState(cuda_initialized=False, process_group_initialized=False)
    return [VarDecision(name, environ[name], PROCESS, changes_environ=False,
                        effective=reader_for(name).still_read(fresh), note=notes[name])
            for name in sorted(notes) if name in environ]


def late_warnings(decisions: Iterable[VarDecision]) -> List[str]:
    """One line for each variable set too late to take effect here, or withheld; values masked."""
    return [f"{d.name}={outbound.shown(d.value, name=d.name)} is "
            f"{'not set' if d.withheld else 'exported for child processes only'}: "
            f"{d.note}" for d in decisions if d.warn]


@functools.lru_cache(maxsize=1024)  # pure; a dry run digests the same values at every rank
def export_digest(key: bytes, name: str, value: str) -> str:
    """The marker's record of ``name=value``: HMAC-SHA256 under ``key``, cut to :data:`DIGEST_HEX` hex digits."""
    message = name.encode("utf-8", "surrogatepass") + b"\0" + value.encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:DIGEST_HEX]


def read_marker(text: str) -> Dict[str, Optional[str]]:
    """:data:`EXPORTED`'s entries: name -> digest; None for an older bootstrap's names-only entry,
    ``""`` for one exported where no key could be had (it verifies nothing)."""
    entries: Dict[str, Optional[str]] = {}
    for item in text.split(","):
        name, sep, digest = item.partition(":")
        if _NAME.match(name):  # a digest that is not one verifies nothing: the value counts as the user's
            entries[name] = (digest if _DIGEST.fullmatch(digest) else "") if sep else None
    return entries


def format_marker(entries: Mapping[str, str]) -> str:
    return ",".join(f"{name}:{entries[name]}" for name in sorted(entries))


def inherited_names(environ: Mapping[str, str], key: Key = _OWN_KEY) -> frozenset:
    """Variables whose value is still what a parent process's bootstrap exported (see :data:`EXPORTED`).

    A value changed after the export (its digest differs) is the user's, and not listed. So is every
    value with a digest when no key can be read here: what cannot be verified counts as the user's.
    An older bootstrap's names-only entry is taken at its word, as it was then."""
    entries = read_marker(environ.get(EXPORTED, ""))
    if not entries:
        return frozenset()
    if key is _OWN_KEY and any(entries.values()):
        from bootstrap.variables import exportkey

        key = exportkey.load()
    names = set()
    for name, digest in entries.items():
        value = environ.get(name)
        if value is None:
            continue
        if digest is None or (digest and isinstance(key, bytes)
                              and hmac.compare_digest(digest, export_digest(key, name, value))):
            names.add(name)
    return frozenset(names)


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


def apply_vars(decisions: Iterable[VarDecision], environ: MutableMapping[str, str] = os.environ,
               key: Key = _OWN_KEY) -> None:
    """Write the decided values, and record them in :data:`EXPORTED` for child processes, with
    what a parent exported that still stands. ``key``: this user's (made on first use) unless given."""
    decisions = list(decisions)
    written = {d.name for d in decisions if d.changes_environ}
    for d in decisions:
        if d.changes_environ:
            environ[d.name] = d.value
    exported = (inherited_names(environ, key) | written) & environ.keys()
    if not exported:
        environ.pop(EXPORTED, None)  # a parent's marker that no longer describes anything here
        return
    if key is _OWN_KEY:
        from bootstrap.variables import exportkey

        key = exportkey.load_or_create()
    environ[EXPORTED] = format_marker({name: export_digest(key, name, environ[name]) if isinstance(key, bytes)
                                       else "" for name in exported})
