"""The state-dependent force elements in C (``Force.compiled_element``: measure elements
of native/system_terms.c, the gear law and the motor body of models/native/drive.c):
their generalised forces equal the Python elements' to rounding, relative to the
element's force; their tangents equal central differences of the Python forces
(Richardson-extrapolated) to their accuracy and, where Python has exact Jacobians,
those to rounding; dense and sparse blocks agree; trajectories of small models on the
compiled and the Python path agree to 1e-9, dense and sparse, a latch engaging on the
way."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from mbdcore.dae.simulate import simulate
from mbdcore.models.drive import DCMotorBody, GearTrain, MotorVoltage
from mbdcore.models.ring_truss import DiagonalLatch, DiagonalScrewDrive
from mbdcore.multibody.constraints import Revolute
from mbdcore.multibody.forces import (Contact, JointForce, PointForce,
                                      RotationalSpringDamper, TranslationalSpringDamper)
from mbdcore.multibody.system import System
from mbdcore.models.antenna import HingeLatch
from mbdcore.models.mechanisms import rigid_crank
from mbdcore.models.spatial_mechanisms import heavy_top
from mbdcore.multibody.ancf import ANCFBeam
from mbdcore.multibody.forces import ConstantTorque, JointTorque
from mbdcore.spatial.forces import BodyTorque
from mbdcore.spatial.system import SpatialSystem

_FORCES = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)


def planar(*elements):
    """Two rigid bars, the first pinned to the ground, a motor; the elements named."""
    s = System(gravity=(0.0, -9.81))
    s.ground.add_marker("A", (0.0, 0.0))
    s.ground.add_marker("far", (1.5, 0.3))
    s.ground.add_marker("floor", (0.7, -0.2))
    s.add_body("bar", mass=1.0, inertia=0.1, position=(0.5, 0.0),
               markers={"a": (-0.5, 0.0), "b": (0.5, 0.0)})
    s.add_body("bar2", mass=0.5, inertia=0.05, position=(1.0, 0.2), angle=0.3,
               velocity=(0.1, -0.2), omega=0.5, markers={"c": (-0.2, 0.1)})
    s.add_joint(Revolute("ground.A", "bar.a"))
    s.add(DCMotorBody("m", speed=3.0, current=0.5))
    s.add_force(MotorVoltage("m", "u"))
    s.inputs["u"] = 2.0
    make = {
        "spring to ground": lambda: TranslationalSpringDamper("ground.far", "bar.b", 50.0,
                                                              2.0, rest_length=0.4),
        "spring between bodies": lambda: TranslationalSpringDamper("bar.b", "bar2.c", 30.0,
                                                                   1.5),
        "torsion spring": lambda: RotationalSpringDamper("bar", "bar2", 5.0, 0.3,
                                                         rest_angle=0.1),
        "gear train": lambda: GearTrain("m", "ground", "bar", ratio=10.0, backlash=0.01,
                                        gear_stiffness=2e3),
        # the circles 0.323 m apart at the start, radii 0.35 m: 27 mm deep
        "circle contact": lambda: Contact("bar.b", "bar2.c", 0.15, 1e4, exponent=1.5,
                                          damping=1e3, radius_b=0.2),
        # bar.b 0.2 m over the ground's line y = -0.2: 50 mm deep
        "circle on a ground line": lambda: Contact("bar.b", "ground.floor", 0.25, 1e4,
                                                   exponent=1.5, damping=1e3,
                                                   line_direction=(1.0, 0.0)),
        # bar.b 0.291 m from bar2's line through c, turned 0.3 rad with bar2: 69 mm
        # deep; Hertz-like exponent 1 (a kink in the force's slope at delta = 0 only)
        "circle on a body's line": lambda: Contact("bar.b", "bar2.c", 0.36, 2e4,
                                                   exponent=1.0, damping=5e2,
                                                   line_direction=(-1.0, 0.0)),
        # a constant load at bar2's point c, off its centre: its moment turns with bar2
        "point force": lambda: PointForce("bar2.c", (3.0, -2.0)),
        # linear actuators by the inputs "push", "pull" [N]: along a direction fixed in
        # bar (it turns with bar, its turn doing no work) and one fixed in the ground
        "actuator on a body": lambda: JointForce("bar.a", "bar2.c", "push",
                                                 direction=(0.6, 0.8)),
        "actuator on the ground": lambda: JointForce("ground.far", "bar.b", "pull",
                                                     direction=(1.0, -2.0)),
    }
    for name in elements:
        s.add_force(make[name]())
    s.inputs.update({u: x for u, x in (("push", 4.0), ("pull", -2.5)) if u in s.inputs})
    return s


def spatial(length: float = 1.13, latched: bool = False):
    """A natural-coordinate body and a bar, free, with a motor's screw drive between
    them, a spring to the ground and a latch of ``length`` [m] on the body (at first
    1.11 m from the ground point and moving out)."""
    s = SpatialSystem(gravity=(0.0, 0.0, -9.81))
    s.ground.add_marker("o", (0.0, 0.0, 0.0))
    s.add_body("box", mass=2.0, inertia=(0.1, 0.2, 0.25), position=(1.0, 0.1, 0.0),
               velocity=(0.5, 0.0, 0.1), markers={"p": (0.1, 0.05, 0.02)})
    s.add_bar("rod", (0.0, 1.0, 0.0), (0.2, 1.8, 0.1), mass=0.7, markers={"tip": 0.5})
    s.add(DCMotorBody("m", speed=20.0, current=1.0))
    s.add_force(MotorVoltage("m", "u"))
    s.add_force(TranslationalSpringDamper("ground.o", "rod.tip", 40.0, 1.0, rest_length=1.2))
    s.add_force(DiagonalScrewDrive("m", "box.p", "rod.tip", lead=1e-3, ratio=5.0,
                                   stiffness=3e4, damping=50.0))
    latch = DiagonalLatch("ground.o", "box.p", length, 1e5, 30.0)
    latch.latched = latched
    s.add_force(latch)
    s.inputs["u"] = 3.0
    return s


def torqued_top(by_input: bool):
    """The heavy top (a natural-coordinate body on a ball joint) with a torque in the
    ground frame: constant, or the input "tau" = 0.7 N m about a fixed axis."""
    s = heavy_top()
    if by_input:
        s.add_force(BodyTorque("top", input="tau", axis=(0.2, 0.5, 1.0), name="motor"))
        s.inputs["tau"] = 0.7
    else:
        s.add_force(BodyTorque("top", (0.3, 0.1, -0.2), name="push"))
    return s


CASES = {**{name: (lambda name=name: planar(name))
            for name in ("spring to ground", "spring between bodies", "torsion spring",
                         "gear train", "circle contact", "circle on a ground line",
                         "circle on a body's line", "point force", "actuator on a body",
                         "actuator on the ground")},
         "spatial, latch open": lambda: spatial(1.13),
         "spatial, latch stretched": lambda: spatial(1.07),
         "spatial, latch engaged": lambda: spatial(1.13, latched=True),
         "spatial, body torque": lambda: torqued_top(False),
         "spatial, body torque by input": lambda: torqued_top(True)}


def _states(s, seed):
    rng = np.random.default_rng(seed)
    q0, v0 = s.initial_state()
    return [(q0 + 0.02 * rng.standard_normal(q0.size), v0 + rng.standard_normal(v0.size))
            for _ in range(2)]


def _compiled_forces(terms, q, v, t=0.0):
    F = np.zeros(terms.n)
    terms.prepare(t)
    _FORCES(terms.forces)(terms.context, q.ctypes.data, v.ctypes.data, F.ctypes.data)
    return F


def _element_scale(s, q, v):
    """The largest generalised force of the force elements alone [N, N m]."""
    f = s.forces(0.0, q, v)
    for b in s.bodies:
        sl = slice(b.index, b.index + b.n_coords)
        f[sl] -= b.applied_forces(0.0, q[sl], v[sl], s.gravity)
    return max(1.0, float(np.abs(f).max()))


def _differences(f, x, h=1e-4):
    """df/dx by central differences at h and h/2, Richardson-extrapolated (error
    O(h^4))."""
    out = np.empty((x.size, x.size))
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = 1.0
        d1, d2 = ((f(x + s * e) - f(x - s * e)) / (2 * s) for s in (h, h / 2))
        out[:, j] = (4.0 * d2 - d1) / 3.0
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_forces_and_tangents_equal_python_and_central_differences(case):
    s = CASES[case]()
    terms = s.compiled_terms()
    assert terms is not None and terms.jacobian is not None, s.forces_list
    for q, v in _states(s, 3):
        scale = _element_scale(s, q, v)
        F = _compiled_forces(terms, q, v)
        assert np.abs(F - s.forces(0.0, q, v)).max() <= 1e-12 * scale
        C, K, _ = terms.jacobian(q, v, np.zeros(s.m), False)
        Kd = _differences(lambda x: -s.forces(0.0, x, v), q)
        Cd = _differences(lambda x: -s.forces(0.0, q, x), v)
        tangent_scale = max(1.0, float(np.abs(Kd).max()), float(np.abs(Cd).max()))
        # their accuracy at h = 1e-4: h^4 times the forces' fifth derivatives (the
        # contact's delta^1.5 at 27 mm the largest) and eps |F| / h; 4e-12 of the largest
        # entry measured on these cases
        assert np.abs(K - Kd).max() <= 1e-10 * tangent_scale
        assert np.abs(C - Cd).max() <= 1e-10 * tangent_scale
        # the sparse blocks: the same values in the pattern fixed per topology
        Cs, Ks, _ = terms.owner.sparse_jacobian(q, v, np.zeros(s.m), False)
        np.testing.assert_allclose(Ks.toarray(), K, rtol=0, atol=1e-14 * tangent_scale)
        np.testing.assert_allclose(Cs.toarray(), C, rtol=0, atol=1e-14 * tangent_scale)


def beam_slopes(*elements: str):
    """A free rigid hub, a free ANCF beam (3 elements, 1.2 m, bent) and a motor, with
    the elements named on the beam's slope at its tip or middle."""
    s = System(gravity=(0.0, 0.0))
    s.add_body("hub", mass=1.0, inertia=0.2, position=(0.0, 0.0), angle=0.2, omega=0.7)
    s.add(ANCFBeam("beam", (0.1, 0.0), (1.2, 0.5), 3, 0.5, 20.0, 1e3,
                   markers={"mid": 0.55}))
    s.add(DCMotorBody("m", speed=3.0, current=0.5))
    make = {"torsion spring": lambda: RotationalSpringDamper("hub", "beam.tip", 5.0, 0.3,
                                                             rest_angle=0.1),
            "torque by input": lambda: JointTorque("hub", "beam.tip", "tau"),
            "constant torque": lambda: ConstantTorque("ground", "beam.mid", -1.5),
            "gear train": lambda: GearTrain("m", "ground", "beam.mid", ratio=10.0,
                                            backlash=0.01, gear_stiffness=2e3)}
    for element in elements:
        s.add_force(make[element]())
    s.inputs.update({u: 2.5 for u in s.inputs})
    return s


