"""A hydra-zen app: its primary config is a dataclass made by ``builds``, with no YAML and no ``env``
field. The bootstrap is enabled from the command line alone, or in its defaults (tests/e2e/test_app_styles.py):

    python app.py hydra/callbacks=bootstrap '+env@hydra.callbacks.bootstrap.env=cpu_debug'
    python app.py --config-name train_with_env -m env.threads.intra_op=1,2   # in its defaults
"""

import json
import os
from pathlib import Path

import torch
from hydra.core.hydra_config import HydraConfig
from hydra_zen import builds, make_config, store, zen


def train(lr: float = 0.1, fail: bool = False, two_objectives: bool = False):
    import bootstrap

    session = bootstrap.current()
    observed = {"threads": torch.get_num_threads(), "omp": os.environ.get("OMP_NUM_THREADS"),
                "world_size": session.world_size, "device": session.device}
    Path(HydraConfig.get().runtime.output_dir, "observed.json").write_text(json.dumps(observed))
    if fail:
        raise RuntimeError("the task failed on purpose")
    return (lr * 2, -lr) if two_objectives else lr * 2


store(builds(train, populate_full_signature=True), name="train")
# The bootstrap in the app's own defaults (docs/presets.md): `_self_` first, and the preset's node declared.
store(make_config(env=None, hydra_defaults=["_self_", {"env": "cpu_debug"}, {"override hydra/callbacks": "bootstrap"}],
                  bases=(builds(train, populate_full_signature=True),)),
      name="train_with_env")

if __name__ == "__main__":
    store.add_to_hydra_store()
    zen(train).hydra_main(config_name="train", config_path=None, version_base="1.3")
