"""A Ray Train job whose workers start with the bootstrap: Hydra's compose API plus bootstrap.initialize.

    python tests/ray_app/train_ray.py OUT_DIR

Ray's TorchTrainer starts two workers on this machine, sets their torchrun-style variables and
makes the process group before ``train_loop`` runs. Each worker composes train_stub's config,
applies the preset, all-reduces once through Ray's group and writes ``bootstrap.rank<N>.json``.
"""

import json
import sys
from pathlib import Path

import ray
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer

CONF = Path(__file__).resolve().parents[2] / "conf"


def train_loop(config: dict) -> None:
    import torch
    import torch.distributed as dist
    from hydra import compose, initialize_config_dir

    import bootstrap

    with initialize_config_dir(config_dir=config["conf"], version_base="1.3"):
        cfg = compose(config_name="config")
    with bootstrap.initialize(cfg.env, name="cpu_debug", output_dir=config["out"]) as session:
        total = torch.tensor([float(session.rank + 1)])
        dist.all_reduce(total)  # through the group Ray made: 1 + 2
        seen = {"rank": session.rank, "world_size": session.world_size, "sum": total.item(),
                "threads": torch.get_num_threads()}
    Path(config["out"], f"seen.rank{seen['rank']}.json").write_text(json.dumps(seen))


def main(out: str) -> None:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    trainer = TorchTrainer(train_loop, train_loop_config={"conf": str(CONF), "out": out},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False,
                                                        resources_per_worker={"CPU": 1}))
    trainer.fit()
    ray.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
