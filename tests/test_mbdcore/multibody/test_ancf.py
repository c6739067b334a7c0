"""Planar ANCF beams (Shabana 1997; docs/benchmarks.md §8.2) against beam theory, the
elastica and rigid-body mechanics.

Unless stated otherwise: cantilever of L = 1 m, rho_a = 1 kg/m, EI = 1 N m^2, EA = 1e6 N
(so the axial strains of the cases below stay under 1e-5 and the beam is, as in the
references, practically inextensible).
"""
import math
import time

import numpy as np
import pytest
from support.element_checks import assert_equals_reference, assert_tangents_are_derivatives
from scipy.integrate import solve_bvp
from scipy.optimize import brentq
from scipy.special import ellipk

from mbdcore.multibody.ancf import ANCFBeam, cantilever, hermite_shape
from mbdcore.multibody.modal import (EquilibriumError, modal_analysis, natural_frequencies,
                                     static_equilibrium)
from mbdcore.multibody.beam_modes import ClampedBeamModes
from mbdcore.blocks import ParameterError
from mbdcore.multibody.constraints import Revolute, Weld
from mbdcore.dae.simulate import simulate
from mbdcore.multibody.system import System

G0 = 9.80665


def clamped_free_frequencies(n, length=1.0, rho_a=1.0, ei=1.0):
    """Euler-Bernoulli clamped-free frequencies [Hz] from 1 + cos(bl) cosh(bl) = 0."""
    roots = [brentq(lambda x: 1.0 + math.cos(x) * math.cosh(x), (k - 1) * math.pi,
                    k * math.pi, xtol=1e-15) for k in range(1, n + 1)]
    return np.array(roots) ** 2 * math.sqrt(ei / (rho_a * length**4)) / (2.0 * math.pi)


def elastica_tip(load):
    """Tip (vertical deflection, horizontal shortening) / L of an inextensible cantilever
    under a dead vertical tip load with P L^2 / EI = ``load``, from the elastica
    theta'' = -(P/EI) cos(theta), theta(0) = 0, theta'(L) = 0, solved as a BVP."""
    def rhs(s, y):
        return np.vstack([y[1], -load * np.cos(y[0]), np.cos(y[0]), np.sin(y[0])])

    def bc(ya, yb):
        return np.array([ya[0], yb[1], ya[2], ya[3]])

    s = np.linspace(0.0, 1.0, 101)
    guess = np.vstack([np.zeros_like(s), np.zeros_like(s), s, np.zeros_like(s)])
    sol = solve_bvp(rhs, bc, s, guess, tol=1e-10, max_nodes=100000)
    assert sol.status == 0
    return sol.y[3, -1], 1.0 - sol.y[2, -1]


def tip(system, q, name="beam"):
    beam = system.body(name)
    return beam.state(q[beam.index:beam.index + beam.n_coords], None).point(beam.length)[0]


# --- mass -------------------------------------------------------------------------------
def test_element_mass_is_the_classical_hermite_matrix():
    l, rho_a = 0.3, 2.5
    beam = ANCFBeam("b", (0, 0), (l, 0), 1, rho_a, 1.0, 1.0)
    expected = rho_a * l / 420 * np.array([[156, 22 * l, 54, -13 * l],
                                           [22 * l, 4 * l**2, 13 * l, -3 * l**2],
                                           [54, 13 * l, 156, -22 * l],
                                           [-13 * l, -3 * l**2, -22 * l, 4 * l**2]])
    np.testing.assert_allclose(beam.element_mass[0::2, 0::2], expected, rtol=1e-13)
    np.testing.assert_allclose(beam.element_mass[1::2, 1::2], expected, rtol=1e-13)
    assert np.all(beam.element_mass[0::2, 1::2] == 0)


