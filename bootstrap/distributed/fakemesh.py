"""torch's own DeviceMesh at any world size, in this process, through torch's ``fake`` backend (``FakeStore``): a rank's coordinates as torch places them, or what torch raises. Touches torch's process group, and leaves none behind.

torch's fake process group "would produce wrong results for every collective" (its docstring): it is used
here only to build the mesh, whose layout and subgroups torch works out without a collective's result.
"""

from __future__ import annotations

from typing import Dict, Mapping, Sequence

from bootstrap.doors.errors import ConfigError


def coordinates(shape: Mapping[str, int], world: int, ranks: Sequence[int]) -> Dict[int, Dict[str, int]]:
    """Each of ``ranks``' coordinates in ``init_device_mesh("cpu", shape)`` over ``world`` ranks; torch's own
    exception where it refuses. Refused where this process already has a process group (it is not ours)."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        raise ConfigError("a process group exists in this process: the fake DeviceMesh is built only where none is.")
    names, sizes = tuple(shape), tuple(shape.values())
    found: Dict[int, Dict[str, int]] = {}
    for rank in ranks:
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world)
        try:
            mesh = init_device_mesh("cpu", sizes, mesh_dim_names=names)
            coordinate = list(mesh.get_coordinate() or [])
            found[rank] = dict(zip(names, (int(c) for c in coordinate), strict=True))
        finally:
            dist.destroy_process_group()
    return found
