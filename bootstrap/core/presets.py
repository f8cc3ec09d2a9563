"""Where the shipped presets live, and where a job's config holds its preset. Pure.

The YAML files under ``conf/env`` are the single source of the presets. The wheel ships
them as ``bootstrap/conf`` (a link to the top-level ``conf/`` in a checkout), and Hydra
finds them through ``pkg://bootstrap.conf`` (``hydra_plugins/hydra_train_bootstrap``).
"""

from __future__ import annotations

from pathlib import Path

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"  # this checkout's conf/ (a link), or the wheel's copy
PRESET_DIR = CONF_DIR / "env"

GROUP = "env"
FABRIC_GROUP = "fabric"  # the fabric presets, a group inside the presets: env/fabric=aws_efa (conf/env/fabric)
# The same presets again, for apps that already have a config group named ``env``.
ALIAS_GROUP = "bootstrap_env"
# Where a job config keeps its preset, in the order they are tried: an app that uses
# ``bootstrap_env`` has an ``env`` node of its own that is not ours.
KEYS = (ALIAS_GROUP, GROUP)
CPU_PRESET = "cpu_debug"  # the default, and the one suggested when a GPU preset does not fit
# The preset beneath the callback's own node: the form that works for every primary config,
# dataclass ones (hydra-zen, Hydra's structured configs) included, which refuse a new top-level
# key (`+env=...`): `hydra/callbacks=bootstrap '+env@hydra.callbacks.bootstrap.env=cpu_debug'`.
CALLBACK_KEY = "hydra.callbacks.bootstrap.env"


def choose_override(key: str, preset: str, prefix: str = "") -> str:
    """The override that chooses ``preset`` for the node ``key``: ``env=h100``, ``+env=h100`` (``prefix``)
    or ``+env@hydra.callbacks.bootstrap.env=h100``."""
    if key == CALLBACK_KEY:
        return f"+{GROUP}@{CALLBACK_KEY}={preset}"
    return f"{prefix}{key}={preset}"


def group_for(key: str) -> str:
    """The config group whose options fill the node ``key``."""
    return ALIAS_GROUP if key == ALIAS_GROUP else GROUP