def test_mass_matrix_gives_mass_first_and_second_moments_of_the_bar():
    length, rho_a = 1.7, 1.3
    beam = ANCFBeam("b", (0, 0), (length, 0), 7, rho_a, 1.0, 1e6)
    M = beam.mass_matrix()
    q, _ = beam.initial_coordinates()
    tx = np.zeros(beam.n_coords)
    tx[0::4] = 1.0                  # unit x translation: positions move, gradients do not
    assert tx @ M @ tx == pytest.approx(rho_a * length, rel=1e-13)
    assert tx @ M @ q == pytest.approx(rho_a * length**2 / 2, rel=1e-13)
    assert q @ M @ q == pytest.approx(rho_a * length**3 / 3, rel=1e-13)
    assert beam.constant_mass and np.allclose(M, M.T)
    # distributed gravity: the total weight acts on the positions only
    fg = beam.gravity_forces((0.0, -G0))
    assert fg[1::4].sum() == pytest.approx(-rho_a * length * G0, rel=1e-13)
    assert fg[0::4].sum() == 0.0


# --- natural frequencies -------------------------------------------------------------------
def test_cantilever_frequencies_converge_to_euler_bernoulli():
    exact = clamped_free_frequencies(3)
    assert exact * 2 * math.pi == pytest.approx([3.516, 22.03, 61.70], rel=1e-3)
    errors = []
    for n_el in (2, 4, 8, 16):
        f = natural_frequencies(cantilever(n_elements=n_el), n=3)
        errors.append(np.abs(f / exact - 1.0))
        print(f"N = {n_el:2d}: f = {np.array2string(f, precision=6)} Hz, "
              f"rel. errors {np.array2string(errors[-1], precision=2)}")
    errors = np.array(errors)
    # Hermite cubics: the error falls by about 2^4 per halving of the element length
    assert np.all(np.diff(errors, axis=0) < 0)
    assert np.all(errors[-2] / errors[-1] > 8.0)
    assert np.all(errors[-1] < 5e-3)
    assert np.all(errors[-2] < 5e-3)        # N = 8 is already within 0.5 %


def test_cantilever_with_welded_tip_body_matches_clamped_mass_modes():
    """A rigid body welded to the beam end (mass and rotary inertia at the tip):
    exercises the weld on the beam's angle; reference: the analytic clamped-mass modes."""
    m_tip, j_tip = 0.5, 0.02
    s = cantilever(n_elements=16)
    s.add_body("tip", mass=m_tip, inertia=j_tip, position=(1.0, 0.0), markers={"c": (0, 0)})
    s.add_joint(Weld("beam.end", "tip.c"))
    f = natural_frequencies(s, n=3)
    ref = ClampedBeamModes.compute(3, 1.0, 1.0, 1.0, tip_mass=m_tip,
                                   tip_inertia=j_tip).omega / (2 * math.pi)
    np.testing.assert_allclose(f, ref, rtol=5e-4)


def test_kelvin_voigt_damping_is_stiffness_proportional():
    beta = 2e-3
    s = cantilever(n_elements=8, damping=beta)
    beam = s.body("beam")
    q, v = s.initial_state()
    K, C = beam.tangent_matrices(q, v, sparse=False)
    modes = modal_analysis(s)
    # about the unstressed straight beam C = beta K, so zeta_i = beta omega_i / 2 (to
    # 1e-7: the first mode's stiffness is about 1e-8 of K's largest (axial) entries, so a
    # round-off change in K's sums moves its ratio by a few 1e-8)
    np.testing.assert_allclose(modes.damping_ratios, beta * modes.omega / 2, rtol=1e-7)
    np.testing.assert_allclose(C, beta * K, atol=1e-9 * np.abs(K).max())
    # and it costs nothing in a rigid motion
    rigid = ANCFBeam("r", (0, 0), (1, 0), 3, 1.0, 1.0, 1e3, damping=0.1, omega=2.0,
                     velocity=(1.0, -0.5))
    qr, vr = rigid.initial_coordinates()
    assert np.abs(rigid.internal_forces(qr, vr)).max() < 1e-12


