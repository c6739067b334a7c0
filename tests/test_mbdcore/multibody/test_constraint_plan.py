"""Batched constraint rows (issue 12, item 1): the rows the compiled plan
(``mbdcore.multibody.assembly``, ``native/constraint_plan.c``) assembles equal the
reference, one ``Constraint.evaluate`` per joint, to 1e-12 on every joint and body type
-- dense and sparse -- and joints or bodies without a closed form fall back to the
reference inside the same plan."""
import math

import numpy as np
import pytest

from mbdcore.dae.simulate import simulate
from mbdcore.models.mechanisms import (four_bar, geared_bars, hub_beam, slider_crank,
                                       two_link_arm)
from mbdcore.multibody.ancf import ANCFBeam
from mbdcore.multibody.constraints import (AngleDriver, PointOnLine, Prismatic, Revolute,
                                           SynchronousGear, Weld, polynomial_motion)
from mbdcore.multibody.flexible import FiniteSegmentBeam, ModalBeam
from mbdcore.multibody.system import System
from mbdcore.models.spatial_mechanisms import bricard, heavy_top, hub_beam_3d
from mbdcore.spatial import AngleDriver as SpatialDriver
from mbdcore.spatial import Revolute as Hinge
from mbdcore.spatial import SpatialSystem
from mbdcore.spatial import SynchronousGear as SpatialGear


def every_kind():
    """Rigid bodies, the ground, ANCF, modal and finite-segment beams, joined by every
    joint type: revolute, weld, point-on-line, prismatic, gear and angle driver."""
    s = System(gravity=(0.0, -9.81))
    s.ground.add_marker("O", (0.3, -0.2))
    s.add_body("a", mass=2.0, inertia=0.3, position=(0.5, 0.1), angle=0.2,
               markers={"l": (-0.5, 0.0), "r": (0.5, 0.0)})
    s.add_body("b", mass=1.0, inertia=0.1, position=(1.6, 0.3), angle=-0.4,
               markers={"l": (-0.4, 0.0), "r": (0.4, 0.1)})
    s.add(ANCFBeam("beam", (2.0, 0.2), (3.0, 0.9), 3, 1.0, 5.0, 1e4))
    s.add(ModalBeam("modal", length=1.0, rho_a=1.0, ei=10.0, n_modes=2,
                    position=(0.0, -1.0), angle=0.3))
    s.add(FiniteSegmentBeam("segs", length=1.0, rho_a=1.0, ei=10.0, n_segments=3,
                            position=(0.0, -2.0), angle=-0.2))
    s.add_body("slider", mass=0.5, inertia=0.01, position=(2.0, -1.0),
               markers={"c": (0.0, 0.0)})
    s.add_joint(Revolute("ground.O", "a.l"))
    s.add_joint(Revolute("a.r", "b.l"))
    s.add_joint(Weld("b.r", "beam.root"))
    s.add_joint(Revolute("beam.tip", "modal.root"))          # falls back (modal beam)
    s.add_joint(Weld("modal.tip", "segs.root"))              # falls back
    s.add_joint(PointOnLine("ground.O", "slider.c", (1.0, 0.2)))   # falls back
    s.add_joint(Prismatic("a.r", "slider.c", (0.3, 1.0)))    # falls back
    s.add_joint(SynchronousGear(("ground", "a"), ("b", "beam.tip"), ratio=-0.7))
    s.add_joint(AngleDriver("a", "beam.root", polynomial_motion(0.1, 0.4, -0.3)))
    return s


def _ancf_arm():
    return two_link_arm(lambda nm, L, ra, ei, at: ANCFBeam(nm, at, (at[0] + L, at[1]), 4,
                                                           ra, ei, 1e4))


def _ancf_hub():
    return hub_beam(lambda nm, L, ra, ei, ea: ANCFBeam(nm, (0.0, 0.0), (L, 0.0), 4, ra, ei,
                                                       ea), 6.0)


def geared_hinges():
    """Two bodies on hinges about tilted axes, geared (ratio -0.7), one driven."""
    s = SpatialSystem(gravity=(0.0, 0.0, -9.81))
    s.ground.add_marker("A", (0.0, 0.0, 0.0))
    s.ground.add_marker("B", (1.0, 0.0, 0.0))
    s.add_body("a", mass=1.0, inertia=(0.1, 0.2, 0.25), position=(0.0, 0.0, 0.0),
               markers={"o": (0.0, 0.0, 0.0)})
    s.add_body("b", mass=2.0, inertia=(0.2, 0.3, 0.4), position=(1.0, 0.0, 0.0),
               markers={"o": (0.0, 0.0, 0.0)})
    h1 = s.add_joint(Hinge("ground.A", "a.o", (0.2, 0.3, 1.0), name="h1"))
    h2 = s.add_joint(Hinge("b.o", "ground.B", (0.0, 1.0, 0.4), name="h2"))
    s.add_joint(SpatialGear(h1, h2, ratio=-0.7, name="gear"))
    s.add_joint(SpatialDriver(h1, polynomial_motion(0.0, 0.5, 0.3), name="drive"))
    return s


