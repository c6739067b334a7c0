"""Index-3 implicit integrators against references that cannot be tuned.

* a planar pendulum in Cartesian coordinates (x, y), constraint x^2 + y^2 - L^2 = 0,
  against theta'' = -(g/L) sin(theta) solved by solve_ivp at rtol 1e-12;
* a damped, forced two-mass spring chain (no constraints) against the matrix
  exponential of its first-order form;
* a stiff scalar oscillator against the amplification matrix of generalized-alpha
  written out from its defining equations (Chung-Hulbert), and its limit rho_inf.
"""
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from mbdcore.dae.problem import ConstrainedProblem
from mbdcore.dae.index3 import ConvergenceError
from mbdcore.dae.schemes import HHT, Bathe, GeneralizedAlpha, Newmark
from mbdcore.dae.methods import make_method
from mbdcore.dae.simulate import integrate_index3, simulate
from mbdcore.multibody.ancf import cantilever

from support.models import G_ACC, CartesianPendulum

class RedundantPendulum(CartesianPendulum):
    """The same rod constraint written twice: G loses rank, the saddle matrix is singular."""

    m = 2

    def constraints(self, t, q):
        return np.repeat(super().constraints(t, q), 2)

    def constraint_jacobian(self, t, q):
        return np.vstack([super().constraint_jacobian(t, q)] * 2)

    def gamma(self, t, q, v):
        return np.repeat(super().gamma(t, q, v), 2)


class PoisonedPendulum(CartesianPendulum):
    """Forces become NaN after t_bad [s] (a model that blows up mid-run)."""

    def __init__(self, t_bad):
        super().__init__()
        self.t_bad = t_bad

    def forces(self, t, q, v):
        return super().forces(t, q, v) * (np.nan if t > self.t_bad else 1.0)


class SpringChain(ConstrainedProblem):
    """wall -k1- m1 -k2- m2, damper c on m1, constant force f on m2 (m = 0 constraints)."""

    n, m = 2, 0

    def __init__(self, m1=1.0, m2=0.5, k1=40.0, k2=25.0, c=0.3, f=2.0):
        self.M = np.diag([m1, m2])
        self.K = np.array([[k1 + k2, -k2], [-k2, k2]])
        self.C = np.diag([c, 0.0])
        self.f = np.array([0.0, f])

    def mass_matrix(self, q):
        return self.M

    def forces(self, t, q, v):
        return self.f - self.K @ q - self.C @ v

    def exact(self, t, q0, v0):
        """Matrix exponential of x' = A x + b (b carried as an extra constant state)."""
        Minv = np.linalg.inv(self.M)
        A = np.zeros((5, 5))
        A[0:2, 2:4] = np.eye(2)
        A[2:4, 0:2] = -Minv @ self.K
        A[2:4, 2:4] = -Minv @ self.C
        A[2:4, 4] = Minv @ self.f
        x = expm(A * t) @ np.concatenate([q0, v0, [1.0]])
        return x[0:2], x[2:4]


class Oscillator(ConstrainedProblem):
    """q'' = -omega^2 q, unit mass, analytic force Jacobians."""

    n, m = 1, 0

    def __init__(self, omega):
        self.omega = omega

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        return -self.omega ** 2 * q

    def force_jacobians(self, t, q, v):
        return -self.omega ** 2 * np.eye(1), np.zeros((1, 1))


METHODS = [
    ("generalized-alpha", {"rho_inf": 0.8}),
    ("generalized-alpha", {"rho_inf": 1.0}),
    ("hht", {"alpha": -0.1}),
    ("newmark", {"beta": 0.25, "gamma": 0.5}),
    ("bathe", {}),
    ("bathe-broyden", {}),
    ("generalized-alpha", {"rho_inf": 0.8, "constraint_form": "index3"}),
    ("bathe", {"constraint_form": "index3", "iteration": "newton"}),
]
IDS = [f"{n}{'-' + '-'.join(f'{k}={v}' for k, v in p.items()) if p else ''}"
       for n, p in METHODS]


def pendulum_reference(theta0, t_end):
    sol = solve_ivp(lambda t, y: [y[1], -G_ACC * np.sin(y[0])], (0.0, t_end),
                    [theta0, 0.0], rtol=1e-12, atol=1e-12)
    return sol.y[0, -1], sol.y[1, -1]


