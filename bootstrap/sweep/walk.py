"""Which job directories a sweep summary lists: the latest sweep's, found on disk. Reads directory entries
and modification times only, never a file's contents.

**Only the latest sweep.** A reused ``hydra.sweep.dir`` still holds the job directories
of earlier sweeps. Hydra's basic sweeper writes ``<sweep_dir>/multirun.yaml`` when a
sweep starts, before its first job, and each job writes ``.hydra/overrides.yaml`` when
it starts; so a job belongs to the latest sweep when its ``overrides.yaml`` is no
older than the nearest ``multirun.yaml`` above it (:func:`latest`). Without a
``multirun.yaml`` (other sweepers, hand-made directories) every job is listed; so it
is when no job is newer than it (a directory copied without its timestamps: copy
sweeps with ``cp -p`` or ``rsync -a``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Dict, List, Optional, Tuple

MULTIRUN_NAME = "multirun.yaml"  # Hydra's basic sweeper writes it into the sweep directory when a sweep starts


def _walk(sweep_dir: str) -> Tuple[List[Tuple[str, List[str], Optional[int]]], Dict[str, int]]:
    """Every directory under ``sweep_dir`` (itself included) holding ``.hydra/overrides.yaml``, whatever
    that is, with its entry names and that file's modification time; and the modification time of each
    ``multirun.yaml`` (a regular file) found on the way. Links to directories are not followed, unreadable
    directories skipped, and no ``.hydra`` directory is entered (Hydra's own files)."""
    found, multiruns, pending = [], {}, [sweep_dir]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as entries:
                names, below = [], []
                for entry in entries:
                    names.append(entry.name)
                    try:
                        if entry.is_dir(follow_symlinks=False) and entry.name != ".hydra":
                            below.append(entry.path)
                    except OSError:
                        pass
        except OSError:
            continue
        pending.extend(below)
        if MULTIRUN_NAME in names:
            try:
                info = os.stat(os.path.join(directory, MULTIRUN_NAME))
                if stat.S_ISREG(info.st_mode):
                    multiruns[directory] = info.st_mtime_ns
            except (OSError, ValueError):
                pass
        if ".hydra" in names:
            path = os.path.join(directory, ".hydra", "overrides.yaml")
            try:
                info = os.lstat(path)  # a dangling link still marks a job directory
            except (OSError, ValueError):
                continue
            written: Optional[int] = info.st_mtime_ns
            if stat.S_ISLNK(info.st_mode):
                try:
                    written = os.stat(path).st_mtime_ns
                except (OSError, ValueError):
                    written = None
            found.append((directory, names, written))
    found.sort(key=lambda job: job[0].split(os.sep))  # as paths sort: by their parts
    return found, multiruns


def _sweep_start(job_dir: str, sweep_dir: str, multiruns: Dict[str, int]) -> Optional[int]:
    """When the sweep that wrote ``job_dir`` started: the nearest ``multirun.yaml`` at or above it."""
    directory = job_dir
    while True:
        if directory in multiruns:
            return multiruns[directory]
        parent = os.path.dirname(directory)
        if directory == sweep_dir or parent == directory:
            return None
        directory = parent


def latest(sweep_dir: Path) -> Tuple[List[Tuple[str, List[str]]], int]:
    """The latest sweep's job directories under ``sweep_dir`` with their entry names, as paths sort, and how
    many job directories of earlier sweeps were left out."""
    root = str(Path(sweep_dir))
    every, multiruns = _walk(root)
    found = []
    for job_dir, names, written in every:
        started = _sweep_start(job_dir, root, multiruns) if multiruns else None
        if started is None or written is None or written >= started:
            found.append((job_dir, names))
    if not found:  # copied without timestamps, or a sweep none of whose jobs started: show what there is
        return [(job_dir, names) for job_dir, names, _ in every], 0
    return found, len(every) - len(found)



def not_one_sweep(sweep_dir: Path) -> Optional[str]:
    """Why ``sweep_dir`` is not one sweep's directory, or None: it holds the jobs of several sweeps (each below a
    ``multirun.yaml`` of its own, as lightning-hydra-template's ``logs/train/multiruns/<time>``), or single runs
    (no ``multirun.yaml`` at or above them) beside a sweep's jobs (its ``logs/train/runs/<time>``). A directory
    with no ``multirun.yaml`` at all cannot be told from other sweepers' and passes."""
    root = str(Path(sweep_dir))
    every, multiruns = _walk(root)
    if not multiruns:
        return None
    starts = [next((d for d in _above(job_dir, root) if d in multiruns), None) for job_dir, _, _ in every]
    sweeps, single = sorted({d for d in starts if d is not None}), sum(d is None for d in starts)
    if len(sweeps) < 2 and not single:
        return None
    shown = ", ".join(os.path.relpath(d, root) for d in sweeps[:3]) + (", ..." if len(sweeps) > 3 else "")
    return (f"{root} is not one sweep's directory: it holds the jobs of {len(sweeps)} sweep(s) ({shown})"
            + (f" and {single} single run(s)" if single else ""))


def _above(job_dir: str, root: str) -> List[str]:
    """``job_dir`` and the directories above it, up to ``root``."""
    chain, directory = [job_dir], job_dir
    while directory != root and os.path.dirname(directory) != directory:
        directory = os.path.dirname(directory)
        chain.append(directory)
    return chain
