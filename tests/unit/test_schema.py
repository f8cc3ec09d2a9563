"""The preset schema, through Hydra's real compose API and through validate()."""
import typing
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

import bootstrap  # noqa: F401  registers the schema
from bootstrap.core.schema import TorchSettings
from bootstrap.core.schema import load as load_preset
from bootstrap.doors.errors import ConfigError
from bootstrap.doors.torch_settings import SETTINGS

CONF = Path(__file__).resolve().parents[2] / "conf"
PRESETS = ["cpu_debug", "a100", "h100"]


def compose_env(*overrides, config_dir=CONF):
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides)).env


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_composes_against_the_schema_and_validates(name):
    env = compose_env(f"env={name}")
    assert OmegaConf.get_type(env).__name__ == "EnvConfig"
    preset = load_preset(env)
    assert preset.threads.intra_op == "auto"


def test_preset_requirements():
    h100, a100, cpu = (load_preset(compose_env(f"env={n}")) for n in ("h100", "a100", "cpu_debug"))
    assert (h100.requires.cuda, h100.requires.compute_capability) == (">=11.8", "9.0")
    assert a100.requires.compute_capability == "8.0"
    assert cpu.requires.cuda is None and cpu.requires.gpus is None and cpu.device == "cpu"
    assert (h100.torch.matmul_precision, a100.torch.matmul_precision) == ("high", "high")  # TF32


def test_each_torch_setting_has_one_row_in_the_table_of_the_same_name_order_and_type():
    # The rows drive capture, apply, restore, the report and the doctor: a field without one would do nothing.
    fields = typing.get_type_hints(TorchSettings)
    assert [setting.name for setting in SETTINGS] == list(fields)
    assert all(issubclass(fields[setting.name], setting.kind) for setting in SETTINGS)  # MatmulPrecision is a str


@pytest.mark.parametrize("override, key", [
    ("env.threds.intra_op=2", "env.threds"),
    ("env.on_mismatch=maybe", "env.on_mismatch"),
    ("env.seed=abc", "env.seed"),
    ("env.requires.gpus=many", "env.requires.gpus"),
    ("env.threads.intra_op=[1,2]", "env.threads.intra_op"),
    ("env.torch.detect_anomaly=maybe", "env.torch.detect_anomaly"),
    ("env.distributed.agree=maybe", "env.distributed.agree"),
])
def test_typos_and_wrong_types_fail_at_compose_time_naming_the_key(override, key):
    with pytest.raises(ConfigCompositionException) as err:
        compose_env(override)
    assert key in str(err.value.__cause__) or key in str(err.value)


@pytest.mark.parametrize("override, fragment", [
    ("env.threads.intra_op=abc", "env.threads.intra_op='abc' is not a thread count"),
    ("env.threads.intra_op=0", "env.threads.intra_op=0 is not a thread count"),
    ("env.threads.inter_op=-2", "env.threads.inter_op=-2 is not a thread count"),
    ("env.seed=-1", "env.seed=-1 is out of range"),
    ("env.requires.torch='>>2'", "env.requires.torch='>>2' is not a version specifier"),
    ("env.requires.compute_capability=nine", "env.requires.compute_capability='nine' is not a version"),
])
def test_values_the_type_system_cannot_express_fail_validation_naming_the_key(override, fragment):
    env = compose_env(override)
    with pytest.raises(ConfigError) as err:
        load_preset(env)
    assert fragment in str(err.value)


