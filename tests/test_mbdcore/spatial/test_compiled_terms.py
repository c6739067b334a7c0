"""The spatial engine's Newton residual and blocks in C (mbdcore/multibody/terms.py over
the batched plan): every spatial joint and body kind against the per-joint Python
reference (``Constraint.evaluate``), the Newton blocks against central differences, the
sparse patterns against the dense reference's non-zeros, trajectories through the
compiled terms against the Python path, and what falls back to Python."""
from __future__ import annotations


import numpy as np
import pytest

from mbdcore.dae.simulate import simulate
from mbdcore.models.spatial_mechanisms import bricard, cable_net, heavy_top
from mbdcore.multibody.forces import JointForce
from mbdcore.spatial.ancf import ANCFBeam3D, ANCFCable
from mbdcore.spatial.joints import (
    AngleDriver,
    CableClamp,
    Revolute,
    Spherical,
    SynchronousGear,
)
from mbdcore.spatial.system import SpatialSystem
from support.models import spatial_joint_kinds

G = 9.81


def flexible_kinds() -> SpatialSystem:
    """A damped ANCF cable pinned at its root, a rigid body clamped to its tip, and a
    damped fully parameterised ANCF beam on ball joints at the cable's middle and the
    ground."""
    s = SpatialSystem(gravity=(0.0, 0.0, -G), redundant="keep")
    s.ground.add_marker("O", (0.0, 0.0, 0.0))
    s.ground.add_marker("E", (1.0, 1.0, 0.3))
    s.add(ANCFCable("c", (0.0, 0.0, 0.0), (1.0, 0.2, 0.0), 3, rho_a=0.4, ea=1e4, ei=2.0,
                    damping=0.01, markers={"mid": 0.5}))
    s.add_body("r", mass=0.5, inertia=(0.02, 0.02, 0.03), position=(1.0, 0.2, 0.0),
               markers={"p": (0.0, 0.0, 0.0)})
    s.add(ANCFBeam3D("b", (0.5, 0.1, 0.0), (1.0, 1.0, 0.3), 2, rho_a=1.0, ea=1e4,
                     ei_xy=1.0, ei_xz=4.0, gj=0.5, rho_yy=1e-4, rho_zz=1e-4,
                     damping=0.02))
    s.add_joint(Spherical("ground.O", "c.root", name="pin"))
    s.add_joint(CableClamp("r.p", "c.tip", (1.0, 0.2, 0.0), name="clamp"))
    s.add_joint(Spherical("c.mid", "b.root", name="ball"))
    s.add_joint(Spherical("b.tip", "ground.E", name="end"))
    return s


def _with_gear():
    """Two wheels on hinges about z, geared by -1.7 (a hinge-angle row)."""
    s = SpatialSystem(gravity=(0.0, 0.0, -G))
    for k, x in enumerate((0.0, 1.0)):
        s.ground.add_marker(f"O{k}", (x, 0.0, 0.0))
        s.add_body(f"w{k}", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(x, 0.0, 0.0),
                   angular_velocity=(0.0, 0.0, 1.0 - 2.7 * k), markers={"h": (0.0, 0.0, 0.0)})
        s.add_joint(Revolute(f"ground.O{k}", f"w{k}.h", (0.0, 0.0, 1.0), name=f"h{k}"))
    s.add_joint(SynchronousGear("h0", "h1", ratio=-1.7, name="gear"))
    return s


def _with_driver():
    """A wheel on a tilted hinge driven by an accelerating motion, and a pendulum on a
    ball joint at its rim (a driver row with g_t and a time-dependent gamma)."""
    s = SpatialSystem(gravity=(0.0, 0.0, -G))
    s.ground.add_marker("O", (0.0, 0.0, 0.0))
    s.add_body("a", mass=1.0, inertia=(0.1, 0.12, 0.15),
               markers={"h": (0.0, 0.0, 0.0), "rim": (0.3, 0.0, 0.0)})
    s.add_body("p", mass=0.5, inertia=(0.02, 0.02, 0.01), position=(0.3, 0.0, -0.4),
               markers={"top": (0.0, 0.0, 0.4)})
    hinge = s.add_joint(Revolute("ground.O", "a.h", (0.2, 0.1, 1.0), name="h"))
    s.add_joint(AngleDriver(hinge, lambda t: (0.5 * t + t * t, 0.5 + 2.0 * t, 2.0),
                            name="drive"))
    s.add_joint(Spherical("a.rim", "p.top", name="ball"))
    return s


