"""A Hydra app whose task fails with secrets in its own error text, for tests/unit/test_doors.py.

The error holds a URL password, an ``hf_`` token, the value of a secret variable from the shell
(no known prefix), the app's own ``db.password`` and terminal escapes; the task also logs it
through a logger of its own. Under torchrun, only ``fail_rank`` raises; the others wait in a
collective for it.
"""

import logging
import os

import hydra
import torch

import bootstrap

log = logging.getLogger("their_app.training")


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg):
    session = bootstrap.current()
    if session.rank == cfg.fail_rank:
        message = (f"cannot reach postgres://trainer:pw_URL_{cfg.tag}@db.internal/runs with "
                   f"hf_{cfg.tag}abcdefghijklmnopqrstuvwxyz, shell secret {os.environ.get('TEAM_SECRET_VALUE')}, "
                   f"config password {cfg.db.password}\x1b]0;retitled\x07\r\nrank 0 never entered collective #9")
        log.error("about to fail: %s", message)
        raise RuntimeError(message)
    if session.world_size > 1:
        torch.distributed.all_reduce(torch.ones(1))  # the other ranks wait here for the failed one
    return 0.5


if __name__ == "__main__":
    main()
