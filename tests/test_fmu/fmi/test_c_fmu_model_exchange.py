"""Model Exchange C FMUs (issue 25, item 3): ``export_c_fmu(..., kind="me")`` and
``flexcosim export-c --kind me``.

The same binary (``fmi2_cs.c``) serves both interfaces: the model's continuous states
and their derivatives are Real variables, the host's solver integrates them.  Under
fmpy's CVode (rtol 1e-10) the arm equals its co-simulation to the solvers' accuracy; the
ME calls check what the host gives them.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from fmpy import extract, read_model_description, simulate_fmu
from fmpy.fmi2 import FMU2Model
from fmpy.validation import validate_fmu

from flexcosim.catalog import C_MODELS, resolve
from flexcosim.cli import main
from fmu.fmi.export_c import CExportError, export_c_fmu
from mbdcore.models.manipulator import FlexibleManipulatorBlock

pytestmark = [
    pytest.mark.gcc,
    # fmpy's CVodeSolver registers its root function even for an FMU without event
    # indicators, and SUNDIALS calls it with a NULL array that the ctypes callback cannot
    # wrap ("NULL pointer access", printed as unraisable); the run itself is unaffected
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(scope="module")
def arm_me(tmp_path_factory):
    return export_c_fmu(FlexibleManipulatorBlock, tmp_path_factory.mktemp("me"),
                        model_name="ArmC", kind="me", platforms=("linux64",))


@pytest.mark.parametrize("model", ["manipulator", "drive", "antenna-axis"])
def test_models_with_a_continuous_state_export_a_valid_model_exchange_fmu(model, tmp_path):
    entry = C_MODELS[model]
    fmu = export_c_fmu(resolve(entry.block), tmp_path, model_name=entry.model_name, kind="me",
                       platforms=("linux64",))
    assert validate_fmu(str(fmu)) == []
    md = read_model_description(str(fmu))
    assert md.modelExchange is not None and md.coSimulation is not None
    n = resolve(entry.block)().c_model().n_states
    assert len(md.derivatives) == n
    states = [d.variable.derivative for d in md.derivatives]
    assert all(s is not None and s.name.startswith("state.") for s in states)


@pytest.mark.parametrize("model", ["joint-pd", "pid", "lqg"])
def test_a_discrete_or_sampled_law_is_co_simulation_only(model, tmp_path):
    entry = C_MODELS[model]
    with pytest.raises(CExportError, match="co-simulated only"):
        export_c_fmu(resolve(entry.block), tmp_path, model_name=entry.model_name, kind="me",
                     platforms=("linux64",))


def test_the_arm_under_cvode_equals_its_co_simulation(arm_me):
    """Constant torques (the two interfaces hold a time-varying input differently: fmpy
    interpolates it for the ODE solver, a co-simulation step holds it): CVode at rtol
    1e-10 and the co-simulation's step doubling at rtol 1e-12 agree to 1e-7 rad."""
    torques = {"tau1": 0.3, "tau2": -0.1}
    me = simulate_fmu(str(arm_me), fmi_type="ModelExchange", solver="CVode",
                      relative_tolerance=1e-10, stop_time=1.0, output_interval=1e-3,
                      start_values=torques)
    cs = simulate_fmu(str(arm_me), fmi_type="CoSimulation", stop_time=1.0, output_interval=1e-3,
                      start_values=dict(torques, rtol=1e-12, atol=1e-14))
    assert len(me) == len(cs) == 1001
    for name in ("theta1", "theta2"):
        assert np.abs(cs[name]).max() > 0.5                # the arm moved half a radian
        np.testing.assert_allclose(me[name], cs[name], rtol=0, atol=1e-7)
    for name in ("w1", "w2"):
        np.testing.assert_allclose(me[name], cs[name], rtol=0, atol=1e-7)


