"""``BootstrapCallback``: a thin adapter from Hydra's hooks to :class:`Session`.

Enable it with ``hydra/callbacks=bootstrap``. Between hooks it keeps only the open
session of the running job, so joblib and submitit can pickle it.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import time
from pathlib import Path
from typing import Any, Callable, Optional

from hydra.core.utils import JobReturn
from hydra.core.utils import JobStatus as HydraJobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, read_write

from bootstrap import integrations
from bootstrap.adapter.sweep_end import SweepEnd
from bootstrap.core import jobconfig, refusal
from bootstrap.core.jobconfig import session_args, typed_overrides
from bootstrap.core.report import JobInfo, JobStatus
from bootstrap.core.session import Session
from bootstrap.distributed import launcher, rundir
from bootstrap.doors import outbound
from bootstrap.doors.errors import BootstrapError, JobRefused
from bootstrap.doors.masking import masked_line, masked_override, masked_text
from bootstrap.doors.timeline import TIMELINE
from bootstrap.variables.environ import EnvironSnapshot


def _stop(error: Exception, where: str, overrides: Optional[list] = None, multirun: bool = False) -> None:
    """End the process with a clear message instead of Hydra's warning.

    Hydra turns an Exception raised in a callback into a warning and goes on (for
    on_job_start: runs the task anyway), so a plain raise would stop nothing. SystemExit
    does: Hydra lets it through, Python prints its message without a traceback and
    exits 1. Whatever the failure (a failed check, a config that cannot even be read,
    a rendezvous that failed, an unwritable directory), the message is masked.
    """
    overrides = overrides or []
    if isinstance(error, BootstrapError):  # our own: one line per finding, each value shown one line already
        message = f"Error: {masked_text(str(error), overrides)}"
    else:  # anyone's exception (torch's, Hydra's): one finding, one line
        text = outbound.finding(masked_text(f"{type(error).__name__}: {error}", overrides))
        message = f"Error: the bootstrap failed in {where}: {text}"
    if where == "on_job_start" and multirun:
        message += f"\n(in the multirun job with overrides: {masked_line(' '.join(overrides)) or '(none)'})"
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        outbound.print_traceback(error)
    row = launcher.peek(os.environ).row
    if row.error_file(os.environ):  # torchrun's failure summary then shows this message
        from bootstrap.distributed.group import write_elastic_error_file

        write_elastic_error_file(message, int(time.time()))
    if row.exits_are_retried():  # Ray re-runs a worker that exits, not one that raises
        raise JobRefused(outbound.clean(message)) from None
    outbound.stop(message, getattr(error, "exit_code", 1))  # 1; RequeuedError's own (docs/errors.md#exit-codes)


def _sweepers_directions(config: DictConfig) -> Optional[tuple]:
    """The sweeper's own direction per objective (Optuna's ``direction``...), for the summary's best."""
    from bootstrap.sweep.sweepers import directions

    # Only the keys that state a direction are resolved: a sibling that does not resolve here must
    # not cost the sweeper's direction (and mark the worst trial best).
    def stated(key: str) -> Any:
        try:
            value = OmegaConf.select(config, f"hydra.sweeper.{key}", default=None)
            return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
        except Exception:  # noqa: BLE001 - a value that does not resolve here states nothing
            return None

    optuna, nevergrad, ax = stated("direction"), stated("optim.maximize"), stated("ax_config.experiment.minimize")
    return directions({"direction": optuna} if optuna is not None else
                      {"optim": {"maximize": nevergrad}} if nevergrad is not None else
                      {"ax_config": {"experiment": {"minimize": ax}}})


def _guarded(hook: Callable[..., None]) -> Callable[..., None]:
    """Every hook: an exception stops the process with a message, never a mere warning."""
    @functools.wraps(hook)
    def run(self: BootstrapCallback, *args: Any, **kwargs: Any) -> None:
        try:
            hook(self, *args, **kwargs)
        except Exception as error:  # noqa: BLE001 - Hydra would only warn
            _stop(error, hook.__name__, self._overrides, self._multirun)
        except KeyboardInterrupt:
            # Ctrl-C in a hook (a rendezvous waiting for a peer): the session has restored the
            # process and recorded "interrupted"; end as a shell expects (130), without a traceback.
            outbound.stop(f"Interrupted in {hook.__name__}: the process was restored and the job recorded as "
                          "interrupted.", 130)
    return run