SYSTEMS = {"rigid": spatial_joint_kinds, "flexible": flexible_kinds,
           "net": lambda: cable_net(junctions=3, n_elements=2), "heavy top": heavy_top,
           "bricard": bricard, "gear": _with_gear, "driver": _with_driver}


def _free_cable():
    s = SpatialSystem(gravity=(0.0, 0.0, -G))
    s.add(ANCFCable("c", (0.0, 0.0, 0.0), (1.0, 0.0, 0.3), 3, rho_a=0.4, ea=1e4, ei=1.0,
                    damping=0.01))
    return s


def random_state(s, seed):
    rng = np.random.default_rng(seed)
    q, v = s.initial_state()
    return q + 0.05 * rng.standard_normal(q.size), rng.standard_normal(q.size), \
        rng.standard_normal(s.m)


def reference_rows(s, t, q, v):
    """(g, G, g_t, gamma) one joint at a time (Constraint.evaluate)."""
    s.batched_constraints = False
    try:
        return s.constraint_terms(t, q, v)
    finally:
        s.batched_constraints = True


@pytest.mark.parametrize("name", SYSTEMS)
def test_compiled_rows_equal_the_per_joint_reference(name):
    """g, G, g_t from the compiled terms (sparse) and g, G, gamma from the plan's C call
    (dense) equal Constraint.evaluate's at random configurations, to 1e-12 of the
    magnitudes involved; G's pattern holds every non-zero of the reference."""
    s = SYSTEMS[name]()
    terms = s.compiled_terms()
    assert terms is not None, f"{name}: every part has a compiled form"
    for seed in range(3):
        t = 0.1 * seed
        q, v, _ = random_state(s, seed)
        g0, G0, gt0, gam0 = reference_rows(s, t, q, v)
        terms.prepare(t)
        g, Gs, gt = terms.owner.sparse_constraints(q)
        g1, G1, _, gam1 = s.constraint_terms(t, q, v)
        scale = 1e-12 * max(1.0, np.abs(q).max()) ** 2 * max(1.0, np.abs(G0).max())
        np.testing.assert_allclose(g, g0, rtol=0, atol=scale)
        np.testing.assert_allclose(gt, gt0, rtol=0, atol=scale)
        np.testing.assert_allclose(Gs.toarray(), G0, rtol=0, atol=scale)
        np.testing.assert_allclose(g1, g0, rtol=0, atol=scale)
        np.testing.assert_allclose(G1, G0, rtol=0, atol=scale)
        np.testing.assert_allclose(gam1, gam0, rtol=0,
                                   atol=scale * max(1.0, np.abs(v).max()) ** 2)
        pattern = np.zeros(G0.shape, dtype=bool)
        pattern[Gs.nonzero()] = True
        pattern |= (Gs.toarray() == 0.0) & _in_pattern(Gs)
        assert pattern[G0 != 0.0].all()


@pytest.mark.parametrize("name", SYSTEMS)
@pytest.mark.parametrize("ggl", [True, False])
def test_compiled_sparse_residual_equals_the_python_residual(name, ggl):
    """The scaled Newton residual of the sparse path in one C call equals the one the
    integrator assembles in Python from the per-joint rows, the system's forces and M
    (mbdcore.dae.index3: w = dq - G^T mu, v = v_ref + c_v w, x = x_ref + w,
    r = [M x + G^T lam - F/c_a; g; (G v + g_t)/c_v]) to 1e-12 of its terms."""
    s = SYSTEMS[name]()
    terms = s.compiled_terms()
    rng = np.random.default_rng(11)
    q_ref, v_ref, lam = random_state(s, 5)
    x_ref, dq = rng.standard_normal(s.n), 1e-3 * rng.standard_normal(s.n)
    mu = rng.standard_normal(s.m) if ggl else np.zeros(0)
    cv, ca, t = 1.3e3, 2.1e6, 0.25
    terms.prepare(t)
    q, G, w, v, x, r = terms.sparse_residual(q_ref, v_ref, x_ref, dq, lam, mu, cv, ca, ggl)
    s.compiled_residual = False
    q0 = q_ref + dq
    g0, G0, gt0, _ = reference_rows(s, t, q0, v_ref)
    w0 = dq - G0.T @ mu if ggl else dq
    v0, x0 = v_ref + cv * w0, x_ref + w0
    F0 = s.forces(t, q0, v0)
    M0 = s.mass_matrix(q0)
    parts = [M0 @ x0 + G0.T @ lam - F0 / ca, g0] + ([(G0 @ v0 + gt0) / cv] if ggl else [])
    r0 = np.concatenate(parts)
    scale = max(np.abs(M0 @ x0).max(), np.abs(G0.T @ lam).max(), np.abs(F0 / ca).max(),
                np.abs(g0).max(), 1.0)
    np.testing.assert_allclose(q, q0, rtol=0, atol=1e-15 * max(1.0, np.abs(q0).max()))
    np.testing.assert_allclose(w, w0, rtol=0, atol=1e-12 * max(1.0, np.abs(w0).max()))
    np.testing.assert_allclose(v, v0, rtol=0, atol=1e-12 * max(1.0, np.abs(v0).max()))
    np.testing.assert_allclose(G.toarray(), G0, rtol=0, atol=1e-12 * max(1.0, np.abs(G0).max()))
    np.testing.assert_allclose(r[:s.n + s.m], r0[:s.n + s.m], rtol=0, atol=1e-12 * scale)
    if ggl:
        np.testing.assert_allclose(r[s.n + s.m:] * cv, r0[s.n + s.m:] * cv, rtol=0,
                                   atol=1e-12 * max(1.0, np.abs(G0 @ v0).max()))


