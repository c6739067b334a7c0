"""Integrator library: orders, Gill's compensation, Treanor's exponential fit."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mbdcore.integrators.runge_kutta import Gill
from mbdcore.integrators.base import IntegrationError
from mbdcore.dae.methods import make_method
from mbdcore.dae.simulate import integrate


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


def test_unknown_integrator_lists_the_accepted_names():
    with pytest.raises(ValueError, match="accepted: rk4, gill, gill-tableau, treanor"):
        make_method("euler")


@pytest.mark.parametrize("method", ["rk4", "gill-tableau", "gill", "treanor", "bdf2"])
def test_compiled_stepping_equals_python_stepping_bit_for_bit(method):
    """step_autonomous (one compiled loop over the substeps for the tableau methods and
    Gill's) takes exactly the steps step() takes, on the arm's nonlinear equations."""
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