_TANGENT = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 5, ctypes.c_int)


@pytest.mark.parametrize("element", ["torsion spring", "torque by input", "constant torque",
                                     "gear train"])
def test_elements_on_a_beam_s_slope_equal_python_and_central_differences(element):
    """The element alone (its compiled kernel over its gathered columns against its
    Python ``apply``) at bent, moving states: forces to 1e-12 of its force, tangents to
    central differences (Richardson) to 1e-9 of their largest entry (h^4 times the
    atan2's fifth derivatives over |a|^5, |a| ~ 1)."""
    s = beam_slopes(element)
    force = s.forces_list[-1]
    assert s.compiled_terms() is not None
    el = force.compiled_element()
    for load in s.forces_list:
        load.load_solve(0.0, s.inputs)

    def python(q, v):
        f = np.zeros(s.n)
        force.apply(0.0, s.view(q, v), f, s.inputs)
        return f

    for q, v in _states(s, 11):
        qe, ve = (np.ascontiguousarray(x[el.cols]) for x in (q, v))
        fe = np.zeros(el.cols.size)
        _FORCES(el.kernel)(el.params, qe.ctypes.data, ve.ctypes.data, fe.ctypes.data)
        ref = python(q, v)
        scale = max(1e-3, float(np.abs(ref).max()))
        full = np.zeros(s.n)
        full[el.cols] = fe
        assert np.abs(full - ref).max() <= 1e-12 * scale
        K, C = np.zeros((el.cols.size,) * 2), np.zeros((el.cols.size,) * 2)
        _TANGENT(el.tangent)(el.params, qe.ctypes.data, ve.ctypes.data, K.ctypes.data,
                             C.ctypes.data, el.cols.size)
        Kd = _differences(lambda x: -python(x, v), q)[np.ix_(el.cols, el.cols)]
        Cd = _differences(lambda x: -python(q, x), v)[np.ix_(el.cols, el.cols)]
        tangent_scale = max(1e-3, float(np.abs(Kd).max()), float(np.abs(Cd).max()))
        assert np.abs(K - Kd).max() <= 1e-9 * tangent_scale
        assert np.abs(C - Cd).max() <= 1e-9 * tangent_scale


