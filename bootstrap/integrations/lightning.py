"""Lightning: :class:`BootstrapLogging`, a callback that logs the report's flat view through every logger of the
trainer (``trainer.loggers``: TensorBoard, CSV, W&B, MLflow, Comet, Neptune), once per job, from rank 0, when the
trainer is set up.

The model's own hyperparameters go with it, in the same call: TensorBoard's HParams dashboard shows the first set
of hyperparameters a run logged, and Lightning logs the model's after the callbacks' setup. The loggers that keep
every set (CSV's ``hparams.yaml``, W&B's config) get the model's twice, with the same values.

With lightning-hydra-template, one file, ``configs/callbacks/bootstrap.yaml``, adds it (docs/trackers.md).
It works with the ``lightning`` package or the older ``pytorch_lightning``, whichever the trainer comes from.
"""

from __future__ import annotations

import importlib
import logging
import sys
import weakref
from typing import TYPE_CHECKING, Any, Dict, Optional

from bootstrap.doors import outbound
from bootstrap.integrations import active_session


def _callback_base() -> type:
    """Lightning's ``Callback``, from the package the app imported: a trainer refuses the other package's."""
    names = ("pytorch_lightning", "lightning.pytorch") if "pytorch_lightning" in sys.modules \
        and "lightning" not in sys.modules else ("lightning.pytorch", "pytorch_lightning")
    for name in names:
        try:
            return importlib.import_module(name).Callback
        except ImportError:
            continue
    raise ImportError("bootstrap.integrations.lightning needs Lightning: pip install lightning")


if TYPE_CHECKING:
    from lightning.pytorch import Callback
else:
    Callback = _callback_base()

log = logging.getLogger(__name__)


class BootstrapLogging(Callback):
    """Logs ``bootstrap.current().flat()`` as hyperparameters through every logger of the trainer, once per job."""

    def __init__(self) -> None:
        super().__init__()
        self._logged: Optional[weakref.ref] = None  # the session whose report was logged (fit, then test: once)

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        session = active_session()
        if session is None:  # no bootstrap in this job: nothing to log, and nothing to say
            return
        if self._logged is not None and self._logged() is session:
            return
        self._logged = weakref.ref(session)
        if not trainer.is_global_zero:  # Lightning's loggers write from rank 0 only
            return
        params = {**_own_hparams(trainer, pl_module), **session.flat()}
        for logger in trainer.loggers:
            try:
                logger.log_hyperparams(params)
                if type(logger).__name__ == "MLFlowLogger" and logger.run_id:  # its run is not start_run()'s
                    from bootstrap.integrations import mlflow as mlflow_integration

                    mlflow_integration.tag_run(logger.run_id, logger.experiment)
            except Exception as error:  # noqa: BLE001 - a logger that fails must not stop the training
                log.warning("bootstrap: %s did not log the bootstrap report: %s", type(logger).__name__,
                            outbound.finding(f"{type(error).__name__}: {error}", 500))


def _own_hparams(trainer: Any, pl_module: Any) -> Dict[str, Any]:
    """The hyperparameters Lightning itself logs after the setup: the model's and the datamodule's
    (``save_hyperparameters``), where each logs them."""
    own: Dict[str, Any] = {}
    datamodule = getattr(trainer, "datamodule", None)
    for part in (pl_module, datamodule):
        if part is not None and getattr(part, "_log_hyperparams", False):
            own.update(part.hparams_initial)
    return own
