"""Spatial rigid multibody engine (issue 14, docs/spatial.md): natural-coordinate bodies,
spatial joints, redundant constraints, against analytic solutions, conservation laws,
the planar engine and Bricard's benchmark."""
import math

import numpy as np
import pytest

from mbdcore.blocks import ParameterError
from mbdcore.dae.index1 import assemble
from mbdcore.dae.index1 import consistent_accelerations
from mbdcore.dae.simulate import simulate
from mbdcore.models.mechanisms import four_bar
from mbdcore.models.spatial_mechanisms import (HEAVY_TOP, bricard, heavy_top, rotation_z,
                                               spatial_twin)
from mbdcore.multibody.constraints import constant_rate
from mbdcore.multibody.forces import PointForce
from mbdcore.spatial import (AngleDriver, BodyTorque, Fixed, Prismatic, Revolute,
                             SpatialSystem, Spherical, SynchronousGear)
from support.models import spatial_joint_kinds

G = 9.81


# --- analytic Jacobians and gamma of every constraint ----------------------------------
def _all_joint_kinds() -> SpatialSystem:
    s = spatial_joint_kinds()
    hinge1 = s.joint("h1")
    s.add_joint(SynchronousGear(hinge1, "h2", ratio=1.7, name="gear"))
    s.add_joint(AngleDriver(hinge1, lambda t: (0.3 * t + 0.2 * t * t, 0.3 + 0.4 * t, 0.4),
                            name="drive"))
    # a hinge about the bar's own axis (the frame across it is c's); a bar cannot spin,
    # so this hinge has no angle to drive or gear
    hinge3 = s.add_joint(Revolute("rod.m", "c.p", (1.0, 0.5, 0.2), name="h3"))
    with pytest.raises(ParameterError, match="h3: the joint angle is undefined"):
        s.add_joint(AngleDriver(hinge3, constant_rate(0.0, 1.0), name="drive3"))
    return s


def test_constraint_jacobians_and_gamma_match_differences_of_g():
    """For every row: g' = G q' + g_t and g'' = G q'' - gamma along
    q(tau) = q + v tau + a tau^2 / 2 (central differences), at a state that satisfies
    no constraint (the formulas hold everywhere)."""
    s = _all_joint_kinds()
    rng = np.random.default_rng(3)
    q = s.initial_state()[0] + rng.normal(scale=0.1, size=s.n)
    v, a = rng.normal(size=s.n), rng.normal(size=s.n)
    t = 0.7
    g, Gm, gt, gam = s.constraint_terms(t, q, v)

    def path(d):
        return s.constraints(t + d, q + v * d + 0.5 * a * d * d)
    d = 1e-4
    first = (path(d) - path(-d)) / (2 * d)
    second = (path(d) - 2 * path(0.0) + path(-d)) / d**2
    scale = 1.0 + np.abs(second)
    assert np.abs(first - (Gm @ v + gt)).max() < 1e-6
    assert np.max(np.abs(second - (Gm @ a - gam)) / scale) < 1e-5
    # the sparse assembly gives the same rows
    gs, Gs, gts, gams = s.constraint_terms_sparse(t, q, v)
    assert np.abs(Gs.toarray() - Gm).max() == 0.0 and np.abs(gams - gam).max() == 0.0


# --- heavy symmetric top in steady precession --------------------------------------------
def _precession(system, result):
    """Azimuth of the symmetry axis w (unwrapped) [rad] and nutation [rad] over time."""
    top = system.body("top")
    w = result.q[:, top.index + 9:top.index + 12]
    return np.unwrap(np.arctan2(w[:, 1], w[:, 0])), np.arccos(np.clip(w[:, 2], -1.0, 1.0))