def observed_orders(errors):
    e = np.asarray(errors)
    return np.log2(e[:-1] / e[1:])


@pytest.mark.parametrize("name, params", METHODS, ids=IDS)
def test_pendulum_second_order_in_position_and_velocity(name, params):
    pend = CartesianPendulum()
    q0, v0 = pend.state_from_angle(1.0, 0.0)
    q_ref, v_ref = pend.state_from_angle(*pendulum_reference(1.0, 1.0))
    eq, ev = [], []
    for n_steps in (25, 50, 100):
        res = integrate_index3(pend, q0, v0, 0.0, 1.0 / n_steps, n_steps, name, **params)
        eq.append(np.max(np.abs(res.q[-1] - q_ref)))
        ev.append(np.max(np.abs(res.v[-1] - v_ref)))
    assert np.all(np.abs(observed_orders(eq) - 2.0) < 0.3), eq
    assert np.all(np.abs(observed_orders(ev) - 2.0) < 0.3), ev


@pytest.mark.parametrize("name, params, order", [
    ("generalized-alpha", {"rho_inf": 0.8}, 2), ("generalized-alpha", {"rho_inf": 1.0}, 2),
    ("hht", {"alpha": -0.1}, 2), ("bathe", {}, 2),
    ("generalized-alpha", {"rho_inf": 0.8, "constraint_form": "index3"}, 2),
    ("bathe", {"constraint_form": "index3"}, 1)],
    ids=["ga-0.8", "ga-1", "hht", "bathe", "ga-0.8-index3", "bathe-index3"])
def test_pendulum_multiplier_order(name, params, order):
    """lambda = m (g cos(theta) + L theta'^2) / (2 L).  With the GGL form (velocity
    constraint imposed too) every scheme's multiplier is second order.  At index 3
    Bathe's is only first order: its q'' differentiates velocities that are themselves
    differences of constrained positions."""
    pend = CartesianPendulum()
    q0, v0 = pend.state_from_angle(1.0, 0.0)
    theta, omega = pendulum_reference(1.0, 1.0)
    lam_ref = pend.mass * (G_ACC * np.cos(theta) + pend.length * omega ** 2) / 2.0
    errors = [abs(integrate_index3(pend, q0, v0, 0.0, 1.0 / n, n, name, **params).lam[-1, 0]
                  - lam_ref) for n in (100, 200, 400)]
    assert np.all(np.abs(observed_orders(errors) - order) < 0.3), errors


@pytest.mark.parametrize("name, params", METHODS, ids=IDS)
def test_spring_chain_second_order_without_constraints(name, params):
    chain = SpringChain()
    q0, v0 = np.array([0.1, -0.05]), np.array([0.0, 0.3])
    q_ref, v_ref = chain.exact(2.0, q0, v0)
    errors = []
    for n_steps in (100, 200, 400):
        res = integrate_index3(chain, q0, v0, 0.0, 2.0 / n_steps, n_steps, name, **params)
        assert res.lam.shape == (n_steps + 1, 0)
        errors.append(np.max(np.abs(res.q[-1] - q_ref)))
    assert np.all(np.abs(observed_orders(errors) - 2.0) < 0.3), errors


def run_pendulum(name, params, h, t_end):
    pend = CartesianPendulum()
    q0, v0 = pend.state_from_angle(1.0, 0.0)
    res = integrate_index3(pend, q0, v0, 0.0, h, int(round(t_end / h)), name, **params)
    energy = np.array([pend.energy(t, q, v) for t, q, v in zip(res.t, res.q, res.v)])
    theta = np.arctan2(res.q[:, 0], -res.q[:, 1])
    omega2 = np.sum(res.v ** 2, axis=1) / pend.length ** 2
    # Rod tension from the multiplier, |G^T lambda| = 2 L |lambda|, against the radial
    # balance m (g cos(theta) + L theta'^2) on the computed motion.
    tension_error = np.abs(2.0 * pend.length * np.abs(res.lam[:, 0])
                           - pend.mass * (G_ACC * np.cos(theta) + pend.length * omega2))
    return pend, res, energy, tension_error


