"""The app's own git repository: commit, branch, dirty or clean, a digest of ``git diff HEAD`` and of the
untracked files' names.

Every command is local (no fetch, no remote), runs without a pager, a prompt, fsmonitor hooks or the
index lock (``GIT_OPTIONAL_LOCKS=0``: a ``git status`` of ours never blocks the user's own git), and is
bounded in time and in the bytes read. No git on PATH, no repository, a timeout: the reason, not an error.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, NamedTuple, Optional, Tuple

MAX_DIFF_BYTES = 1 * 2**20  # git.diff keeps the diff's first MiB; the digest and size cover all of it
MAX_STATUS_BYTES = 4 * 2**20  # `git status`: past this many bytes of names, the rest are not counted
_CHUNK = 64 * 2**10
# no pager, no prompt for credentials, no lock on the index, plain messages
_GIT_ENV = {"GIT_PAGER": "cat", "PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}
_NO_HOOKS = ("-c", "core.fsmonitor=false", "-c", "core.pager=cat")


@dataclass(frozen=True)
class GitState:
    """What :func:`read` found: the report's ``provenance.git``, and the diff's first bytes for git.diff."""

    root: str
    commit: Optional[str]
    branch: Optional[str]
    dirty: bool
    diff_head: bytes  # the diff's first MAX_DIFF_BYTES
    diff_bytes: int
    diff_digest: Optional[str]
    untracked: int
    untracked_digest: Optional[str]

    @property
    def diff_cut(self) -> bool:
        return self.diff_bytes > len(self.diff_head)


class GitUnavailable(Exception):
    """No git state to record; the message says why in a few words (``git is not installed``)."""


# -- pure ------------------------------------------------------------------------------------------
class Status(NamedTuple):
    """``git status --porcelain=v2 --branch -z``, read: one git process for all four."""

    commit: Optional[str]  # None: no commit yet
    branch: Optional[str]  # None: a detached HEAD
    dirty: bool  # tracked files changed, staged or not
    untracked: List[str]


def parse_status(output: bytes) -> Status:
    """``git status --porcelain=v2 --branch -z`` -> :class:`Status` (git's documented, stable format)."""
    commit = branch = None
    dirty, untracked, entries = False, [], output.split(b"\0")
    index = 0
    while index < len(entries):
        entry = entries[index].decode("utf-8", "replace")
        index += 1
        kind = entry[:2]
        if entry.startswith("# branch.oid "):
            commit = None if entry.endswith("(initial)") else entry.split()[-1]
        elif entry.startswith("# branch.head "):
            branch = None if entry.endswith("(detached)") else entry[len("# branch.head "):]
        elif kind == "? ":
            untracked.append(entry[2:])
        elif kind in ("1 ", "2 ", "u "):
            dirty = True
            index += kind == "2 "  # a rename or copy: its source path follows as an entry of its own
    return Status(commit, branch, dirty, untracked)


def names_digest(names: List[str]) -> Optional[str]:
    """sha256 of the sorted names, one per line; None for none."""
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest() if names else None


def cut_note(kept: int, whole: int) -> bytes:
    """The line git.diff ends with when the diff was longer than it keeps."""
    return f"\n# hydra-train-bootstrap: git.diff holds the first {kept} of {whole} bytes of `git diff HEAD`\n".encode()


# -- the machine -----------------------------------------------------------------------------------
class _Git:
    """git commands in one directory, sharing one deadline."""

    def __init__(self, directory: Path, seconds: float) -> None:
        self.directory, self.deadline = directory, time.monotonic() + seconds
        self.env = {**os.environ, **_GIT_ENV}

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise GitUnavailable("git timed out")
        return left

    def run(self, *args: str, limit: int = MAX_STATUS_BYTES) -> Tuple[int, bytes]:
        """(exit status, the first ``limit`` bytes of its output)."""
        digest = _Digest(limit)
        code = self.stream(args, digest)
        return code, digest.head

    def stream(self, args: Tuple[str, ...], sink: "_Digest") -> int:
        try:
            process = subprocess.Popen(["git", *_NO_HOOKS, "-C", str(self.directory), *args], env=self.env,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       start_new_session=True)  # its own group: what it started is stopped too
        except FileNotFoundError:
            raise GitUnavailable("git is not installed") from None
        except OSError as error:
            raise GitUnavailable(f"git could not start ({error.strerror})") from None
        # A git that hangs (a network file system, a huge repository) is killed at the deadline, with whatever
        # it started (a hook, a helper) that holds its pipe open: the pipe then closes, and the read returns.
        watchdog = threading.Timer(self._left(), _kill_group, (process,))
        watchdog.daemon = True
        watchdog.start()
        try:
            assert process.stdout is not None
            for chunk in iter(lambda: process.stdout.read(_CHUNK), b""):  # type: ignore[union-attr]
                sink.add(chunk)
            code = process.wait()
        finally:
            watchdog.cancel()
            if process.poll() is None:
                _kill_group(process)
                process.wait()
            process.stdout.close()  # type: ignore[union-attr]
        if time.monotonic() >= self.deadline:
            raise GitUnavailable("git timed out")
        return code


def _kill_group(process: "subprocess.Popen[bytes]") -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended meanwhile
        pass


class _Digest:
    """A stream's sha256 and size, keeping its first ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit, self.size, self.head, self.sha = limit, 0, b"", hashlib.sha256()

    def add(self, chunk: bytes) -> None:
        self.sha.update(chunk)
        self.size += len(chunk)
        if len(self.head) < self.limit:
            self.head += chunk[:self.limit - len(self.head)]


def read(directory: Path, seconds: float) -> GitState:
    """The repository holding ``directory``; raises :class:`GitUnavailable` saying why there is none."""
    git = _Git(directory, seconds)
    code, top = git.run("rev-parse", "--show-toplevel")
    if code != 0:
        raise GitUnavailable("not in a git repository")
    git.directory = Path(top.decode("utf-8", "replace").strip())
    _, output = git.run("status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all")
    status = parse_status(output)
    diff = _Digest(MAX_DIFF_BYTES)
    if status.dirty and status.commit is not None:
        git.stream(("diff", "HEAD", "--no-color", "--no-ext-diff", "--no-textconv"), diff)
    return GitState(root=str(git.directory), commit=status.commit, branch=status.branch, dirty=status.dirty,
                    diff_head=diff.head, diff_bytes=diff.size, diff_digest=diff.sha.hexdigest() if diff.size else None,
                    untracked=len(status.untracked), untracked_digest=names_digest(status.untracked))
