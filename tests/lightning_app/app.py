"""A small real Lightning + Hydra app, in the style of lightning-hydra-template.

It does not enable the bootstrap itself; a user does, from the command line:

    python app.py                                               # plain
    python app.py +env=cpu_debug hydra/callbacks=bootstrap      # with the bootstrap
    python app.py trainer.strategy=ddp trainer.devices=2        # two CPU ranks
    python app.py +callbacks.bootstrap._target_=bootstrap.integrations.lightning.BootstrapLogging  # its callback

``returns=number`` returns ``float(val/loss)`` (what Optuna-style sweepers minimise);
``returns=metrics`` returns ``dict(trainer.callback_metrics)``, a dict of 0-d tensors.
"""

import json
import logging
import os
import subprocess
import time
from typing import Any, Dict, List, Union

import hydra
import lightning as L
from model import Regressor, TeacherDataModule
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)


def train(cfg: DictConfig) -> Dict[str, Any]:
    os.environ.update({name: str(value) for name, value in cfg.exports.items()})  # the ranks it starts inherit them
    L.seed_everything(cfg.seed, workers=True)
    datamodule = TeacherDataModule(**cfg.data)
    model = Regressor(features=cfg.data.features, **cfg.model)
    # as lightning-hydra-template does: each entry of `callbacks` is instantiated (+callbacks.NAME._target_=...)
    callbacks = [hydra.utils.instantiate(c) for c in cfg.callbacks.values()]
    if os.environ.get("APP_RANK1_BUSY_AFTER_S"):
        callbacks.append(_SlowRank1Later(float(os.environ["APP_RANK1_BUSY_AFTER_S"])))
    else:
        callbacks.extend(_slow_rank1())
    trainer = L.Trainer(**OmegaConf.to_container(cfg.trainer, resolve=True), callbacks=callbacks)
    trainer.fit(model, datamodule=datamodule)
    return dict(trainer.callback_metrics)


class _SlowRank1Later(L.Callback):
    """With ``APP_RANK1_BUSY_AFTER_S=S`` (tests/e2e/test_lightning.py's rank slowed mid-run): S seconds after its first
    training batch, rank 1 starts the ``APP_RANK1_BUSY_LOOPS`` busy processes, which inherit its CPU and its CPU group
    (tests/cpu_groups.py) and so take its share of the CPU alone, and logs when.

    Fit then ends on its own, on every rank at the same step: rank 1 writes that step to ``APP_STOP_FILE`` as it slows
    (as many steps again as 0.4 of those it ran healthy: about 16 s at a 4x slower step), each rank reads it as a
    batch ends and stops there (ranks of DDP are within a step of each other, so both read it in time). A fixed
    ``max_steps`` would train minutes slowed on a slow machine."""

    def __init__(self, after_s: float):
        self.after_s, self.first, self.stop_at = after_s, None, None
        self.stop_file = os.environ.get("APP_STOP_FILE")

    def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
        now = time.monotonic()
        self.first = self.first if self.first is not None else now
        if self.after_s and now - self.first >= self.after_s:
            self.after_s = 0.0
            loops, _, pids = os.environ.get("APP_RANK1_BUSY_LOOPS", "0:").partition(":")
            if os.environ.get("LOCAL_RANK") == "1" and int(loops):
                started = [subprocess.Popen(["sh", "-c", "while :; do :; done"], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL) for _ in range(int(loops))]
                with open(pids, "w") as out:
                    out.write(" ".join(str(loop.pid) for loop in started))
                log.info("rank 1 slowed at %.2f s", now - self.first)
                if self.stop_file:
                    step = trainer.global_step
                    with open(self.stop_file + ".part", "w") as out:
                        out.write(str(step + max(20, round(0.4 * step))))
                    os.replace(self.stop_file + ".part", self.stop_file)
        if self.stop_file and self.stop_at is None and os.path.exists(self.stop_file):
            with open(self.stop_file) as written:
                self.stop_at = int(written.read())
        if self.stop_at is not None and trainer.global_step >= self.stop_at:
            trainer.should_stop = True


def _slow_rank1() -> List[L.Callback]:
    """With ``APP_RANK1_BUSY_LOOPS=N:FILE`` (tests/e2e/test_lightning.py's slow rank): rank 1 starts N busy processes
    before fit, in its CPU group and on its CPU (they inherit both: they take its share alone), and writes their PIDs
    to FILE for the test to end them; the callback returned ends them when training starts (or fit stops), once the
    trainer's setup (where the bootstrap's preflight runs) has measured the slow rank."""
    loops, _, pids = os.environ.get("APP_RANK1_BUSY_LOOPS", "0:").partition(":")
    if os.environ.get("LOCAL_RANK") != "1" or not int(loops):
        return []
    started = [subprocess.Popen(["sh", "-c", "while :; do :; done"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for _ in range(int(loops))]
    with open(pids, "w") as out:
        out.write(" ".join(str(loop.pid) for loop in started))
    return [_EndLoops(started)]


class _EndLoops(L.Callback):
    def __init__(self, loops: List[subprocess.Popen]):
        self.loops = loops

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        for loop in self.loops:
            loop.kill()
            loop.wait()

    def on_exception(self, trainer: L.Trainer, pl_module: L.LightningModule, exception: BaseException) -> None:
        # the check stopped the job: rank 1's way out (its report, Python's exit) at a ninth of its budget took 35 s
        self.on_train_start(trainer, pl_module)


@hydra.main(config_path="conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> Union[float, Dict[str, Any]]:
    metrics = train(cfg)
    if cfg.returns == "number":
        result = float(metrics["val/loss"])
    elif cfg.returns == "metrics":
        result = metrics
    else:
        raise ValueError(f"returns={cfg.returns!r}: use number or metrics")
    # One parseable line (floats, as JSON) so a test or a person can check what the sweeper got.
    shown = result if isinstance(result, float) else {k: float(v) for k, v in result.items()}
    log.info("app returns %s", json.dumps(shown))
    return result


if __name__ == "__main__":
    main()
