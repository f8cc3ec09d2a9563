"""End to end: the real train_stub.py, the real Hydra callback, in a subprocess."""
import os
from pathlib import Path

import pytest
import torch

from bad_inputs import BAD_INPUTS, user_conf
from conftest import ROOT


def torch_settings():
    return (torch.get_num_threads(), torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark,
            torch.are_deterministic_algorithms_enabled(), torch.is_anomaly_enabled())


def _refusal(tmp_path: Path, overrides) -> str:
    """What refuses the job: Hydra while composing train_stub's config, else the real callback at job start."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from bootstrap.adapter.callback import BootstrapCallback

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        try:
            cfg = compose(config_name="config", return_hydra_config=True, overrides=[
                f"hydra.searchpath=[file://{user_conf(tmp_path)}]", f"hydra.runtime.output_dir={tmp_path / 'out'}",
                *overrides])
        except (HydraException, OmegaConfBaseException) as error:
            return f"compose: {error}"
        with pytest.raises(SystemExit) as stopped:
            BootstrapCallback().on_job_start(config=cfg)
    return f"job start: {stopped.value.code}"


@pytest.mark.parametrize("overrides, launcher_vars, fragment", BAD_INPUTS,
                         ids=[" ".join(o) or " ".join(f"{k}={v}" for k, v in e.items()) for o, e, _ in BAD_INPUTS])
def test_each_bad_input_is_refused_naming_the_key_and_changing_nothing(tmp_path, monkeypatch, overrides,
                                                                        launcher_vars, fragment):
    for name, value in launcher_vars.items():
        monkeypatch.setenv(name, value)
    environ_before, torch_before = dict(os.environ), torch_settings()
    message = _refusal(tmp_path, overrides)
    assert fragment in message, message
    assert dict(os.environ) == environ_before and torch_settings() == torch_before
    assert not (tmp_path / "out").exists()  # refused before the checks: no report


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
