"""Gear / BDF: coefficients from the order conditions, convergence orders, stiff
stability, the variable-step variable-order solver against scipy's Radau, state
round trips and failure reporting."""
import time

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mbdcore.integrators.multistep import (BDF, BDF_STABILITY_ANGLE, BDF_TABLE, GearIntegrator,
    GearSolver,
    ImprovedGear, multistep_coefficients)
from mbdcore.integrators.base import ConvergenceError, IntegrationError
from mbdcore.dae.methods import make_method
from mbdcore.dae.simulate import integrate


def _nonlinear(t, y):
    return np.array([-y[0] ** 2 + np.sin(t), y[0] - 0.3 * y[1]])


NONLINEAR_REF = solve_ivp(_nonlinear, (0, 1), [1.0, 0.0], method="DOP853",
                          rtol=3e-14, atol=1e-16).y[:, -1]


def _robertson(t, y):
    """Robertson's chemical kinetics: rate constants spanning 9 decades."""
    return np.array([-0.04 * y[0] + 1e4 * y[1] * y[2],
                     0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
                     3e7 * y[1] ** 2])


def _robertson_jac(t, y):
    return np.array([[-0.04, 1e4 * y[2], 1e4 * y[1]],
                     [0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]],
                     [0.0, 6e7 * y[1], 0.0]])


def _van_der_pol(t, y, mu=1000.0):
    return np.array([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])


def _observed_orders(method, ns, **kw):
    errs = []
    for n in ns:
        _, y = integrate(_nonlinear, [1.0, 0.0], 0.0, 1.0 / n, n, method(**kw))
        errs.append(np.abs(y[-1] - NONLINEAR_REF).max())
    return np.log2(np.array(errs[:-1]) / errs[1:])


# -- coefficients ----------------------------------------------------------------------

@pytest.mark.parametrize("k", sorted(BDF_TABLE))
def test_bdf_table_satisfies_the_order_conditions(k):
    alpha, beta, den = BDF_TABLE[k]
    np.testing.assert_allclose(multistep_coefficients(k, beta / den),
                               np.array(alpha) / den, atol=1e-13)
    assert sum(alpha) == 0                      # consistency: constants are exact


def test_improved_gear_reproduces_the_seed_coefficients_for_beta_20():
    """Yan & Al Dmour (2022; docs/benchmarks.md §8.1) print
    41 y2 = 80 y1 - 39 y0 + h(40 f2 - 38 f1), and
    182 y3 = 417 y2 - 294 y1 + 59 y0 + h(120 f3 - 114 f2); with b0 + b1 = 1 these are
    the printed formulas divided by 2 and by 6."""
    np.testing.assert_allclose(2 * multistep_coefficients(2, 20.0, -19.0), [41, -80, 39])
    np.testing.assert_allclose(6 * multistep_coefficients(3, 20.0, -19.0),
                               [182, -417, 294, -59], atol=1e-11)


# -- convergence orders ----------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_fixed_step_bdf_converges_with_order_k(k):
    orders = _observed_orders(BDF, (20, 40, 80), k=k, rtol=1e-13, atol=1e-15)
    assert np.all(np.abs(orders - k) < 0.3), orders


@pytest.mark.parametrize("k, ns", [(5, (40, 80, 160)), (6, (30, 60, 120))])
def test_high_order_bdf_converges_with_order_k(k, ns):
    orders = _observed_orders(BDF, ns, k=k, rtol=1e-13, atol=1e-15)
    assert np.all(np.abs(orders - k) < 0.3), orders


@pytest.mark.parametrize("k", [2, 3])
def test_improved_gear_converges_with_order_k(k):
    # beta = 20 has a large error constant: the asymptotic range starts near h = 1/100.
    orders = _observed_orders(ImprovedGear, (160, 320, 640), k=k, rtol=1e-13, atol=1e-15)
    assert np.all(np.abs(orders - k) < 0.3), orders


# -- stiffness -------------------------------------------------------------------------

def _prothero_robinson(t, y, lam=-1e6):
    """y' = lam (y - cos t) - sin t: solution cos t, a transient decaying at rate |lam|."""
    return lam * (y - np.cos(t)) - np.sin(t)


@pytest.mark.parametrize("k", [1, 2])
def test_a_stable_bdf_follows_a_stiff_solution_where_rk4_explodes(k):
    h, n = 0.1, 50
    t, y = integrate(_prothero_robinson, [1.0], 0.0, h, n,
                     BDF(k, jac=lambda t, y: np.array([[-1e6]])))
    # Error of BDF on the smooth solution is O(h^k y^(k+1) / |lam|), not O(h^k).
    assert np.abs(y[:, 0] - np.cos(t)).max() < 1e-6
    with np.errstate(all="ignore"):
        _, y_rk4 = integrate(_prothero_robinson, [1.0], 0.0, h, 5, "rk4",
                             check_finite=False)
    assert not np.all(np.abs(y_rk4[-1]) < 1e10)


