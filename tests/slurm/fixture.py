"""pytest fixtures for the Slurm test cluster (imported by tests/conftest.py).

slurm_cluster  session-scoped: started the first time a test asks for it (node idle),
               stopped at the end of the session; teardown fails if it had to kill
               processes beyond the daemons or could not remove a cgroup.
slurm          per test: the same cluster, its node made healthy before the test (a
               node a failed Prolog drained is resumed, with a warning) and its jobs
               cancelled after it.
"""
import warnings

import pytest

from .cluster import Cluster, have_slurm


@pytest.fixture(scope="session")
def slurm_cluster():
    why = have_slurm()
    if why:
        pytest.skip(f"Slurm test cluster: {why}")
    cluster = Cluster().start()
    yield cluster
    cluster.stop()
    problems = []
    if cluster.leftovers:
        problems.append("processes still running after the daemons stopped (killed): "
                        + ", ".join(f"{pid} {comm}" for pid, comm, _ in cluster.leftovers))
    if cluster.cgroups_left:
        problems.append("cgroups that could not be removed: " + ", ".join(cluster.cgroups_left))
    if problems:
        pytest.fail("Slurm test cluster teardown: " + "; ".join(problems))


@pytest.fixture
def slurm(slurm_cluster):
    bad = slurm_cluster.drained_nodes()
    if bad:
        warnings.warn(f"Slurm node left unusable by an earlier test, resumed: {bad}")
        slurm_cluster.resume()
    yield slurm_cluster
    slurm_cluster.cancel_all()
