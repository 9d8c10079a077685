"""A real single-node Slurm cluster for the tests (see cluster.py); the pytest fixtures
that share one per test session are in fixture.py."""
from .cluster import Cluster, have_slurm
from .common import TEST_USER, ClusterError

__all__ = ["Cluster", "ClusterError", "TEST_USER", "have_slurm"]
