"""The cluster tests' fixtures (tests/cluster/fixtures.py)."""

from cluster.fixtures import cluster, slurm  # noqa: F401 - fixtures, found by name
