"""``env=auto``: pick the preset from the hardware.

Hydra chooses a config group option at compose time and cannot call a detector in
the defaults list, so ``auto`` is a preset of its own (``conf/env/auto.yaml`` sets
``auto: true``), and the session resolves it at job start: detect the machine, pick
a preset with :func:`choose` (pure), compose that preset through Hydra from the same
search path, and put the job's own ``env.*`` overrides on top, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

from packaging.version import Version

from bootstrap.versions import Found

# Compute capability family -> preset, newest first. A GPU outside every family gets
# the nearest lower preset (and a warning); no GPU gets cpu_debug.
GPU_PRESETS = (
    ("9.0", "h100"),  # Hopper
    ("8.0", "a100"),  # Ampere
)
CPU_PRESET = "cpu_debug"


@dataclass(frozen=True)
class Choice:
    preset: str
    reason: str  # shown as "auto -> <preset> (<reason>)"
    warning: Optional[str] = None


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


def env_overrides(task_overrides: Sequence[str], key: str) -> List[str]:
    """The job's own overrides of keys under ``key`` (not the preset choice itself), to re-apply
    on the chosen preset.

    They were written against ``auto.yaml``, which sets no variables: a variable of the
    chosen preset had to be added there (``+env.vars.X=1``) but exists in the chosen one,
    where ``+`` would fail. So every override is re-applied as ``++`` (add or override);
    deletions (``~``) stay as they are.
    """
    picked = []
    for override in task_overrides:
        lhs = override.split("=", 1)[0]
        if lhs.lstrip("+~").startswith(f"{key}."):
            picked.append(override if lhs.startswith("~") else "++" + override.lstrip("+"))
    return picked


def compose_preset(preset: str, key: str, overrides: Sequence[str]):
    """The chosen preset, composed by Hydra from the running app's search path, with overrides on top.

    Outside a Hydra app (the plain API), from this package's config directory.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    group = "bootstrap_env" if key == "bootstrap_env" else "env"
    arguments = [f"+{group}@{key}={preset}", *overrides]
    if GlobalHydra.instance().is_initialized():
        return compose(overrides=arguments)[key]
    from bootstrap.doctor import PACKAGED_CONF

    with initialize_config_dir(config_dir=str(PACKAGED_CONF), version_base="1.3"):
        return compose(overrides=arguments)[key]