def test_heavy_top_precesses_at_the_analytic_rate():
    """m g l = Omega (I_a omega_3 - I_1 Omega cos theta): started with that spin the
    top precesses at Omega with constant nutation; RK4 (index 1, projections) keeps the
    rate to a fourth-order error (bench/spatial_rigid.py: 10 revolutions)."""
    omega = HEAVY_TOP["precession_rate"]
    period = 2 * math.pi / omega
    errors = []
    for h in (5e-3, 2.5e-3):
        s = heavy_top()
        r = simulate(s, period, h, "rk4")
        azimuth, nutation = _precession(s, r)
        errors.append(abs((azimuth[-1] - azimuth[0]) / (omega * r.t[-1]) - 1.0))
        assert np.abs(nutation - HEAVY_TOP["nutation"]).max() < 1e-6
        assert np.abs(s.all_constraints(0.0, r.q[-1])).max() < 1e-12
    print(f"heavy top, one revolution, RK4: precession rate relative error "
          f"{errors[0]:.3g} (h = 5 ms), {errors[1]:.3g} (h = 2.5 ms)")
    assert errors[1] < 1e-6
    assert math.log2(errors[0] / errors[1]) > 3.5       # fourth order


# --- torque-free asymmetric body -------------------------------------------------------
def _drift(system, result):
    E = np.array([system.energy(t, q, v) for t, q, v in zip(result.t, result.q, result.v)])
    H = np.array([system.angular_momentum(q, v) for q, v in zip(result.q, result.v)])
    return (np.abs(E - E[0]).max() / abs(E[0]),
            np.linalg.norm(H - H[0], axis=1).max() / np.linalg.norm(H[0]))


def _tumbling_box() -> SpatialSystem:
    s = SpatialSystem()
    s.add_body("box", mass=2.0, inertia=(0.2, 0.3, 0.4), angular_velocity=(1.0, 0.2, 3.0),
               velocity=(0.1, 0.0, 0.0))
    return s


def test_torque_free_body_keeps_energy_and_angular_momentum():
    """Generalized-alpha with rho_inf = 1 (GGL) over 5 s of tumbling (near the unstable
    middle axis): energy drift below 1e-9, angular momentum drift second order in h
    (measured for other methods and longer runs in bench/spatial_rigid.py)."""
    drifts = []
    for h in (1e-2, 5e-3):
        s = _tumbling_box()
        r = simulate(s, 5.0, h, "generalized-alpha", rho_inf=1.0)
        drifts.append(_drift(s, r))
    print("torque-free box, generalized-alpha rho_inf = 1, 5 s: (energy, momentum) drift "
          f"{drifts[0][0]:.3g}, {drifts[0][1]:.3g} (h = 10 ms); {drifts[1][0]:.3g}, "
          f"{drifts[1][1]:.3g} (h = 5 ms)")
    assert drifts[1][0] < 1e-9
    assert drifts[1][1] < 5e-6
    assert math.log2(drifts[0][1] / drifts[1][1]) > 1.8
    # RK4 (index 1 with projections) drifts in both at fourth order (1e-9 at h = 0.5 ms)
    rk4 = []
    for h in (1e-2, 5e-3):
        s = _tumbling_box()
        rk4.append(_drift(s, simulate(s, 5.0, h, "rk4")))
    print(f"RK4: {rk4[0][0]:.3g}, {rk4[0][1]:.3g} (h = 10 ms); {rk4[1][0]:.3g}, "
          f"{rk4[1][1]:.3g} (h = 5 ms)")
    assert min(math.log2(a / b) for a, b in zip(*rk4)) > 3.5


def test_body_torque_spins_a_body_about_a_principal_axis():
    """A torque T along the third principal axis from rest: angle T t^2 / (2 I_3), to
    RK4's fourth order."""
    errors = []
    for h in (5e-3, 2.5e-3):
        s = SpatialSystem()
        s.add_body("wheel", mass=3.0, inertia=(0.2, 0.3, 0.4), orientation=rotation_z(0.2))
        s.add_force(BodyTorque("wheel", (0.0, 0.0, 0.8)))
        u = simulate(s, 1.0, h, "rk4").q[-1, 3:6]
        errors.append(abs(math.atan2(u[1], u[0]) - 0.2 - 0.5 * 0.8 / 0.4))
    assert errors[1] < 1e-9
    assert math.log2(errors[0] / errors[1]) > 3.5


