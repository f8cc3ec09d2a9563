"""``BootstrapCallback``: a thin adapter from Hydra's hooks to :class:`Session`.

Enable it with ``hydra/callbacks=bootstrap``. Between hooks it keeps only the open
session of the running job, so joblib and submitit can pickle it.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Optional

from hydra.core.utils import JobReturn
from hydra.core.utils import JobStatus as HydraJobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, read_write

from bootstrap import launcher, rundir
from bootstrap.environ import EnvironSnapshot
from bootstrap.errors import BootstrapError
from bootstrap.jobconfig import session_args, typed_overrides
from bootstrap.masking import masked_line, masked_override, masked_text
from bootstrap.report import JobStatus
from bootstrap.session import Session


def _stop(error: Exception, where: str, overrides: Optional[list] = None, multirun: bool = False) -> None:
    """End the process with a clear message instead of Hydra's warning.

    Hydra turns an Exception raised in a callback into a warning and goes on (for
    on_job_start: runs the task anyway), so a plain raise would stop nothing. SystemExit
    does: Hydra lets it through, Python prints its message without a traceback and
    exits 1. Whatever the failure (a failed check, a config that cannot even be read,
    a rendezvous that failed, an unwritable directory), the message is masked.
    """
    overrides = overrides or []
    text = str(error) if isinstance(error, BootstrapError) else f"{type(error).__name__}: {error}"
    message = f"Error: {masked_text(text, overrides)}" if isinstance(error, BootstrapError) else \
        f"Error: the bootstrap failed in {where}: {masked_text(text, overrides)}"
    if where == "on_job_start" and multirun:
        message += f"\n(in the multirun job with overrides: {masked_line(' '.join(overrides)) or '(none)'})"
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        traceback.print_exception(error, file=sys.stderr)
    if os.environ.get("TORCHELASTIC_ERROR_FILE"):  # torchrun's failure summary then shows this message
        from bootstrap.distributed import write_elastic_error_file

        write_elastic_error_file(message, int(time.time()))
    raise SystemExit(message) from error


def _guarded(hook):
    """Every hook: an exception stops the process with a message, never a mere warning."""
    @functools.wraps(hook)
    def run(self, *args: Any, **kwargs: Any) -> None:
        try:
            hook(self, *args, **kwargs)
        except Exception as error:  # noqa: BLE001 - Hydra would only warn
            _stop(error, hook.__name__, self._overrides, self._multirun)
        except KeyboardInterrupt:
            # Ctrl-C in a hook (a rendezvous waiting for a peer): the session has restored the
            # process and recorded "interrupted"; end as a shell expects (130), without a traceback.
            print(f"Interrupted in {hook.__name__}: the process was restored and the job recorded as "
                  "interrupted.", file=sys.stderr)
            raise SystemExit(130) from None
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


def write_sweep_summary(sweep_dir: str, objective: Optional[str] = None, mode: Optional[str] = None) -> None:
    from bootstrap import summary  # only at the end of a sweep: keep it off every job's start-up

    markdown = summary.write(Path(sweep_dir), objective, mode)
    print(f"Sweep summary ({Path(sweep_dir) / summary.MD_NAME}):\n{markdown}", flush=True)


class BootstrapCallback(Callback):
    def __init__(self, config_key: Optional[str] = None, objective: Optional[str] = None,
                 mode: Optional[str] = None) -> None:
        if mode not in (None, "max", "min"):
            raise BootstrapError(f"hydra.callbacks.bootstrap.mode={mode!r}: use max or min "
                                 "(hydra.callbacks.bootstrap.mode=min), or null for the objective's default.")
        self.config_key = config_key  # where the preset sits in the job config; None: bootstrap_env, else env
        self.objective = objective  # the sweep summary's metric for "best"; None: samples_per_s, else return
        self.mode = mode  # max | min; None: max for samples_per_s, min for anything else
        self._session: Optional[Session] = None
        self._launcher_environ: Optional[EnvironSnapshot] = None
        self._overrides: list = []  # the running job's, as typed: error messages mask their secrets
        self._multirun = False
        self._log_filter: Optional[_MaskOverrides] = None

    def __getstate__(self) -> dict:
        # joblib and submitit pickle the callback after on_multirun_start, submitit onto
        # disk: the launching process's environment (secrets included) must not travel.
        return {"config_key": self.config_key, "objective": self.objective, "mode": self.mode,
                "_session": None, "_launcher_environ": None, "_overrides": [], "_multirun": False,
                "_log_filter": None}

    @_guarded
    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Before Hydra makes the output directory: jobs never share one, and ranks of one job do
        (see bootstrap.rundir)."""
        launch = launcher.peek(os.environ)
        configured = OmegaConf.to_container(config.hydra.run, resolve=False).get("dir")
        chosen = rundir.run_dir(str(configured), launch, os.environ)
        if launch.launcher is launcher.Launcher.torchrun and launch.world_size > 1:
            from bootstrap.distributed import agree_on_run_dir

            with read_write(config.hydra):  # rank 0's choice, resolved on rank 0's clock
                if chosen is not None:
                    config.hydra.run.dir = chosen
                chosen = agree_on_run_dir(str(Path(config.hydra.run.dir).absolute()))
        if chosen is not None:
            with read_write(config.hydra):
                config.hydra.run.dir = chosen

    @_guarded
    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._overrides, self._multirun = [], False
        self._overrides = typed_overrides(config)  # first: a failure below is reported masked
        self._multirun = str(config.hydra.mode) == "RunMode.MULTIRUN"
        session = Session(**session_args(config, self.config_key), output_dir=config.hydra.runtime.output_dir)
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

    @_guarded
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # Jobs restore what they change, but a launcher may change the launching
        # process too (joblib's loky sets KMP_INIT_AT_FORK): undo that at the end.
        self._launcher_environ = EnvironSnapshot(os.environ)
        # The launchers log each job's overrides as typed ("#3 : a=b"): mask them for the sweep.
        self._log_filter = _MaskOverrides()
        self._log_filter.install()
        # Hydra skips on_multirun_end when a job failed or a check stopped the sweep,
        # and those are the sweeps whose summary matters most. atexit covers them.
        if launcher.peek(os.environ).rank == 0:  # a multirun under torchrun: rank 0 alone writes the summary
            atexit.register(write_sweep_summary, str(config.hydra.sweep.dir), self.objective, self.mode)

    @_guarded
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        atexit.unregister(write_sweep_summary)
        try:
            if launcher.peek(os.environ).rank == 0:
                write_sweep_summary(str(config.hydra.sweep.dir), self.objective, self.mode)
        finally:  # a summary that could not be written must not leave the launching process changed
            if self._log_filter is not None:
                self._log_filter.remove()
                self._log_filter = None
            if self._launcher_environ is not None:
                self._launcher_environ.restore()
                self._launcher_environ = None


class _MaskOverrides(logging.Filter):
    """Masks secret values in the launchers' per-job log lines (``\t#3 : +env.vars.HF_TOKEN=...``)."""

    LOGGERS = ("hydra._internal.core_plugins.basic_launcher", "hydra_plugins.hydra_joblib_launcher._core",
               "hydra_plugins.hydra_submitit_launcher.submitit_launcher")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        head, sep, overrides = message.partition(" : ")
        record.msg, record.args = (head + sep + masked_line(overrides)) if sep else message, None
        return True

    def install(self) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).addFilter(self)

    def remove(self) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeFilter(self)
