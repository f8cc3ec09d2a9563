"""Which way a sweeper optimises, read from its own config. Pure.

When the sweep's objective is the task's returned value and no mode is set, the summary and
``tune`` rank the jobs the way the sweeper itself does: Optuna's ``hydra.sweeper.direction``
(a string, an enum, or a list for several objectives), Nevergrad's
``hydra.sweeper.optim.maximize``, Ax's ``hydra.sweeper.ax_config.experiment.minimize``. The
basic sweeper states none.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Tuple

_WORDS = {"maximize": "max", "maximise": "max", "max": "max", "minimize": "min", "minimise": "min", "min": "min"}


def _mode(value: Any) -> Optional[str]:
    """``"maximize"``, ``Direction.maximize``, ``"Direction.maximize"`` or ``2`` (Optuna's enum value) -> max."""
    name = getattr(value, "name", value)  # an enum member
    if isinstance(name, int) and not isinstance(name, bool):
        return {1: "min", 2: "max"}.get(name)  # optuna.study.StudyDirection: MINIMIZE=1, MAXIMIZE=2
    if not isinstance(name, str):
        return None
    return _WORDS.get(name.rsplit(".", 1)[-1].strip().lower())


def directions(sweeper: Any) -> Optional[Tuple[str, ...]]:
    """The sweeper's direction per objective (``("max",)``, ``("min", "max")``), or None when its config
    states none (or states it in a shape this does not know: then the caller's default holds)."""
    if not isinstance(sweeper, Mapping):
        return None
    if "direction" in sweeper:  # Optuna
        stated = sweeper["direction"]
        listed = stated if isinstance(stated, (list, tuple)) else [stated]
        modes = tuple(mode for mode in map(_mode, listed) if mode is not None)
        return modes if modes and len(modes) == len(listed) else None  # one direction it does not know: none
    optim = sweeper.get("optim")
    if isinstance(optim, Mapping) and isinstance(optim.get("maximize"), bool):  # Nevergrad
        return ("max" if optim["maximize"] else "min",)
    ax_config = sweeper.get("ax_config")
    experiment = ax_config.get("experiment") if isinstance(ax_config, Mapping) else None
    if isinstance(experiment, Mapping) and isinstance(experiment.get("minimize"), bool):  # Ax
        return ("min" if experiment["minimize"] else "max",)
    return None
