"""Mesh shapes and the seeding policy: pure functions."""
import pytest

from bootstrap.distributed.mesh import coordinate, resolve_mesh
from bootstrap.distributed.seeding import data_seed, global_seed
from bootstrap.doors.errors import ConfigError


@pytest.mark.parametrize("dims, world, shape", [
    ({"dp": -1}, 1, {"dp": 1}),
    ({"dp": -1}, 8, {"dp": 8}),
    ({"dp": -1, "tp": 2}, 8, {"dp": 4, "tp": 2}),
    ({"pp": 2, "dp": -1, "tp": 2}, 8, {"pp": 2, "dp": 2, "tp": 2}),
    ({"dp": 2, "tp": 4}, 8, {"dp": 2, "tp": 4}),
])
def test_resolve_mesh(dims, world, shape):
    assert resolve_mesh(dims, world) == shape


@pytest.mark.parametrize("dims, world, fragment", [
    ({"dp": 2, "tp": 3}, 8, "dp(2) * tp(3) = 6 != WORLD_SIZE(8)"),
    ({"dp": 3}, 2, "dp(3) = 3 != WORLD_SIZE(2)"),
    ({"dp": -1, "tp": 3}, 8, "8 is not divisible by 3"),
    ({"dp": -1, "tp": -1}, 8, "only one dimension can be -1"),
    ({"dp": 0}, 1, "sizes must be positive or -1"),
    ({}, 1, "is empty"),
])
def test_bad_meshes_name_the_values(dims, world, fragment):
    with pytest.raises(ConfigError) as err:
        resolve_mesh(dims, world)
    assert fragment in str(err.value) and "env.distributed.mesh" in str(err.value)


def test_coordinates_follow_init_device_mesh_row_major_layout():
    mesh = {"pp": 2, "dp": 2, "tp": 2}  # ranks 0..7 as arange(8).view(2, 2, 2)
    assert [coordinate(r, mesh, "pp") for r in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [coordinate(r, mesh, "dp") for r in range(8)] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert [coordinate(r, mesh, "tp") for r in range(8)] == [0, 1, 0, 1, 0, 1, 0, 1]
    assert coordinate(5, {"dp": 8}, "pp") == 0


def test_seeding_policy():
    # data-parallel replicas (same pp stage) share the model-init seed; stages differ by 100, as in Megatron
    mesh = {"pp": 2, "dp": 2}
    seeds = [global_seed(42, coordinate(r, mesh, "pp")) for r in range(4)]
    assert seeds == [42, 42, 142, 142]
    assert [data_seed(42, r, per_rank=True) for r in range(4)] == [42, 43, 44, 45]
    assert {data_seed(42, r, per_rank=False) for r in range(4)} == {42}
