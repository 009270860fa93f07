"""Ray for the engine tests, on 2 CPUs as on the project's CI machine.

`ray_local`: an instance shared by the tests of this process (started once, shut down at the
end); the engines reuse a running instance and leave it running (evalcore/scale/ray_session.py),
so a test does not pay Ray's start-up. `ray_fresh`: no instance running, for a test whose
environment (a scripted judge's URL, S3 credentials) is set after the shared instance started:
Ray workers inherit the environment of the process that started Ray, so the engine must
start its own (EVALCORE_RAY_CPUS=2) after the test has set the variables.
"""

from __future__ import annotations

import pytest

from tests.optional import requires


def _ray():
    ray = requires("ray", "evalcore[scale], part of the dev extra")
    requires("ray.data", "ray[data]")

    return ray


@pytest.fixture(scope="session")
def _ray_shutdown_at_end():
    yield
    import sys

    if "ray" in sys.modules and sys.modules["ray"].is_initialized():
        sys.modules["ray"].shutdown()


@pytest.fixture
def ray_local(_ray_shutdown_at_end):
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    return ray


@pytest.fixture
def ray_fresh(_ray_shutdown_at_end, monkeypatch):
    ray = _ray()
    if ray.is_initialized():
        ray.shutdown()
    monkeypatch.setenv("EVALCORE_RAY_CPUS", "2")
    yield ray
    assert not ray.is_initialized(), "the engine left the Ray instance it started running"