@pytest.mark.parametrize("name, params, t_end", [
    ("generalized-alpha", {"rho_inf": 1.0}, 10.0),
    ("generalized-alpha", {"rho_inf": 1.0, "constraint_form": "index3"}, 3.0),
    ("generalized-alpha", {"rho_inf": 0.99, "constraint_form": "index3"}, 10.0),
    ("bathe", {}, 3.0), ("bathe-broyden", {}, 10.0)],
    ids=["ga-rho=1-10s", "ga-rho=1-index3-3s", "ga-rho=0.99-index3-10s", "bathe-3s",
         "bathe-broyden-10s"])
def test_pendulum_energy_and_constraint(name, params, t_end):
    pend, res, energy, tension_error = run_pendulum(name, params, 1e-3, t_end)
    e0 = energy[0]                                  # -g cos(1) [J]: far from zero
    assert np.max(np.abs(energy - e0)) / abs(e0) < 1e-5
    violation = np.abs(np.sum(res.q ** 2, axis=1) - pend.length ** 2)
    assert np.max(violation) < 1e-10
    assert np.max(tension_error[1:]) < 1e-2 * pend.mass * G_ACC


def test_rho_one_is_weakly_unstable_at_index_3_and_stable_in_ggl_form():
    """Cardona and Geradin (1989): the trapezoidal rule at index 3 has a root -1 on the
    constraint (multiplier) component, and the nonlinear coupling pushes it out of the
    unit circle at a rate per second independent of h.  Any rho_inf < 1 damps it.  With
    the velocity constraint imposed as well (GGL, the default) the multiplier is fixed
    by the velocity level and rho_inf = 1 stays bounded (Arnold, Bruls and Cardona
    2015)."""
    index3 = {"constraint_form": "index3"}
    *_, err_one = run_pendulum("generalized-alpha", {"rho_inf": 1.0, **index3}, 2e-3, 6.0)
    *_, err_099 = run_pendulum("generalized-alpha", {"rho_inf": 0.99, **index3}, 2e-3, 6.0)
    *_, err_ggl = run_pendulum("generalized-alpha", {"rho_inf": 1.0}, 2e-3, 6.0)
    assert err_one[-500:].max() > 100.0 * err_one[1:500].max()
    assert err_099[-500:].max() < 1.5 * err_099[1:500].max()
    assert err_ggl[-500:].max() < 1.5 * err_ggl[1:500].max()


@pytest.mark.parametrize("form", ["ggl", "index3"])
def test_broyden_and_modified_need_fewer_jacobians_than_newton_for_bathe(form):
    pend = CartesianPendulum()
    q0, v0 = pend.state_from_angle(1.0, 0.0)
    runs = {it: integrate_index3(pend, q0, v0, 0.0, 0.01, 100, "bathe", iteration=it,
                                 constraint_form=form)
            for it in ("newton", "modified", "broyden")}
    jac = {it: r.stats["jacobian_evaluations"] for it, r in runs.items()}
    assert jac["broyden"] < jac["newton"] / 10 and jac["modified"] < jac["newton"] / 10
    # ... and reach the same solution to within the Newton tolerance's effect.
    for it in ("modified", "broyden"):
        assert np.max(np.abs(runs[it].q - runs["newton"].q)) < 1e-8


@pytest.mark.parametrize("form", ["ggl", "index3"])
def test_scaled_iteration_matrix_condition_does_not_grow_as_h_shrinks(form):
    """Unscaled, [[M/(beta h^2) + ..., G^T], [G, 0]] has cond ~ 1/h^4; scaled, O(1).
    The GGL rows (G v + g_t)/c_v and the unknown mu are in position units too."""
    pend = CartesianPendulum()
    q, v = pend.state_from_angle(1.0, 0.5)
    integ = GeneralizedAlpha(0.8, constraint_form=form)
    conds = []
    for h in (1e-2, 1e-3, 1e-4, 1e-5):
        ca = (1 - integ.alpha_m) / ((1 - integ.alpha_f) * integ.beta * h * h)
        cv = integ.gamma / (integ.beta * h)
        J = integ._iteration_matrix(pend, 0.0, q, v, np.zeros(2), np.array([5.0 / ca]), cv, ca)
        conds.append(np.linalg.cond(J))
    assert max(conds) < 10.0 and max(conds) / min(conds) < 1.1


