"""The cluster's pytest fixtures, for any test file: ``from cluster.fixtures import cluster`` (tests/ is on
pytest's path), or through tests/cluster/conftest.py for the files in this folder."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterator

import pytest

from cluster.netns import Cluster, permitted

if TYPE_CHECKING:
    from cluster.slurm import Slurm


def unavailable(why: str) -> None:
    """Skip with one line saying why; under CI=true that is a failure, so CI cannot pass without the cluster."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and the cluster cannot be built: {why}", pytrace=False)
    pytest.skip(f"no cluster here: {why}")


def nodes_wanted(request: pytest.FixtureRequest, default: int = 3) -> int:
    """How many nodes a test module wants: its ``CLUSTER_NODES`` (3 when it says nothing)."""
    return int(getattr(request.module, "CLUSTER_NODES", default))


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A cluster of ``CLUSTER_NODES`` nodes (default 3) for one test module, torn down after it, pass or fail."""
    why = permitted()
    if why:
        unavailable(why)
    with Cluster(tmp_path_factory.mktemp("cluster"), nodes_wanted(request)) as made:
        yield made


@pytest.fixture(scope="module")
def slurm(cluster: Cluster) -> Iterator["Slurm"]:
    """A real SLURM on the module's cluster: munged, slurmctld on the head, one slurmd per node, all idle."""
    from cluster.slurm import Slurm, missing

    why = missing()
    if why:
        unavailable(why)
    yield Slurm(cluster).up()
    # the cluster's teardown kills the daemons and every job step by PID
