"""``env=auto``: pick the preset from the hardware.

Hydra chooses a config group option at compose time and cannot call a detector in
the defaults list, so ``auto`` is a preset of its own (``conf/env/auto.yaml`` sets
``auto: true``), and the session resolves it at job start: detect the machine, pick
a preset with :func:`choose` (pure), compose that preset through Hydra from the same
search path, and put the job's own ``env.*`` overrides on top (:func:`resolve`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from packaging.version import Version

from bootstrap import overrides, presets
from bootstrap.errors import ConfigError
from bootstrap.schema import EnvConfig, load
from bootstrap.versions import Found

# Compute capability family -> preset, newest first. A GPU outside every family gets
# the nearest lower preset (and a warning); no GPU gets cpu_debug.
GPU_PRESETS = (
    ("9.0", "h100"),  # Hopper
    ("8.0", "a100"),  # Ampere
)
CPU_PRESET = presets.CPU_PRESET


@dataclass(frozen=True)
class Choice:
    """``env=auto`` resolved to ``preset`` for ``reason`` (the report's ``resolved``)."""

    preset: str
    reason: str  # shown as "auto -> <preset> (<reason>)"
    warning: Optional[str] = None  # the machine fits no preset's family exactly


def choose(found: Found) -> Choice:
    if found.gpus == 0 or found.compute_capability is None:
        return Choice(CPU_PRESET, "no CUDA device")
    capability = Version(found.compute_capability)
    gpu = found.gpu_names[0] if found.gpu_names else "the GPU"
    for minimum, preset in GPU_PRESETS:
        if capability >= Version(minimum):
            if capability.major == Version(minimum).major:
                return Choice(preset, f"{gpu}, compute capability {found.compute_capability}")
            return Choice(preset, f"{gpu}, compute capability {found.compute_capability}",
                          warning=f"env=auto: no preset for {gpu} (compute capability {found.compute_capability}); "
                                  f"using the nearest lower one, {preset}.")
    return Choice(CPU_PRESET, f"{gpu}, compute capability {found.compute_capability}",
                  warning=f"env=auto: {gpu} (compute capability {found.compute_capability}) is older than every "
                          f"GPU preset; using {CPU_PRESET}.")


_NODE = "bootstrap_auto_choice"


def compose_preset(preset: str, key: str, overrides: Sequence[str], group: Optional[str] = None):
    """The chosen preset, composed by Hydra from the running app's search path into the node ``key``
    (from ``group``, by default the one that fills ``key``), with overrides on top.

    Outside a Hydra app (the plain API), from this package's config directory.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    arguments = [f"+{group or presets.group_for(key)}@{key}={preset}", *overrides]
    if GlobalHydra.instance().is_initialized():
        return compose(overrides=arguments)[key]
    with initialize_config_dir(config_dir=str(presets.CONF_DIR), version_base="1.3"):
        return compose(overrides=arguments)[key]


def resolve(key: str, job_overrides: Sequence[str], found: Found) -> Tuple[EnvConfig, Choice]:
    """The preset this machine calls for, validated, with the job's own ``key.*`` overrides
    re-applied on it (:func:`bootstrap.overrides.reapplied`), and why it was chosen."""
    choice = choose(found)
    # Composed under a node of its own: the job's key may sit under `hydra` (the callback's node),
    # which a plain compose leaves out.
    again = [text.replace(f"{key}.", f"{_NODE}.", 1) for text in overrides.reapplied(job_overrides, key)]
    preset = load(compose_preset(choice.preset, _NODE, again, group=presets.group_for(key)), key)
    if preset.auto:
        raise ConfigError(f"{key}={choice.preset} sets auto: true itself; only {key}=auto may.")
    return preset, choice
