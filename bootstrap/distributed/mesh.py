"""The device mesh's shape: named parallel dimensions whose product is the world size.

Same rule as torchtitan's ParallelDims: at most one dimension is ``-1`` and is
inferred; every other is a positive size; the product must equal the world size.
"""

from __future__ import annotations

import math
from typing import Dict, Mapping

from bootstrap.doors.errors import PRESET_KEY, ConfigError


def resolve_mesh(dims: Mapping[str, int], world_size: int) -> Dict[str, int]:
    """``{dp: -1, tp: 2}`` with world size 8 -> ``{dp: 4, tp: 2}``; raise naming the values otherwise."""
    where = f"{PRESET_KEY}.distributed.mesh"
    if not dims:
        raise ConfigError(f"{where} is empty. Name at least one dimension, e.g. {where}={{dp: -1}}.")
    inferred = [name for name, size in dims.items() if size == -1]
    bad = {name: size for name, size in dims.items() if size != -1 and (not isinstance(size, int) or size < 1)}
    if bad:
        raise ConfigError(f"{where}: sizes must be positive or -1 (inferred), got {bad}.")
    if len(inferred) > 1:
        raise ConfigError(f"{where}: only one dimension can be -1 (inferred), got {inferred}.")
    known = math.prod(size for size in dims.values() if size != -1)
    shown = " * ".join(f"{name}({size})" for name, size in dims.items())
    if inferred:
        if world_size % known:
            raise ConfigError(f"{where}: {shown} cannot fill WORLD_SIZE({world_size}): "
                              f"{world_size} is not divisible by {known}.")
        return {name: (world_size // known if size == -1 else size) for name, size in dims.items()}
    if known != world_size:
        raise ConfigError(f"{where}: {shown} = {known} != WORLD_SIZE({world_size}). "
                          f"Make the product {world_size}, or set one dimension to -1 to infer it.")
    return dict(dims)


def coordinate(rank: int, mesh: Mapping[str, int], dim: str) -> int:
    """This rank's index along ``dim``, for the row-major layout init_device_mesh uses (0 if absent)."""
    if dim not in mesh:
        return 0
    names = list(mesh)
    inner = math.prod(mesh[name] for name in names[names.index(dim) + 1:])
    return (rank // inner) % mesh[dim]
