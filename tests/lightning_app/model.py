"""The data and the model: a fixed random linear teacher and a small MLP that learns it."""

import logging

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split

log = logging.getLogger(__name__)


class TeacherDataModule(L.LightningDataModule):
    """``y = x @ w + noise`` on ``n`` Gaussian samples; the same data on every rank and every run."""

    def __init__(self, n: int = 2048, features: int = 8, noise: float = 0.1, batch_size: int = 64,
                 num_workers: int = 0):
        super().__init__()
        self.save_hyperparameters()
        self.train_set = self.val_set = None

    def setup(self, stage: str) -> None:
        if self.train_set is not None:
            return
        hp = self.hparams
        g = torch.Generator().manual_seed(0)  # the data, unlike the model, never depends on any seed
        x = torch.randn(hp.n, hp.features, generator=g)
        w = torch.randn(hp.features, 1, generator=g)
        y = x @ w + hp.noise * torch.randn(hp.n, 1, generator=g)
        n_val = hp.n // 5
        self.train_set, self.val_set = random_split(TensorDataset(x, y), [hp.n - n_val, n_val], generator=g)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.hparams.batch_size, shuffle=True,
                          num_workers=self.hparams.num_workers)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.hparams.batch_size, num_workers=self.hparams.num_workers)


class Regressor(L.LightningModule):
    def __init__(self, features: int = 8, hidden: int = 32, lr: float = 0.01):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def on_fit_start(self) -> None:
        # One line per rank, so each rank's log file can be told apart.
        log.info("rank %d of %d: fit starts (%d intra-op threads)", self.global_rank, self.trainer.world_size,
                 torch.get_num_threads())

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("train/loss", loss, on_step=False, on_epoch=True, sync_dist=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val/loss", nn.functional.mse_loss(self(x), y), on_step=False, on_epoch=True, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