def test_modes_include_the_stiffness_of_the_reactions():
    """Hanging pendulums: in absolute coordinates gravity is a constant force, so the
    whole restoring stiffness is d(G^T lambda)/dq of the pin carrying the weight."""
    m, j_cm, d = 2.0, 0.3, 0.4
    s = System(gravity=(0.0, -G0))
    s.add_body("bob", mass=m, inertia=j_cm, position=(0.0, -d), markers={"pin": (0.0, d)})
    s.ground.add_marker("o", (0, 0))
    s.add_joint(Revolute("ground.o", "bob.pin"))
    omega = modal_analysis(s).omega
    assert omega[0] == pytest.approx(math.sqrt(m * G0 * d / (j_cm + m * d * d)), rel=1e-7)
    # a stiff ANCF bar hanging from a pin: first mode is the rigid bar's sqrt(3 g / 2 L)
    s = System(gravity=(0.0, -G0))
    s.add(ANCFBeam("bar", (0, 0), (0, -1.0), 4, 1.0, 1e4, 1e8))
    s.ground.add_marker("o", (0, 0))
    s.add_joint(Revolute("ground.o", "bar.start"))
    q = static_equilibrium(s).q              # hanging, stretched by its own weight
    omega = modal_analysis(s, q, n_modes=2).omega
    assert omega[0] == pytest.approx(math.sqrt(1.5 * G0), rel=1e-4)
    assert omega[1] > 100 * omega[0]


# --- statics -----------------------------------------------------------------------------
def test_small_tip_load_gives_the_linear_deflection():
    P = 1e-3
    s = cantilever(n_elements=4)
    sol = static_equilibrium(s, {"beam.end": (0.0, -P)})
    # Hermite cubics are exact at the nodes of a linear Euler-Bernoulli beam, and the
    # geometric nonlinearity is O((P L^2/EI)^2) = 1e-6 here
    assert -tip(s, sol.q)[1] == pytest.approx(P / 3.0, rel=1e-5)
    # multipliers: M q'' + G^T lambda = F with g = r_clamp - r_beam(0) and
    # theta_beam(0) - theta_clamp, so the clamp acts on the beam with the force
    # (lambda_x, lambda_y) and the moment -lambda_moment: it holds up the load P and
    # resists its moment -P L about the clamp
    np.testing.assert_allclose(sol.lam, [0.0, P, -P * 1.0], rtol=1e-5, atol=1e-12)


def test_own_weight_deflection():
    w = 1e-3 / G0                 # rho_a such that q = rho_a g = 1e-3 N/m
    s = cantilever(n_elements=8, rho_a=w, gravity=(0.0, -G0))
    sol = static_equilibrium(s)
    assert -tip(s, sol.q)[1] == pytest.approx(1e-3 / 8.0, rel=1e-4)


@pytest.mark.parametrize("load, literature", [(1.0, 0.30172), (2.0, 0.49346)])
def test_large_tip_load_follows_the_elastica(load, literature):
    delta, shortening = elastica_tip(load)
    # Bisshopp & Drucker (1945) tabulate the tip deflections to five digits
    assert delta == pytest.approx(literature, abs=1e-5)
    s = cantilever(n_elements=16)
    sol = static_equilibrium(s, {"beam.end": (0.0, -load)})
    r = tip(s, sol.q)
    print(f"P L^2/EI = {load}: ANCF ({-r[1]:.6f}, {1 - r[0]:.6f}), "
          f"elastica ({delta:.6f}, {shortening:.6f})")
    assert -r[1] == pytest.approx(delta, rel=5e-3)
    assert 1.0 - r[0] == pytest.approx(shortening, rel=5e-3)
    # converged far better than the required 0.5 %
    assert -r[1] == pytest.approx(delta, rel=5e-4)
    assert 1.0 - r[0] == pytest.approx(shortening, rel=5e-4)
    # the tip slope of the elastica balances the curvature: kappa(L) = 0 (free end)
    beam = s.body("beam")
    assert abs(beam.curvature(sol.q, beam.length)[0]) < 2e-2 * load


