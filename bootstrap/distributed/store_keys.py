"""The store key of each exchange a job makes through its ranks' store (the agreement, the preflight, the watch, the
start's phases): one key per run, per attempt and per exchange, so that jobs of one process's sweep, and a requeued
job's attempts, never read each other's records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional

if TYPE_CHECKING:
    from bootstrap.distributed.launcher import Launch


def run_key(environ: Mapping[str, str], launch: "Launch", number: int, prefix: Optional[str] = None) -> str:
    """One store key per check: the run (the launch's job id), the launcher's restart count (its row's), and the
    check's number in this process (each job of a one-process sweep checks again, in the same order on every
    rank). ``prefix``: the check's (default: the agreement's)."""
    if prefix is None:  # the store's module loads only where ranks meet in a store, not for a lone process's key
        from bootstrap.distributed.agree_store import PREFIX as prefix

    return f"{prefix}/{launch.job_id or 'run'}/{launch.row.restart_count(environ)}/{number}"