SYSTEMS = {"every kind": every_kind, "ANCF arm": _ancf_arm, "ANCF hub-beam": _ancf_hub,
           "slider-crank": slider_crank, "four-bar": four_bar, "geared bars": geared_bars,
           # spatial: natural-coordinate bodies, bars, an ANCF cable; quadratic rows
           "Bricard": bricard, "heavy top": heavy_top,
           "3D hub-beam": lambda: hub_beam_3d(6.0, 3, axis=(1.0, 1.0, 1.0)),
           "geared hinges": geared_hinges}


def _perturbed(system, seed):
    rng = np.random.default_rng(seed)
    q, v = system.initial_state()
    return q + 0.05 * rng.standard_normal(q.size), v + rng.standard_normal(v.size)


def _terms(system, batched, t, q, v, sparse):
    system.batched_constraints = batched
    get = system.constraint_terms_sparse if sparse else system.constraint_terms
    g, G, gt, gam = get(t, q, v)
    G = G.toarray() if sparse else np.asarray(G)
    return g, G, gt, gam


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", list(SYSTEMS))
def test_batched_rows_equal_the_per_joint_reference(name, sparse):
    system = SYSTEMS[name]()
    for seed, t in ((1, 0.0), (2, 0.37), (3, 1.9)):
        q, v = _perturbed(system, seed)
        ref = _terms(system, False, t, q, v, sparse)
        got = _terms(system, True, t, q, v, sparse)
        for label, a, b in zip(("g", "G", "g_t", "gamma"), got, ref):
            scale = max(1.0, float(np.abs(b).max(initial=0.0)))
            assert np.abs(a - b).max(initial=0.0) <= 1e-12 * scale, (name, label)
    # what falls back: planar line joints (no closed form yet) and joints on bodies
    # whose points have none (modal and finite-segment beams); spatial joints are
    # quadratic, spatial gears and drivers rows of hinge angles
    plan = system.constraint_plan()
    planar = not getattr(system, "dim", 2) == 3
    per_joint = sum(j.n_eq for j in system.joints
                    if (planar and j.kind in ("point_on_line", "prismatic"))
                    or any(isinstance(b, (ModalBeam, FiniteSegmentBeam))
                           for b in _bodies(j)))
    assert plan.m - plan.batched == per_joint       # the plan covers every row
    assert plan.batched > 0


def _bodies(joint):
    if joint.row_forms() is None:
        return [getattr(joint, x)[0] for x in ("a", "b") if hasattr(joint, x)]
    frames = [f for form in (joint.row_forms() or []) for f in
              (form[1:3] if form[0] != "angle_sum" else [fr for fr, _ in form[1]])]
    return [body for body, _ in frames]


def test_jacobian_of_the_batched_rows_is_the_derivative_of_g():
    """G from the plan against central differences of its own g (every row form)."""
    system = every_kind()
    q, v = _perturbed(system, 7)
    g0, G, _, _ = system.constraint_terms(0.5, q, v)
    fd = np.empty_like(G)
    for j in range(q.size):
        e = 1e-6 * max(1.0, abs(q[j]))
        qp, qm = q.copy(), q.copy()
        qp[j] += e
        qm[j] -= e
        fd[:, j] = (system.constraint_terms(0.5, qp, v)[0]
                    - system.constraint_terms(0.5, qm, v)[0]) / (2 * e)
    np.testing.assert_allclose(G, fd, atol=1e-7)


def test_plan_follows_the_topology():
    """A joint added after a first evaluation is in the next one."""
    s = System()
    s.ground.add_marker("O", (0.0, 0.0))
    s.add_body("a", position=(1.0, 0.0), markers={"l": (-1.0, 0.0)})
    s.add_joint(Revolute("ground.O", "a.l"))
    q, v = s.initial_state()
    assert s.constraint_terms(0.0, q, v)[0].size == 2
    s.add_joint(AngleDriver("ground", "a", polynomial_motion(0.25)))
    g = s.constraint_terms(0.0, q, v)[0]
    assert g.size == 3 and g[2] == pytest.approx(-0.25)


