"""A 2-rank job that hangs on purpose, for the flight recorder's tests (tests/unit/test_hang.py).

    torchrun --standalone --nproc_per_node=2 app.py fault=skip     # rank 1 never enters all_reduce #2
    torchrun --standalone --nproc_per_node=2 app.py fault=mismatch # rank 1 broadcasts where rank 0 all-reduces
    torchrun --standalone --nproc_per_node=2 app.py fault=none     # a healthy run

The bootstrap (enabled in conf/app.yaml) makes the process group. Each rank logs a line before
each collective, so a test can tell when both ranks are where it wants them.
"""

import logging
import time

import hydra
import torch
import torch.distributed as dist

import bootstrap

log = logging.getLogger(__name__)


@hydra.main(config_path="conf", config_name="app", version_base="1.3")
def main(cfg) -> None:
    rank = bootstrap.current().rank
    tensor = torch.ones(8)
    for number in range(1, cfg.collectives + 1):
        if rank == 1 and number == cfg.fault_at and cfg.fault == "skip":
            log.info("rank 1 skips collective %d and works on alone", number)
            time.sleep(cfg.stall_s)  # stuck elsewhere: a data loader, a deadlock, a slow disk
            continue
        log.info("rank %d enters collective %d", rank, number)
        if rank == 1 and number == cfg.fault_at and cfg.fault == "mismatch":
            dist.broadcast(tensor, src=0)
        else:
            dist.all_reduce(tensor)
    log.info("rank %d done", rank)


if __name__ == "__main__":
    main()
