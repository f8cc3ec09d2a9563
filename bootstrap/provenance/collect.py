"""The job's provenance, collected in a thread once the job has started, so the start-up the user waits
on does not pay for it (``timings.provenance_s`` says what it cost, apart from ``bootstrap_s``).

Once per process: a one-process sweep's jobs run the same imported code with the same packages, so the
first job's collection serves the rest (``provenance.reused``); each job still gets its own files.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

from bootstrap.doors import masking, outbound, records
from bootstrap.doors.statuses import ProvenanceStatus
from bootstrap.provenance import git, machine, packages

log = logging.getLogger("bootstrap")



def file_names(rank: int, world_size: int) -> Tuple[str, str]:
    """(git.diff, packages.txt) as this rank names them: ``git.rank1.diff`` in a world of several ranks, whose
    run directory they share (as ``bootstrap.rank1.json``): ranks with other packages must not overwrite."""
    part = f".rank{rank}" if world_size > 1 else ""
    return f"git{part}.diff", f"packages{part}.txt"


class _Found(NamedTuple):
    """What one process found: the same for every job it runs."""

    git: Optional[git.GitState]
    git_missing: Optional[str]
    packages: List[str]
    container: Optional[str]
    gpu_driver: Optional[str]
    diff_text: Optional[str]  # git.diff's content: the diff's first MiB, masked, once per process


GIT_SHARE = 0.75  # of env.provenance.seconds, git's; the package list and the files take the rest (a few ms)
_found: Dict[str, _Found] = {}  # app directory -> what this process found there
_found_lock = threading.Lock()


def app_directory() -> Path:
    """Where the app's code is: the directory of the script Python ran (the task's file), else Hydra's
    original working directory, else this one. Call it when the job starts: a job may change directory."""
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    if script:
        return Path(script).resolve().parent
    if "hydra" in sys.modules:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            return Path(HydraConfig.get().runtime.cwd)
    return Path.cwd()


def without_collection(status: ProvenanceStatus) -> records.Provenance:
    """``provenance`` when nothing is collected (off, a preview): the host only."""
    return records.Provenance(status=status, host=machine.host())


def previewed() -> records.Provenance:
    """``provenance`` in ``bootstrap doctor``'s preview: nothing collected."""
    return without_collection(ProvenanceStatus.PREVIEW)


def _find(app_dir: Path, seconds: float) -> Tuple[_Found, bool]:
    """(what this process finds for ``app_dir``, whether an earlier job found it)."""
    with _found_lock:  # a second session at once waits for the first's collection, and reuses it
        key = str(app_dir)
        if key in _found:
            return _found[key], True
        try:
            state, missing = git.read(app_dir, seconds * GIT_SHARE), None
        except git.GitUnavailable as why:
            state, missing = None, str(why)
        _found[key] = found = _Found(state, missing, packages.installed(), machine.container(os.environ),
                                     machine.gpu_driver(), _diff_text(state) if state is not None else None)
        return found, False


def _diff_text(state: git.GitState) -> Optional[str]:
    """git.diff's content: the diff's first MiB, whole lines, then a line that says so; masked. None: clean."""
    if not state.diff_bytes:
        return None
    head = state.diff_head
    if state.diff_cut:
        head = head[:head.rfind(b"\n") + 1]
        head += git.cut_note(len(head), state.diff_bytes)
    return masking.masked_source(head.decode("utf-8", "replace"))


def _git_record(state: git.GitState, diff_text: Optional[str], job_dir: Optional[Path],
                diff_name: str) -> records.Git:
    diff_file = None
    if job_dir is not None and diff_text is not None:
        outbound.write_text(job_dir / diff_name, diff_text)
        diff_file = diff_name
    return records.Git(root=state.root, commit=state.commit, branch=state.branch, dirty=state.dirty,
                       diff_digest=state.diff_digest, diff_bytes=state.diff_bytes, diff_file=diff_file,
                       diff_cut=state.diff_cut, untracked=state.untracked, untracked_digest=state.untracked_digest)


def collect(app_dir: Path, job_dir: Optional[Path], seconds: float, rank: int = 0,
            world_size: int = 1) -> records.Provenance:
    """Everything, now, with the job's files (git.diff, packages.txt: :func:`file_names`) written into ``job_dir``."""
    found, reused = _find(app_dir, seconds)
    diff_name, packages_file = file_names(rank, world_size)
    if job_dir is not None:
        outbound.write_text(job_dir / packages_file, packages.text(found.packages))
    return records.Provenance(
        status=ProvenanceStatus.COLLECTED, host=machine.host(),
        git=_git_record(found.git, found.diff_text, job_dir, diff_name) if found.git is not None else None,
        git_missing=found.git_missing, packages=len(found.packages), packages_digest=packages.digest(found.packages),
        packages_file=packages_file if job_dir is not None else None,
        container=found.container, gpu_driver=found.gpu_driver, reused=reused)


class Collection:
    """:func:`collect` in a daemon thread, started now, within ``seconds``; :meth:`result` waits for it until
    then at most. Where this process has collected already (a sweep's later jobs), only the job's two files are
    left to write: that is done at once, and no thread outlives the job's start."""

    def __init__(self, app_dir: Path, job_dir: Optional[Path], seconds: float, rank: int = 0,
                 world_size: int = 1) -> None:
        self._args = (app_dir, job_dir, seconds, rank, world_size)
        self._deadline = time.monotonic() + seconds
        self._provenance: Optional[records.Provenance] = None
        self._seconds: Optional[float] = None
        self._thread: Optional[threading.Thread] = None
        if str(app_dir) in _found:
            self._run()
        else:
            self._thread = threading.Thread(target=self._run, name="bootstrap-provenance", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            self._provenance = collect(*self._args)
        except Exception as error:  # noqa: BLE001 - provenance is a record, never a reason for a job to fail
            log.warning("provenance: not collected: %s", outbound.clean(error, one_line=True))
            self._provenance = records.Provenance(status=ProvenanceStatus.FAILED, host=machine.host())
        self._seconds = time.perf_counter() - started

    def done(self) -> bool:
        return self._thread is None or not self._thread.is_alive()

    def result(self, wait: bool) -> Tuple[records.Provenance, Optional[float]]:
        """(the provenance, its collection's seconds); ``unfinished`` if it is not done (``wait``: by the end of
        its ``seconds``)."""
        if self._thread is not None:
            self._thread.join(max(self._deadline - time.monotonic(), 0.0) if wait else 0.0)
        if not self.done() or self._provenance is None:
            return without_collection(ProvenanceStatus.UNFINISHED), None
        return self._provenance, self._seconds


def so_far(collection: Optional[Collection], enabled: bool, wait: bool) -> Tuple[records.Provenance, Optional[float]]:
    """A job's provenance and its seconds: collected (``wait``: for the rest of its seconds), unfinished, or off."""
    if not enabled:
        return without_collection(ProvenanceStatus.OFF), None
    if collection is None:  # the job was refused before the collection started
        return without_collection(ProvenanceStatus.UNFINISHED), None
    return collection.result(wait)
