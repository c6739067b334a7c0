"""Integrator library: orders, Gill's compensation, Treanor's exponential fit."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mbdcore.integrators.runge_kutta import Gill, TREANOR_STAGES, fixed_step_library
from mbdcore.integrators.base import IntegrationError
from mbdcore.dae.methods import make_method
from mbdcore.dae.simulate import integrate, simulate
from mbdcore.models.mechanisms import rigid_crank


def _final_error(method, f, y0, t_end, n, exact):
    _, y = integrate(f, y0, 0.0, t_end / n, n, method)
    return np.abs(y[-1] - exact).max()


def _nonlinear(t, y):
    return np.array([-y[0] ** 2 + np.sin(t), y[0] - 0.3 * y[1]])


NONLINEAR_REF = solve_ivp(_nonlinear, (0, 1), [1.0, 0.0], rtol=1e-13, atol=1e-14).y[:, -1]


@pytest.mark.parametrize("method", ["rk4", "gill", "gill-tableau"])
def test_fourth_order_on_a_nonlinear_system(method):
    errs = [_final_error(method, _nonlinear, [1.0, 0.0], 1.0, n, NONLINEAR_REF)
            for n in (10, 20, 40)]
    orders = np.log2(np.array(errs[:-1]) / errs[1:])
    assert np.all(np.abs(orders - 4) < 0.3), orders


def test_gill_compensated_equals_gill_tableau_to_round_off():
    _, a = integrate(_nonlinear, [1.0, 0.0], 0.0, 1e-2, 100, "gill")
    _, b = integrate(_nonlinear, [1.0, 0.0], 0.0, 1e-2, 100, "gill-tableau")
    assert np.abs(a - b).max() < 1e-13


def test_gill_compensation_reduces_accumulated_round_off():
    """y' = 1 with a tiny step: the increments are rounded every step; Gill's register
    feeds the rounding error back, the plain tableau lets it accumulate."""
    f = lambda t, y: np.ones(1)
    n, h = 100000, 1e-3 / 3.0
    y0 = np.array([1.0e3])
    _, comp = integrate(f, y0, 0.0, h, n, "gill")
    _, plain = integrate(f, y0, 0.0, h, n, "rk4")
    exact = 1.0e3 + n * h
    assert abs(comp[-1, 0] - exact) < 0.1 * abs(plain[-1, 0] - exact)


def test_gill_state_round_trip_continues_bit_for_bit():
    g = Gill()
    g.start(0.0, [1.0, 0.0])
    for k in range(5):
        y = g.step(_nonlinear, 0.01)
    saved = g.get_state()
    for k in range(5, 10):
        y = g.step(_nonlinear, 0.01)
    g.set_state(saved)
    for k in range(5, 10):
        z = g.step(_nonlinear, 0.01)
    np.testing.assert_array_equal(y, z)


def test_treanor_is_exact_for_linear_decay_with_polynomial_forcing():
    p = 3.0
    f = lambda t, y: -p * y + 1 + 2 * t + 3 * t ** 2
    exact = solve_ivp(f, (0, 1), [1.0], rtol=1e-13, atol=1e-14).y[0, -1]
    assert _final_error("treanor", f, [1.0], 1.0, 5, exact) < 1e-12


def test_treanor_stays_stable_on_a_stiff_component_where_rk4_explodes():
    f = lambda t, y: np.array([-1e4 * (y[0] - np.cos(t)), y[0]])
    _, y = integrate(f, [1.0, 0.0], 0.0, 1e-2, 100, "treanor")
    assert abs(y[-1, 0] - np.cos(1.0)) < 1e-3
    with pytest.raises(IntegrationError):
        integrate(f, [1.0, 0.0], 0.0, 1e-2, 100, "rk4")


def test_treanor_fourth_order_on_a_scalar_nonlinear_problem():
    f = lambda t, y: -y ** 2 + np.sin(t)
    exact = solve_ivp(f, (0, 1), [1.0], rtol=1e-13, atol=1e-14).y[0, -1]
    errs = [_final_error("treanor", f, [1.0], 1.0, n, exact) for n in (10, 20, 40)]
    orders = np.log2(np.array(errs[:-1]) / errs[1:])
    assert np.all(np.abs(orders - 4) < 0.3), orders


def _orders(errs):
    return np.log2(np.array(errs[:-1]) / np.array(errs[1:]))


def test_treanor_fourth_order_on_the_rigid_crank():
    """The rigid crank of docs/benchmarks.md §5 (index-1 form, projections on) to t = 1 s,
    where it turns at 236 rad/s: theta(1) = alpha/2 exactly.  Fails before the fix of
    the fourth stage point and the cap on the fitted rates (orders 2.2, 2.0; error
    0.35 rad at h = 1 ms, where RK4's is 9e-4 rad): the stage estimate of the rate of
    the crank's angular velocity grew like 1/h (p h ~ 4 at every step)."""
    alpha = 62.0 / (1.4 * 0.75**2 / 3)
    errs = [abs(simulate(rigid_crank(), 1.0, h, "treanor")["crank.phi"][-1] - 0.5 * alpha)
            for h in (4e-3, 2e-3, 1e-3)]
    orders = _orders(errs)
    print("Treanor, rigid crank theta(1): errors [rad]", errs, "orders", orders)
    assert np.all(orders > 3.7), orders
    assert errs[-1] < 1e-3


@pytest.mark.parametrize("problem", ["nonlinear", "oscillator"])
def test_treanor_fourth_order_on_coupled_nonstiff_systems(problem):
    """Coupled components, where the fitted rates are not the Jacobian's diagonal (the
    oscillator's diagonal is zero, its stage estimate -v/x): the order stays 4 (3 on the
    oscillator before the fourth stage point was corrected)."""
    if problem == "nonlinear":
        f, y0, ref, ns = _nonlinear, [1.0, 0.0], NONLINEAR_REF, (10, 20, 40, 80)
    else:
        f, y0, ns = (lambda t, y: np.array([y[1], -y[0]])), [1.0, 0.0], (20, 40, 80, 160)
        ref = np.array([np.cos(1.0), -np.sin(1.0)])
    errs = [_final_error("treanor", f, y0, 1.0, n, ref) for n in ns]
    orders = _orders(errs)
    print(f"Treanor, {problem}: orders", orders)
    assert np.all(orders > 3.7), orders


def _stiff_forced(omega, c=0.5):
    """y' = -1000 (y - cos w t) - w sin w t [1/s], exact y = cos w t + c e^(-1000 t)."""
    def f(t, y):
        return -1000.0 * (y - np.cos(omega * t)) - omega * np.sin(omega * t)
    return f, [1.0 + c], np.cos(omega) + c * np.exp(-1000.0)


def test_treanor_stiff_linear_fourth_order_where_p_h_is_small():
    """Stiff linear test with the rate resolved (p h = 0.78, 0.39, 0.2): order 4.  The
    forcing is cos 30 t rather than cos t only so that the errors stay well above
    round-off (with cos t they are 4e-13 at p h = 0.78)."""
    f, y0, exact = _stiff_forced(30.0)
    errs = [_final_error("treanor", f, y0, 1.0, n, exact) for n in (1280, 2560, 5120)]
    orders = _orders(errs)
    print("Treanor, stiff linear, p h <= 0.8: errors", errs, "orders", orders)
    assert np.all(orders > 3.7), orders


def test_treanor_stiff_linear_stable_and_second_order_where_p_h_is_large():
    """y' = -1000 (y - cos t) - sin t at p h = 100, 50, 25, far beyond RK4's stability
    limit p h = 2.785: Treanor is stable and accurate (error < 1e-6), RK4 explodes.
    The step is exact for the decay and fits the forcing g(t) = 1000 cos t - sin t by
    a quadratic through t, t + h/2, t + h; weighted by e^(-p (h - tau)) that leaves
    about g'''(t) h^2 / (12 p^2): the order is 2 while p h >> 1 (with a 1/p^2 factor)
    and rises to 4 as p h falls below 1 (docs/benchmarks.md §8.1)."""
    f, y0, exact = _stiff_forced(1.0)
    errs = [_final_error("treanor", f, y0, 1.0, n, exact) for n in (10, 20, 40)]
    orders = _orders(errs)
    print("Treanor, stiff linear, p h = 100, 50, 25: errors", errs, "orders", orders)
    assert max(errs) < 1e-6
    assert np.all((orders > 1.8) & (orders < 2.5)), orders
    g3 = 1000.0 * np.sin(1.0) + np.cos(1.0)
    assert errs[0] == pytest.approx(g3 * 0.1**2 / (12 * 1000.0**2), rel=0.1)
    for n in (40, 100):                                  # p h = 25, 10
        _, y = integrate(f, y0, 0.0, 1.0 / n, n, "rk4", check_finite=False)
        assert not np.isfinite(y[-1, 0]) or abs(y[-1, 0]) > 1e10


def test_treanor_is_rk4_on_a_zero_jacobian():
    """y' = g(t): the fitted rates are exactly 0 and the step is classical RK4 (to
    round-off: the sums are grouped differently)."""
    f = lambda t, y: np.array([np.cos(3 * t), np.exp(-t), t ** 5])
    _, a = integrate(f, [1.0, -2.0, 0.5], 0.0, 0.05, 40, "treanor")
    _, b = integrate(f, [1.0, -2.0, 0.5], 0.0, 0.05, 40, "rk4")
    assert np.abs(a - b).max() < 1e-14


def test_treanor_step_tends_to_the_rk4_step_as_p_goes_to_zero():
    """One step of the fitted formulas (native/fixed_step.h, on its stage table) with
    rates p -> 0 on the stages of the coupled nonlinear system: the difference from RK4's
    step shrinks like p and is round-off at p = 1e-12 1/s (the series branch of the r
    coefficients, continuous at p = 0)."""
    lib = fixed_step_library()
    assert lib.fixed_step_treanor_rows() == len(TREANOR_STAGES)
    row = {name: i for i, name in enumerate(TREANOR_STAGES)}
    t, h = 0.3, 0.1
    s = np.zeros((len(TREANOR_STAGES), 2))
    s[row["w1"]] = [0.8, 0.2]
    s[row["q1"]] = _nonlinear(t, s[row["w1"]])
    s[row["w2"]] = s[row["w1"]] + 0.5 * h * s[row["q1"]]
    s[row["q2"]] = _nonlinear(t + 0.5 * h, s[row["w2"]])
    s[row["w3"]] = s[row["w1"]] + 0.5 * h * s[row["q2"]]
    s[row["q3"]] = _nonlinear(t + 0.5 * h, s[row["w3"]])
    w1, q1, q2, q3 = (s[row[k]].copy() for k in ("w1", "q1", "q2", "q3"))
    rk4 = w1 + (h / 6) * (q1 + 2 * (q2 + q3) + _nonlinear(t + h, w1 + h * q3))
    diffs = []
    for rate in (1e-3, 1e-6, 1e-9, 1e-12):
        s[row["p"]] = rate
        lib.fixed_step_treanor_fourth_point(s, 2, h)
        s[row["q4"]] = _nonlinear(t + h, s[row["w4"]])
        lib.fixed_step_treanor_finish(s, 2, h)
        diffs.append(np.abs(s[row["y"]] - rk4).max())
    print("Treanor - RK4, one step, p = 1e-3 ... 1e-12 1/s:", diffs)
    assert diffs[-1] < 1e-15
    assert 0.5e-3 < diffs[1] / diffs[0] < 2e-3       # linear in p


def test_unknown_integrator_lists_the_accepted_names():
    with pytest.raises(ValueError, match="accepted: rk4, gill, gill-tableau, treanor"):
        make_method("euler")


@pytest.mark.parametrize("method", ["rk4", "gill-tableau", "gill", "treanor", "bdf2"])
def test_compiled_stepping_equals_python_stepping_bit_for_bit(method):
    """step_autonomous (RK4, Gill and Treanor: all substeps in one call of the arm
    kernel's C loop, fixed_step.h; the others: their own steps over the C right-hand
    side) takes exactly the steps step() takes, on the arm's nonlinear equations."""
    from mbdcore.models.manipulator import FlexibleManipulator
    model = FlexibleManipulator(n_modes=2)
    rhs, args = model.derivatives(0.2, 0.05)
    x0 = model.initial_state(0.3, -0.2)
    a, b = make_method(method), make_method(method)
    a.start(0.0, x0)
    b.start(0.0, x0)
    for _ in range(3):
        xa = a.step_autonomous(rhs, args, 1e-4, 7)
        for _ in range(7):
            xb = b.step(lambda t, y: rhs(y, *args), 1e-4)
    np.testing.assert_array_equal(xa, xb)
    assert a.t == pytest.approx(b.t, abs=1e-15) and a.nsteps == b.nsteps == 21
    np.testing.assert_array_equal(a.get_state()["y"], b.get_state()["y"])
    assert np.abs(xa - x0).max() > 1e-3            # it moved