# --- bars, sliding joints, gears, welds: accelerations against closed forms -----------------
def test_bar_pendulum_released_horizontal():
    """A uniform bar on a ball joint at one end, released horizontal: its free end
    starts downwards with 3 g / 2."""
    s = SpatialSystem(gravity=(0.0, 0.0, -G))
    s.ground.add_marker("O", (0.0, 0.0, 0.0))
    s.add_bar("bar", (0.0, 0.0, 0.0), (0.6, 0.8, 0.0), mass=2.0, markers={"i": 0.0})
    s.add_joint(Spherical("ground.O", "bar.i"))
    q, v = assemble(s)
    a, lam = consistent_accelerations(s, 0.0, q, v)
    assert np.abs(a[3:6] - (0.0, 0.0, -1.5 * G)).max() < 1e-12
    # the pivot carries a quarter of the weight
    assert abs(lam[1:4] @ (0, 0, 1)) == pytest.approx(2.0 * G / 4, rel=1e-12)


@pytest.mark.parametrize("slider", ["bar", "body"])
def test_slide_down_an_inclined_sleeve(slider):
    """Thin bar (or block) sliding in a fixed inclined sleeve: acceleration g sin(alpha)
    along it, no turning."""
    alpha = 0.35
    d = np.array([math.cos(alpha), 0.0, -math.sin(alpha)])
    s = SpatialSystem(gravity=(0.0, 0.0, -G))
    s.ground.add_marker("S", (0.0, 0.0, 0.0))
    if slider == "bar":
        s.add_bar("thin", 0.1 * d, 1.0 * d, mass=1.0, markers={"m": 0.3})
    else:
        s.add_body("thin", mass=1.0, inertia=(0.1, 0.2, 0.2), position=0.4 * d,
                   markers={"m": (0.0, 0.0, 0.0)})
    s.add_joint(Prismatic("ground.S", "thin.m", tuple(d), name="sleeve"))
    assert s.joint("sleeve").n_eq == (4 if slider == "bar" else 5)
    q, v = assemble(s)
    a, _ = consistent_accelerations(s, 0.0, q, v)
    assert np.abs(a[0:3] - G * math.sin(alpha) * d).max() < 1e-12


def test_synchronous_gear_couples_two_hinged_bodies():
    """Two bodies hinged to the ground about parallel axes, geared theta_2 = r theta_1,
    a torque T on body 1: (I_1 + r^2 I_2) theta_1'' = T."""
    r, T = 1.8, 0.6
    s = SpatialSystem()
    s.ground.add_marker("A", (0.0, 0.0, 0.0))
    s.ground.add_marker("B", (2.0, 0.0, 0.0))
    s.add_body("one", mass=1.0, inertia=(0.1, 0.2, 0.25), markers={"o": (0.0, 0.0, 0.0)})
    s.add_body("two", mass=2.0, inertia=(0.3, 0.3, 0.5), position=(2.0, 0.0, 0.0),
               markers={"o": (0.0, 0.0, 0.0)})
    h1 = s.add_joint(Revolute("ground.A", "one.o", (0, 0, 1), name="h1"))
    h2 = s.add_joint(Revolute("ground.B", "two.o", (0, 0, 1), name="h2"))
    s.add_joint(SynchronousGear(h1, h2, ratio=r, name="gear"))
    s.add_force(BodyTorque("one", (0.0, 0.0, T)))
    q, v = assemble(s)
    a, _ = consistent_accelerations(s, 0.0, q, v)
    alpha1 = T / (0.25 + r * r * 0.5)
    # u' = omega x u: u'' = alpha e_z x u at rest
    assert a[3:6] == pytest.approx([0.0, alpha1, 0.0], abs=1e-12)
    assert a[15:18] == pytest.approx([0.0, r * alpha1, 0.0], abs=1e-12)
    res = simulate(s, 1.0, 1e-2, "generalized-alpha")
    th1 = np.array([h1.angle_value(qq) for qq in res.q])
    th2 = np.array([h2.angle_value(qq) for qq in res.q])
    assert np.abs(th2 - r * th1).max() < 1e-10
    assert th1[-1] == pytest.approx(0.5 * alpha1, rel=1e-3)


