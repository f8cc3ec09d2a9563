"""A small, real training job: an MLP learns a fixed random "teacher" network.

The bootstrap has already run when ``main`` starts (the Hydra callback applied
the ``env`` preset, and under torchrun made the process group); this file is only
the training loop, top to bottom.

    python train_stub.py                       # cpu_debug preset
    python train_stub.py env=h100              # checks the machine first
    python train_stub.py -m env.threads.intra_op=1,2
    torchrun --standalone --nproc_per_node=2 train_stub.py
"""

import logging
import time
import warnings

# torch's CPU wheel does not depend on numpy, and `import torch` warns when it is absent
# ("Failed to initialize NumPy"). This loop never uses numpy: the warning is noise here.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)

import hydra  # noqa: E402 - after the filter above
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

import bootstrap  # noqa: E402 - also registers the preset schema with Hydra's ConfigStore

log = logging.getLogger(__name__)

IN_FEATURES = 256
CLASSES = 16
EVAL_BATCH = 1024
EVAL_SEED = 0  # the evaluation batch is the same on every rank
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

    session = bootstrap.current()
    device = torch.device(session.device)
    # Global RNGs are seeded alike on every rank, so teacher and model start identical.
    teacher = make_model(IN_FEATURES, 64, CLASSES).to(device)
    model = make_model(IN_FEATURES, train.hidden, CLASSES).to(device)
    if session.world_size > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=train.lr)
    # Each rank draws its own training batches; all ranks evaluate on one shared batch.
    # (data_seed is None under env.seed=null: the app seeds itself, here from torch's seed.)
    data_seed = session.data_seed if session.data_seed is not None else torch.initial_seed() + session.rank
    data = torch.Generator().manual_seed(data_seed)
    x_eval = torch.randn(EVAL_BATCH, IN_FEATURES, generator=torch.Generator().manual_seed(EVAL_SEED)).to(device)

    def batch(n, generator):
        x = torch.randn(n, IN_FEATURES, generator=generator).to(device)
        with torch.no_grad():
            return x, teacher(x).argmax(dim=1)

    started = None
    for step in session.watch(range(train.steps)):  # marks each finished step: the first ends the start's timeline
        if step == min(WARMUP_STEPS, train.steps - 1):
            started = time.perf_counter()
        x, y = batch(train.batch_size, data)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # under DDP this all-reduces the gradients
        optimizer.step()
        if step % train.log_every == 0 or step == train.steps - 1:
            log.info("step %d  loss %.4f", step, loss.item())

    if device.type == "cuda":
        torch.cuda.synchronize()
    timed_steps = train.steps - min(WARMUP_STEPS, train.steps - 1)
    samples_per_s = torch.tensor(timed_steps * train.batch_size / (time.perf_counter() - started))
    if session.world_size > 1:
        dist.all_reduce(samples_per_s)  # aggregate throughput of all ranks
    with torch.no_grad():
        final_loss = torch.nn.functional.cross_entropy(model(x_eval), teacher(x_eval).argmax(dim=1)).item()
    if session.rank == 0:
        log.info("trained %d steps on %d rank(s): %.0f samples/s, eval loss %.4f, %d threads",
                 train.steps, session.world_size, samples_per_s.item(), final_loss, torch.get_num_threads())
    return {"samples_per_s": samples_per_s.item(), "final_loss": final_loss, "steps": train.steps,
            "num_threads": torch.get_num_threads()}


if __name__ == "__main__":
    main()
