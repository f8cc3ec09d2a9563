"""Every Hydra app style and launcher plugin: a hydra-zen app whose primary config is a dataclass,
enabled from the command line alone, and hydra-ray-launcher's workers.

The apps are real: tests/zen_app (hydra-zen's builds/store/zen, no YAML) and train_stub.py under
``hydra/launcher=ray`` on a local Ray cluster of 2 CPUs.
"""
import pickle

from bootstrap import BootstrapCallback


def test_the_callback_keeps_no_preset_it_was_built_with():
    callback = BootstrapCallback(env={"vars": {"HF_TOKEN": "hf_built_with_it"}, "threads": {"intra_op": 3}})
    assert b"hf_built_with_it" not in pickle.dumps(callback)  # joblib and submitit pickle it, submitit to disk
    assert not any("intra_op" in repr(v) for v in vars(callback).values())
