"""The sweepers' own direction, read from their configs (bootstrap/sweepers.py). The configs are the
plugins' real ones: Optuna's is checked against an installed hydra-optuna-sweeper."""
import enum

import pytest

from bootstrap.sweep.sweepers import directions


class Direction(enum.Enum):  # the shape of hydra_plugins.hydra_optuna_sweeper.config.Direction
    minimize = 1
    maximize = 2


@pytest.mark.parametrize("sweeper, expected", [
    ({"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper", "max_batch_size": None}, None),
    ({"direction": "maximize"}, ("max",)),
    ({"direction": "minimize"}, ("min",)),
    ({"direction": Direction.maximize}, ("max",)),
    ({"direction": "Direction.maximize"}, ("max",)),
    ({"direction": 2}, ("max",)),
    ({"direction": ["minimize", "maximize"]}, ("min", "max")),
    ({"direction": ["minimize", "sideways"]}, None),  # a shape this does not know: the default holds
    ({"direction": []}, None),
    ({"optim": {"optimizer": "OnePlusOne", "maximize": True}}, ("max",)),
    ({"optim": {"maximize": False}}, ("min",)),
    ({"ax_config": {"experiment": {"minimize": False}}}, ("max",)),
    ({"ax_config": {"experiment": {"minimize": True}}}, ("min",)),
    (None, None), ("maximize", None), ({"direction": None}, None),
])
def test_each_sweepers_direction(sweeper, expected):
    assert directions(sweeper) == expected


def test_optunas_own_config_reads_as_it_minimises_by_default():
    from omegaconf import OmegaConf

    from hydra_plugins.hydra_optuna_sweeper.config import Direction as OptunaDirection
    from hydra_plugins.hydra_optuna_sweeper.config import OptunaSweeperConf

    default = OmegaConf.to_container(OmegaConf.structured(OptunaSweeperConf))
    assert directions(default) == ("min",)
    assert directions({**default, "direction": OptunaDirection.maximize}) == ("max",)
