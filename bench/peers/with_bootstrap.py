"""The tiny task, started by hydra-train-bootstrap: the two config lines and one accessor."""

import sys
from pathlib import Path

import hydra
import torch  # noqa: F401  as every training script does

import bootstrap

sys.path.insert(0, str(Path(__file__).parent))
from task import first_step  # noqa: E402


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg):
    first_step(bootstrap.current().device)


if __name__ == "__main__":
    main()