def _in_pattern(A):
    """Boolean mask of the stored entries of a CSR matrix (zeros included)."""
    mask = np.zeros(A.shape, dtype=bool)
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    mask[rows, A.indices] = True
    return mask


@pytest.mark.parametrize("name", SYSTEMS)
def test_compiled_newton_blocks_are_central_differences(name):
    """K = -dF/dq + d(G^T lam)/dq, C = -dF/dv, H = d(G v)/dq from the compiled terms,
    sparse and dense alike, equal central differences of the Python reference
    (the system's forces and per-joint G) to their accuracy, and the sparse patterns
    hold every entry the differences find."""
    s = SYSTEMS[name]()
    terms = s.compiled_terms()
    q, v, lam = random_state(s, 7)
    terms.prepare(0.0)
    C, K, H = terms.sparse_jacobian(q, v, lam, True)
    Cd, Kd, Hd = terms.jacobian(q, v, lam, True)
    for A, Ad in ((C, Cd), (K, Kd), (H, Hd)):
        np.testing.assert_allclose(A.toarray(), Ad, rtol=0,
                                   atol=1e-12 * max(1.0, np.abs(Ad).max()))
    s.compiled_residual = False

    def residual_q(x):
        G = reference_rows(s, 0.0, x, v)[1]
        return -s.forces(0.0, x, v) + G.T @ lam, G @ v
    n = s.n
    Kf, Hf, Cf = np.zeros((n, n)), np.zeros((s.m, n)), np.zeros((n, n))
    for j in range(n):
        e = 1e-6 * max(1.0, abs(q[j]))
        qp, qm = q.copy(), q.copy()
        qp[j] += e
        qm[j] -= e
        (kp, hp), (km, hm) = residual_q(qp), residual_q(qm)
        Kf[:, j] = (kp - km) / (2 * e)
        Hf[:, j] = (hp - hm) / (2 * e)
        vp, vm = v.copy(), v.copy()
        vp[j] += e
        vm[j] -= e
        Cf[:, j] = -(s.forces(0.0, q, vp) - s.forces(0.0, q, vm)) / (2 * e)
    for A, Af in ((K, Kf), (C, Cf), (H, Hf)):
        big = max(1.0, np.abs(Af).max())
        np.testing.assert_allclose(A.toarray(), Af, rtol=0, atol=1e-6 * big)
        assert _in_pattern(A)[np.abs(Af) > 1e-6 * big].all()


@pytest.mark.parametrize("name", ["heavy top", "bricard", "gear", "driver", "flexible"])
def test_small_systems_through_the_compiled_iterations_equal_the_python_path(name):
    """The heavy top (spherical joint, a rigid body's own rows), Bricard's linkage
    (revolute joints, one redundant row removed: the compiled terms leave it out), two
    wheels on a synchronous gear, a wheel on an angle driver (hinge-angle rows) and the
    cable, beam and body of flexible_kinds in the compiled Newton iterations (dense,
    native/newton.c) and in Python: the same trajectory to 1e-9."""
    out = []
    for compiled in (True, False):
        s = SYSTEMS[name]()
        s.compiled_residual = compiled
        assert (s.compiled_terms() is not None) == compiled
        out.append(simulate(s, 0.2, 2e-3, "generalized-alpha", rho_inf=0.8).q)
    assert np.abs(out[0][-1] - out[0][0]).max() > 1e-2
    np.testing.assert_allclose(out[0], out[1], rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["net", "flexible", "bricard", "free cable"])