def latched_crank():
    """The rigid crank (62 N m from rest) with a hinge latch that engages at 1 rad and
    holds it (tests/test_mbdcore/models/test_antenna_deployment.py)."""
    s = rigid_crank()
    s.add_force(HingeLatch("ground.O", "crank.O", 1e4, 50.0, latch_angle=-1.0, sign=-1.0,
                           name="latch"))
    return s


def test_a_hinge_latch_s_compiled_law_reads_its_discrete_state():
    """Open: no torque either way (also past the stop, before the event); engaged: the
    spring-damper both ways; restored by set_discrete_state, in terms built before."""
    s = latched_crank()
    latch = s.forces_list[-1]
    terms = s.compiled_terms()
    q, v = s.initial_state()
    q[2], v[2] = 1.05, 2.0                         # past the stop at 1 rad, open
    np.testing.assert_array_equal(_compiled_forces(terms, q, v), s.forces(0.0, q, v))
    latch.set_discrete_state({"engaged": True, "engaged_at": 0.09})
    F = _compiled_forces(terms, q, v)
    np.testing.assert_allclose(F, s.forces(0.0, q, v), rtol=0, atol=1e-12 * 600.0)
    assert abs(F[2] - s.forces_list[0].torque) > 500.0       # -1e4 * 0.05 - 50 * 2
    C, K, _ = terms.jacobian(q, v, np.zeros(s.m), False)
    assert K[2, 2] == 1e4 and C[2, 2] == 50.0
    latch.set_discrete_state({"engaged": False, "engaged_at": None})
    np.testing.assert_array_equal(_compiled_forces(terms, q, v), s.forces(0.0, q, v))