def test_gear_solves_robertson_to_the_requested_tolerance_in_few_steps():
    t_out = np.array([0.4, 4.0, 40.0])
    y0 = [1.0, 0.0, 0.0]
    ref = solve_ivp(_robertson, (0, 40), y0, method="Radau", rtol=1e-10, atol=1e-14,
                    t_eval=t_out).y.T
    scaled = {}
    for rtol in (1e-4, 1e-6, 1e-8):
        atol = 1e-4 * rtol                  # y2 is ~1e-5: atol must lie below it
        res = GearSolver(rtol=rtol, atol=atol).solve(_robertson, (0, 40), y0,
                                                     jac=_robertson_jac, t_eval=t_out)
        np.testing.assert_array_equal(res.t, t_out)
        scaled[rtol] = np.abs(res.y - ref) / (atol + rtol * np.abs(ref))
        assert scaled[rtol].max() < 10, (rtol, scaled[rtol])
    # Tolerance proportionality: the global error follows the requested tolerance.
    assert np.abs(res.y - ref).max() < 1e-3 * np.abs(
        GearSolver(rtol=1e-4, atol=1e-8).solve(_robertson, (0, 40), y0,
                                                t_eval=t_out).y - ref).max()
    s = res.stats
    assert s["nsteps"] == len(s["orders"]) > 0
    assert s["nfev"] > s["nsteps"] and s["njev"] >= 1 and s["nlu"] >= 1
    # An explicit method must keep h |lam_max| inside its stability interval (2.79 for
    # RK4); on [1, 40] the fast eigenvalue of the Jacobian is below -2000 [1/s].
    lam = min(np.linalg.eigvals(_robertson_jac(0, y)).real.min() for y in ref)
    assert lam < -2000
    rk4_steps = 39.0 * abs(lam) / 2.79
    assert s["nsteps"] < 0.02 * rk4_steps


def test_gear_adapts_step_and_order_on_van_der_pol():
    res = GearSolver(rtol=1e-6, atol=1e-8).solve(_van_der_pol, (0, 3000), [2.0, 0.0])
    s = res.stats
    ref = solve_ivp(_van_der_pol, (0, 3000), [2.0, 0.0], method="Radau", rtol=1e-10,
                    atol=1e-12).y[:, -1]
    # Over 1.5 relaxation periods the global error collects the phase errors of the
    # fast jumps; 100 x the local tolerance is still 1e-4 relative.
    assert np.abs(res.y[-1, 0] - ref[0]) < 100 * (1e-8 + 1e-6 * abs(ref[0]))
    assert set(s["order_counts"]) >= {1, 2, 3, 4, 5}
    assert s["order_counts"][5] > s["nsteps"] / 2      # long slow branches use order 5
    h = s["step_sizes"]
    assert h.max() / h.min() > 1e4                     # jumps vs slow branches
    assert s["nrejected"] < 0.2 * s["nsteps"]


def test_order_six_is_used_when_allowed():
    res = GearSolver(rtol=1e-8, atol=1e-12, max_order=6).solve(
        _robertson, (0, 40), [1.0, 0.0, 0.0], jac=_robertson_jac)
    assert 6 in res.stats["order_counts"]
    assert max(GearSolver(max_order=5).solve(_robertson, (0, 40), [1.0, 0.0, 0.0])
               .stats["orders"]) == 5


# -- the fixed-interval interface --------------------------------------------------------

def test_gear_integrator_lands_on_each_interval_and_keeps_its_history():
    integ = make_method("gear", rtol=1e-7, atol=1e-11)
    assert isinstance(integ, GearIntegrator)
    t, y = integrate(_robertson, [1.0, 0.0, 0.0], 0.0, 4.0, 10, integ)
    ref = solve_ivp(_robertson, (0, 40), [1.0, 0.0, 0.0], method="Radau", rtol=1e-10,
                    atol=1e-14, t_eval=t).y.T
    assert (np.abs(y - ref) / (1e-11 + 1e-7 * np.abs(ref))).max() < 10
    s = integ.stats()
    assert s["nsteps"] == 10
    # Continuing history: an 11th interval from a restart costs the start-up again
    # (order 1, small h), continuing does not.
    internal = s["internal_nsteps"]
    integ.step(_robertson, 4.0)
    continued = integ.stats()["internal_nsteps"] - internal
    fresh = GearIntegrator(rtol=1e-7, atol=1e-11)
    fresh.start(40.0, y[-1])
    fresh.step(_robertson, 4.0)
    assert continued < fresh.stats()["internal_nsteps"]


