"""The key of the export marker's digests (:data:`bootstrap.variables.environ.EXPORTED`): where it lives, and why.

The marker records, for each variable the bootstrap exported, a keyed digest of the value, so
that a child process can tell the parent's export (digest matches: not the user's) from a value
changed since (the user's, which wins). The digest must not let anyone test guesses of a value
offline, since the value may be a secret.

Where the key lives decides that. The marker is in the environment, and the environment is
what leaks: an ``env`` dump in a CI log (secret-looking names masked, the marker shown), a
crash report, ``/proc/<pid>/environ``, a scheduler's record of a job. A key passed beside
the marker in a second variable leaks with it, and is then no better than no key. So the key
is kept out of the environment: 32 random bytes in a file, in a directory only this user
may enter (0700, owned by the user, not a link). The file itself is trusted only when it is a
regular file of this user's that no one else may read or write, reached without a link
(:func:`bootstrap.doors.inbound.read_private_bytes`): a key anyone else could have written
would let them forge a marker, and the user's own value would then be replaced as if a
parent's bootstrap had exported it. A key that fails the checks is no key: every inherited
value counts as the user's, and the next export replaces the file. Whoever can read it (the
user, root) can read the processes' environments, secrets included, anyway; nobody else
learns anything from a marker.

One key per user, not per process tree: a child found on another node (``srun`` inside a
task) reads the same key where the home directory is shared. A child that finds no key,
or another one, cannot verify a digest, and then every inherited value counts as the
user's: the safe side (the value is kept, reported as ``shell``). It is created once, by
the first job that exports anything, and kept.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Dict, List, Mapping, Optional

from bootstrap.doors import inbound, outbound

KEY_NAME = "export-key"
_KEY_HEX = 64  # 32 bytes
_found: Dict[Path, bytes] = {}  # a key once read does not change under a running process


def candidates(environ: Mapping[str, str] = os.environ) -> List[Path]:
    """Where the key may live, in the order it is looked for: the user's cache directory, then a
    directory of this user's own in the temporary directory (a container whose home is read-only)."""
    cache = environ.get("XDG_CACHE_HOME", "")
    if not Path(cache).is_absolute():  # the XDG spec: a relative path is ignored
        cache = str(Path(environ["HOME"]) / ".cache") if Path(environ.get("HOME", "")).is_absolute() else ""
    places = [Path(cache) / "hydra-train-bootstrap"] if cache else []
    return places + [Path(tempfile.gettempdir()) / f"hydra-train-bootstrap-{os.geteuid()}"]


def _private(directory: Path) -> bool:
    """A real directory of this user's that no one else may enter."""
    try:
        info = os.lstat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077


def _read(directory: Path) -> Optional[bytes]:
    path = directory / KEY_NAME
    if path in _found:
        return _found[path]
    if not _private(directory):
        return None
    try:
        text = inbound.read_private_bytes(path, limit=_KEY_HEX + 2).decode("ascii").strip()
        key = bytes.fromhex(text) if len(text) == _KEY_HEX else None
    except (inbound.Unreadable, ValueError):  # ValueError: not ASCII, not hex
        return None
    if key is not None:
        _found[path] = key
    return key


def load(environ: Mapping[str, str] = os.environ) -> Optional[bytes]:
    """This user's key, or None where there is none (nothing is created)."""
    for directory in candidates(environ):
        key = _read(directory)
        if key is not None:
            return key
    return None


def load_or_create(environ: Mapping[str, str] = os.environ) -> Optional[bytes]:
    """This user's key, made on first use; None where no private directory can be made."""
    key = load(environ)
    if key is not None:
        return key
    for directory in candidates(environ):
        if _create(directory):
            key = _read(directory)
            if key is not None:
                return key
    return None


def _create(directory: Path) -> bool:
    """Make the key in ``directory`` unless a valid one is already there (another process may
    race: the first key linked into place is everyone's). False where the place will not do."""
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            pass
        if not _private(directory):
            return False
        path, spare = directory / KEY_NAME, directory / f".{KEY_NAME}.{os.getpid()}.{secrets.token_hex(4)}"
        outbound.write_bytes(spare, (secrets.token_hex(_KEY_HEX // 2) + "\n").encode())
        try:
            os.chmod(spare, 0o600)
            try:
                os.link(spare, path)  # never replaces: a key already in place stays everyone's
            except FileExistsError:
                if _read(directory) is None:  # a damaged key: replace it
                    os.replace(spare, path)
            except OSError:  # a file system without hard links
                if not path.exists():
                    os.replace(spare, path)
        finally:
            if spare.exists():
                spare.unlink()
        return True
    except OSError:
        return False