def test_compiled_tangents_equal_the_exact_python_jacobians():
    """Where Python has exact Jacobians (the torsion spring on rigid bodies, the motor
    body), C gives the same to rounding."""
    s = planar("torsion spring")
    terms = s.compiled_terms()
    for q, v in _states(s, 5):
        dFdq, dFdv = s.force_jacobians(0.0, q, v)
        C, K, _ = terms.jacobian(q, v, np.zeros(s.m), False)
        for a, b in ((K, -dFdq), (C, -dFdv)):
            assert np.abs(a - b).max() <= 1e-12 * max(1.0, float(np.abs(b).max()))


def test_a_latch_engages_the_compiled_law_with_its_discrete_state():
    """The latch's compiled law reads its discrete state: stretched or not, open or
    engaged, restored by set_discrete_state (also in terms built before a later build
    of the same system's)."""
    s = spatial(1.13)
    latch = s.forces_list[-1]
    terms = s.compiled_terms()
    assert s.compiled_terms() is not None
    q, v = s.initial_state()
    open_f = _compiled_forces(terms, q, v)
    np.testing.assert_allclose(open_f, s.forces(0.0, q, v), rtol=0, atol=1e-12)
    latch.set_discrete_state({"latched": True, "latch_time": 0.0})
    engaged = _compiled_forces(terms, q, v)
    np.testing.assert_allclose(engaged, s.forces(0.0, q, v), rtol=0,
                               atol=1e-12 * _element_scale(s, q, v))
    assert np.abs(engaged - open_f).max() > 1e3      # the pull of the engaged latch