def amplification_matrix(scheme, omega_h):
    """Chung-Hulbert amplification of (q, h v, h^2 a) for q'' = -omega^2 q.

    Written from the scheme's three defining equations (with h^2 q''_n = -Omega^2 q_n):
    q' - beta A' = q + V + (1/2 - beta) A,  V' - gamma A' = V + (1 - gamma) A,
    (1 - alpha_m) A' + (1 - alpha_f) Omega^2 q' = -alpha_m A - alpha_f Omega^2 q.
    """
    am, af, b, g = scheme.alpha_m, scheme.alpha_f, scheme.beta, scheme.gamma
    w2 = omega_h ** 2
    lhs = np.array([[1.0, 0.0, -b], [0.0, 1.0, -g], [(1 - af) * w2, 0.0, 1 - am]])
    rhs = np.array([[1.0, 1.0, 0.5 - b], [0.0, 1.0, 1 - g], [-af * w2, 0.0, -am]])
    return np.linalg.solve(lhs, rhs)


@pytest.mark.parametrize("scheme, rho_inf", [
    (GeneralizedAlpha(0.0), 0.0), (GeneralizedAlpha(0.5), 0.5),
    (GeneralizedAlpha(0.8), 0.8), (GeneralizedAlpha(1.0), 1.0),
    (HHT(-0.1), 0.9 / 1.1), (HHT(-1.0 / 3.0), 0.5), (Newmark(), 1.0)],
    ids=["ga0", "ga0.5", "ga0.8", "ga1", "hht-0.1", "hht-1/3", "trapezoidal"])
def test_spectral_radius_at_infinity_is_rho_inf(scheme, rho_inf):
    radius = np.max(np.abs(np.linalg.eigvals(amplification_matrix(scheme, 1e8))))
    assert radius == pytest.approx(rho_inf, abs=1e-3)


@pytest.mark.parametrize("rho_inf", [0.0, 0.5, 1.0])
def test_high_frequency_amplitude_decays_as_predicted(rho_inf):
    h, omega_h, n_steps = 1e-3, 100.0, 40
    osc = Oscillator(omega_h / h)
    res = integrate_index3(osc, [1e-3], [0.0], 0.0, h, n_steps, "generalized-alpha",
                           rho_inf=rho_inf)
    scheme = GeneralizedAlpha(rho_inf)
    y = np.array([1e-3, 0.0, -osc.omega ** 2 * 1e-3 * h * h])
    A = amplification_matrix(scheme, omega_h)
    for k in range(n_steps):
        y = A @ y
        assert res.q[k + 1, 0] == pytest.approx(y[0], abs=1e-9 * 1e-3)
        assert h * res.v[k + 1, 0] == pytest.approx(y[1], abs=1e-9 * 1e-3)
    amplitude = np.hypot(res.q[-1, 0], res.v[-1, 0] / osc.omega)
    if rho_inf < 1.0:
        assert amplitude < 1e-3 * (rho_inf + 0.1) ** 10      # numerically dissipated
    else:
        assert amplitude == pytest.approx(1e-3, rel=1e-6)      # no dissipation at rho = 1


def test_bathe_annihilates_a_stiff_component_and_keeps_the_slow_one():
    h = 1e-3
    chain = SpringChain(m1=1.0, m2=1e-6, k1=40.0, k2=1e4, c=0.0, f=0.0)
    # The light mass rides the heavy one on a stiff spring (omega h ~ 100): start it
    # off its quasi-static position by 1 mm.
    q0, v0 = np.array([0.1, 0.101]), np.zeros(2)
    res = integrate_index3(chain, q0, v0, 0.0, h, 50, "bathe")
    assert abs(res.q[-1, 1] - res.q[-1, 0]) < 1e-6
    # The slow mode: m1 q'' = -k1 q (the light mass carries no inertia to speak of).
    w = np.sqrt(40.0)
    assert res.q[-1, 0] == pytest.approx(0.1 * np.cos(w * 0.05), abs=1e-5)


