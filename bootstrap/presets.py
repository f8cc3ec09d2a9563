"""Where the shipped presets live, and where a job's config holds its preset. Pure.

The YAML files under ``conf/env`` are the single source of the presets. The wheel ships
them as ``bootstrap/conf`` (a link to the top-level ``conf/`` in a checkout), and Hydra
finds them through ``pkg://bootstrap.conf`` (``hydra_plugins/hydra_train_bootstrap``).
"""

from __future__ import annotations

from pathlib import Path

CONF_DIR = Path(__file__).resolve().parent / "conf"  # this checkout's conf/ (a link), or the wheel's copy
PRESET_DIR = CONF_DIR / "env"

GROUP = "env"
# The same presets again, for apps that already have a config group named ``env``.
ALIAS_GROUP = "bootstrap_env"
# Where a job config keeps its preset, in the order they are tried: an app that uses
# ``bootstrap_env`` has an ``env`` node of its own that is not ours.
KEYS = (ALIAS_GROUP, GROUP)
CPU_PRESET = "cpu_debug"  # the default, and the one suggested when a GPU preset does not fit


def group_for(key: str) -> str:
    """The config group whose options fill the node ``key``."""
    return ALIAS_GROUP if key == ALIAS_GROUP else GROUP