def test_model_exchange_calls_check_what_the_host_gives(arm_me, tmp_path):
    from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, defaultCallbacks
    md = read_model_description(str(arm_me))
    messages = []

    def record(env, instance, status, category, message):
        messages.append((status, message.decode()))

    # our own logger, alive with the FMU: fmpy's default routes every FMU's messages
    # through one process-wide proxy, which crashes once an FMU it last served is freed
    # (see fmu.cosim.fmu_component's log proxy) -- this test's refusals log errors
    logger = fmi2CallbackLoggerTYPE(record)
    callbacks = fmi2CallbackFunctions()
    callbacks.logger = logger
    callbacks.allocateMemory = defaultCallbacks.allocateMemory
    callbacks.freeMemory = defaultCallbacks.freeMemory
    fmu = FMU2Model(guid=md.guid, unzipDirectory=extract(str(arm_me), str(tmp_path / "u")),
                    modelIdentifier=md.modelExchange.modelIdentifier, instanceName="arm")
    fmu.instantiate(callbacks=callbacks, loggingOn=True)
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    fmu.enterContinuousTimeMode()
    n = md.numberOfContinuousStates
    vector = ctypes.c_double * n

    def states():
        x = vector()
        fmu.getContinuousStates(x, n)
        return np.array(x)

    x = states()
    assert np.all(np.isfinite(x))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    fmu.setReal([vr["tau1"]], [0.3])
    dx_c = vector()
    fmu.getDerivatives(dx_c, n)
    dx = np.array(dx_c)
    assert np.abs(dx).max() > 0.0
    # the derivatives are also the der(state.*) variables, the states the state.* ones
    np.testing.assert_array_equal(fmu.getReal([d.variable.valueReference
                                               for d in md.derivatives]), dx)
    np.testing.assert_array_equal(fmu.getReal([d.variable.derivative.valueReference
                                               for d in md.derivatives]), x)
    # explicit Euler by hand: the state moves as its derivative says
    fmu.setTime(1e-4)
    fmu.setContinuousStates(vector(*(x + 1e-4 * dx)), n)
    np.testing.assert_array_equal(states(), x + 1e-4 * dx)
    assert fmu.completedIntegratorStep() == (False, False)
    with pytest.raises(Exception):                     # NaN refused, the state kept
        fmu.setContinuousStates(vector(*([float("nan")] * n)), n)
    np.testing.assert_array_equal(states(), x + 1e-4 * dx)
    assert any("x[0] = nan is not finite; the state is kept" in m for s, m in messages if s == 3)
    with pytest.raises(Exception):                     # the wrong number of states
        fmu.getDerivatives(vector(), n - 1)
    # fmi2DoStep on an instance made for Model Exchange: fmi2Error (3)
    do_step = fmu.dll.fmi2DoStep
    do_step.argtypes = [ctypes.c_void_p, ctypes.c_double, ctypes.c_double, ctypes.c_int]
    assert do_step(fmu.component, 1e-4, 1e-3, 1) == 3
    assert any("the instance was made for Model Exchange" in m for s, m in messages)
    fmu.terminate()
    fmu.freeInstance()
    del logger, callbacks


def test_command_line_exports_model_exchange(tmp_path, capsys):
    assert main(["export-c", "drive", "--kind", "me", "-o", str(tmp_path)]) == 0
    path = capsys.readouterr().out.strip().splitlines()[-1]
    assert read_model_description(path).modelExchange is not None
    assert main(["export-c", "pid", "--kind", "me", "-o", str(tmp_path)]) == 2
    assert "co-simulated only" in capsys.readouterr().err


def test_fmi3_model_exchange_keeps_the_state_as_one_array_and_equals_fmi2(arm_me, tmp_path):
    """FMI 3.0: the state is one array variable, ``state`` [12] with ``der(state)``; under
    CVode the FMI 3.0 arm equals the FMI 2.0 one to the last bit; the array reads as the
    solver's state."""
    me3 = export_c_fmu(FlexibleManipulatorBlock, tmp_path, model_name="ArmC", kind="me",
                       fmi_version=3, platforms=("linux64",))
    assert validate_fmu(str(me3)) == []
    md = read_model_description(str(me3))
    state = {v.name: v for v in md.modelVariables}["state"]
    assert [int(d.start) for d in state.dimensions] == [md.numberOfContinuousStates] == [12]
    kw = dict(fmi_type="ModelExchange", solver="CVode", relative_tolerance=1e-10,
              stop_time=0.5, output_interval=1e-3)
    r2 = simulate_fmu(str(arm_me), **kw, start_values={"tau1": 0.3, "tau2": -0.1})
    r3 = simulate_fmu(str(me3), **kw, start_values={"tau": [0.3, -0.1]})   # an array
    for name in ("theta1", "theta2", "w1", "w2"):
        column = r3[name[:-1]][:, int(name[-1]) - 1] if name.startswith("theta") else r3[name]
        assert np.array_equal(column, r2[name]), name

    from fmpy.fmi3 import FMU3Model
    fmu = FMU3Model(guid=md.guid, unzipDirectory=extract(str(me3), str(tmp_path / "u")),
                    modelIdentifier=md.modelExchange.modelIdentifier, instanceName="arm")
    messages = []
    fmu.instantiate(logMessage=lambda env, status, cat, msg: messages.append((status, msg.decode())))
    fmu.enterInitializationMode(startTime=0.0)
    fmu.exitInitializationMode()
    fmu.enterContinuousTimeMode()
    n = md.numberOfContinuousStates
    x = (ctypes.c_double * n)()
    fmu.getContinuousStates(x, n)
    np.testing.assert_array_equal(fmu.getFloat64([state.valueReference], nValues=n), np.array(x))
    with pytest.raises(Exception):                     # the array needs its 12 values
        fmu.getFloat64([state.valueReference], nValues=1)
    assert any("1 values for 1 value references that hold 12" in m for s, m in messages if s == 3)
    fmu.terminate()
    fmu.freeInstance()
