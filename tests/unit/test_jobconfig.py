"""bootstrap/core/jobconfig.py: what the job's config decides before the session: the app's own seed (issue 45)."""
import pytest
from hydra import compose, initialize_config_dir

from bootstrap.core.jobconfig import session_args
from bootstrap.core.session import Session

from conftest import ROOT


def _args(*overrides):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return session_args(compose(config_name="config", overrides=list(overrides), return_hydra_config=True))


@pytest.mark.parametrize("app_seed, wins", [("null", None), ("12345", 12345)])
def test_the_apps_own_seed_wins_over_the_presets_and_says_so_once(app_seed, wins):
    # lightning-hydra-template's `seed: null` (unseeded) at the top of the app's config
    args = _args(f"+seed={app_seed}")
    session = Session(**args)
    assert session.preset.seed == wins
    (note,) = args["notes"]
    assert note.startswith(f"env.seed: the app's own seed={app_seed} wins over the preset's env.seed=0")
    preview = session.preview()
    assert preview.seed.value == wins and note in preview.warnings  # in the record, and in the doctor


def test_the_command_line_wins_over_the_apps_seed_and_an_app_without_one_keeps_the_presets():
    args = _args("+seed=null", "env.seed=7")
    assert Session(**args).preset.seed == 7 and args["notes"] == []
    args = _args()
    assert Session(**args).preset.seed == 0 and args["notes"] == []
    args = _args("+seed=0")  # the same value: nothing to say
    assert args["notes"] == []