def test_sparse_trajectory_through_the_compiled_terms_equals_the_python_path(name):
    """A cable net on spherical joints, the cable, beam and body of flexible_kinds,
    Bricard's linkage and a free cable (no rows) on the sparse path: residual and blocks from the compiled terms
    (CSR over patterns fixed per topology) or from Python per body and joint, the same
    trajectory to 1e-9."""
    out = []
    for compiled in (True, False):
        s = _free_cable() if name == "free cable" else SYSTEMS[name]()
        s.compiled_residual = compiled
        assert (s.compiled_terms() is not None) == compiled
        out.append(simulate(s, 0.03, 1e-3, "generalized-alpha", rho_inf=0.8,
                            sparse=True).q)
    assert np.abs(out[0][-1] - out[0][0]).max() > 1e-5
    np.testing.assert_allclose(out[0], out[1], rtol=0, atol=1e-9)


def _slack_net():
    """A tension-only cable pinned at its root, pushed along itself at its tip: parts of
    it go slack, parts stay taut, its tip falls."""
    s = SpatialSystem(gravity=(0.0, 0.0, -G))
    s.ground.add_marker("O", (0.0, 0.0, 0.0))
    s.add(ANCFCable("c", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), 3, rho_a=0.4, ea=1e4, ei=1.0,
                    damping=0.002, tension_only=True))
    s.add_body("tip", mass=0.3, inertia=(0.01, 0.01, 0.01), position=(1.0, 0.0, 0.0),
               velocity=(-2.0, 0.0, 0.5), markers={"p": (0.0, 0.0, 0.0)})
    s.add_joint(Spherical("ground.O", "c.root", name="pin"))
    s.add_joint(Spherical("c.tip", "tip.p", name="ball"))
    return s


def _mixed_state(s):
    """A state of _slack_net whose Gauss points are in all three states (slack, taut,
    at the floor): the cable stretched by 1 %, its middle element pushed to half its
    length."""
    q, v = s.initial_state()
    cable = s.body("c")
    sl = slice(cable.index, cable.index + cable.n_coords)
    qc = q[sl].reshape(-1, 6)
    qc[:, 3:] *= 1.01                       # slopes: 1 % stretch, taut everywhere
    qc[2, 0] = qc[1, 0] + 0.04              # the middle element's end pulled back
    qc[1, 3:] *= 0.1                        # the floor near it (|r'| < 0.2)
    qc[2, 3:] *= 0.6                        # slack between
    q[sl] = qc.ravel()
    v += 0.05 * np.random.default_rng(3).standard_normal(v.size)
    return q, v


@pytest.mark.parametrize("frozen", ["signs", "as found", "all slack", "all taut"])
def test_tension_only_cable_compiled_equals_python(frozen):
    """A tension-only cable's compiled kernel reads the active set the cable holds
    (ANCFCable.hold_states, which an implicit step's Newton solve freezes) or, released,
    the stresses' signs: the compiled sparse residual equals the Python one to 1e-12
    of its terms with each set, and with a frozen set (forces smooth) the compiled
    blocks equal central differences of the Python forces."""
    s = _slack_net()
    q, v = _mixed_state(s)
    cable = s.body("c")
    sl = slice(cable.index, cable.index + cable.n_coords)
    states = cable.axial_states(q[sl], v[sl])
    assert {0, 1, 2} <= set(states.ravel().tolist())     # the state has every kind
    terms = s.compiled_terms()
    assert terms is not None

    def hold():
        if frozen == "as found":
            s.freeze_switches(0.0, q, v)
        elif frozen == "all slack":
            s.freeze_switches(0.0, q, v, slack=True)
        elif frozen == "all taut":
            cable.hold_states(1)
    hold()
    lam = np.random.default_rng(2).standard_normal(s.m)
    zero = np.zeros(s.n)
    cv, ca = 1.3e3, 2.1e6
    terms.prepare(0.0)
    r = terms.sparse_residual(q, v, zero, zero, lam, np.zeros(0), cv, ca, False)[-1]
    C, K, _ = terms.sparse_jacobian(q, v, lam, False)
    s.compiled_residual = False
    F = s.forces(0.0, q, v)
    G0 = reference_rows(s, 0.0, q, v)[1]
    r0 = np.concatenate([G0.T @ lam - F / ca, reference_rows(s, 0.0, q, v)[0]])
    scale = max(np.abs(F / ca).max(), np.abs(G0.T @ lam).max(), 1.0)
    np.testing.assert_allclose(r[:r0.size], r0, rtol=0, atol=1e-12 * scale)
    if frozen == "signs":
        return
    # the points at the floor (|r'| near 0.1) make the tangents' curvature large: the
    # central differences' truncation error, O(e^2), is 2e-5 of the largest entry at
    # e = 1e-6 and 2e-7 at e = 1e-7 (round-off: |F| eps / e, far below)
    Kf, Cf = np.zeros((s.n, s.n)), np.zeros((s.n, s.n))
    for j in range(s.n):
        e = 1e-7 * max(1.0, abs(q[j]))
        for x, out in ((q, Kf), (v, Cf)):
            xp, xm = x.copy(), x.copy()
            xp[j] += e
            xm[j] -= e
            args = ((xp, v), (xm, v)) if x is q else ((q, xp), (q, xm))
            out[:, j] = -(s.forces(0.0, *args[0]) - s.forces(0.0, *args[1])) / (2 * e)
    s.release_switches()
    for A, Af in ((K, Kf), (C, Cf)):
        big = max(1.0, np.abs(Af).max())
        np.testing.assert_allclose(A.toarray(), Af, rtol=0, atol=1e-5 * big)


