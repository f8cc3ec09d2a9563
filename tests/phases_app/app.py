"""A job for the start's phases (tests/e2e/test_phases.py): a model under DDP, a checkpoint loaded in a phase of
the task's own (``session.phase("load_checkpoint")``), and a loop through ``session.watch``.

Rank ``slow_rank`` loads a checkpoint far larger than the others' (``large.pt``), for real: its load_checkpoint
phase is the world's slowest. The task returns the wall-clock time at the end of its first step
(``first_step_ns``, ``time.time_ns()``: the last thing the loop's body does before the loop comes back for the
next batch, where the watch marks the step) and at the start of its second (``second_step_ns``: the first thing
after the mark), so that the mark lies between the two whatever the scheduler did between them.
"""

import time
from pathlib import Path

import hydra
import torch

import bootstrap


@hydra.main(config_path="conf", config_name="app", version_base="1.3")
def main(cfg) -> dict:
    session = bootstrap.current()
    model = torch.nn.Linear(64, 8)
    if session.world_size > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with session.phase("load_checkpoint"):
        name = "large.pt" if session.rank == cfg.slow_rank else "small.pt"
        checksum = float(torch.load(Path(cfg.checkpoints) / name)["weights"].sum())  # every byte read
    first_step_ns = second_step_ns = 0
    for step, _ in enumerate(session.watch(range(cfg.steps))):
        if step == 1:
            second_step_ns = time.time_ns()
        loss = model(torch.randn(32, 64)).pow(2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # under DDP every rank meets here
        optimizer.step()
        if step == 0:
            first_step_ns = time.time_ns()
    return {"first_step_ns": float(first_step_ns), "second_step_ns": float(second_step_ns), "checksum": checksum}


if __name__ == "__main__":
    main()
