"""Error-controlled steps of generalized-alpha, HHT and Newmark (issue 24,
docs/step_control.md): the embedded estimate of the local position error, the
controller's rejections, the output grid kept, and a slack cable snapping taut that
fixed steps of the output grid get wrong."""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mbdcore.dae.methods import make_method
from mbdcore.dae.simulate import simulate
from mbdcore.integrators.step_control import StepSizeError
from support.models import G_ACC, CartesianPendulum, thrown_on_slack_cable

SCHEMES = ("generalized-alpha", "hht", "newmark")
THETA0 = 1.0          # the pendulum's release angle [rad]


def pendulum_angle(theta, omega, t_end, times=None):
    """The pendulum equation's solution [rad] from (theta, omega) (DOP853 at 1e-12)."""
    sol = solve_ivp(lambda t, y: [y[1], -G_ACC * math.sin(y[0])], (0.0, t_end),
                    [theta, omega], t_eval=times, rtol=1e-12, atol=1e-12, method="DOP853")
    return sol.y


@pytest.mark.parametrize("name", SCHEMES)
def test_the_estimate_tends_to_the_local_error(name):
    """After 0.4 s of steps of h (the acceleration-like variable settled on its
    O(h^2) approximation), one more step from (q_n, v_n) against the pendulum
    equation's solution from the same state: the true local error falls as h^3 and the
    estimate's component along it tends to it (ratio 1 + O(h): measured 0.89, 0.94,
    0.97, 0.98 at h = 40 ... 5 ms).  The estimate also has a part across the constraint
    (the scheme's position stays on g = 0, the Taylor term it compares does not),
    which makes its norm about 1.2 times the error's."""
    pendulum = CartesianPendulum()
    gaps, errors = [], []
    for h in (0.02, 0.01, 0.005):
        integ = make_method(name)
        q, v = pendulum.state_from_angle(THETA0, 0.0)
        for k in range(round(0.4 / h)):
            q, v = integ.step(pendulum, k * h, q, v, h)
        theta, omega = math.atan2(q[0], -q[1]), (q[0] * v[1] - q[1] * v[0]) / (q @ q)
        q_new, _ = integ.step(pendulum, 0.4, q, v, h)
        true = q_new - pendulum.state_from_angle(*pendulum_angle(theta, omega, h)[:, -1])[0]
        estimate = integ.local_error
        errors.append(np.linalg.norm(true))
        gaps.append(abs(estimate @ true / (true @ true) - 1.0))
        assert 1.0 < np.linalg.norm(estimate) / np.linalg.norm(true) < 1.3
    assert errors[0] / errors[1] == pytest.approx(8.0, rel=0.1)      # O(h^3)
    assert errors[1] / errors[2] == pytest.approx(8.0, rel=0.1)
    assert gaps[2] < gaps[1] < gaps[0] < 0.1                           # ratio -> 1
    assert gaps[1] / gaps[2] == pytest.approx(2.0, rel=0.25)           # as O(h)


@pytest.fixture(scope="module")
def pendulum_runs():
    """The pendulum over 1 s on a 50 ms output grid: error-controlled at tolerances
    1e-6 and 1e-8 per scheme, and generalized-alpha's fixed steps of 0.5 ms."""
    pendulum = CartesianPendulum()
    q0, v0 = pendulum.state_from_angle(THETA0, 0.0)

    def run(h, **options):
        return simulate(pendulum, 1.0, h, q0=q0, v0=v0, assemble_initial=False, **options)
    runs = {(name, tol): run(0.05, method=name, adaptive=True, rtol=tol, atol=tol)
            for name in SCHEMES for tol in (1e-6, 1e-8)}
    runs["fixed"] = run(5e-4, method="generalized-alpha", record_every=100)
    exact = pendulum_angle(THETA0, 0.0, 1.0, runs["fixed"].t)[0]
    return runs, np.array([pendulum.state_from_angle(a, 0.0)[0] for a in exact])


@pytest.mark.parametrize("name", SCHEMES)
def test_a_tight_tolerance_matches_a_fine_fixed_step_reference(pendulum_runs, name):
    """On the output grid (every 50 ms, landed on, not interpolated) the global error
    falls with the tolerance as tol^(2/3) (a local error of h^3 per step: measured 4.5x
    per decade, 1.6e-4 m at 1e-6); at 1e-8 the run (about 650 steps) agrees with fixed
    steps of 0.5 ms (their own error 8e-7 m) to 1.2e-5 m (measured 8e-6 m); steps were
    rejected and counted."""
    runs, exact = pendulum_runs
    coarse, tight, fixed = runs[name, 1e-6], runs[name, 1e-8], runs["fixed"]
    np.testing.assert_allclose(tight.t, fixed.t, rtol=0, atol=1e-12)
    err = {tol: np.abs(runs[name, tol].q - exact).max() for tol in (1e-6, 1e-8)}
    assert 10.0 < err[1e-6] / err[1e-8] < 40.0          # (100)^(2/3) = 21.5
    assert np.abs(tight.q - fixed.q).max() < 1.2e-5
    for r in (coarse, tight):
        s = r.stats
        assert s["rejected_steps"] > 0 and s["newton_rejections"] == 0
        assert s["nsteps"] == s["accepted_steps"] and s["h_largest"] <= 0.05
    assert tight.stats["accepted_steps"] > 3 * coarse.stats["accepted_steps"]


