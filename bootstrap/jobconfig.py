"""A Hydra job's config, read into the arguments of a :class:`~bootstrap.session.Session`.

The one place that reads Hydra's job config, used by the callback (at job start) and by
``bootstrap doctor`` (on a config it composed), so both find the preset and the
overrides the same way.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from omegaconf import DictConfig, OmegaConf

from bootstrap import overrides, presets
from bootstrap.errors import BootstrapError


def typed_overrides(config: DictConfig) -> List[str]:
    """The job's command-line overrides as typed. Reading ``hydra.overrides.task`` through
    OmegaConf would resolve interpolations inside the strings: a secret's value from
    ``${oc.env:HF_TOKEN}``, or an error for ``${.lr}``."""
    return [str(o) for o in OmegaConf.to_container(config.hydra.overrides.task, resolve=False)]


def find_preset(config: DictConfig, config_key: Optional[str] = None) -> Tuple[str, Any]:
    """``(key, node)`` of the job's preset: ``config_key`` if given, else the first of ``presets.KEYS``."""
    keys = (config_key,) if config_key else presets.KEYS
    for key in keys:
        node = OmegaConf.select(config, key)
        if node is not None:
            return key, node
    raise BootstrapError(
        f"hydra/callbacks=bootstrap is enabled but the config has no {' or '.join(repr(k) for k in keys)} node. "
        f"Choose a preset: add '- {keys[-1]}: {presets.CPU_PRESET}' to the defaults list (after the app's own "
        f"defaults), or pass +{keys[-1]}={presets.CPU_PRESET}."
    )


def session_args(config: DictConfig, config_key: Optional[str] = None) -> Dict[str, Any]:
    """Keyword arguments for ``Session(...)`` from a job config that holds its ``hydra`` node."""
    hydra_cfg = config.hydra
    typed = typed_overrides(config)
    key, env_cfg = find_preset(config, config_key)
    return dict(env_cfg=env_cfg, name=hydra_cfg.runtime.choices.get(key), key=key,
                env_set=hydra_cfg.job.env_set, explicit_vars=overrides.var_names(typed, key),
                job_overrides=typed, job_num=hydra_cfg.job.get("num"))