def test_load_stepping_reaches_the_same_equilibrium():
    """Newton limited to a few iterations cannot take P L^2/EI = 10 in one step; the
    halved increments must end where an unrestricted solve does."""
    s = cantilever(n_elements=8)
    full = static_equilibrium(s, {"beam.end": (0.0, -10.0)})
    stepped = static_equilibrium(s, {"beam.end": (0.0, -10.0)}, max_iterations=6)
    assert len(full.load_steps) == 1 and len(stepped.load_steps) > 1
    assert stepped.load_steps[-1] == 1.0
    np.testing.assert_allclose(stepped.q, full.q, atol=1e-9)
    with pytest.raises(EquilibriumError, match="halvings"):
        static_equilibrium(s, {"beam.end": (0.0, -10.0)}, max_iterations=2, max_halvings=2)


# --- dynamics ------------------------------------------------------------------------------
def test_free_beam_conserves_energy_and_momenta():
    """A free beam thrown spinning, with its first bending mode excited, no gravity."""
    s = System()
    beam = s.add(ANCFBeam("beam", (0, 0), (1, 0), 4, 1.0, 1.0, 1e4, omega=2.0,
                          velocity=(0.3, 0.1)))
    modal = modal_analysis(s)
    assert np.all(np.abs(modal.omega[:3]) < 1e-3)          # three rigid-body modes
    q0, v0 = s.initial_state()
    v0 = v0 + 0.5 * modal.shapes[:, 3]
    h = 0.5 * 2.8 / modal.omega[-1]       # half the RK4 stability limit of the fastest mode
    r = simulate(s, 1.0, h, method="rk4", q0=q0, v0=v0, record_every=50)
    M = beam.mass_matrix_sparse()
    p = np.array([(M @ v)[0::4].sum() for v in r.v])     # x momentum [kg m/s]
    ang = np.array([q[0::2] @ (M @ v)[1::2] - q[1::2] @ (M @ v)[0::2]
                    for q, v in zip(r.q, r.v)])
    drift = np.ptp(r.energy) / r.energy[0]
    print(f"relative energy drift {drift:.2e}, momentum drift {np.ptp(p):.1e}, "
          f"angular momentum drift {np.ptp(ang):.1e}")
    assert drift < 1e-5
    assert np.ptp(p) < 1e-10 and p[0] == pytest.approx(0.3, rel=1e-12)
    assert np.ptp(ang) < 1e-8
    # the beam did move: its tip travelled more than half a length
    assert np.hypot(*(tip(s, r.q[-1]) - tip(s, r.q[0]))) > 0.5


def test_stiff_pinned_beam_swings_like_a_rigid_bar():
    th0, length = 0.5, 1.0
    s = System(gravity=(0.0, -G0))
    s.add(ANCFBeam("bar", (0, 0), (math.sin(th0), -math.cos(th0)), 4, 1.0, 1e3, 1e7))
    s.ground.add_marker("pivot", (0, 0))
    s.add_joint(Revolute("ground.pivot", "bar.start", name="pivot"))
    # rigid uniform bar about its end: T = 4 sqrt(I / (m g d)) K(sin^2(th0/2))
    period = 4.0 * math.sqrt(2.0 * length / (3.0 * G0)) * ellipk(math.sin(th0 / 2) ** 2)
    r = simulate(s, 1.3 * period, 2e-3, method="generalized-alpha", formulation="index3",
                 rho_inf=0.8)
    x = r["bar.n4.rx"]
    t = r.t
    crossings = []
    for sign in (1, -1):        # downward and upward passes through the vertical
        k = np.flatnonzero((sign * x[:-1] > 0) & (sign * x[1:] <= 0))
        crossings.append(t[k] - x[k] * (t[k + 1] - t[k]) / (x[k + 1] - x[k]))
    down, up = crossings
    measured = 2.0 * (up[0] - down[0])
    print(f"period {measured:.6f} s, rigid bar {period:.6f} s")
    # the bar's elastic sag changes its inertia by O(rho_a g L^3 / EI)^2, far below 2e-4
    assert measured == pytest.approx(period, rel=2e-4)
    assert r.violation.max() < 1e-10


