"""Piecewise inputs sampled in C and a whole held-input run in one C call
(``PiecewiseInput``, ``fs_run`` in fixed_step.h, ``CSteppedKernel.run``): the compiled run
against the Python loop of ``integrate_held``, the reference, on the two-link arm."""
import numpy as np
import pytest

from mbdcore.blocks import ParameterError
from mbdcore.dae import integrate_held
from mbdcore.dae.methods import make_method
from mbdcore.integrators import DivergenceError, IntegrationError, PiecewiseInput, piecewise_form
from mbdcore.integrators.runge_kutta import fixed_step_library
from mbdcore.models.antenna import PointingAxisBlock
from mbdcore.models.drive import DCMotorBlock
from mbdcore.models.linear import LinearKernel
from mbdcore.models.manipulator import BANG_BANG_TORQUE, FlexibleManipulator, bang_bang_torque

METHODS = ("rk4", "gill", "treanor")


def c_sample(u: PiecewiseInput, t: float) -> np.ndarray:
    """The signals at t as the C loop samples them."""
    out = np.empty(u.n_signals)
    fixed_step_library().fixed_step_piecewise_sample(u.table, float(t), out)
    return out


def python_loop(schedule):
    """The same schedule as a plain function: integrate_held's Python loop."""
    return lambda t: schedule(t)


@pytest.fixture(scope="module")
def arm():
    return FlexibleManipulator()


# --- the inputs ----------------------------------------------------------------------------
def mixed_schedule() -> PiecewiseInput:
    """A step, a ramp and a cubic in two signals, pieces from 0.1 s, 0.25 s, 0.4 s."""
    coefficients = [[[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0]],
                    [[-1.0, 0.5, 0.0, 0.0], [0.3, -2.0, 7.0, 0.0]],
                    [[0.2, 0.0, -3.0, 11.0], [0.0, 0.0, 0.0, 0.0]]]
    return PiecewiseInput([0.1, 0.25, 0.4], coefficients, names=("a", "b"),
                          units=("N.m", "N"))


def probe_times(knots):
    """Knots, the floats next to them, points between them, before and long after."""
    knots = np.asarray(knots, dtype=float)
    times = [knots[0] - 1.0, -0.0, knots[-1] + 10.0, 1e6]
    for k in knots:
        times += [k, np.nextafter(k, -np.inf), np.nextafter(k, np.inf)]
    times += list(np.linspace(knots[0] - 0.05, knots[-1] + 0.05, 97))
    return times


@pytest.mark.parametrize("schedule", [
    mixed_schedule(), BANG_BANG_TORQUE,
    PiecewiseInput.sampled([0.0, 0.013, 0.05, 0.2], [[0.0, 1.0], [2.0, -1.0], [0.5, 0.5],
                                                     [3.0, 0.0]], hold="linear"),
    PiecewiseInput.sampled([0.0, 0.013, 0.05, 0.2], [0.0, 2.0, 0.5, 3.0]),
])
def test_c_sampling_equals_the_python_evaluation_exactly(schedule):
    lib = fixed_step_library()
    assert lib.fixed_step_piecewise_length(schedule.table) == schedule.table.size
    for t in probe_times(schedule.knots):
        assert np.array_equal(c_sample(schedule, t), np.array(schedule(t))), t


def test_pieces_are_their_polynomials_and_hold_before_the_first_knot():
    u = mixed_schedule()
    for t in np.linspace(0.25, 0.4, 11)[:-1]:
        tau = t - 0.25
        assert u(t) == pytest.approx((-1.0 + 0.5 * tau, 0.3 - 2.0 * tau + 7.0 * tau ** 2),
                                     rel=1e-15, abs=1e-16)
    assert u(0.4) == (0.2, 0.0)                # a knot belongs to the piece it starts
    assert u(np.nextafter(0.4, 0)) == pytest.approx((-1.0 + 0.075, 0.3 - 0.3 + 7 * 0.15 ** 2))
    assert u(-5.0) == u(0.1) == (1.0, 0.0)     # before the first knot: its value there
    assert u.breakpoints == (0.25, 0.4)