def test_hub_beam_run_is_the_same_with_and_without_the_plan():
    """The ANCF spin-up over 0.5 s through generalized-alpha: batched and per-joint
    assembly give the same trajectory (rows equal to rounding -> same Newton path)."""
    runs = []
    for batched in (True, False):
        s = _ancf_hub()
        s.batched_constraints = batched
        runs.append(simulate(s, 0.5, 2.5e-3, "generalized-alpha", rho_inf=0.8))
    assert runs[0].stats["newton_iterations"] == runs[1].stats["newton_iterations"]
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=0, atol=1e-11)
    assert math.isfinite(runs[0].q[-1, 0])


@pytest.mark.parametrize("name", ["every kind", "ANCF arm", "ANCF hub-beam", "Bricard",
                                  "3D hub-beam", "geared hinges"])
def test_geometric_terms_of_the_plan_equal_the_per_joint_differences(name):
    """d(G^T lam)/dq and d(G v)/dq for the Newton matrix: the plan's differences (one C
    call per column) against the per-joint ones, same step; they differ by the
    rounding of G over the step (~1e-8 relative), and both against central
    differences of the analytic G^T lam (to the forward-difference error)."""
    system = SYSTEMS[name]()
    q, v = _perturbed(system, 11)
    rng = np.random.default_rng(5)
    lam, x = rng.standard_normal(system.m), rng.standard_normal(system.n)
    out = {}
    for batched in (True, False):
        system.batched_constraints = batched
        out[batched] = system.geometric_stiffness_sparse(0.2, q, v, x, lam, dense=True)
    for a, b in zip(out[True], out[False]):
        assert np.abs(a - b).max() <= 1e-6 * max(1.0, np.abs(b).max())
    assert np.abs(out[True][1]).max() > 1e-3           # the terms are not all zero
    system.batched_constraints = True
    K = out[True][0]
    j = int(np.argmax(np.abs(K).sum(axis=0)))            # a column the joints bend
    e = 1e-6
    qp, qm = q.copy(), q.copy()
    qp[j] += e
    qm[j] -= e
    Gp, Gm = system.constraint_terms(0.2, qp, v)[1], system.constraint_terms(0.2, qm, v)[1]
    Mp, Mm = system.mass_matrix(qp), system.mass_matrix(qm)
    central = ((Gp - Gm).T @ lam + (Mp - Mm) @ x) / (2 * e)
    np.testing.assert_allclose(K[:, j], central, atol=1e-5 * max(1.0, np.abs(central).max()))


class _ClaimsQuadratic(Revolute):
    """A planar pin joint wrongly flagged quadratic: on planar rigid bodies its rows hold
    cos and sin of the angles."""

    quadratic = True

    def row_forms(self):
        return None                     # not through the closed forms: the probe decides


def test_a_joint_whose_rows_are_not_quadratic_is_evaluated_by_its_own_code():
    s = System()
    s.ground.add_marker("O", (0.0, 0.0))
    s.add_body("a", position=(0.5, 0.0), angle=0.3, markers={"l": (-0.5, 0.0)})
    s.add_joint(_ClaimsQuadratic("ground.O", "a.l"))
    plan = s.constraint_plan()
    assert plan.quadratic_rows.size == 0 and plan.fallback_rows.size == 2
    q, v = _perturbed(s, 3)
    ref = _terms(s, False, 0.0, q, v, False)
    got = _terms(s, True, 0.0, q, v, False)
    for a, b in zip(got, ref):
        assert np.abs(a - b).max() <= 1e-12


def test_spatial_rows_are_evaluated_from_their_quadratic_form():
    """Bricard's linkage: every row (frames of the five rods, six hinges) is quadratic
    in the natural coordinates; the plan evaluates all of them from H, b, c."""
    s = bricard()
    plan = s.constraint_plan()
    assert plan.quadratic_rows.size == plan.m == len(s.all_equation_names())
    assert plan.fallback_rows.size == 0


def test_geared_hinges_run_is_the_same_with_and_without_the_plan():
    """Gear and driver rows from the hinges' (cos, sin) pairs: generalized-alpha over
    0.5 s gives the per-joint run's trajectory, and the gear relation holds."""
    runs = []
    for batched in (True, False):
        s = geared_hinges()
        s.batched_constraints = batched
        runs.append((s, simulate(s, 0.5, 2e-3, "generalized-alpha", rho_inf=0.8)))
    (s, a), (_, b) = runs
    assert a.stats["newton_iterations"] == b.stats["newton_iterations"]
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-10)
    h1, h2 = s.joint("h1"), s.joint("h2")
    th1 = np.array([h1.angle_value(q) for q in a.q])
    th2 = np.array([h2.angle_value(q) for q in a.q])
    assert np.ptp(th1) > 0.2
    np.testing.assert_allclose(th2, -0.7 * th1, atol=1e-9)