# --- kinematics and derivatives ----------------------------------------------------------------
def test_angle_jacobian_and_quadratic_term_match_finite_differences():
    beam = ANCFBeam("b", (0.2, -0.1), (-0.6, 0.5), 3, 1.0, 1.0, 1.0)
    rng = np.random.default_rng(7)
    q0, _ = beam.initial_coordinates()
    q = q0 + 0.05 * rng.normal(size=q0.size)
    v, a = rng.normal(size=q.size), rng.normal(size=q.size)
    h = 1e-4
    for s in (0.0, 0.37, 0.5, beam.length):
        th, thd, J, quad = beam.state(q, v).angle(s)
        assert th == pytest.approx(beam.theta0, abs=0.5)     # near its initial direction
        fd = np.array([(beam.state(q + h * e, v).angle(s)[0]
                        - beam.state(q - h * e, v).angle(s)[0]) / (2 * h)
                       for e in np.eye(q.size)])
        np.testing.assert_allclose(J, fd, atol=1e-8)
        assert thd == pytest.approx(J @ v, rel=1e-12)
        # theta'' along q(t) = q + v t + a t^2 / 2 equals J a + quad
        path = [beam.state(q + v * t + 0.5 * a * t * t, v).angle(s)[0] for t in (-h, 0, h)]
        assert (path[0] - 2 * path[1] + path[2]) / h**2 == pytest.approx(J @ a + quad,
                                                                        rel=1e-6)
        r, rd, Jp, quad_p = beam.state(q, v).point(s)
        np.testing.assert_allclose(r, Jp @ q, atol=1e-15)
        np.testing.assert_allclose(rd, Jp @ v, atol=1e-14)
        assert np.all(quad_p == 0)


def test_shape_functions_interpolate_nodes_and_slopes():
    l = 0.4
    s0, s1 = hermite_shape([0.0, 1.0], l, 0), hermite_shape([0.0, 1.0], l, 1)
    np.testing.assert_allclose(s0, [[1, 0, 0, 0], [0, 0, 1, 0]], atol=1e-15)
    np.testing.assert_allclose(s1, [[0, 1, 0, 0], [0, 0, 0, 1]], atol=1e-15)


def test_force_jacobians_are_exact_and_banded():
    beam = ANCFBeam("b", (0, 0), (1, 0.3), 5, 1.0, 2.0, 50.0, damping=0.01)
    rng = np.random.default_rng(1)
    q0, _ = beam.initial_coordinates()
    q = q0 + 0.1 * rng.normal(size=q0.size)
    v = rng.normal(size=q0.size)
    grav = np.array([0.0, -G0])
    kq, kv = beam.force_jacobians(0.0, q, v, grav)
    h = 1e-6

    def force(x, y):
        return beam.applied_forces(0.0, x, y, grav)

    fq = np.column_stack([(force(q + h * e, v) - force(q - h * e, v)) / (2 * h)
                          for e in np.eye(q.size)])
    fv = np.column_stack([(force(q, v + h * e) - force(q, v - h * e)) / (2 * h)
                          for e in np.eye(q.size)])
    np.testing.assert_allclose(kq, fq, atol=1e-7 * np.abs(fq).max())
    np.testing.assert_allclose(kv, fv, atol=1e-7 * np.abs(fv).max())
    # the elastic forces are minus the gradient of the potential energy
    grad = np.array([(beam.potential_energy(q + h * e, grav)
                      - beam.potential_energy(q - h * e, grav)) / (2 * h)
                     for e in np.eye(q.size)])
    np.testing.assert_allclose(force(q, 0 * v), -grad, atol=1e-7 * np.abs(grad).max())
    # an element couples only its own 8 coordinates: bandwidth 7
    i, j = np.indices(kq.shape)
    assert np.all(kq[np.abs(i - j) > 7] == 0) and np.all(kv[np.abs(i - j) > 7] == 0)


