"""``env=auto``: pick the preset from the hardware.

Hydra chooses a config group option at compose time and cannot call a detector in
the defaults list, so ``auto`` is a preset of its own (``conf/env/auto.yaml`` sets
``auto: true``), and the session resolves it at job start: detect the machine, pick
a preset with :func:`choose` (pure), compose that preset through Hydra from the same
search path, and put the job's own ``env.*`` overrides on top (:func:`resolve`).
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

from packaging.version import Version

from bootstrap.core import compose, presets
from bootstrap.core.schema import EnvConfig, load
from bootstrap.core.versions import Found
from bootstrap.doors import overrides
from bootstrap.doors.errors import ConfigError
from bootstrap.doors.lean import lean_dataclass

# Compute capability family -> preset, newest first. A GPU outside every family gets
# the nearest lower preset (and a warning); no GPU gets cpu_debug.
GPU_PRESETS = (
    ("9.0", "h100"),  # Hopper
    ("8.0", "a100"),  # Ampere
)


@lean_dataclass(frozen=True)
class Choice:
    """``env=auto`` resolved to ``preset`` for ``reason`` (the report's ``resolved``)."""

    preset: str
    reason: str  # shown as "auto -> <preset> (<reason>)"
    warning: Optional[str] = None  # the machine fits no preset's family exactly


def choose(found: Found) -> Choice:
    if found.gpus == 0 or found.compute_capability is None:
        return Choice(presets.CPU_PRESET, "no CUDA device")
    capability = Version(found.compute_capability)
    gpu = found.gpu_names[0] if found.gpu_names else "the GPU"
    for minimum, preset in GPU_PRESETS:
        if capability >= Version(minimum):
            if capability.major == Version(minimum).major:
                return Choice(preset, f"{gpu}, compute capability {found.compute_capability}")
            return Choice(preset, f"{gpu}, compute capability {found.compute_capability}",
                          warning=f"env=auto: no preset for {gpu} (compute capability {found.compute_capability}); "
                                  f"using the nearest lower one, {preset}.")
    return Choice(presets.CPU_PRESET, f"{gpu}, compute capability {found.compute_capability}",
                  warning=f"env=auto: {gpu} (compute capability {found.compute_capability}) is older than every "
                          f"GPU preset; using {presets.CPU_PRESET}.")


_NODE = "bootstrap_auto_choice"


def resolve(key: str, job_overrides: Sequence[str], found: Found) -> Tuple[EnvConfig, Choice]:
    """The preset this machine calls for, validated, with the job's own ``key.*`` overrides
    re-applied on it (:func:`bootstrap.doors.overrides.reapplied`), and why it was chosen."""
    choice = choose(found)
    # Composed under a node of its own: the job's key may sit under `hydra` (the callback's node),
    # which a plain compose leaves out.
    again = [text.replace(f"{key}.", f"{_NODE}.", 1) for text in overrides.reapplied(job_overrides, key)]
    preset = load(compose.preset(choice.preset, _NODE, again, group=presets.group_for(key)))
    if preset.auto:
        raise ConfigError(f"{key}={choice.preset} sets auto: true itself; only {key}=auto may.")
    return preset, choice