def test_newton_failure_on_nan_forces_names_the_time():
    """Forces NaN from t = 0.0405 s on, steps of 10 ms: no step size cures that, so the
    step [0.04, 0.05] s is halved down to h/64 (the default max_halvings, 6) and the
    error names the first time past 0.0405 s on that finest grid, the step tried there
    and its residual (not finite); the retries stay bounded (6 levels, each failing at
    its first iteration, plus the halves that succeed before 0.0405 s)."""
    pend = PoisonedPendulum(t_bad=0.0405)
    q0, v0 = pend.state_from_angle(0.5, 0.0)
    h = 0.01
    for method in ("generalized-alpha", "bathe-broyden"):
        integ = make_method(method)
        with pytest.raises(ConvergenceError) as info:
            integrate_index3(pend, q0, v0, 0.0, h, 10, integ)
        err, text = info.value, str(info.value)
        # generalized-alpha solves at the end of a step, Bathe's first stage at its
        # middle: either way the time lies within the finest step past 0.0405 s
        assert 0.0405 < err.time <= 0.0405 + h / 64
        assert err.step == h / 64 and err.halvings == 6
        assert f"at t = {err.time:.9g} s (h = {h / 64:.3g} s)" in text
        assert "last residual nan" in text and "non-finite residual" in text
        assert "the step 0.01 s was halved 6 times" in text
        # 4 good steps, then at most 6 failing levels and 6 good halves per level
        assert integ.newton_iterations < 4 * 2 * 25 + 6 * 2 * 2 * 25


def test_a_newton_failure_in_simulate_keeps_the_steps_before_it():
    """simulate's ConvergenceError carries the steps recorded before it (``result``), as
    its DivergenceError does: a long run that fails late loses nothing.  Forces NaN from
    t = 0.0405 s on, steps of 10 ms: the rows of 0 ... 0.04 s are kept, equal to a run
    that stops at 0.04 s."""
    pend = PoisonedPendulum(t_bad=0.0405)
    q0, v0 = pend.state_from_angle(0.5, 0.0)
    with pytest.raises(ConvergenceError) as info:
        simulate(pend, 0.1, 0.01, "generalized-alpha", q0=q0, v0=v0)
    kept = info.value.result
    np.testing.assert_allclose(kept.t, [0.0, 0.01, 0.02, 0.03, 0.04], rtol=0, atol=1e-15)
    short = simulate(PoisonedPendulum(t_bad=0.0405), 0.04, 0.01, "generalized-alpha",
                     q0=q0, v0=v0)
    assert np.array_equal(kept.q, short.q) and np.array_equal(kept.v, short.v)


def test_redundant_constraints_raise_instead_of_hanging():
    pend = RedundantPendulum()
    q0, v0 = pend.state_from_angle(0.5, 0.0)
    with pytest.raises(ConvergenceError, match=r"t = 0 s"):
        integrate_index3(pend, q0, v0, 0.0, 0.01, 10, "generalized-alpha")
    # Past the start-up (history supplied by hand) the step itself must refuse: a
    # singular iteration matrix at every halving (redundant rows stay redundant)
    integ = GeneralizedAlpha(0.8)
    integ.qdd, integ.a, integ.lam = np.zeros(2), np.zeros(2), np.zeros(2)
    with pytest.raises(ConvergenceError, match=r"t = 0\.00015625 s \(h = 0\.000156 s\)"
                                               r".*singular") as info:
        integ.step(pend, 0.0, q0, v0, 0.01)
    # one failed solve at h and at each of its first halves h/2 ... h/64, the last one
    # [0, h/64]
    assert integ.failures == 1 + integ.max_halvings
    assert info.value.halvings == integ.max_halvings
    # without the retry, one failed solve and the error at h
    integ = GeneralizedAlpha(0.8, max_halvings=0)
    integ.qdd, integ.a, integ.lam = np.zeros(2), np.zeros(2), np.zeros(2)
    with pytest.raises(ConvergenceError, match=r"t = 0\.01 s \(h = 0\.01 s\).*singular"):
        integ.step(pend, 0.0, q0, v0, 0.01)
    assert integ.failures == 1