@pytest.mark.parametrize("sparse", [True, False])
def test_tension_only_trajectory_through_the_compiled_terms_equals_the_python_path(sparse):
    """The tension-only cable going slack and taut again under the implicit step's
    active-set iteration: through the compiled terms (the kernel reading the set the
    step froze) and in Python, the same trajectory to 1e-9, the same switch rounds."""
    out = []
    for compiled in (True, False):
        s = _slack_net()
        s.compiled_residual = compiled
        assert (s.compiled_terms() is not None) == compiled
        r = simulate(s, 0.15, 1e-3, "generalized-alpha", rho_inf=0.8, sparse=sparse)
        out.append(r)
    assert out[0].stats["switch_rounds"] == out[1].stats["switch_rounds"] > 0
    cable = _slack_net().body("c")
    states = {int(k) for q in out[0].q
              for k in np.unique(cable.axial_states(q[cable.index:cable.index + cable.n_coords]))}
    assert {0, 1} <= states                 # it went slack and was taut
    np.testing.assert_allclose(out[0].q, out[1].q, rtol=0, atol=1e-9)


def _pushed_top():
    """The heavy top with a linear actuator along a direction fixed in the top (a
    natural-coordinate body: the direction's turn has no closed form in the measure
    elements; rigid planar bodies and the ground have)."""
    s = heavy_top()
    s.ground.add_marker("far", (0.5, 0.2, 0.3))
    s.add_force(JointForce("top.tip", "ground.far", "push", direction=(1.0, 0.0, 0.0)))
    return s


def test_models_with_a_part_not_compiled_fall_back_to_python():
    """A force element without a compiled form (a linear actuator along a direction
    fixed in a natural-coordinate body): the system says so (compiled_terms() is None)
    and the integrators run it in Python.  (Torques on such a body are compiled:
    test_compiled_force_elements.py.)"""
    s = _pushed_top()
    assert s.compiled_terms() is None
    r = simulate(s, 0.01, 1e-3, "generalized-alpha", rho_inf=0.8)
    assert np.all(np.isfinite(r.q))


def test_axial_states_in_c_equal_the_strains_they_classify():
    """ANCFCable.axial_states (C, the element loop's operations) classifies each Gauss
    point by the axial stress n = EA (eps + beta eps') computed here from the strains
    in numpy: taut where n > 0, at the floor where n < EA eps_f, slack between; with
    and without the rates' part."""
    s = _slack_net()
    q, v = _mixed_state(s)
    cable = s.body("c")
    sl = slice(cable.index, cable.index + cable.n_coords)
    a, _ = cable._gauss_gradients(q[sl])
    ad, _ = cable._gauss_gradients(v[sl])
    eps = 0.5 * (np.einsum("egi,egi->eg", a, a) - 1.0)
    for rates in (None, v[sl]):
        n = cable.ea * eps + (0.0 if rates is None else
                              cable.damping * cable.ea * np.einsum("egi,egi->eg", a, ad))
        want = np.where(n > 0.0, 1, np.where(n < cable.ea * cable.floor_strain, 2, 0))
        assert set(np.unique(want)) == {0, 1, 2}
        np.testing.assert_array_equal(cable.axial_states(q[sl], rates), want)
