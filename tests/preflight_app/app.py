"""A 2-rank job for the preflight's tests (tests/e2e/test_preflight.py), started through pinned.sh.

Rank 1 can be told to stall in the task (``stall_s``): with ``env.preflight.mode=off`` on rank 1 only, it
never enters the check, and rank 0's check must name it within its budget instead of waiting.
"""

import logging
import time

import hydra
import torch
import torch.distributed as dist

import bootstrap

log = logging.getLogger(__name__)


@hydra.main(config_path="conf", config_name="app", version_base="1.3")
def main(cfg) -> float:
    session = bootstrap.current()
    if session.rank == 1 and cfg.stall_s:
        time.sleep(cfg.stall_s)  # stuck elsewhere: it never comes to the check
        return 0.0
    total = torch.ones(1)
    dist.all_reduce(total)  # trains: the group works after the check
    log.info("rank %d trained with %d ranks", session.rank, int(total.item()))
    return float(total.item())


if __name__ == "__main__":
    main()