def test_cost_of_forces_and_tangent_grows_linearly():
    """Wall times are printed, not asserted; asserted: the tangent's non-zero count is
    exactly that of a block-tridiagonal matrix of 4 x 4 node blocks, 16 (3 N + 1)."""
    report = []
    for n_el in (10, 100, 1000):
        beam = ANCFBeam("b", (0, 0), (1, 0), n_el, 1.0, 1.0, 1e6, damping=1e-3)
        q, v = beam.initial_coordinates()
        q = q + 1e-3 * np.sin(np.arange(q.size))
        K, C = beam.tangent_matrices(q, v)
        assert K.nnz == C.nnz == 16 * (3 * n_el + 1)
        if n_el == 10:
            dense = beam.tangent_matrices(q, v, sparse=False)[0]
            np.testing.assert_allclose(K.toarray(), dense, rtol=1e-14, atol=0)
        grav = np.array([0.0, -G0])
        reps = 20
        t0 = time.perf_counter()
        for _ in range(reps):
            beam.applied_forces(0.0, q, v, grav)
        t1 = time.perf_counter()
        for _ in range(reps):
            beam.tangent_matrices(q, v)
        t2 = time.perf_counter()
        report.append(f"N = {n_el:4d}: forces {1e3 * (t1 - t0) / reps:.3f} ms, sparse "
                      f"tangent {1e3 * (t2 - t1) / reps:.3f} ms")
    print("\n".join(report))


# --- interface ---------------------------------------------------------------------------
def test_markers_are_arc_lengths_and_joints_must_name_one():
    beam = ANCFBeam("b", (1, 1), (1, 3), 4, 1.0, 1.0, 1.0, markers={"mid": 1.0})
    assert beam.markers == {"root": 0.0, "tip": 2.0, "start": 0.0, "end": 2.0, "mid": 1.0}
    q, v = beam.initial_coordinates()
    np.testing.assert_allclose(beam.state(q, v).point(beam.markers["mid"])[0], (1, 2))
    assert beam.state(q, v).angle(2.0)[0] == pytest.approx(math.pi / 2)
    with pytest.raises(ParameterError, match="name a marker"):
        beam.default_location()
    with pytest.raises(ParameterError, match="outside the beam"):
        beam.add_marker("beyond", 2.5)
    with pytest.raises(ParameterError, match="n_elements"):
        ANCFBeam("c", (0, 0), (1, 0), 0, 1.0, 1.0, 1.0)
    with pytest.raises(ParameterError, match="ei"):
        ANCFBeam("c", (0, 0), (1, 0), 2, 1.0, -1.0, 1.0)
    assert beam.coordinate_names()[:4] == ["b.n0.rx", "b.n0.ry", "b.n0.dx", "b.n0.dy"]


def test_root_and_tip_markers_as_on_every_beam_start_and_end_kept_as_aliases():
    """Before: only "start"/"end" existed, so hub_beam-style models saying "root"/"tip"
    needed markers={"root": 0.0, "tip": L} by hand."""
    beam = ANCFBeam("b", (0, 0), (2, 0), 4, 1.0, 1.0, 1.0)
    assert (beam.markers["root"], beam.markers["tip"]) == (0.0, 2.0)
    assert (beam.markers["start"], beam.markers["end"]) == (0.0, 2.0)
    # naming the ends again is accepted where they are (models that did so keep working)
    ANCFBeam("c", (0, 0), (2, 0), 4, 1.0, 1.0, 1.0, markers={"root": 0.0, "tip": 2.0})
    with pytest.raises(ParameterError, match=r"marker 'tip' = 1.5 m: 'tip' is the beam's "
                                             r"tip at s = 2 m"):
        ANCFBeam("c", (0, 0), (2, 0), 4, 1.0, 1.0, 1.0, markers={"tip": 1.5})
    for root, tip_ in (("root", "tip"), ("start", "end")):
        s = System()
        s.ground.add_marker("o", (0, 0))
        s.add(ANCFBeam("b", (0, 0), (1, 0), 4, 1.0, 1.0, 1e6))
        s.add_joint(Weld("ground.o", f"b.{root}"))
        sol = static_equilibrium(s, {f"b.{tip_}": (0.0, -1e-3)})
        assert -tip(s, sol.q, "b")[1] == pytest.approx(1e-3 / 3.0, rel=1e-5)


