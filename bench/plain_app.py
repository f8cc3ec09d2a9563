"""A plain Hydra app that imports torch and does nothing: the baseline for start-up overhead.

bench/run.py gives it a config of the same size as train_stub's (composed, then dumped).
"""

import hydra
import torch  # noqa: F401


@hydra.main(config_path=None, config_name="config", version_base="1.3")
def main(cfg):
    return None


if __name__ == "__main__":
    main()