@pytest.mark.parametrize("name", ["bdf4", "improved-gear2", "gear"])
def test_state_round_trip_continues_bit_for_bit(name):
    integ = make_method(name)
    h = 0.05
    integ.start(0.0, [1.0, 0.0])
    for k in range(6):
        y = integ.step(_nonlinear, h)
    saved = integ.get_state()
    for k in range(6, 12):
        y = integ.step(_nonlinear, h)
    for target in (integ, make_method(name)):
        target.set_state(saved)
        for k in range(6, 12):
            z = target.step(_nonlinear, h)
        np.testing.assert_array_equal(y, z)
        assert target.nfev == integ.nfev


def test_bdf_restarts_when_the_step_size_changes():
    """A k-step history is only valid on its own grid: after a change of h the method
    continues exactly as a new one started from the current point would."""
    integ = BDF(3)
    integ.start(0.0, [1.0, 0.0])
    for k in range(5):
        y = integ.step(_nonlinear, 0.01)
    fresh = BDF(3)
    fresh.start(integ.t, y)
    for k in range(5):
        y = integ.step(_nonlinear, 0.02)
        z = fresh.step(_nonlinear, 0.02)
    # Only the reused Jacobian differs; Newton converges to 1e-10 relative either way.
    np.testing.assert_allclose(y, z, rtol=1e-9)


# -- failures ----------------------------------------------------------------------------

def test_newton_failure_raises_quickly_with_time_and_step():
    """y' = y^2 from y = 1 (y = 1/(1 - t), infinite at t = 1 s): backward Euler with
    h = 1 asks for y = 1 + y^2, which has no real root, so no Newton iteration can
    converge.  Without the retry the error names t = 1 s and the step; with it
    (default) the step is halved, the halves go on towards the blow-up and the error
    names where even h/64 fails, before t = 1 s, with that step and its residual."""
    with pytest.raises(ConvergenceError, match=r"t = 1 s.*h = 1 s.*iterations") as info:
        integ = BDF(1, max_halvings=0)
        integ.start(0.0, [1.0])
        integ.step(lambda t, y: y ** 2, 1.0)
    assert info.value.step == 1.0 and info.value.residual > 1.0
    integ = BDF(1)
    integ.start(0.0, [1.0])
    with pytest.raises(ConvergenceError, match=r"h = 0\.0156 s.*residual.*the step 1 s was "
                                               r"halved 6 times") as info:
        integ.step(lambda t, y: y ** 2, 1.0)
    err = info.value
    assert err.step == 1.0 / 64 and err.halvings == 6 and 0.0 < err.time < 1.0
    # the residual is in units of the tolerance: a failed solve ends above it
    assert err.residual > 1.0
    # the failed step leaves the integrator where it was
    assert integ.t == 0.0 and integ.y.tolist() == [1.0]


def test_gear_reports_a_right_hand_side_that_becomes_nan():
    def broken(t, y):
        return -y if t < 0.5 else np.full_like(y, np.nan)

    start = time.perf_counter()
    with pytest.raises(IntegrationError, match="t = 0.5"):
        GearSolver().solve(broken, (0, 1), [1.0])
    assert time.perf_counter() - start < 2.0


def test_stability_angles_are_those_of_the_boundary_locus():
    """A(alpha) angle of BDF-k from its own coefficients: the widest sector |arg(-z)| <
    alpha left of the boundary locus z(theta) = rho(e^{i theta}) / sigma(e^{i theta})
    (Hairer & Wanner 1996, ch. V.2: 90, 90, 86.03, 73.35, 51.84, 17.84 deg).  The table
    held the source's printed 86.9 and 73.2 for BDF3 and BDF4."""
    theta = np.linspace(1e-6, 2 * np.pi - 1e-6, 400001)
    zeta = np.exp(1j * theta)
    for k, (alpha, b, _) in BDF_TABLE.items():
        rho = sum(a * zeta ** (k - j) for j, a in enumerate(alpha))
        z = rho / (b * zeta ** k)
        left = z.real < 0
        angle = min(90.0, float(np.degrees(np.pi - np.abs(np.angle(z[left]))).min())
                    if left.any() else 90.0)
        assert BDF_STABILITY_ANGLE[k] == pytest.approx(angle, abs=0.01), k