def _log_to_own_file(rank: int) -> None:
    """Point this rank's log file handlers at ``<name>.rank<N>.log``; rank 0 keeps ``<name>.log``.

    Every rank of a job configures Hydra's job logging with the same file name, so
    without this their lines would interleave in one file.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, logging.FileHandler):
            path = Path(handler.baseFilename)
            own = logging.FileHandler(path.with_name(f"{path.stem}.rank{rank}{path.suffix}"), mode=handler.mode)
            own.setFormatter(handler.formatter)
            own.setLevel(handler.level)
            root.removeHandler(handler)
            handler.close()
            root.addHandler(own)


def write_sweep_summary(sweep_dir: str, objective: Optional[str] = None, mode: Optional[str] = None,
                        directions: Optional[tuple] = None) -> None:
    from bootstrap.sweep import summary  # only at the end of a sweep: keep it off every job's start-up

    markdown = summary.write(Path(sweep_dir), objective, mode, directions)
    outbound.say(f"Sweep summary ({Path(sweep_dir) / summary.MD_NAME}):\n{markdown}")


class BootstrapCallback(Callback):
    def __init__(self, config_key: Optional[str] = None, objective: Optional[str] = None,
                 mode: Optional[str] = None, env: Any = None) -> None:
        """``env``: the preset beneath the callback's node (``+env@hydra.callbacks.bootstrap.env=...``).
        Hydra passes it once, from the primary config; it is not kept: each job reads its own from
        its config, so a sweep over it works and a pickled callback carries no preset."""
        TIMELINE.mark("compose")  # Hydra makes its callbacks once the config is composed
        if mode not in (None, "max", "min"):
            raise BootstrapError(f"hydra.callbacks.bootstrap.mode={mode!r}: use max or min "
                                 "(hydra.callbacks.bootstrap.mode=min), or null for the objective's default.")
        self.config_key = config_key  # where the preset sits in the job config; None: bootstrap_env, else env
        self.objective = objective  # the sweep summary's metric for "best"; None: samples_per_s, else return
        self.mode = mode  # max | min; None: max for samples_per_s, min for anything else
        self._session: Optional[Session] = None
        self._overrides: list = []  # the running job's, as typed: error messages mask their secrets
        self._multirun = False
        self._sweep_end: Optional[SweepEnd] = None  # releases what the sweep holds in this process, once

    def __getstate__(self) -> dict:
        # joblib and submitit pickle the callback after on_multirun_start, submitit onto
        # disk: the launching process's environment (secrets included) must not travel.
        return {"config_key": self.config_key, "objective": self.objective, "mode": self.mode,
                "_session": None, "_overrides": [], "_multirun": False, "_sweep_end": None}

    @_guarded
    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Before Hydra makes the output directory: jobs never share one, and ranks of one job do
        (see bootstrap.distributed.rundir)."""
        launch = launcher.peek(os.environ)
        run = OmegaConf.to_container(config.hydra.run, resolve=False)  # ${now:...} as written
        configured = run.get("dir") if isinstance(run, dict) else None
        chosen = rundir.run_dir(str(configured), launch, os.environ)
        if launch.row.run_dir_from_store and launch.world_size > 1:
            from bootstrap.distributed.group import agree_on_run_dir

            with read_write(config.hydra):  # rank 0's choice, resolved on rank 0's clock
                if chosen is not None:
                    config.hydra.run.dir = chosen
                chosen = agree_on_run_dir(str(Path(config.hydra.run.dir).absolute()), launch,
                                          jobconfig.timeout_s(config, self.config_key))
        if chosen is not None:
            with read_write(config.hydra):
                config.hydra.run.dir = chosen

    @_guarded
    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._overrides, self._multirun = [], False
        self._overrides = typed_overrides(config)  # first: a failure below is reported masked
        self._multirun = str(config.hydra.mode) == "RunMode.MULTIRUN"
        try:
            args = session_args(config, self.config_key)
        except BootstrapError as error:  # no preset to make a session of (two presets, the app's own env): a record
            refusal.record(config.hydra.runtime.output_dir, JobInfo("custom", self._overrides), error)
            raise
        session = Session(**args, output_dir=config.hydra.runtime.output_dir)
        if session.detect_launch().rank > 0:
            _log_to_own_file(session.rank)
        session.apply()
        self._session = session

    @_guarded
    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        if job_return.status == HydraJobStatus.COMPLETED:
            session.close(JobStatus.COMPLETED, metrics=job_return.return_value)
        else:
            # Hydra then prints "Error executing job with overrides: [...]" from this JobReturn, as typed.
            job_return.overrides = [masked_override(o) for o in job_return.overrides or ()]
            # JobReturn.return_value re-raises the task's exception; _return_value holds it.
            session.close(JobStatus.FAILED, error=getattr(job_return, "_return_value", None))
        integrations.job_end(session)  # the final report to the trackers the task used (MLflow, W&B); never raises

    @_guarded
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # Launcher plugins log each job's overrides as typed ("#3 : a=b"), each from its own logger:
        # every record is masked for the sweep's duration.
        outbound.remember_overrides(typed_overrides(config))
        # Hydra skips on_multirun_end when a job failed or a check stopped the sweep,
        # and those are the sweeps whose summary matters most. atexit covers them.
        if launcher.peek(os.environ).rank == 0:  # a multirun under torchrun: rank 0 alone writes the summary
            atexit.register(write_sweep_summary, str(config.hydra.sweep.dir), self.objective, self.mode,
                            _sweepers_directions(config))
        if self._sweep_end is None:  # last: a hook that failed before here holds nothing
            # Jobs restore what they change, but a launcher may change the launching process too (joblib's
            # loky sets KMP_INIT_AT_FORK): undo that at the end, with the masking, however the sweep ends.
            launcher_environ = EnvironSnapshot(os.environ)
            outbound.MaskedLogs.hold()

            def release() -> None:
                outbound.MaskedLogs.release()
                launcher_environ.restore()

            self._sweep_end = SweepEnd(release)

    @_guarded
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        atexit.unregister(write_sweep_summary)
        try:
            if launcher.peek(os.environ).rank == 0:
                write_sweep_summary(str(config.hydra.sweep.dir), self.objective, self.mode,
                                    _sweepers_directions(config))
        finally:  # a summary that could not be written must not leave the launching process changed
            sweep_end, self._sweep_end = self._sweep_end, None
            if sweep_end is not None:
                sweep_end.end()

