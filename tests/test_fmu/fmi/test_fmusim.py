"""fmusim, the Reference-FMUs' simulator, runs our C-source FMUs (issue 25: "FMI 3.0 ...
fmusim runs it"; Model Exchange "run by fmpy's CVode and by fmusim").

fmusim is a third-party host that is not installed with the project: these tests run the
one named by ``$FMUSIM`` or found on ``PATH`` and are skipped, with the reason, where there
is none (``support/fmusim.py``).  Measured with fmusim 0.0.31 (Reference-FMUs v0.0.31,
SUNDIALS CVODE 6.4.1):

* co-simulation, FMI 2.0 and 3.0: every output of the arm equals fmpy's ``simulate_fmu``
  with the same constant torques to the last printed digit (fmusim prints ``%.16g``); the
  step is 2**-10 s so that both hosts' communication points and steps are the same
  doubles (fmusim's FMI 2.0 loop steps by the output interval from t0 + n*h, fmpy by the
  difference of two such points: with h = 1e-3 the FMI 2.0 runs' steps differ in the
  last bit and their outputs by up to 6e-16);
* Model Exchange, FMI 2.0 and 3.0, fmusim's CVode (BDF, dense Newton, ``--tolerance``
  the relative tolerance, the absolute one it times each state's nominal, as in fmpy's):
  at rtol 1e-10 over 0.5 s the joint angles equal the co-simulation run at the
  step-doubling tolerance 1e-12 to 2.7e-9 rad and the modal amplitudes to 3.2e-10 m, and
  fmpy's CVode to 6e-17 (the FMI 2.0 and 3.0 runs are the same doubles);
* FMI 3.0 arrays: an array input (``tau``, written "0.3 -0.1" in fmusim's input file) and
  array outputs (``theta``, ``omega``) equal the FMU exported with scalars, element by
  element;
* a sanity check of the fmusim at hand: our FMI 3.0 Stair (support/c/stair3.c) ends with
  its t = 9 s row where it asks to terminate, as in fmpy.
"""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import simulate_fmu

from fmu.fmi.export_c import export_c_fmu
from mbdcore.models.manipulator import FlexibleManipulatorBlock
from support.fmusim import find_fmusim, printed, read_result, run_fmusim, write_input_csv

FMUSIM, NO_FMUSIM = find_fmusim()