def _disc_on_floor(exponent: float):
    """A disc (radius 0.25 m, centre marker) touching the ground's line y = 0 exactly:
    its height 0.25 m, the line's normal E (1, 0) = (0, 1), all exact in binary."""
    s = System(gravity=(0.0, -9.81))
    s.ground.add_marker("o", (0.0, 0.0))
    s.add_body("disc", mass=1.0, inertia=0.03, position=(0.3, 0.25), angle=0.4,
               markers={"c": (0.0, 0.0)})
    s.add_force(Contact("disc.c", "ground.o", 0.25, 1e4, exponent=exponent, damping=2e2,
                        line_direction=(1.0, 0.0)))
    return s


@pytest.mark.parametrize("exponent", [1.0, 1.5])
def test_contact_with_a_line_at_its_kinks_follows_the_python_law(exponent):
    """delta = 0 exactly: no force (Python's delta <= 0), and the tangents those of the
    free side, zero (one-sided differences there: zero; into the contact, the slope's
    jump K + C delta' for the exponent 1, tending to 0 for 1.5); and where the damping would pull (K + C
    delta' < 0), no force and no tangent, as central differences in that open set."""
    s = _disc_on_floor(exponent)
    terms = s.compiled_terms()
    q, v = s.initial_state()
    v[1] = -0.5                                   # approaching: delta' = 0.5 m/s
    assert s.forces_list[0].penetration(q) == 0.0
    F = _compiled_forces(terms, q, v)
    np.testing.assert_array_equal(F, s.forces(0.0, q, v))
    C, K, _ = terms.jacobian(q, v, np.zeros(s.m), False)
    assert not K.any() and not C.any()
    h = 1e-7
    up, down = q.copy(), q.copy()
    up[1] += h
    down[1] -= h
    assert not (s.forces(0.0, up, v) - s.forces(0.0, q, v)).any()
    into = -(s.forces(0.0, q, v) - s.forces(0.0, down, v))[1] / h  # -dF_y/dy from below
    # (K + C delta') h^n / h: the slope's jump K + C delta' for n = 1, -> 0 as h^0.5 for
    # 1.5 (delta = h to the rounding of 0.25 - h, 1e-10 of it)
    expected = (1e4 + 2e2 * 0.5) * h ** (exponent - 1.0)
    assert abs(into - expected) <= 1e-8 * expected
    # 10 mm deep and leaving at 60 m/s: K + C delta' = 1e4 - 1.2e4 < 0
    q[1], v[1] = 0.24, 60.0
    assert s.forces_list[0].penetration(q) > 0
    gravity = np.array([0.0, -9.81, 0.0])
    np.testing.assert_array_equal(_compiled_forces(terms, q, v), gravity)
    np.testing.assert_array_equal(s.forces(0.0, q, v), gravity)
    C, K, _ = terms.jacobian(q, v, np.zeros(s.m), False)
    Kd = _differences(lambda x: -s.forces(0.0, x, v), q)
    assert not K.any() and not C.any() and not Kd.any()


def pushed_bar():
    """:func:`planar` with a force varying in time at bar2's point c (its direction
    turning: the compiled measure's vector written before each solve)."""
    s = planar()
    s.add_force(PointForce("bar2.c", lambda t: (3.0 * np.cos(5.0 * t), 2.0 * np.sin(5.0 * t))))
    return s


def timed_top():
    """The heavy top with a torque varying in time in the ground frame."""
    s = heavy_top()
    s.add_force(BodyTorque("top", lambda t: (0.2 * np.sin(7.0 * t), 0.1, 0.3 * t),
                           name="push"))
    return s


