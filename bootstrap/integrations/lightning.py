"""Lightning: :class:`BootstrapLogging`, a callback that logs the report's flat view through every logger of the
trainer (``trainer.loggers``: TensorBoard, CSV, W&B, MLflow, Comet, Neptune), once per job, from rank 0, when the
trainer is set up.

The model's own hyperparameters go with it, in the same call: TensorBoard's HParams dashboard shows the first set
of hyperparameters a run logged, and Lightning logs the model's after the callbacks' setup. The loggers that keep
every set (CSV's ``hparams.yaml``, W&B's config) get the model's twice, with the same values.

Every rank marks its steps (``Session.step``): the watch (``env.watch``, docs/watch.md) compares the ranks' own work
while the job trains, with no line in the model. The first step is marked at its end (the start's phases end there);
each later one as the next batch starts, after what Lightning does between batches: it broadcasts a SIGTERM flag
from rank 0 before every batch (Lightning 2.6, ``_TrainingEpochLoop._broadcast_sigterm_tensor``), where a fast rank
waits for a slow one's optimizer step. Marked at a batch's end, that wait fell before the next step's gradients' sync,
where gloo, which records no collective's end, counts the time as the rank's own work: measured, a healthy rank 0's
own work went from 24 to 47 ms a step once rank 1 was slowed, and the watch named every rank. Marked as a batch
starts, it falls after the gradients' sync, with the waiting.

Every rank also runs the preflight check there when it was asked for (``env.preflight.mode=error|warn``) and found
no process group at the job's start: Lightning's ``ddp`` strategy makes its group in ``fit``, after the job started
(:meth:`bootstrap.core.session.Session.preflight_now`). A finding under ``mode=error`` ends every rank with one line.

With lightning-hydra-template, one file, ``configs/callbacks/bootstrap.yaml``, adds it (docs/trackers.md).
It works with the ``lightning`` package or the older ``pytorch_lightning``, whichever the trainer comes from.
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
import weakref
from typing import TYPE_CHECKING, Any, Dict, Optional

from bootstrap.core import phases
from bootstrap.doors import outbound
from bootstrap.doors.errors import BootstrapError
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
        self._stepped = False  # this fit's first step is marked: later ones are marked as their next batch starts
        _first_hparams_carry_the_report(type(self).__mro__[1])

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        session = active_session()
        if session is None:  # no bootstrap in this job: nothing to log, and nothing to say
            return
        from bootstrap.core import joined  # rank 0, one process at its start, is rank 0 of the world now

        joined.now(session)
        phases.mark("setup")
        try:  # every rank, now that Lightning's DDP has made its process group: the check it came too late for
            if session.preflight_now() is not None:
                phases.mark("preflight")
        except BootstrapError as error:  # recorded and restored; one line on every rank, as at the job's start
            outbound.stop(f"Error: {error}", getattr(error, "exit_code", 1))  # 1; a requeue's 75
        if self._logged is not None and self._logged() is session:
            return
        self._logged = weakref.ref(session)
        if not trainer.is_global_zero:  # Lightning's loggers write from rank 0 only
            return
        params = {**_own_hparams(trainer, pl_module), **hparams_of(session)}
        for logger in trainer.loggers:
            try:
                logger.log_hyperparams(params)
                if type(logger).__name__ == "MLFlowLogger" and logger.run_id:  # its run is not start_run()'s
                    from bootstrap.integrations import mlflow as mlflow_integration

                    mlflow_integration.tag_run(logger.run_id, logger.experiment)
            except Exception as error:  # noqa: BLE001 - a logger that fails must not stop the training
                log.warning("bootstrap: %s did not log the bootstrap report: %s", type(logger).__name__,
                            outbound.finding(f"{type(error).__name__}: {error}", 500))


    # -- the start's phases, up to the first step (bootstrap.core.phases): on every rank -------------------------
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._stepped = False
        if active_session() is not None:
            phases.mark("restore")

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        session = active_session()
        if session is None:
            return
        if phases.TIMELINE.last() == "restore":
            phases.mark("first_batch")
        elif self._stepped:
            session.step()  # the step before this batch ends here, Lightning's work between batches included

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        session = active_session()
        if session is not None and not self._stepped:
            self._stepped = True
            session.step()  # the first step, its optimizer step included: it ends the start


STATUS_KEY = "bootstrap/job/status"  # running at the setup: a logger's hyperparameters are written once (MLflow's
# params cannot change), so the job's status stays out of them; MLflow's tags and W&B's config get its end


def hparams_of(session: Any) -> Dict[str, Any]:
    """The flat view as hyperparameters: without the job's status, which would stay ``running`` beside the
    ``completed`` a tracker's tags show at the job's end."""
    return {key: value for key, value in session.flat().items() if key != STATUS_KEY}


def _own_hparams(trainer: Any, pl_module: Any) -> Dict[str, Any]:
    """The hyperparameters Lightning itself logs after the setup: the model's and the datamodule's
    (``save_hyperparameters``), where each logs them."""
    own: Dict[str, Any] = {}
    datamodule = getattr(trainer, "datamodule", None)
    for part in (pl_module, datamodule):
        if part is not None and getattr(part, "_log_hyperparams", False):
            own.update(part.hparams_initial)
    return own


def _first_hparams_carry_the_report(callback_base: type) -> None:
    """TensorBoard's HParams view shows the first set of hyperparameters a run logged, and lightning-hydra-template
    logs its own (``log_hyperparameters()``) before ``fit``, before any callback's setup. So, once the callback is
    made (the template makes its callbacks before its loggers), the first ``log_hyperparams`` call of each
    ``TensorBoardLogger`` made while a session is active carries the report's flat view beside the app's keys
    (the app's win where a name is the same). The logger class is the one of the package the callback comes from."""
    package = callback_base.__module__.split(".callbacks")[0]  # lightning.pytorch or pytorch_lightning
    try:
        logger_class = importlib.import_module(f"{package}.loggers").TensorBoardLogger
    except (ImportError, AttributeError):
        return
    original = logger_class.log_hyperparams
    if getattr(original, "_bootstrap_merges", False):
        return

    @functools.wraps(original)
    def log_hyperparams(self: Any, params: Any, *args: Any, **kwargs: Any) -> Any:
        session = active_session()
        if session is not None and getattr(self, "_bootstrap_session", None) is not session:
            self._bootstrap_session = session  # once per logger and job: later sets go to the same run
            try:
                params = {**hparams_of(session), **_as_dict(params)}
            except Exception as error:  # noqa: BLE001 - the app's own call must go through, as it was
                log.warning("bootstrap: the report did not join TensorBoard's first hyperparameters: %s",
                            outbound.finding(f"{type(error).__name__}: {error}", 500))
        return original(self, params, *args, **kwargs)

    setattr(log_hyperparams, "_bootstrap_merges", True)
    logger_class.log_hyperparams = log_hyperparams


def _as_dict(params: Any) -> Dict[str, Any]:
    """The app's hyperparameters as a dict (Lightning takes a dict, a Namespace or an OmegaConf container)."""
    if isinstance(params, dict):
        return params
    if hasattr(params, "_metadata") and hasattr(params, "items"):  # an OmegaConf DictConfig
        from omegaconf import OmegaConf

        return dict(OmegaConf.to_container(params, resolve=True))  # type: ignore[arg-type]
    return dict(vars(params))  # argparse.Namespace