pytestmark = [
    pytest.mark.gcc,
    pytest.mark.skipif(FMUSIM is None, reason=NO_FMUSIM),
    # fmpy's CVodeSolver calls its ctypes root function with a NULL array for an FMU
    # without event indicators (see test_c_fmu_model_exchange); the run is unaffected
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

TORQUES = {"tau1": 0.3, "tau2": -0.1}       # N m, constant over the run
STEP = 2.0 ** -10                           # s: k*STEP and their differences are exact
OUTPUTS = ("theta1", "theta2", "omega1", "omega2", "w1", "w2", "x_tip", "y_tip")


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    """The arm as FMI 2.0 and 3.0 C FMUs with both interfaces (``kind="me"``: the same
    binary co-simulates; FMI 3.0 with FMI 2.0's scalars, the arrays' test has its own),
    and an fmusim input file holding the torques."""
    out = tmp_path_factory.mktemp("fmusim_arm")
    fmus = {v: export_c_fmu(FlexibleManipulatorBlock, out / f"v{v}", model_name="ArmC",
                            kind="me", fmi_version=v, arrays=False, platforms=("linux64",))
            for v in (2, 3)}
    inputs = write_input_csv(out / "torques.csv", [0.0, 1.0],
                             **{name: [value, value] for name, value in TORQUES.items()})
    return fmus, inputs


@pytest.mark.parametrize("fmi_version", [2, 3])
def test_fmusim_cosimulates_the_arm_as_fmpy_does(arm, fmi_version, tmp_path):
    """The same FMU, inputs and communication points: fmusim's result is fmpy's, every
    value to the last digit fmusim prints."""
    fmus, inputs = arm
    stop = 256 * STEP
    ours = run_fmusim(FMUSIM, fmus[fmi_version], tmp_path / "cs.csv", "--interface-type", "cs",
                      "--stop-time", repr(stop), "--output-interval", repr(STEP),
                      "--input-file", str(inputs))
    signals = np.array([(0.0, *TORQUES.values()), (1.0, *TORQUES.values())],
                       dtype=[("time", float)] + [(name, float) for name in TORQUES])
    theirs = simulate_fmu(str(fmus[fmi_version]), stop_time=stop, output_interval=STEP,
                          input=signals)
    assert ours.dtype.names == theirs.dtype.names == ("time", *OUTPUTS)
    assert len(ours) == len(theirs) == 257
    for name in ours.dtype.names:
        assert np.array_equal(ours[name], printed(theirs[name])), name
    assert np.abs(ours["theta1"]).max() > 0.03              # the arm moved


@pytest.mark.parametrize("fmi_version", [2, 3])
def test_fmusim_cvode_integrates_the_arm_as_its_co_simulation(arm, fmi_version, tmp_path):
    """Model Exchange under fmusim's CVode at rtol 1e-10 against the co-simulation's step
    doubling at rtol 1e-12, both run by fmusim with the same constant torques, and against
    fmpy's CVode at rtol 1e-10: the joint angles and modal amplitudes to 1e-7 (rad, m), the
    issue's bound for fmpy's CVode against co-simulation (two CVode runs of the same
    tolerance differ by no more than each one's error; measured: module docstring)."""
    fmus, inputs = arm
    common = ("--stop-time", "0.5", "--output-interval", "1e-3", "--input-file", str(inputs))
    me = run_fmusim(FMUSIM, fmus[fmi_version], tmp_path / "me.csv", "--interface-type", "me",
                    "--solver", "cvode", "--tolerance", "1e-10", *common)
    cs = run_fmusim(FMUSIM, fmus[fmi_version], tmp_path / "cs.csv", "--interface-type", "cs",
                    "--start-value", "rtol", "1e-12", "--start-value", "atol", "1e-14", *common)
    fmpy_me = simulate_fmu(str(fmus[fmi_version]), fmi_type="ModelExchange", solver="CVode",
                           relative_tolerance=1e-10, stop_time=0.5, output_interval=1e-3,
                           start_values=TORQUES)
    assert len(me) == len(cs) == len(fmpy_me) == 501
    assert np.abs(cs["theta2"]).max() > 0.2                 # the arm moved
    for name in ("theta1", "theta2", "w1", "w2"):
        np.testing.assert_allclose(me[name], cs[name], rtol=0, atol=1e-7, err_msg=name)
        np.testing.assert_allclose(me[name], fmpy_me[name], rtol=0, atol=1e-7, err_msg=name)


def test_fmusim_reads_and_writes_fmi3_arrays(arm, tmp_path):
    """The FMI 3.0 arm with arrays (``tau`` in, ``theta``/``omega`` out) in fmusim equals
    the FMI 3.0 arm with scalars in fmusim, element by element, to the printed digit."""
    fmus, inputs = arm
    arrays = export_c_fmu(FlexibleManipulatorBlock, tmp_path, model_name="ArmC", fmi_version=3,
                          compile=True, platforms=("linux64",))
    array_inputs = tmp_path / "tau.csv"
    array_inputs.write_text('"time","tau"\n' + "".join(
        f"{t!r},{TORQUES['tau1']!r} {TORQUES['tau2']!r}\n" for t in (0.0, 1.0)))
    common = ("--interface-type", "cs", "--stop-time", repr(64 * STEP),
              "--output-interval", repr(STEP))
    out = run_fmusim(FMUSIM, arrays, tmp_path / "arrays.csv", *common, "--input-file",
                     str(array_inputs), read=False)
    header, *rows = out.read_text().splitlines()
    names = [n.strip('"') for n in header.split(",")]
    cells = [dict(zip(names, row.split(","))) for row in rows]
    scalars = run_fmusim(FMUSIM, fmus[3], tmp_path / "scalars.csv", *common,
                         "--input-file", str(inputs))
    assert len(cells) == len(scalars) == 65
    for name in ("theta", "omega"):
        values = np.array([[float(x) for x in c[name].split()] for c in cells])
        for k in (0, 1):
            assert np.array_equal(values[:, k], scalars[f"{name}{k + 1}"]), (name, k)
    assert np.abs(scalars["theta1"]).max() > 1e-3


def test_fmusim_runs_our_fmi3_stair_as_fmpy_does(stair3_fmu, tmp_path):
    """A sanity check of the fmusim at hand: the FMI 3.0 Stair with its default
    experiment (10 s, step 0.2 s) asked to terminate at 9 s ends with that row, counter
    10, as in fmpy."""
    ours = run_fmusim(FMUSIM, stair3_fmu, tmp_path / "stair.csv", "--start-value", "stop_at", "9")
    theirs = simulate_fmu(str(stair3_fmu), start_values={"stop_at": 9.0})
    assert ours.dtype.names == ("time", "counter", "y")
    np.testing.assert_array_equal(ours["time"], printed(theirs["time"]))
    assert np.array_equal(ours["counter"], theirs["counter"])
    assert (ours["time"][-1], ours["counter"][-1]) == (9.0, 10.0)
