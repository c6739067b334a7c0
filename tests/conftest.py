"""Test-session settings and the session fixtures several test modules share; the shared
helpers themselves are in ``support/`` (see its ``__init__``).

OpenBLAS's own thread pool fights the other processes of a 2-core machine (dense solves
of ~100x100 took 10-100x longer under load); the suite's linear algebra is small, so one
BLAS thread per process is both faster and steadier.  Set before numpy is imported.

Markers (declared in pyproject.toml; ``pytest -m "not slow"`` for a quick run):

* ``slow`` -- a test that takes more than about ten seconds on 2 cores;
* ``gcc`` -- a test that compiles C (a C FMU or a C host); skipped, with the reason,
  where gcc is missing.  Tests that use the ``lag_fmu``, ``stair_fmu`` or ``host``
  fixture are marked automatically.

Nothing of the project is imported here at collection time: a fixture imports what it
builds when it is first used, so collecting (or running ``test_architecture``) stays
cheap in every worker.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import shutil  # noqa: E402

import pytest  # noqa: E402

GCC = shutil.which("gcc")
NEEDS_GCC = {"lag_fmu", "stair_fmu", "stair3_fmu", "host"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if NEEDS_GCC & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.gcc)
        if GCC is None and "gcc" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="gcc not available"))


@pytest.fixture(scope="session")
def arm_fmu(tmp_path_factory):
    """The two-link arm as an FMU, built once per test session."""
    from fmu.fmi.build import build_fmu
    from mbdcore.models.manipulator import FlexibleManipulatorBlock
    return build_fmu(FlexibleManipulatorBlock, tmp_path_factory.mktemp("arm_fmu"),
                     model_name="FlexibleManipulator")


@pytest.fixture(scope="session")
def lag_fmu(tmp_path_factory):
    """A first-order lag FMU written in C (support/c/lag.c), compiled once per session."""
    from support.c_fmus import build_lag_fmu
    return build_lag_fmu(tmp_path_factory.mktemp("c_fmu"))


@pytest.fixture(scope="session")
def stair_fmu(tmp_path_factory):
    """Stair (support/c/stair.c): an Integer counter, a String input an output depends
    on, a request to terminate at ``stop_at``; compiled once per session."""
    from support.c_fmus import build_stair_fmu
    return build_stair_fmu(tmp_path_factory.mktemp("stair_fmu"))


@pytest.fixture(scope="session")
def stair3_fmu(tmp_path_factory):
    """Stair as an FMI 3.0 FMU (support/c/stair3.c): stair_fmu's variables, its request
    to terminate by terminateSimulation, its state saved and serialized."""
    from support.c_fmus import build_stair3_fmu
    return build_stair3_fmu(tmp_path_factory.mktemp("stair3_fmu"))


@pytest.fixture(scope="session")
def host(tmp_path_factory):
    """The plain C FMI host (support/c/host.c), compiled once per session:
    ``host(script, env=None) -> HostRun`` (support/fmi.py)."""
    from support.fmi import make_host
    return make_host(tmp_path_factory.mktemp("c_host"))