def test_linear_hold_is_numpy_interp_and_zero_order_holds_each_sample():
    times, values = np.array([0.0, 0.013, 0.05, 0.2]), np.array([0.0, 2.0, 0.5, 3.0])
    linear = PiecewiseInput.sampled(times, values, hold="linear")
    held = PiecewiseInput.sampled(times, values)
    for t in np.linspace(-0.1, 0.3, 81):
        assert linear(t)[0] == pytest.approx(np.interp(t, times, values), rel=1e-15, abs=1e-17)
        assert held(t)[0] == values[max(np.searchsorted(times, t, side="right") - 1, 0)]


def test_bang_bang_function_and_its_table_agree_everywhere():
    assert piecewise_form(bang_bang_torque) is BANG_BANG_TORQUE
    assert bang_bang_torque.breakpoints == (0.3, 0.6)
    for t in probe_times([0.0, 0.3, 0.6]) + list(1e-4 * np.arange(12001)):
        assert BANG_BANG_TORQUE(t) == bang_bang_torque(t), t


def test_c_refuses_a_malformed_table_head():
    lib = fixed_step_library()
    for head in ([0, 1, 1], [17, 1, 1], [1, 0, 1], [1, 1, 0], [1.5, 1, 1], [np.nan, 1, 1]):
        assert lib.fixed_step_piecewise_length(np.array(head + [0.0, 0.0])) == 0, head


@pytest.mark.parametrize("args, field", [
    (([0.0, 0.3, 0.3], [[1.0], [2.0], [3.0]]), "knots"),
    (([0.0, 0.2, 0.1], [[1.0], [2.0], [3.0]]), "knots"),
    (([0.0, np.nan], [[1.0], [2.0]]), "knots"),
    (([0.0, np.inf], [[1.0], [2.0]]), "knots"),
    (([], np.zeros((0, 1))), "knots"),
    (([0.0, 0.1], [[1.0], [np.inf]]), r"coefficients\[1, 0, 0\]"),
    (([0.0, 0.1], [[[1.0, np.nan]], [[2.0, 0.0]]]), r"coefficients\[0, 0, 1\]"),
    (([0.0, 0.1], [[1.0]]), "coefficients"),
    (([0.0], np.zeros((1, 17))), "coefficients for 17 signals"),
])
def test_invalid_inputs_are_refused_naming_the_field(args, field):
    with pytest.raises(ParameterError, match=field):
        PiecewiseInput(*args)


def test_names_units_and_hold_are_checked():
    with pytest.raises(ParameterError, match="names"):
        PiecewiseInput([0.0], [[1.0, 2.0]], names=("tau1",))
    with pytest.raises(ParameterError, match="units"):
        PiecewiseInput([0.0], [[1.0, 2.0]], units=("N.m", 3))
    with pytest.raises(ParameterError, match="hold"):
        PiecewiseInput.sampled([0.0, 1.0], [0.0, 1.0], hold="cubic")
    with pytest.raises(ParameterError, match="values"):
        PiecewiseInput.sampled([0.0, 1.0], [0.0, 1.0, 2.0])


# --- the compiled run against the Python loop -------------------------------------------
def relative_difference(a, b):
    """Largest difference per state, relative to that state's largest magnitude."""
    scale = np.maximum(np.abs(b).max(axis=0), 1e-300)
    return float((np.abs(a - b) / scale).max())


