"""A small Hydra app whose task uses a tracker the way its users do, for tests/e2e/test_trackers.py.

It knows nothing of the trackers' integrations: the bootstrap is enabled from the command line
(``+env=cpu_debug hydra/callbacks=bootstrap``), and ``tracker=`` picks what the task does:

- ``mlflow``: one ``mlflow.start_run()`` (the tracking URI from ``MLFLOW_TRACKING_URI``), with a param and a metric
  of its own; with ``TRACKER_APP_AFTER_JOB=1`` in the environment, one more run after the job has ended, with no
  session active;
- ``wandb``: ``wandb.init()`` (``WANDB_MODE=offline``) with a config of its own; ``wandb=open`` leaves the run
  active at the job's end, ``wandb=passed`` passes ``bootstrap.current().flat()`` to ``wandb.init`` and finishes;
- ``lightning``: ``Trainer.fit`` with the loggers and callbacks of ``conf/logger`` and ``conf/callbacks``,
  instantiated as lightning-hydra-template does (``template_order=true``: the app logs its own hyperparameters
  through every logger before ``fit``, as the template's ``log_hyperparameters()`` does);
- ``none``: nothing.
"""

import logging

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

log = logging.getLogger(__name__)


def with_mlflow(cfg: DictConfig) -> None:
    import mlflow

    with mlflow.start_run(run_name="train") as run:
        mlflow.log_param("lr", cfg.lr)
        mlflow.log_metric("loss", 0.5)
    log.info("mlflow run %s", run.info.run_id)


def with_wandb(cfg: DictConfig) -> None:
    import wandb

    import bootstrap

    config = {"lr": cfg.lr}
    if cfg.wandb == "passed":
        config.update(bootstrap.current().flat())
    run = wandb.init(project="tracker-app", dir=HydraConfig.get().runtime.output_dir, config=config)
    run.log({"loss": 0.5})
    log.info("wandb run %s", run.id)
    if cfg.wandb == "passed":
        run.finish()


def with_lightning(cfg: DictConfig) -> None:
    import lightning as L
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    class Regressor(L.LightningModule):
        def __init__(self, hidden: int, lr: float):
            super().__init__()
            self.save_hyperparameters()  # the user's own hparams: they must survive beside the bootstrap's
            self.net = nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = nn.functional.mse_loss(self.net(x), y)
            self.log("train/loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=g)
    data = DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16)
    loggers = [hydra.utils.instantiate(c) for c in cfg.logger.values()]
    callbacks = [hydra.utils.instantiate(c) for c in cfg.get("callbacks", {}).values()]  # ~callbacks: none
    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=1, logger=loggers, callbacks=callbacks,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        log_every_n_steps=1)
    model = Regressor(hidden=cfg.hidden, lr=cfg.lr)
    if cfg.template_order:  # lightning-hydra-template's train.py: log_hyperparameters(object_dict) before fit
        hparams = {"model": {"hidden": cfg.hidden, "lr": cfg.lr}, "task_name": "train", "seed": 12345,
                   "model/params/total": sum(p.numel() for p in model.parameters())}
        for logger in trainer.loggers:
            logger.log_hyperparams(hparams)
    trainer.fit(model, data)


@hydra.main(config_path="conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    {"mlflow": with_mlflow, "wandb": with_wandb, "lightning": with_lightning, "none": lambda _: None}[cfg.tracker](cfg)


if __name__ == "__main__":
    import os

    main()
    # The job has ended: no session is active, and MLflow's provider must add nothing and say nothing.
    if os.environ.get("TRACKER_APP_AFTER_JOB") == "1":
        import mlflow

        with mlflow.start_run(run_name="after") as run:
            pass
        print(f"after-job run {run.info.run_id}")