def test_fixed_joint_carries_the_weight():
    s = SpatialSystem(gravity=(0.0, -G, 0.0))
    s.ground.add_marker("W", (0.0, 0.0, 0.0))
    s.add_body("block", mass=3.0, inertia=(0.1, 0.2, 0.25), position=(0.0, 0.0, 0.0),
               center_of_mass=(0.5, 0.0, 0.0), markers={"w": (0.0, 0.0, 0.0)})
    s.add_joint(Fixed("ground.W", "block.w", name="weld"))
    q, v = assemble(s)
    a, lam = consistent_accelerations(s, 0.0, q, v)
    assert np.abs(a).max() < 1e-12
    names = s.multiplier_names()
    force = lam[[names.index(f"weld.{k}") for k in "xyz"]]
    assert np.abs(force).max() == pytest.approx(3.0 * G, rel=1e-12)


# --- the planar limit ------------------------------------------------------------------
def test_spatial_four_bar_reproduces_the_planar_engine():
    """The driven four-bar of mbdcore.models.mechanisms rebuilt in 3D (4 hinges about z:
    3 redundant equations, removed) moves in its plane as the planar engine's: positions,
    and the driving torque from the accelerations at each state, to 1e-9."""
    planar = four_bar()
    twin = spatial_twin(planar)
    rp = simulate(planar, 0.5, 1e-3, "generalized-alpha", record_every=25)
    rs = simulate(twin, 0.5, 1e-3, "generalized-alpha", record_every=25)
    assert len(twin.redundant_equations) == 3
    worst_pos, worst_torque = 0.0, 0.0
    for b in planar.bodies:
        tb = twin.body(b.name)
        xy = rs.q[:, tb.index:tb.index + 2]
        angle = np.arctan2(rs.q[:, tb.index + 4], rs.q[:, tb.index + 3])
        worst_pos = max(worst_pos, np.abs(xy - rp.q[:, b.index:b.index + 2]).max(),
                        np.abs(np.angle(np.exp(1j * (angle - rp.q[:, b.index + 2])))).max())
        assert np.abs(rs.q[:, tb.index + 2]).max() < 1e-12          # stays in z = 0
    k_drive = twin.multiplier_names().index("drive.torque")
    for k in range(len(rp.t)):
        torque_p = consistent_accelerations(planar, rp.t[k], rp.q[k], rp.v[k])[1][-1]
        torque_s = consistent_accelerations(twin, rs.t[k], rs.q[k], rs.v[k])[1][k_drive]
        worst_torque = max(worst_torque, abs(torque_p - torque_s))
    print(f"spatial four-bar vs planar: positions {worst_pos:.2g} m/rad, torque "
          f"{worst_torque:.2g} N m")
    assert worst_pos < 1e-9 and worst_torque < 1e-9


# --- Bricard's mechanism (IFToMM A04) ----------------------------------------------------
def test_bricard_redundancy_is_found_and_named():
    s = bricard()
    assert s.m == 5 * 6 + 6 * 5 - 1
    assert len(s.redundant_equations) == 1
    assert s.redundant_equations[0].split(".")[0] in {f"P{k}" for k in range(1, 7)}
    with pytest.raises(ParameterError, match="depend on the others.*P"):
        bricard(redundant="error").m
    # one degree of freedom: G of the kept rows has full rank and a one-dimensional null space
    q, _ = assemble(s)
    Gk = s.constraint_jacobian(0.0, q)
    assert np.linalg.matrix_rank(Gk) == s.m == s.n - 1