def test_a_user_preset_extends_a_shipped_one_and_overrides_any_key(tmp_path):
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "my_cluster.yaml").write_text(
        "defaults:\n  - h100\n  - _self_\nthreads:\n  intra_op: 8\nvars:\n  NCCL_IB_DISABLE: 1\n")
    (tmp_path / "config.yaml").write_text("defaults:\n  - env: my_cluster\n  - _self_\n")
    with initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"):
        # the shipped presets come from this repository's conf/ on the search path
        env = compose(config_name="config", overrides=[f"hydra.searchpath=[file://{CONF}]"]).env
    preset = load_preset(env)
    assert preset.threads.intra_op == 8
    assert preset.requires.compute_capability == "9.0"
    assert preset.vars["NCCL_IB_DISABLE"] == 1 and preset.vars["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == 3


def test_plain_dicts_are_validated_too():
    assert load_preset({"threads": {"intra_op": 3}}).threads.intra_op == 3
    with pytest.raises(ConfigError, match="env.threds"):
        load_preset({"threds": {"intra_op": 3}})
    with pytest.raises(ConfigError, match="env.on_mismatch"):
        load_preset({"on_mismatch": "maybe"})


@pytest.mark.parametrize("name", PRESETS)
def test_bootstrap_env_is_the_same_preset_under_a_second_name(name):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        ours = compose(config_name="config", overrides=[f"env={name}"]).env
        alias = compose(config_name="config", overrides=[f"+bootstrap_env={name}"]).bootstrap_env
    assert OmegaConf.to_container(alias) == OmegaConf.to_container(ours)


# -- the preset's key in messages: the Session names it once ----------------------------------
CALLBACK_KEY = "hydra.callbacks.bootstrap.env"


def test_a_refused_value_names_the_preset_where_the_callback_holds_it():
    from bootstrap.core.session import Session

    with pytest.raises(ConfigError) as refused:
        Session({"threads": {"intra_op": 0}}, key=CALLBACK_KEY)
    assert str(refused.value).startswith(f"{CALLBACK_KEY}.threads.intra_op=0 is not a thread count. "
                                         f"Use a positive integer ({CALLBACK_KEY}.threads.intra_op=2)")


def test_a_plan_refused_in_the_doctors_preview_names_the_callbacks_key_too():
    from bootstrap.core.session import Session

    with pytest.raises(ConfigError, match=f"^{CALLBACK_KEY}.threads.inter_op=100000000 is far beyond"):
        Session({"threads": {"inter_op": 10**8}}, key=CALLBACK_KEY).preview()


def test_an_error_raised_outside_a_session_names_the_preset_env():
    with pytest.raises(ConfigError, match=r"^env\.seed=-1 is out of range\. .* e\.g\. env\.seed=0\.$"):
        load_preset({"seed": -1})


# -- the final config, not only what Hydra merges in struct mode (issue 28, class 9) ---------------------
def _job_start_refusal(*overrides) -> str:
    """What the real callback says at job start for train_stub's config composed with ``overrides``."""
    from bootstrap.adapter.callback import BootstrapCallback

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="config", return_hydra_config=True, overrides=[
            "hydra.runtime.output_dir=/nonexistent/never-written", *overrides])
    with pytest.raises(SystemExit) as stopped:
        BootstrapCallback().on_job_start(config=cfg)
    return str(stopped.value.code)


@pytest.mark.parametrize("prefix, overrides", [
    ("env", []),
    ("bootstrap_env", ["~env", "+bootstrap_env=cpu_debug"]),
    ("hydra.callbacks.bootstrap.env", ["~env", "+env@hydra.callbacks.bootstrap.env=cpu_debug"]),
])
def test_a_key_added_with_plus_is_refused_in_every_form_of_the_preset(prefix, overrides):
    """Hydra's hint for a typo (`+env.threds.intra_op=1`) adds the key outside struct mode; the job would have
    run with it ignored. Now the job refuses it, naming the key, its form and the nearest known key."""
    said = _job_start_refusal(*overrides, f"+{prefix}.threds.intra_op=1")
    assert f"{prefix}.threds: the preset has no such setting" in said
    assert f"Did you mean {prefix}.threads?" in said


@pytest.mark.parametrize("tree, where, nearest", [
    ({"threds": {"intra_op": 1}}, "env.threds", "env.threads"),
    ({"torch": {"determinstic": True}}, "env.torch.determinstic", "env.torch.deterministic"),
    ({"distributed": {"flight_recorder": {"buffer_sise": 5}}}, "env.distributed.flight_recorder.buffer_sise",
     "env.distributed.flight_recorder.buffer_size"),
    ({"requires": {"cudaa": ">=12"}}, "env.requires.cudaa", "env.requires.cuda"),
    ({"zzz": 1}, "env.zzz", None),
])
def test_every_key_the_schema_does_not_know_is_refused_naming_it_and_the_nearest(tree, where, nearest):
    with pytest.raises(ConfigError) as refused:
        load_preset(OmegaConf.create(tree))
    said = str(refused.value)
    assert said.startswith(f"{where}: the preset has no such setting")
    assert (f"Did you mean {nearest}?" in said) if nearest else "Did you mean" not in said


def test_the_free_form_maps_take_any_key():
    preset = load_preset(OmegaConf.create({"vars": {"ANY_NAME_AT_ALL": 1}, "distributed": {"mesh": {"zz": -1}}}))
    assert preset.vars == {"ANY_NAME_AT_ALL": 1} and preset.distributed.mesh == {"dp": -1, "zz": -1}  # merged


def test_the_doctor_refuses_what_the_job_refuses(doctor_here, tmp_path):
    answer = doctor_here("+env.threds.intra_op=1", cwd=tmp_path)
    assert answer.returncode == 1 and "env.threds: the preset has no such setting" in answer.stderr
