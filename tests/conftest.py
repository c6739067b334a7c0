"""Test-session settings and the fixtures several test modules share.

OpenBLAS's own thread pool fights the other processes of a 2-core machine (dense solves
of ~100x100 took 10-100x longer under load); the suite's linear algebra is small, so one
BLAS thread per process is both faster and steadier.  Set before numpy is imported.

Markers (``pytest -m "not slow"`` for a quick run):

* ``slow`` -- a test that takes more than about ten seconds on 2 cores;
* ``gcc`` -- a test that compiles C (a C FMU or a C host); skipped, with the reason,
  where gcc is missing.  Tests that use the ``lag_fmu`` or ``stair_fmu`` fixture are marked
  automatically.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import shutil  # noqa: E402

import pytest  # noqa: E402

try:
    from c_fmu.build import build_lag_fmu, build_stair_fmu
    from fmi_host import make_host
except ImportError:  # tests/ collected as a package
    from tests.c_fmu.build import build_lag_fmu, build_stair_fmu
    from tests.fmi_host import make_host
from fmu.fmi.build import build_fmu  # noqa: E402
from mbdcore.models.manipulator import FlexibleManipulatorBlock  # noqa: E402

GCC = shutil.which("gcc")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than about 10 s on 2 cores")
    config.addinivalue_line("markers", "gcc: compiles C code (skipped without gcc)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if {"lag_fmu", "stair_fmu", "host"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.gcc)
        if GCC is None and "gcc" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="gcc not available"))


@pytest.fixture(scope="session")
def arm_fmu(tmp_path_factory):
    """The two-link arm as an FMU, built once per test session."""
    return build_fmu(FlexibleManipulatorBlock, tmp_path_factory.mktemp("arm_fmu"),
                     model_name="FlexibleManipulator")


@pytest.fixture(scope="session")
def lag_fmu(tmp_path_factory):
    """A first-order lag FMU written in C (tests/c_fmu/lag.c), compiled once per session."""
    if GCC is None:
        pytest.skip("gcc not available")
    return build_lag_fmu(tmp_path_factory.mktemp("c_fmu"))


@pytest.fixture(scope="session")
def stair_fmu(tmp_path_factory):
    """Stair (tests/c_fmu/stair.c): an Integer counter, a String input an output depends
    on, a request to terminate at ``stop_at``; compiled once per session."""
    if GCC is None:
        pytest.skip("gcc not available")
    return build_stair_fmu(tmp_path_factory.mktemp("stair_fmu"))


@pytest.fixture(scope="session")
def host(tmp_path_factory):
    """The plain C FMI host (tests/c_host/host.c), compiled once per session:
    ``host(script, env=None) -> HostRun`` (tests/fmi_host.py)."""
    if GCC is None:
        pytest.skip("gcc not available")
    return make_host(tmp_path_factory.mktemp("c_host"))