@pytest.mark.parametrize("method", METHODS)
def test_compiled_run_equals_the_python_loop_on_the_arm(arm, method):
    """Open loop over 0.06 s with a switch at 0.03 s (on the grid) and at 0.045 s (inside
    a step: both loops sample at the step's start and hold), substeps and decimation."""
    u = PiecewiseInput.constant_pieces([0.0, 0.03, 0.04505], [[0.2, 0.05], [-0.2, -0.05],
                                                             [0.1, 0.0]])
    x0 = arm.initial_state()
    for substeps, every in ((1, 1), (3, 7)):
        tc, xc = integrate_held(arm.kernel, u, x0, 0.0, 1e-4, 600, method, substeps, every)
        tp, xp = integrate_held(arm.kernel, python_loop(u), x0, 0.0, 1e-4, 600, method,
                                substeps, every)
        assert np.array_equal(tc, tp)
        assert len(tc) == 1 + 600 // every + (600 % every != 0) and tc[-1] == tp[-1]
        assert relative_difference(xc, xp) <= 1e-12
    assert np.abs(xc[-1, :2]).max() > 1e-3      # the arm moved


def test_stepper_ends_as_after_its_own_steps(arm):
    """Gill's round-off register, the time and the counters carry on as in Python."""
    runs = []
    for schedule in (BANG_BANG_TORQUE, python_loop(BANG_BANG_TORQUE)):
        gill = make_method("gill")
        integrate_held(arm.kernel, schedule, arm.initial_state(), 0.0, 1e-4, 50, gill, 2)
        runs.append(gill.get_state() | {"q": gill.q})
    assert runs[0]["nsteps"] == runs[1]["nsteps"] == 100
    assert runs[0]["nfev"] == runs[1]["nfev"] and runs[0]["t"] == pytest.approx(runs[1]["t"])
    assert np.array_equal(runs[0]["y"], runs[1]["y"]) and np.array_equal(runs[0]["q"], runs[1]["q"])


def test_switch_inside_a_step_acts_from_the_next_step_as_in_python(arm):
    """A switch at 0.02505 s, inside the step [0.025, 0.0251]: sampled at that step's
    start the old value holds over it, so the run equals one switching at 0.0251 s."""
    inside = PiecewiseInput.constant_pieces([0.0, 0.02505], [[0.2, 0.05], [-0.2, -0.05]])
    at_next = PiecewiseInput.constant_pieces([0.0, 0.0251], [[0.2, 0.05], [-0.2, -0.05]])
    function = lambda t: (0.2, 0.05) if t < 0.02505 else (-0.2, -0.05)  # noqa: E731
    x0 = arm.initial_state()
    runs = [integrate_held(arm.kernel, s, x0, 0.0, 1e-4, 400, "rk4")[1]
            for s in (inside, at_next, function)]
    assert relative_difference(runs[0], runs[2]) <= 1e-12
    assert relative_difference(runs[0], runs[1]) <= 1e-12


def test_a_method_without_a_c_loop_takes_the_python_loop(arm):
    u = BANG_BANG_TORQUE
    x0 = arm.initial_state()
    a = integrate_held(arm.kernel, u, x0, 0.0, 1e-3, 20, "gill-tableau")[1]
    b = integrate_held(arm.kernel, python_loop(u), x0, 0.0, 1e-3, 20, "gill-tableau")[1]
    assert np.array_equal(a, b)


@pytest.mark.parametrize("torque, error", [(1e6, DivergenceError), (1e9, IntegrationError)])
def test_failure_reports_its_time_with_the_results_so_far(arm, torque, error):
    """A huge torque: the step that fails, where, and the states before it, equal to the
    Python loop's (which cannot tell a singular mass matrix from a non-finite state)."""
    u = PiecewiseInput.constant_pieces([0.0], [[torque, torque]])
    h = 1e-3
    caught = []
    for schedule in (u, python_loop(u)):
        with pytest.raises(IntegrationError, match="t = 0.003 s") as info:
            integrate_held(arm.kernel, schedule, arm.initial_state(), 0.0, h, 500, "rk4")
        caught.append(info.value)
    compiled, python = caught
    assert isinstance(compiled, error)
    for err in caught:
        t, x = err.result
        assert err.time == pytest.approx(t[-1] + h) and np.all(np.isfinite(x))
    assert np.array_equal(compiled.result[0], python.result[0])
    assert relative_difference(compiled.result[1], python.result[1]) <= 1e-12