def test_tip_deflection_is_transverse_in_the_root_frame():
    """Sign as ModalBeam's: positive to the left of the root direction; zero for any
    rigid motion; the tip's y for a cantilever along +x, also for large deflections."""
    s = cantilever(n_elements=8, direction=0.0)
    beam = s.body("beam")
    sol = static_equilibrium(s, {"beam.tip": (0.0, -2.0)})       # elastica, P L^2/EI = 2
    qb = sol.q[beam.index:beam.index + beam.n_coords]
    assert beam.tip_deflection(qb) == pytest.approx(tip(s, sol.q)[1], rel=1e-12)
    assert beam.tip_deflection(qb) == pytest.approx(-elastica_tip(2.0)[0], rel=5e-3)
    # the same bent shape turned by 2 rad and moved: the same deflection
    c, sn = math.cos(2.0), math.sin(2.0)
    turned = (qb.reshape(-1, 2) @ np.array([[c, sn], [-sn, c]])).ravel()
    turned[0::4] += 3.0
    turned[1::4] -= 1.0
    assert beam.tip_deflection(turned) == pytest.approx(beam.tip_deflection(qb), rel=1e-12)
    rigid = ANCFBeam("r", (1, 1), (0, 2), 3, 1.0, 1.0, 1.0)
    assert rigid.tip_deflection(rigid.initial_coordinates()[0]) == pytest.approx(0, abs=1e-15)


def test_large_chain_keeps_no_dense_mass_matrix():
    """Before: _setup_mass kept a dense (4 (N + 1))^2 copy (128 MB at N = 1000)."""
    beam = ANCFBeam("b", (0, 0), (100, 0), 1000, 1.0, 1.0, 1e5)
    n = beam.n_coords
    held = [k for k, v in vars(beam).items() if isinstance(v, np.ndarray) and v.size >= n * n]
    assert held == []
    assert beam.mass_matrix_sparse().nnz < 30 * n
    small = ANCFBeam("s", (0, 0), (1, 0), 3, 2.0, 1.0, 1e5)
    np.testing.assert_array_equal(small.mass_matrix(), small.mass_matrix_sparse().toarray())


def test_beam_pointing_backwards_has_a_continuous_angle():
    """atan2 of the tangent alone would jump between +pi and -pi for a beam along -x."""
    beam = ANCFBeam("b", (0, 0), (-1, 0), 2, 1.0, 1.0, 1.0)
    q, _ = beam.initial_coordinates()
    for dy in (-1e-3, 1e-3):
        qq = q.copy()
        qq[3::4] += dy
        assert beam.state(qq, None).angle(0.5)[0] == pytest.approx(math.pi - dy, abs=1e-8)


@pytest.mark.parametrize("damping", [0.0, 0.02])
def test_compiled_element_loop_equals_the_numpy_formulas_and_its_own_derivative(damping):
    """The elastic forces and element tangents of native/ancf.c against the numpy
    implementation they replaced (tests/support/ancf_reference.py) on a beam
    bent, stretched and moving (to 1e-12 of the largest entry), and the tangents against
    central differences of the forces (the derivative the Newton iteration relies on)."""
    from support.ancf_reference import element_tangents, internal_forces

    beam = ANCFBeam("b", (0.0, 0.0), (2.0, 0.0), 6, rho_a=1.0, ei=3.0, ea=1e4, damping=damping)
    rng = np.random.default_rng(7)
    q, _ = beam.initial_coordinates()
    s = np.linspace(0.0, 2.0, beam.n_nodes)
    q = q.reshape(-1, 4)
    q[:, 0] += 0.02 * s                     # 1 % stretch
    q[:, 1] += 0.3 * s**2                   # bent
    q[:, 3] += 0.6 * s
    q = q.ravel() + 1e-3 * rng.normal(size=q.size)
    v = rng.normal(size=q.size)
    assert_equals_reference((beam.internal_forces(q, v),) + beam._elastic(q, v, True)[1:],
                            (internal_forces(beam, q, v),) + element_tangents(beam, q, v),
                            damped=bool(damping))
    assert_tangents_are_derivatives(beam, q, v, rng.choice(q.size, 6, replace=False),
                                    damped=bool(damping), rel=1e-5)
