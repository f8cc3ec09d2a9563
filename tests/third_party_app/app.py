"""A Hydra app that knows nothing of this repository: it only installs the package.

The task records what it sees (threads, a probe variable, where bootstrap came from)
so the tests can check each job got exactly its own settings.
"""

import json
import os
from pathlib import Path

import hydra
import torch
from hydra.core.hydra_config import HydraConfig


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg):
    import bootstrap  # imported by Hydra's plugin scan already; here only to record where from

    threads = torch.get_num_threads()
    probe = os.environ.get("PROBE_VAR")
    observed = {"threads": threads, "probe": probe, "pid": os.getpid(), "bootstrap_file": bootstrap.__file__}
    Path(HydraConfig.get().runtime.output_dir, "observed.json").write_text(json.dumps(observed))
    if cfg.fail:
        raise RuntimeError("the task failed on purpose")
    session = bootstrap.current()
    if session.world_size > 1:
        if session.rank == cfg.fail_rank:
            raise RuntimeError(f"rank {session.rank} failed on purpose")
        torch.distributed.all_reduce(torch.ones(1))  # the other ranks wait here for the failed one
    # A deterministic "throughput" so the summary's order can be checked.
    return {"samples_per_s": 100.0 * threads + (5.0 if probe else 0.0), "final_loss": 0.5}


if __name__ == "__main__":
    main()