def test_bad_counts_and_signal_numbers_are_refused(arm):
    with pytest.raises(ValueError, match="substeps"):
        integrate_held(arm.kernel, BANG_BANG_TORQUE, arm.initial_state(), 0.0, 1e-3, 5,
                       "rk4", 0)
    with pytest.raises(ValueError, match="record_every"):
        integrate_held(arm.kernel, BANG_BANG_TORQUE, arm.initial_state(), 0.0, 1e-3, 5,
                       "rk4", 1, 0)
    with pytest.raises(ParameterError, match="3 signals"):
        integrate_held(arm.kernel, PiecewiseInput([0.0], [[0.1, 0.1, 0.1]]),
                       arm.initial_state(), 0.0, 1e-3, 5, "rk4")


# --- physics -----------------------------------------------------------------------------------
def test_rk4_in_the_compiled_loop_is_fourth_order_on_the_arm(arm):
    """The state at 0.1 s (torques constant: no jump) with h, h/2, h/4: successive
    differences fall by 2^4."""
    finals = [arm.simulate(BANG_BANG_TORQUE, 0.1, h, "rk4")[1][-1]
              for h in (4e-3, 2e-3, 1e-3)]
    ratio = np.abs(finals[0] - finals[1]).max() / np.abs(finals[1] - finals[2]).max()
    assert 4 - 0.3 < np.log2(ratio) < 4 + 0.3, np.log2(ratio)


# --- every C-stepped kernel gets the compiled run ----------------------------------------------
def other_kernels():
    """(name, kernel, x0, schedule of its inputs): the drive (command [V], load angle
    [rad], load rate [rad/s]), the pointing axis (command [V], wind [N m]) and a linear
    oscillator with one force input [N]."""
    drive = DCMotorBlock()
    axis = PointingAxisBlock()
    plant = LinearKernel([[0.0, 1.0], [-40.0, -0.4]], [[0.0], [1.0]], [[1.0, 0.0]], [[0.0]])
    return [
        ("drive", drive.kernel, drive.x, PiecewiseInput.sampled(
            [0.0, 0.01, 0.02, 0.035], [[0.0, 0.0, 0.0], [12.0, 0.1, 1.0], [-6.0, 0.2, 0.0],
                                       [0.0, 0.2, 0.0]], hold="linear")),
        ("axis", axis.kernel, axis.x, PiecewiseInput.constant_pieces(
            [0.0, 0.0155, 0.03], [[5.0, 0.0], [-5.0, 0.3], [0.0, 0.0]])),
        ("linear", plant, np.array([0.01, 0.0]), PiecewiseInput(
            [0.0, 0.02], [[[0.0, 30.0, -100.0]], [[0.5, 0.0, 0.0]]])),
    ]


@pytest.mark.parametrize("method", METHODS)
def test_drive_axis_and_linear_plant_run_in_one_call_as_in_python(method):
    for name, kernel, x0, schedule in other_kernels():
        tc, xc = integrate_held(kernel, schedule, x0, 0.0, 5e-4, 100, method, 4, 3)
        tp, xp = integrate_held(kernel, python_loop_args(kernel, schedule), x0, 0.0, 5e-4,
                                100, method, 4, 3)
        assert np.array_equal(tc, tp), name
        assert relative_difference(xc, xp) <= 1e-12, name
        assert np.abs(xc[-1] - xc[0]).max() > 1e-6, name      # the inputs moved it


def python_loop_args(kernel, schedule):
    """The schedule as a plain function of the kernel's arguments (the Python loop)."""
    return lambda t: kernel.args_from_inputs(schedule(t))