@pytest.mark.parametrize("make", [pushed_bar, timed_top])
def test_loads_varying_in_time_are_written_before_each_solve(make):
    """A point force F(t) on a rigid body's point and a body torque T(t): the compiled
    forces at the solve's time equal Python's, also by terms built before a later
    build."""
    s = make()
    terms = s.compiled_terms()
    assert s.compiled_terms() is not None
    for (q, v), t in zip(_states(s, 13) * 2, (0.0, 0.3, 0.7, 1.1)):
        np.testing.assert_allclose(_compiled_forces(terms, q, v, t), s.forces(t, q, v),
                                   rtol=0, atol=1e-12 * _element_scale(s, q, v))


def test_compiled_elements_read_the_input_of_each_solve():
    """A linear actuator's and a body torque's input written into the compiled element
    before each solve (``Force.load_solve``), also into terms built before a later
    build of the same system's."""
    for s, name in ((planar("actuator on a body"), "push"), (torqued_top(True), "tau")):
        terms = s.compiled_terms()
        assert s.compiled_terms() is not None
        q, v = _states(s, 7)[0]
        for value in (4.0, -3.0, 0.0):
            s.inputs[name] = value
            np.testing.assert_allclose(_compiled_forces(terms, q, v), s.forces(0.0, q, v),
                                       rtol=0, atol=1e-12 * _element_scale(s, q, v))


def spatial_pushed():
    """:func:`spatial` with a force that varies in time at the rod's tip, a point linear
    in the bar's coordinates: J^T F(t) independent of the state, evaluated once per
    solve."""
    s = spatial(1.13)
    s.add_force(PointForce("rod.tip", lambda t: (0.0, 5.0 * np.sin(40.0 * t), 2.0)))
    return s


def slope_elements():
    """Every kind of element on the beam's slope at once: the Python path's tangents of
    these are finite differences (Force.jacobians None), so its modified-Newton
    iterations may differ from the compiled path's exact ones by one (1426 and 1427 in
    0.1 s), the states not (1.4e-14 m, 4.7e-12 m/s)."""
    return beam_slopes("torsion spring", "torque by input", "constant torque", "gear train")


@pytest.mark.parametrize("make, t_end, h, sparse", [
    (lambda: planar("spring to ground", "spring between bodies", "torsion spring",
                    "gear train", "point force"), 0.1, 1e-3, False),
    (spatial_pushed, 0.12, 2e-3, False),
    (lambda: torqued_top(True), 0.1, 1e-3, False),
    (pushed_bar, 0.1, 1e-3, False),
    (latched_crank, 0.2, 1e-3, False),
    (timed_top, 0.1, 1e-3, False),
    (slope_elements, 0.1, 1e-3, False),
    (lambda: torqued_top(False), 0.1, 1e-3, True),
    (lambda: planar("circle on a ground line", "circle on a body's line"), 0.1, 1e-3,
     False),
    (lambda: planar("actuator on a body", "actuator on the ground", "spring to ground"),
     0.1, 1e-3, False),
    (lambda: planar("circle on a ground line", "circle on a body's line"), 0.1, 1e-3,
     True),
    (lambda: spatial(1.13), 0.12, 2e-3, False),
    (lambda: spatial(1.13), 0.12, 2e-3, True),
])
def test_trajectories_on_the_compiled_path_equal_the_python_path(make, t_end, h, sparse):
    """Dense (the whole step's Newton iterations in C) and sparse (the residual and
    blocks in C over the fixed patterns)."""
    runs = []
    for compiled in (True, False):
        s = make()
        s.compiled_residual = compiled
        assert (s.compiled_terms() is not None) == compiled
        runs.append((s, simulate(s, t_end, h, "generalized-alpha", rho_inf=0.7,
                                 sparse=sparse)))
    (s, a), (_, b) = runs
    if make is not slope_elements:
        assert a.stats["newton_iterations"] == b.stats["newton_iterations"]
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.v, b.v, rtol=0, atol=1e-9 * max(1.0, np.abs(b.v).max()))
    # the latches engaged on the way
    assert all(f.latched for f in s.forces_list if isinstance(f, DiagonalLatch))
    assert all(f.engaged for f in s.forces_list if isinstance(f, HingeLatch))
