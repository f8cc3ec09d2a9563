"""Weights & Biases: a run still active at the job's end gets the report's flat view in its config and
``bootstrap.json`` among its files.

A W&B run is made by the task, after the job started, and W&B has no plugin hook that would tag it on creation
(as MLflow's run-context providers do); the two ways that look documented do not work in wandb 0.31: the
``WANDB_CONFIG_PATHS`` variable makes ``wandb.init`` raise, and ``wandb.Settings(config_paths=[...])`` does not
reach ``run.config``. What does work, on an active run, is ``run.config.update(..., allow_val_change=True)`` and
``run.save(path, policy="now")``, so:

- a run still active when the job ends gets both here (:func:`job_end`), online or ``WANDB_MODE=offline``;
- a run the task finishes itself gets the view when the task passes it:
  ``wandb.init(config=bootstrap.current().flat())``;
- Lightning's ``WandbLogger`` gets it at the trainer's setup, from :mod:`bootstrap.integrations.lightning`.

This module imports wandb only when the task has (it is in ``sys.modules``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from bootstrap.integrations import report_path

if TYPE_CHECKING:
    from bootstrap.core.session import Session


def job_end(session: "Session") -> None:
    """The active run of this process, if any: the final flat view into its config, ``bootstrap.json`` saved."""
    wandb = sys.modules.get("wandb")
    run = getattr(wandb, "run", None) if wandb is not None else None
    if run is None:  # never initialised, or finished by the task
        return
    run.config.update(session.flat(), allow_val_change=True)
    path = report_path(session)
    if path is not None:
        run.save(str(path), base_path=str(path.parent), policy="now")
