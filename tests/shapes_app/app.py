"""A Hydra app whose task writes every secret shape of tests/secret_shapes.py where the bootstrap will carry it,
for tests/e2e/test_secret_shapes.py.

The task logs the shapes through a logger of its own, may start the trackers (an MLflow run and a W&B offline
run left active for the job's end, a Lightning fit whose TensorBoard logger gets the report's flat view), and
raises an exception whose text holds every shape (``fail_rank``; under torchrun the other ranks wait in a
collective). Without a failure it returns a metric, so that a sweep has a best job.
"""

import logging
import sys
from pathlib import Path

import hydra
import torch
from hydra.core.hydra_config import HydraConfig

import bootstrap

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from secret_shapes import CATALOGUE  # noqa: E402

log = logging.getLogger("their_app.shapes")
TEXT = "\n".join(shape.text for shape in CATALOGUE)


def with_trackers(out: str) -> None:
    import lightning as L
    import mlflow
    import wandb
    from lightning.pytorch.loggers import TensorBoardLogger
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from bootstrap.integrations.lightning import BootstrapLogging

    mlflow.start_run(run_name="shapes")  # left active: the job's end adds its tags and bootstrap.json
    # WANDB_MODE=offline; left active for the job's end. W&B's own record of the process (its command line, and the
    # terminal it captures, where Hydra prints the task's exception) is W&B's, as .hydra/ is Hydra's: off here, so
    # that the run's files hold what the bootstrap gives W&B (docs/trackers.md says so).
    wandb.init(project="shapes", dir=out, settings=wandb.Settings(console="off", x_disable_meta=True))

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            return self.net(batch[0]).pow(2).mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = DataLoader(TensorDataset(torch.ones(4, 2)), batch_size=4)
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=1, logger=TensorBoardLogger(out, name="tb"),
                        callbacks=[BootstrapLogging()], enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(Tiny(), data)


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg):
    session = bootstrap.current()
    log.error("about to fail: %s", TEXT)
    if cfg.trackers:
        with_trackers(HydraConfig.get().runtime.output_dir)
    if session.rank == cfg.fail_rank:
        raise RuntimeError(f"login refused:\n{TEXT}")
    if session.world_size > 1:
        torch.distributed.all_reduce(torch.ones(1))  # the other ranks wait here for the failed one
    return 0.5 + len(str(cfg.note)) % 3  # the "return" objective: the sweep has a best job, and a picture


if __name__ == "__main__":
    main()
