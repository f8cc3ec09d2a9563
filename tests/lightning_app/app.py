"""A small real Lightning + Hydra app, in the style of lightning-hydra-template.

It does not enable the bootstrap itself; a user does, from the command line:

    python app.py                                               # plain
    python app.py +env=cpu_debug hydra/callbacks=bootstrap      # with the bootstrap
    python app.py trainer.strategy=ddp trainer.devices=2        # two CPU ranks

``returns=number`` returns ``float(val/loss)`` (what Optuna-style sweepers minimise);
``returns=metrics`` returns ``dict(trainer.callback_metrics)``, a dict of 0-d tensors.
"""

import json
import logging
import os
from typing import Any, Dict, Union

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
    trainer = L.Trainer(**OmegaConf.to_container(cfg.trainer, resolve=True))
    trainer.fit(model, datamodule=datamodule)
    return dict(trainer.callback_metrics)


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