def test_absurd_step_raises_convergence_error():
    """A step of 1000 s on a 1 m pendulum (period 2 s) fails at every halving down to
    1000/64 s, still absurd: the error names the step tried last and the one given."""
    pend = CartesianPendulum()
    q0, v0 = pend.state_from_angle(1.0, 0.0)
    integ = Bathe(max_iterations=8)
    with pytest.raises(ConvergenceError, match=r"t = .* s \(h = 15\.6 s\).*the step 1e\+03 s "
                                               r"was halved 6 times"):
        integ.step(pend, 0.0, q0, v0, 1e3)


@pytest.mark.parametrize("name, params", [("generalized-alpha", {"iteration": "modified"}),
                                          ("hht", {"iteration": "broyden"}),
                                          ("bathe-broyden", {}), ("bathe", {}),
                                          ("bathe", {"constraint_form": "index3"})])
def test_get_set_state_continues_bit_for_bit(name, params):
    pend = CartesianPendulum()
    q, v = pend.state_from_angle(1.0, 0.3)
    integ = make_method(name, **params)
    h = 0.01
    for k in range(15):
        q, v = integ.step(pend, k * h, q, v, h)
    saved, q_s, v_s = integ.get_state(), q.copy(), v.copy()
    first = []
    for k in range(15, 30):
        q, v = integ.step(pend, k * h, q, v, h)
        first.append(np.concatenate([q, v, integ.lam, integ.qdd, integ.a]))
    stats_first = integ.stats()
    integ.set_state(saved)
    q, v = q_s, v_s
    for k, ref in zip(range(15, 30), first):
        q, v = integ.step(pend, k * h, q, v, h)
        assert np.array_equal(np.concatenate([q, v, integ.lam, integ.qdd, integ.a]), ref)
    assert integ.stats() == stats_first


def test_newmark_with_gamma_off_half_is_first_order_and_registry_names():
    assert Newmark(0.3, 0.6).order == 1
    assert GeneralizedAlpha(0.7).order == HHT(-0.2).order == Bathe().order == 2
    for name in ("generalized-alpha", "hht", "newmark", "bathe", "bathe-broyden"):
        integ = make_method(name)
        assert integ.nsteps == 0 and integ.constraint_form == "ggl"
    with pytest.raises(ValueError, match="accepted: .*bathe-broyden"):
        make_method("radau-iia")
    with pytest.raises(ValueError, match="'ggl', 'index3'"):
        make_method("bathe", constraint_form="index2")


# -- the Newton policy: kept factorisations (issue 12, item 2) ------------------------------
class KickedPendulum(CartesianPendulum):
    """A sideways force of 200 weights [N] from t_kick [s] on: the multiplier, and with it
    the geometric stiffness 2 lambda I in the iteration matrix, jumps by a factor ~200."""

    def __init__(self, t_kick):
        super().__init__()
        self.t_kick = t_kick

    def forces(self, t, q, v):
        kick = 200.0 * self.mass * G_ACC if t > self.t_kick else 0.0
        return super().forces(t, q, v) + np.array([kick, 0.0])


def policy_counts(integ):
    s = integ.stats()
    return s["newton_iterations"], s["factorizations"], s["jacobian_evaluations"]


def assert_counts_consistent(stats):
    assert stats["jacobian_evaluations"] <= stats["factorizations"] <= stats["newton_iterations"]
    n = stats["nsteps"]
    assert stats["iterations_per_step"] == pytest.approx(stats["newton_iterations"] / n)
    assert stats["factorizations_per_step"] == pytest.approx(stats["factorizations"] / n)
    assert stats["jacobian_evaluations_per_step"] == pytest.approx(
        stats["jacobian_evaluations"] / n)


@pytest.mark.parametrize("name, params", METHODS[:6] + [("bathe", {"iteration": "newton"})])
def test_policy_counts_are_consistent(name, params):
    pend = CartesianPendulum()
    q0, v0 = pend.state_from_angle(1.0, 0.0)
    res = integrate_index3(pend, q0, v0, 0.0, 1e-2, 100, name, **params)
    assert_counts_consistent(res.stats)
    if params.get("iteration", "modified") == "modified" and name != "bathe-broyden":
        # factors are kept across iterations: fewer factorisations than iterations
        assert res.stats["factorizations"] < res.stats["newton_iterations"]


