"""End to end: the real train_stub.py, the real Hydra callback, in a subprocess."""
import os

import pytest
import torch

from bad_inputs import BAD_INPUTS, job_refusal


def torch_settings():
    return (torch.get_num_threads(), torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark,
            torch.are_deterministic_algorithms_enabled(), torch.is_anomaly_enabled())


@pytest.mark.parametrize("overrides, launcher_vars, fragment", BAD_INPUTS,
                         ids=[" ".join(o) or " ".join(f"{k}={v}" for k, v in e.items()) for o, e, _ in BAD_INPUTS])
def test_each_bad_input_is_refused_naming_the_key_and_changing_nothing(tmp_path, monkeypatch, overrides,
                                                                        launcher_vars, fragment):
    for name, value in launcher_vars.items():
        monkeypatch.setenv(name, value)
    environ_before, torch_before = dict(os.environ), torch_settings()
    message = job_refusal(tmp_path, overrides)
    assert fragment in message, message
    assert dict(os.environ) == environ_before and torch_settings() == torch_before
    written = sorted((tmp_path / "out").glob("bootstrap*.json"))
    if message.startswith("compose: "):  # Hydra refused it: the bootstrap never ran, and writes nothing
        assert written == []
    else:  # every input refused at job start leaves its record, however early (issue 45)
        import json

        (record,) = [json.loads(path.read_text()) for path in written]
        assert record["job"]["status"] == "check_failed" and fragment in record["job"]["error"], record["job"]


def test_the_callback_pickles_for_joblib_and_submitit():
    import pickle

    from bootstrap import BootstrapCallback

    clone = pickle.loads(pickle.dumps(BootstrapCallback(config_key="bootstrap_env")))
    assert clone.config_key == "bootstrap_env"


def test_the_pickled_callback_carries_no_environment(tmp_path, monkeypatch):
    import pickle

    from omegaconf import OmegaConf

    from bootstrap import BootstrapCallback

    monkeypatch.setenv("HTB_PLANTED_TOKEN", "planted_secret_value")
    callback = BootstrapCallback()
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}})
    callback.on_multirun_start(config=config)  # snapshots the launching environment
    try:
        assert b"planted_secret_value" not in pickle.dumps(callback)  # what submitit writes to disk
    finally:
        callback.on_multirun_end(config=config)