def test_a_slack_cable_snapping_taut_needs_the_step_adapted():
    """A 50 g mass thrown at 2 m/s on a slack Kevlar-like cable (EA = 8.8e4 N,
    1.13 g/m, 1 m): the cable catches it at t = 0.2 s for half a period of
    pi sqrt(m L / EA) = 2.4 ms and throws it back at 2 m/s (rho_inf = 1, no loss but
    the cable's 1e-4 s damping).  Fixed steps of the 10 ms output grid step over the
    collision: the mass leaves at 8 m/s, the energy 17 times what it was.  Error
    controlled (rtol = atol = 1e-6) the step shrinks to about 0.1 ms at the catch,
    rejected steps counted, and the mass leaves at v0 to 0.5 %, the energy kept to
    1 %, the results on the 10 ms grid."""
    runs = {}
    for label, options in (("fixed", {}),
                           ("adaptive", {"adaptive": True, "rtol": 1e-6, "atol": 1e-6})):
        system, _, body, q0, v0 = thrown_on_slack_cable((1.0, 0.0, 0.0), mass=0.05, ea=8.8e4,
                                                        rho_a=1.13e-3)
        r = simulate(system, 0.4, 0.01, "generalized-alpha", rho_inf=1.0, q0=q0, v0=v0,
                     **options)
        runs[label] = (r, r.v[-1, body.index])
    fixed, v_fixed = runs["fixed"]
    assert fixed.energy[-1] > 10.0 * fixed.energy[0] and v_fixed > 5.0
    r, v_back = runs["adaptive"]
    assert v_back == pytest.approx(-2.0, rel=5e-3)
    assert r.energy[-1] == pytest.approx(r.energy[0], rel=1e-2)
    assert r.stats["rejected_steps"] > 0 and r.stats["h_smallest"] < 3e-4
    np.testing.assert_allclose(np.diff(r.t), 0.01, rtol=0, atol=1e-12)


def test_options_are_checked_and_the_smallest_step_is_reported():
    with pytest.raises(ValueError, match="rtol = 0.0: accepted a finite number > 0"):
        make_method("generalized-alpha", adaptive=True, rtol=0.0)
    with pytest.raises(ValueError, match=r"rtol set the error control of adaptive=True"):
        make_method("hht", rtol=1e-4)
    with pytest.raises(ValueError, match=r"h_min = -1.0 s: accepted None or a finite"):
        make_method("newmark", adaptive=True, h_min=-1.0)
    with pytest.raises(ValueError, match="needs a second-order parameter set"):
        make_method("newmark", adaptive=True, gamma=0.6)
    with pytest.raises(ValueError, match="takes no option"):
        make_method("bathe", adaptive=True)
    # a tolerance the smallest step allowed cannot meet
    pendulum = CartesianPendulum()
    q0, v0 = pendulum.state_from_angle(THETA0, 0.0)
    with pytest.raises(StepSizeError, match=r"no step of at least h_min = 0.001 s passes at "
                                            r"t = 0 s: at h = 0.001 s the local error "
                                            r"estimate is .* x the tolerance") as err:
        simulate(pendulum, 0.1, 0.05, "generalized-alpha", q0=q0, v0=v0,
                 assemble_initial=False, adaptive=True, rtol=1e-12, atol=1e-12, h_min=1e-3)
    assert err.value.time == 0.0 and err.value.step == 1e-3
    assert err.value.reason == "error estimate"


def test_the_state_carries_the_controller():
    """get_state/set_state hold the proposed step and the step the history was made
    with: a run continued from a saved state repeats the original bit for bit."""
    pendulum = CartesianPendulum()
    q, v = pendulum.state_from_angle(THETA0, 0.0)
    integ = make_method("generalized-alpha", adaptive=True, rtol=1e-6, atol=1e-6)
    for k in range(4):
        q, v = integ.step(pendulum, 0.05 * k, q, v, 0.05)
    saved, (q_saved, v_saved) = integ.get_state(), (q, v)
    ahead = [integ.step(pendulum, 0.2, q, v, 0.05)[0]]
    integ.reset()
    integ.set_state(saved)
    again = integ.step(pendulum, 0.2, q_saved, v_saved, 0.05)[0]
    assert np.array_equal(again, ahead[0])
    assert integ.stats()["accepted_steps"] > 4