def test_kept_factorisations_reach_the_full_newton_solution_on_a_flexible_beam():
    """A cantilever of 4 ANCF elements (EA = 1e5 N) falling under gravity for 0.2 s:
    modified Newton with kept factors and blocks against full Newton (fresh matrix at
    every iteration), same tolerance: the runs differ by what that tolerance lets through
    (tol max(1, |q|), tol max(1, |v|) per step, 200 steps)."""
    runs = {it: simulate(cantilever(n_elements=4, ea=1e5, gravity=(0.0, -9.81)), 0.2, 1e-3,
                         "generalized-alpha", formulation="index3", rho_inf=0.8, iteration=it)
            for it in ("modified", "newton")}
    mod, new = runs["modified"], runs["newton"]
    assert np.abs(mod.q - new.q).max() < 1e-8
    assert np.abs(mod.v - new.v).max() < 200 * 1e-9 * max(1.0, np.abs(new.v).max())
    assert np.abs(mod.q[-1] - mod.q[0]).max() > 0.05               # it did fall
    assert_counts_consistent(mod.stats)
    assert mod.stats["factorizations"] < 0.6 * new.stats["factorizations"]
    assert mod.stats["jacobian_evaluations"] < 0.1 * new.stats["jacobian_evaluations"]


@pytest.mark.parametrize("name", ["generalized-alpha", "bathe"])
def test_a_step_size_change_refactorises(name):
    """Kept factors are for one h (c_v, c_a scale the matrix): the first step at another
    h factorises (with the kept blocks, rescaled), a step at the same h need not."""
    pend = CartesianPendulum()
    q, v = pend.state_from_angle(0.3, 0.0)
    integ = make_method(name)
    h, t = 1e-3, 0.0
    kept_steps = 0
    for _ in range(30):
        before = policy_counts(integ)
        q, v = integ.step(pend, t, q, v, h)
        t += h
        kept_steps += policy_counts(integ)[1] == before[1]
    assert kept_steps > 0                  # the policy does keep factors at a fixed h
    for h_new in (0.5e-3, 1e-3):
        its, facts, builds = policy_counts(integ)
        q, v = integ.step(pend, t, q, v, h_new)
        t += h_new
        stages = 2 if name == "bathe" else 1
        assert policy_counts(integ)[1] >= facts + stages
        assert policy_counts(integ)[2] == builds       # blocks kept, rescaled
    assert_counts_consistent(integ.stats())


def test_start_refactorises_and_keeps_the_blocks():
    pend = CartesianPendulum()
    q, v = pend.state_from_angle(0.3, 0.0)
    integ = GeneralizedAlpha(0.8)
    h = 1e-3
    for k in range(20):
        q, v = integ.step(pend, k * h, q, v, h)
    integ.start(pend, 20 * h, q, v)
    its, facts, builds = policy_counts(integ)
    integ.step(pend, 20 * h, q, v, h)
    assert policy_counts(integ)[1] >= facts + 1 and policy_counts(integ)[2] == builds


def test_a_kept_matrix_that_stops_contracting_is_refreshed():
    """A force of 200 weights appears at t = 0.05 s (h = 1e-2 s): the kept factors and
    blocks (their geometric stiffness 2 lambda I / c_a is now of the order of M) no
    longer contract fast; the step refactorises, the blocks are rebuilt, every step
    converges, and the run follows full Newton."""
    q0, v0 = CartesianPendulum().state_from_angle(0.3, 0.0)
    h, n_steps, t_kick = 1e-2, 10, 0.05 + 1e-9
    integ = GeneralizedAlpha(0.8)
    pend = KickedPendulum(t_kick)
    q, v = q0.copy(), v0.copy()
    for k in range(n_steps):
        before = policy_counts(integ)
        q, v = integ.step(pend, k * h, q, v, h)
        if k == 5:                               # the first step that feels the kick
            after = policy_counts(integ)
            assert after[0] - before[0] > 3      # slow with the kept matrix ...
            assert after[1] > before[1]          # ... so it was refactorised
    assert integ.stats()["jacobian_evaluations"] > 1 and integ.failures == 0
    ref = integrate_index3(KickedPendulum(t_kick), q0, v0, 0.0, h, n_steps,
                           "generalized-alpha", rho_inf=0.8, iteration="newton")
    assert np.abs(q - ref.q[-1]).max() < 1e-8
    assert_counts_consistent(integ.stats())
