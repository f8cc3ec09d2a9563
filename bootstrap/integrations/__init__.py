"""Tracker integrations: the job's report where users already look, MLflow, Lightning's loggers and Weights &
Biases, each optional, found when installed and quiet when not (docs/trackers.md).

Each logs the same view, :meth:`bootstrap.core.session.Session.flat` (:mod:`bootstrap.core.flat`): flat keys,
masked on their way out. No module here imports a tracker that the job's own code has not imported: MLflow loads
:mod:`.mlflow` itself (its plugin entry point), the user names :mod:`.lightning` in a trainer's callbacks, and
:func:`job_end` asks only the trackers already in ``sys.modules``.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from bootstrap.core import active
from bootstrap.doors import outbound

if TYPE_CHECKING:
    from bootstrap.core.session import Session

log = logging.getLogger(__name__)

# (the tracker, our module that ends its part of a job, the module whose presence says the job used it)
AT_JOB_END = (
    ("MLflow", "bootstrap.integrations.mlflow", "bootstrap.integrations.mlflow"),  # loaded by MLflow only
    ("W&B", "bootstrap.integrations.wandb", "wandb"),
)


def active_session() -> Optional["Session"]:
    """The innermost session once its report exists, else None. Cheap: MLflow asks on every run it starts."""
    session: Any = active.innermost()  # the stack holds sessions as plain objects
    return session if session is not None and getattr(session, "report", None) is not None else None


def report_path(session: "Session") -> Optional[Path]:
    """Where this rank's ``bootstrap.json`` was written, or None (a session without an output directory)."""
    if session.output_dir is None:
        return None
    from bootstrap.doors import records  # the typed report's module: not at MLflow's import of ours

    path = session.output_dir / records.report_name(session.rank, session.world_size)
    return path if path.is_file() else None


def job_end(session: "Session") -> None:
    """Once the job's report is final: hand it to each tracker the task used (the runs MLflow tagged get
    ``bootstrap.json`` as an artifact; an active W&B run gets it as a file). Never raises: a tracker that fails
    costs one warning, never the job."""
    if session.report is None:
        return
    for tracker, module, used_when in AT_JOB_END:
        if used_when not in sys.modules:
            continue
        try:
            _within(session.preset.distributed.timeout_s, importlib.import_module(module).job_end, session)
        except Exception as error:  # noqa: BLE001 - the job is over; a tracker must not fail it
            log.warning("%s: could not add the bootstrap report to the run: %s", tracker,
                        outbound.finding(f"{type(error).__name__}: {error}", 500))


def _within(seconds: float, call: Any, *args: Any) -> None:
    """``call(*args)`` in a daemon thread, waited for at most ``seconds`` (env.distributed.timeout_s): a tracking
    server that does not answer costs the job that long at most, and one warning."""
    done, failed = threading.Event(), []

    def run() -> None:
        try:
            call(*args)
        except Exception as error:  # noqa: BLE001 - raised again in the job's thread below
            failed.append(error)
        finally:
            done.set()

    threading.Thread(target=run, name="bootstrap-tracker-end", daemon=True).start()
    if not done.wait(seconds):
        raise TimeoutError(f"no answer within {seconds:g} s (env.distributed.timeout_s)")
    if failed:
        raise failed[0]
