"""``BootstrapCallback``: a thin adapter from Hydra's job hooks to :class:`Session`.

Enable it with ``hydra/callbacks=bootstrap``. It keeps no state between jobs except
the open session of the running job, so joblib and submitit can pickle it.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, Optional

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from bootstrap.errors import BootstrapError
from bootstrap.report import masked_override
from bootstrap.session import Session


def explicit_var_names(task_overrides, key: str = "env") -> set:
    """Names given as ``[+|++]env.vars.NAME=value`` among a job's command-line overrides."""
    prefix = f"{key}.vars."
    names = set()
    for override in task_overrides:
        if override.startswith("~"):
            continue
        lhs = override.split("=", 1)[0].lstrip("+")
        if lhs.startswith(prefix):
            names.add(lhs[len(prefix):])
    return names


def _stop_job(error: BootstrapError, job_overrides: Optional[list]) -> None:
    """End the job before the task runs.

    Hydra turns an Exception raised in a callback into a warning and runs the task
    anyway, so a plain raise would not stop anything. SystemExit does: Hydra lets it
    through, Python prints its message without a traceback and exits 1.
    """
    message = f"Error: {error}"
    if job_overrides is not None:
        message += f"\n(in the multirun job with overrides: {' '.join(job_overrides) or '(none)'})"
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        traceback.print_exception(error, file=sys.stderr)
    raise SystemExit(message) from error


class BootstrapCallback(Callback):
    def __init__(self, config_key: str = "env") -> None:
        self.config_key = config_key  # where the preset sits in the job config
        self._session: Optional[Session] = None

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        hydra_cfg = config.hydra
        task_overrides = list(hydra_cfg.overrides.task)
        multirun = str(hydra_cfg.mode) == "RunMode.MULTIRUN"
        try:
            env_cfg = OmegaConf.select(config, self.config_key)
            if env_cfg is None:
                raise BootstrapError(
                    f"hydra/callbacks=bootstrap is enabled but the config has no '{self.config_key}' node. "
                    f"Choose a preset: add '- {self.config_key}: cpu_debug' to the defaults list, "
                    f"or pass +{self.config_key}=cpu_debug."
                )
            session = Session(
                env_cfg,
                name=hydra_cfg.runtime.choices.get(self.config_key),
                key=self.config_key,
                env_set=hydra_cfg.job.env_set,
                overrides=explicit_var_names(task_overrides, self.config_key),
                output_dir=hydra_cfg.runtime.output_dir,
                job_overrides=task_overrides,
            )
            session.apply()
        except BootstrapError as error:
            _stop_job(error, [masked_override(o) for o in task_overrides] if multirun else None)
        self._session = session

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        if job_return.status == JobStatus.COMPLETED:
            session.close("completed", metrics=job_return.return_value)
        else:
            # JobReturn.return_value re-raises the task's exception; _return_value holds it.
            session.close("failed", error=getattr(job_return, "_return_value", None))
