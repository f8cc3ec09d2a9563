"""A small, real training job: an MLP learns a fixed random "teacher" network.

The bootstrap has already run when ``main`` starts (the Hydra callback applied
the ``env`` preset); this file is only the training loop, top to bottom.

    python train_stub.py                       # cpu_debug preset
    python train_stub.py env=h100              # checks the machine first
    python train_stub.py -m env.threads.intra_op=1,2
"""

import logging
import time

import hydra
import torch
from omegaconf import DictConfig

import bootstrap  # also registers the preset schema with Hydra's ConfigStore

log = logging.getLogger(__name__)

IN_FEATURES = 256
CLASSES = 16
WARMUP_STEPS = 5  # excluded from samples/s: first steps pay for allocation and kernel selection


def make_model(in_features: int, hidden: int, out_features: int) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(in_features, hidden),
        torch.nn.GELU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.GELU(),
        torch.nn.Linear(hidden, out_features),
    )


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> dict:
    train = cfg.train
    if train.steps == 0:
        log.info("train.steps=0: bootstrap only, no training")
        return {"steps": 0}

    device = torch.device(bootstrap.current().device)
    # Data comes from the seeded generator: the same seed gives the same run.
    generator = torch.Generator().manual_seed(cfg.env.seed)
    teacher = make_model(IN_FEATURES, 64, CLASSES).to(device)
    model = make_model(IN_FEATURES, train.hidden, CLASSES).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=train.lr)

    loss = torch.tensor(float("nan"))
    started = None
    for step in range(train.steps):
        if step == min(WARMUP_STEPS, train.steps - 1):
            started = time.perf_counter()
        x = torch.randn(train.batch_size, IN_FEATURES, generator=generator).to(device)
        with torch.no_grad():
            y = teacher(x).argmax(dim=1)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % train.log_every == 0 or step == train.steps - 1:
            log.info("step %d  loss %.4f", step, loss.item())

    if device.type == "cuda":
        torch.cuda.synchronize()
    timed_steps = train.steps - min(WARMUP_STEPS, train.steps - 1)
    samples_per_s = timed_steps * train.batch_size / (time.perf_counter() - started)
    log.info("trained %d steps: %.0f samples/s, final loss %.4f, %d threads",
             train.steps, samples_per_s, loss.item(), torch.get_num_threads())
    return {"samples_per_s": samples_per_s, "final_loss": loss.item(), "steps": train.steps,
            "num_threads": torch.get_num_threads()}


if __name__ == "__main__":
    main()
