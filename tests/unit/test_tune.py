"""env=auto (the mapping is pure; end to end on this CPU machine) and `bootstrap tune`."""
import pytest

from bootstrap.core.auto import choose
from bootstrap.core.versions import Found


def machine(capability=None, name="NVIDIA Test GPU"):
    return Found(python="3.11.7", torch="2.13.0", cuda="12.8" if capability else None, nccl=None, cudnn=None,
                 compute_capability=capability, gpus=1 if capability else 0,
                 gpu_names=(name,) if capability else ())


@pytest.mark.parametrize("capability, name, preset, warns", [
    (None, None, "cpu_debug", False),
    ("8.0", "NVIDIA A100-SXM4-80GB", "a100", False),
    ("8.6", "NVIDIA A10", "a100", False),
    ("9.0", "NVIDIA H100 80GB HBM3", "h100", False),
    ("10.0", "NVIDIA B200", "h100", True),
    ("7.5", "Tesla T4", "cpu_debug", True),
])
def test_the_mapping(capability, name, preset, warns):
    choice = choose(machine(capability, name))
    assert choice.preset == preset
    assert (choice.warning is not None) == warns
    if warns:
        assert name in choice.warning  # the warning names the GPU
    assert choice.reason == ("no CUDA device" if capability is None else f"{name}, compute capability {capability}")


def test_the_doctor_shows_the_resolution(doctor_here, tmp_path):
    proc = doctor_here("env=auto", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "resolved: auto -> cpu_debug (no CUDA device)" in proc.stdout


@pytest.fixture
def tune(tune_here):
    def run_tune(tmp_path, sweep, *extra):
        return tune_here(str(sweep), "--name", "mine", "--out", str(tmp_path / "conf"), *extra, cwd=tmp_path)
    return run_tune


def test_tune_refuses_an_empty_sweep(tune, tmp_path):
    (tmp_path / "empty").mkdir()
    proc = tune(tmp_path, tmp_path / "empty")
    assert proc.returncode == 1 and "holds no sweep jobs" in proc.stderr