def _p3(system, result):
    rod3 = system.body("rod3")
    return result.q[:, rod3.index:rod3.index + 3]


def test_bricard_energy_constraints_and_integrators_agree():
    """1 s of the benchmark (10 s in bench/spatial_rigid.py): generalized-alpha
    (rho_inf = 1) at h = 1 ms keeps the energy to < 1e-6 of the initial (potential
    datum at the origin) and every constraint, the removed one included, to 1e-10;
    against RK4 (index 1) its point-P3 error is what its second order predicts from
    the runs at 2 h and h (Richardson)."""
    runs = {}
    for h in (2e-3, 1e-3):
        s = bricard()
        runs[h] = (s, simulate(s, 1.0, h, "generalized-alpha", rho_inf=1.0))
    s, r = runs[1e-3]
    E = np.array([s.energy(t, q, v) for t, q, v in zip(r.t, r.q, r.v)])
    variation = np.abs(E - E[0]).max() / abs(E[0])
    violation = max(np.abs(s.all_constraints(t, q)).max() for t, q in zip(r.t, r.q))
    sr = bricard()
    reference = _p3(sr, simulate(sr, 1.0, 2e-3, "rk4"))
    p_coarse, p_fine = _p3(*runs[2e-3]), _p3(s, r)[::2]
    predicted = np.abs(p_coarse - p_fine).max() / 3.0      # error of the fine run, order 2
    actual = np.abs(p_fine - reference).max()
    print(f"Bricard 1 s: energy variation {variation:.3g} of |E0|, constraints "
          f"{violation:.2g}, P3 error of generalized-alpha (h = 1 ms) {actual:.3g} m, "
          f"predicted {predicted:.3g} m; P3 moved {np.abs(p_fine - p_fine[0]).max():.3g} m")
    assert variation < 1e-6
    assert violation < 1e-10
    assert 0.5 * predicted < actual < 2.0 * predicted


def test_sparse_path_and_bathe_on_bricard():
    """The sparse linear algebra gives the dense trajectory; Bathe's method runs on the
    spatial DAE too and agrees with generalized-alpha to their second-order errors."""
    dense = simulate(bricard(), 0.1, 2e-3, "generalized-alpha", sparse=False)
    sparse = simulate(bricard(), 0.1, 2e-3, "generalized-alpha", sparse=True)
    assert np.abs(dense.q - sparse.q).max() < 1e-10
    s = bricard()
    bathe = simulate(s, 0.1, 2e-3, "bathe")
    assert max(np.abs(s.all_constraints(t, q)).max() for t, q in zip(bathe.t, bathe.q)) < 1e-10
    # both O(h^2); over 0.1 s at 2 ms their P3 differ by 1.4e-8 m (measured)
    assert np.abs(_p3(s, bathe) - _p3(s, dense)).max() < 1e-7


def test_consistent_initial_conditions_from_a_rough_guess():
    s = bricard()
    q0, v0 = s.initial_state()
    rng = np.random.default_rng(1)
    q, v = assemble(s, 0.0, q0 + rng.normal(scale=0.01, size=s.n), rng.normal(size=s.n))
    assert np.abs(s.all_constraints(0.0, q)).max() < 1e-12
    assert np.abs(s.constraint_jacobian(0.0, q) @ v).max() < 1e-12


