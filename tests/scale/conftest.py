"""A local Ray instance for the engine tests: started once per test process, 2 CPUs (as on
the project's CI machine), shut down at the end. The engines reuse a running instance and
leave it running (evalcore/scale/ray_session.py), so each test does not pay Ray's start-up."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def ray_local():
    ray = pytest.importorskip("ray", reason="Ray is in the dev extra (evalcore[scale]); not installed here")
    import ray.data  # noqa: F401

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()