# --- bad input ----------------------------------------------------------------------------
def test_bad_input_is_refused_with_its_name():
    s = SpatialSystem()
    s.add_body("a", markers={"p": (0, 0, 0)})
    s.ground.add_marker("O", (0, 0, 0))
    with pytest.raises(ParameterError, match="'a' has no marker 'q'"):
        s.add_joint(Spherical("ground.O", "a.q"))
    with pytest.raises(ParameterError, match="no body named 'b'"):
        s.add_joint(Revolute("a.p", "b.p"))
    with pytest.raises(ParameterError, match="mass = -1.0"):
        s.add_body("m", mass=-1.0)
    with pytest.raises(ParameterError, match="inertia has principal moments"):
        s.add_body("i", inertia=(1.0, -0.2, 1.0))
    with pytest.raises(ParameterError, match="inertia has principal moments"):
        s.add_body("flat", inertia=(1.0, 1.0, 2.5))     # violates I3 < I1 + I2
    with pytest.raises(ParameterError, match="orientation is not a rotation"):
        s.add_body("o", orientation=[[1, 0, 0], [0, 1, 0.1], [0, 0, 1]])
    with pytest.raises(ParameterError, match="orientation is not a rotation"):
        s.add_body("mirror", orientation=np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ParameterError, match="axis"):
        Revolute("a.p", "ground.x", (0, 0, 0))
    with pytest.raises(ParameterError, match="end_i and end_j coincide"):
        s.add_bar("point", (1, 2, 3), (1, 2, 3))
    s.add_bar("bar1", (0, 0, 0), (1, 0, 0), markers={"end": 1.0})
    s.add_bar("bar2", (1, 0, 0), (1, 1, 0), markers={"start": 0.0})
    with pytest.raises(ParameterError, match="neither 'bar1' nor 'bar2' has a frame"):
        s.add_joint(Revolute("bar1.end", "bar2.start", (0, 0, 1)))
    with pytest.raises(ParameterError, match="a direction across the bar is undefined"):
        s.add_joint(Revolute("ground.O", "bar1.end", (0, 0, 1)))
    with pytest.raises(ParameterError, match="arc lengths in"):
        s.body("bar1").add_marker("beyond", 1.5)
    with pytest.raises(ParameterError, match="redundant"):
        SpatialSystem(redundant="ignore")
    with pytest.raises(ParameterError, match="gravity"):
        SpatialSystem(gravity=(0.0, -9.81))


def test_point_force_of_the_planar_engine_acts_in_3d():
    """PointForce works through the state protocol: a force at an off-centre point of a
    free body gives m a = F and the moment about the centre of mass."""
    s = SpatialSystem()
    s.add_body("b", mass=2.0, inertia=(0.2, 0.3, 0.4), markers={"e": (0.5, 0.0, 0.0)})
    s.add_force(PointForce("b.e", (0.0, 1.0, 0.0)))
    q, v = assemble(s)
    a, _ = consistent_accelerations(s, 0.0, q, v)
    assert a[0:3] == pytest.approx([0.0, 0.5, 0.0], abs=1e-12)
    # moment 0.5 N m about z: alpha_z = 0.5 / 0.4; u'' = alpha e_z x e_x
    assert a[3:6] == pytest.approx([0.0, 0.5 / 0.4, 0.0], abs=1e-12)


def test_driver_with_constant_rate_turns_a_hinge():
    s = SpatialSystem(gravity=(0.0, -G, 0.0))
    s.ground.add_marker("O", (0.0, 0.0, 0.0))
    s.add_body("arm", mass=1.0, inertia=(0.01, 0.1, 0.1), center_of_mass=(0.3, 0.0, 0.0),
               markers={"o": (0.0, 0.0, 0.0)})
    hinge = s.add_joint(Revolute("ground.O", "arm.o", (0, 0, 1), name="hinge"))
    s.add_joint(AngleDriver("hinge", constant_rate(0.0, 2.0), name="motor"))
    r = simulate(s, 2.0, 1e-2, "generalized-alpha")
    th = np.unwrap([hinge.angle_value(q) for q in r.q])
    assert np.abs(th - 2.0 * r.t).max() < 1e-9
    # at constant rate the motor only holds the arm against gravity, m g l cos(theta)
    k = s.multiplier_names().index("motor.torque")
    torque = np.array([consistent_accelerations(s, t, q, v)[1][k]
                       for t, q, v in zip(r.t, r.q, r.v)])
    assert np.abs(np.abs(torque) - G * 0.3 * np.abs(np.cos(th))).max() < 1e-9
