"""Spatial ANCF cables and fully parameterised beams (mbdcore.spatial.ancf;
docs/spatial.md) against beam theory, the exact circle of a tip moment, Euler-Bernoulli,
Saint-Venant and taut-string frequencies, the planar ANCF beam, and their own
derivatives.

The cases bend the cable in planes tilted out of the coordinate planes: the axis
T0 = (1, 2, 2)/3 with the perpendicular directions U = (2, -2, 1)/3 and W = T0 x U =
(2, 1, -2)/3, every component non-zero, so that all three coordinates of every node take
part.  Unless stated otherwise L = 1 m, rho_a = 1 kg/m, EI = 1 N m^2.
"""
import math

import numpy as np
import pytest
from support.ancf3d_reference import beam_element_terms, element_terms
from support.ancf3d_reference import internal_forces as reference_forces
from support.models import thrown_on_slack_cable
from support.element_checks import (
    assert_equals_reference,
    assert_forces_are_energy_gradient,
    assert_tangents_are_derivatives,
    momenta,
)
from scipy.optimize import brentq

from mbdcore.blocks import ParameterError
from mbdcore.dae.simulate import simulate
from mbdcore.multibody.ancf import ANCFBeam, cantilever
from mbdcore.multibody.modal import static_equilibrium
from mbdcore.spatial.ancf import (
    ANCFBeam3D,
    ANCFCable,
    ConservativeMoment,
    DeadPointLoad,
    HeldCoordinates,
    static_deflection,
    vibration_modes,
)

G0 = 9.80665
T0 = np.array([1.0, 2.0, 2.0]) / 3.0
U = np.array([2.0, -2.0, 1.0]) / 3.0
W = np.cross(T0, U)


def tilted(n_elements, ea=1e6, ei=1.0, rho_a=1.0, length=1.0, **kw):
    return ANCFCable("c", (0.1, -0.2, 0.3), np.array([0.1, -0.2, 0.3]) + length * T0,
                     n_elements, rho_a, ea, ei, **kw)


def clamped_free_betas(n):
    """beta_k L of the clamped-free Euler-Bernoulli beam: 1 + cos(x) cosh(x) = 0."""
    return np.array([brentq(lambda x: 1.0 + math.cos(x) * math.cosh(x), (k - 1) * math.pi,
                            k * math.pi, xtol=1e-15) for k in range(1, n + 1)])


def planar_embedding(beam, cable):
    """The matrix taking the planar beam's coordinates (rx, ry, dx, dy per node) to the
    cable's (rx, ry, rz, dx, dy, dz): q3 = q2 @ E."""
    E = np.zeros((beam.n_coords, cable.n_coords))
    for j in range(beam.n_nodes):
        for k, m in enumerate((0, 1, 3, 4)):
            E[4 * j + k, 6 * j + m] = 1.0
    return E


def strained_state(cable, seed=7):
    """A bent, stretched, twisted-in-space state and random rates."""
    rng = np.random.default_rng(seed)
    q, _ = cable.initial_coordinates()
    nodes = q.reshape(-1, 6)
    s = cable.node_arc
    nodes[:, :3] += np.outer(0.02 * s, T0) + np.outer(0.3 * s**2, U) + np.outer(0.2 * s**3, W)
    nodes[:, 3:] += np.outer(0.02 * np.ones_like(s), T0) + np.outer(0.6 * s, U) \
        + np.outer(0.6 * s**2, W)
    q = nodes.ravel() + 1e-3 * rng.normal(size=q.size)
    return q, rng.normal(size=q.size)


# --- mass and gravity ------------------------------------------------------------------
def test_mass_matrix_is_the_hermite_matrix_per_direction_and_gives_the_bar_moments():
    le, rho_a = 0.3, 2.5
    cable = ANCFCable("c", (0, 0, 0), le * T0, 1, rho_a, 1.0, 1.0)
    hermite = rho_a * le / 420 * np.array([[156, 22 * le, 54, -13 * le],
                                           [22 * le, 4 * le**2, 13 * le, -3 * le**2],
                                           [54, 13 * le, 156, -22 * le],
                                           [-13 * le, -3 * le**2, -22 * le, 4 * le**2]])
    for k in range(3):
        np.testing.assert_allclose(cable.element_mass[0][k::3, k::3], hermite, rtol=1e-13)
    assert np.all(cable.element_mass[0][0::3, 1::3] == 0)
    # a curved, non-uniform cable: mass, first and second moments of the line density
    theta = np.linspace(0.0, 1.5, 7) ** 1.3
    radius = 0.8
    nodes = radius * np.column_stack([np.cos(theta), np.sin(theta), 0.2 * theta])
    lengths = radius * math.sqrt(1.04) * np.diff(theta)            # helix arc lengths
    slopes = np.column_stack([-np.sin(theta), np.cos(theta), 0.2 * np.ones_like(theta)]) \
        / math.sqrt(1.04)
    helix = ANCFCable.from_nodes("h", nodes, 1.3, 1e4, 1.0, slopes=slopes, lengths=lengths)
    M = helix.mass_matrix()
    q, _ = helix.initial_coordinates()
    for k in range(3):
        tk = np.zeros(helix.n_coords)
        tk[k::6] = 1.0                   # unit translation along k: positions, not slopes
        assert tk @ M @ tk == pytest.approx(1.3 * helix.length, rel=1e-13)
    fg = helix.gravity_forces(-G0 * W)
    np.testing.assert_allclose([fg[k::6].sum() for k in range(3)],
                               -1.3 * helix.length * G0 * W, rtol=1e-13)
    assert helix.constant_mass and np.allclose(M, M.T)
    assert helix.mass_matrix_sparse().nnz == 36 * (3 * helix.n_elements + 1)


# --- the compiled element loop -----------------------------------------------------------
@pytest.mark.parametrize("damping", [0.0, 0.02])
def test_compiled_element_loop_equals_the_numpy_reference_and_its_own_derivative(damping):
    """native/ancf3d.c against the index-notation numpy reference
    (tests/support/ancf3d_reference.py) on a cable bent out of every plane,
    stretched, of unequal elements and moving: to 1e-12 of the largest entry; the
    tangents against central differences of the forces and the forces against the
    gradient of the strain energy."""
    nodes = np.array([[0, 0, 0], [0.3, 0.1, 0.2], [0.5, 0.4, 0.3], [0.9, 0.5, 0.1],
                      [1.2, 0.4, -0.1]])
    cable = ANCFCable.from_nodes("c", nodes, 1.0, 1e3, 2.0, lengths=[0.35, 0.4, 0.5, 0.3],
                                 damping=damping)
    q, v = strained_state(cable)
    assert_equals_reference((cable.internal_forces(q, v),) + cable._elastic(q, v, True)[1:],
                            (reference_forces(cable, q, v),) + element_terms(cable, q, v)[1:],
                            damped=bool(damping))
    K, _ = assert_tangents_are_derivatives(cable, q, v, range(q.size), damped=bool(damping),
                                           rel=1e-7)
    assert_forces_are_energy_gradient(cable, q)
    # sparse and dense assemblies agree; an element couples its own 12 coordinates only
    np.testing.assert_allclose(cable.tangent_matrices(q, v)[0].toarray(), K, rtol=1e-14, atol=0)
    i, j = np.indices(K.shape)
    assert np.all(K[np.abs(i - j) > 11] == 0)


def test_rigid_motions_cost_no_force_and_damping_is_stiffness_proportional():
    beta = 2e-3
    cable = tilted(4, ea=1e3, damping=beta)
    q, _ = cable.initial_coordinates()
    # a rigid rotation about W and a translation: no elastic or damping force
    omega = 1.7 * W
    nodes = q.reshape(-1, 6)
    v = np.column_stack([np.cross(omega, nodes[:, :3] - nodes[0, :3]) + (0.3, -0.1, 0.2),
                         np.cross(omega, nodes[:, 3:])]).ravel()
    assert np.abs(cable.internal_forces(q, v)).max() < 1e-12
    rot = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]])       # turned by 90 deg about z
    assert np.abs(cable.internal_forces((nodes @ np.kron(np.eye(2), rot).T).ravel())).max() \
        < 1e-12
    # about the unstressed straight cable C = beta K (Kelvin-Voigt)
    K, C = cable.tangent_matrices(q, np.zeros_like(q), sparse=False)
    np.testing.assert_allclose(C, beta * K, atol=1e-13 * np.abs(K).max())


# --- the tension-only (slack) cable ------------------------------------------------------------
def axial_stress(cable, q, v):
    """n = EA (eps + beta eps') at every Gauss point (N, G) [N], before the cut at zero."""
    a, _ = cable._gauss_gradients(q)
    ad, _ = cable._gauss_gradients(v)
    eps = 0.5 * (np.einsum("egi,egi->eg", a, a) - 1.0)
    return cable.ea * (eps + cable.damping * np.einsum("egi,egi->eg", a, ad))


def half_slack(tension_only, damping):
    """A cable bent out of every plane whose first two elements are stretched by about
    4 % and the last two shortened by about 8 %, moving."""
    nodes = np.array([[0, 0, 0], [0.3, 0.1, 0.2], [0.5, 0.4, 0.3], [0.9, 0.5, 0.1],
                      [1.2, 0.4, -0.1]])
    chords = np.linalg.norm(np.diff(nodes, axis=0), axis=1)
    cable = ANCFCable.from_nodes("c", nodes, 1.0, 1e3, 2.0, damping=damping,
                                 lengths=chords * np.array([0.96, 0.96, 1.08, 1.08]),
                                 tension_only=tension_only)
    q, _ = cable.initial_coordinates()
    rng = np.random.default_rng(3)
    return cable, q + 1e-3 * rng.normal(size=q.size), 0.3 * rng.normal(size=q.size)


@pytest.mark.parametrize("damping", [0.0, 0.02])
def test_tension_only_cable_equals_the_numpy_reference_on_both_sides_of_the_kink(damping):
    """Half taut, half slack (n = EA (eps + beta eps') from -103 to +128 N at the Gauss
    points, 8 or 9 of 20 taut, none within 0.5 N of the kink, which the differences'
    steps move n by about 1e-2 N): native/ancf3d.c equals the numpy reference to
    1e-12, its tangents the central differences of its forces (1e-7) and its forces the
    gradient of its energy EA max(eps, 0)^2 / 2 + EI k.k / 2; the slack points carry no
    axial force, so the forces differ from the two-way cable's."""
    cable, q, v = half_slack(True, damping)
    n = axial_stress(cable, q, v)
    assert n.max() > 10.0 and n.min() < -10.0 and np.abs(n).min() > 0.5
    assert_equals_reference((cable.internal_forces(q, v),) + cable._elastic(q, v, True)[1:],
                            (reference_forces(cable, q, v),) + element_terms(cable, q, v)[1:],
                            damped=bool(damping))
    assert_tangents_are_derivatives(cable, q, v, range(q.size), damped=bool(damping),
                                    rel=1e-7)
    if not damping:
        assert_forces_are_energy_gradient(cable, q)
    two_way, _, _ = half_slack(False, damping)
    difference = np.abs(cable.internal_forces(q, v) - two_way.internal_forces(q, v)).max()
    assert difference > 1.0


@pytest.mark.parametrize("damping", [0.0, 0.02])
def test_tension_only_cable_below_its_floor_resists_as_the_reference(damping):
    """Floor stretch 0.7, the last element pushed to about 0.6 of its length: its Gauss
    points at the floor carry n = EA (eps - eps_f + beta eps') < 0 (the others slack or
    taut), equal to the numpy reference to 1e-12, the tangents the differences of the
    forces, the forces the gradient of the energy; the states are 1 taut, 0 slack, 2 at
    the floor."""
    nodes = np.array([[0, 0, 0], [0.3, 0.1, 0.2], [0.5, 0.4, 0.3], [0.9, 0.5, 0.1],
                      [1.2, 0.4, -0.1]])
    chords = np.linalg.norm(np.diff(nodes, axis=0), axis=1)
    cable = ANCFCable.from_nodes("c", nodes, 1.0, 1e3, 2.0, damping=damping,
                                 lengths=chords * np.array([0.96, 1.08, 1.08, 1.65]),
                                 tension_only=True, min_stretch=0.7)
    q, _ = cable.initial_coordinates()
    rng = np.random.default_rng(3)
    q, v = q + 1e-3 * rng.normal(size=q.size), 0.3 * rng.normal(size=q.size)
    states = cable.axial_states(q, v)
    n = axial_stress(cable, q, v)
    floor = n - cable.ea * cable.floor_strain
    assert set(np.unique(states)) == {0, 1, 2}
    assert np.abs(n).min() > 0.5 and np.abs(floor).min() > 0.5
    assert_equals_reference((cable.internal_forces(q, v),) + cable._elastic(q, v, True)[1:],
                            (reference_forces(cable, q, v),) + element_terms(cable, q, v)[1:],
                            damped=bool(damping))
    assert_tangents_are_derivatives(cable, q, v, range(q.size), damped=bool(damping),
                                    rel=1e-7)
    if not damping:
        assert_forces_are_energy_gradient(cable, q)
        at = np.array([cable.node_arc[-1] - 0.5 * cable.element_lengths[-1]])
        assert cable.axial_force(q, at)[0] < -1.0


def test_taut_tension_only_cable_is_bit_identical_to_the_two_way_cable():
    """Stretched everywhere (eps about 4 %, moving): forces, K and C equal to the last
    bit with and without the option."""
    for damping in (0.0, 0.02):
        cable, q, v = half_slack(True, damping)
        two_way, _, _ = half_slack(False, damping)
        taut = ANCFCable.from_nodes("c", q.reshape(-1, 6)[:, :3], 1.0, 1e3, 2.0,
                                    lengths=0.96 * cable.element_lengths[[0, 1, 0, 1]],
                                    damping=damping, tension_only=True)
        plain = ANCFCable.from_nodes("c", q.reshape(-1, 6)[:, :3], 1.0, 1e3, 2.0,
                                     lengths=0.96 * cable.element_lengths[[0, 1, 0, 1]],
                                     damping=damping)
        qt, _ = taut.initial_coordinates()
        qt = qt + 1e-3 * np.random.default_rng(4).normal(size=qt.size)
        vt = 0.01 * v
        assert axial_stress(taut, qt, vt).min() > 1.0
        for a, b in zip(taut._elastic(qt, vt, True), plain._elastic(qt, vt, True)):
            if a is None:
                assert b is None
            else:
                np.testing.assert_array_equal(a, b)


def test_cable_pushed_together_carries_no_axial_force_and_only_bends():
    """A straight cable pushed to 80 % of its stress-free length: no force at all (to
    rounding), where the two-way cable pushes back with EA eps |a| = 1.44e5 N; bent into
    an arc while pushed together, its forces are those of bending alone (the same cable
    with EA = 1e-30 N) to 1e-12."""
    slack = tilted(4, ea=1e6, stress_free_length=1.25, tension_only=True)
    two_way = tilted(4, ea=1e6, stress_free_length=1.25)
    q, _ = slack.initial_coordinates()
    assert np.abs(slack.internal_forces(q)).max() < 1e-9
    assert slack.axial_force(q, [0.0, 0.6, 1.25]).tolist() == [0.0, 0.0, 0.0]
    assert two_way.axial_force(q, [0.6])[0] == pytest.approx(-1e6 * 0.18 * 0.8)
    assert slack.strain_energy(q) < 1e-25          # the bending energy of rounding
    nodes = q.reshape(-1, 6)
    s = slack.node_arc / slack.length
    bent = nodes.copy()
    bent[:, :3] += np.outer(0.1 * np.sin(math.pi * s), U)
    bent[:, 3:] += np.outer(0.1 * math.pi / slack.length * np.cos(math.pi * s), U)
    bending_only = tilted(4, ea=1e-30, stress_free_length=1.25)
    f = slack.internal_forces(bent.ravel())
    np.testing.assert_allclose(f, bending_only.internal_forces(bent.ravel()), rtol=0,
                               atol=1e-12 * np.abs(f).max())
    assert np.abs(f).max() > 0.1


def test_mass_thrown_on_a_slack_cable_flies_free_until_the_cable_is_taut():
    """A 1 kg mass on the tip of a slack cable (L0 = 1 m, EA = 1e4 N, 1e-3 kg/m, no
    gravity), the cable straight at 60 % of its length and stretching uniformly with the
    mass thrown away at v0 = 2 m/s (nodes at the linear velocity field): the mass flies
    free -- the axial force 0 to 1e-9 N and the mass on its straight line to 1e-12 m --
    until the tip is L0 from the anchor, at t = 0.4 L0 / v0 = 0.2 s (the first step
    with tension); then the cable stops it like a spring of EA / L0 (Green strain): the
    largest stretch from the energy balance to 1e-4 (measured 1e-5), the contact lasting
    half a period pi sqrt(m L0 / EA) to 1 % (a step), and it goes slack again, the mass
    flying back at v0 to 1e-3 (generalized-alpha with rho_inf = 1, h = 0.5 ms)."""
    length, mass, ea, v0, start = 1.0, 1.0, 1e4, 2.0, 0.6
    system, cable, body, q0, v_init = thrown_on_slack_cable(T0, length, mass, ea, v0, start)
    h = 5e-4
    r = simulate(system, 0.3, h, "generalized-alpha", rho_inf=1.0, iteration="newton",
                 sparse=True, q0=q0, v0=v_init)
    x = r.q[:, body.index:body.index + 3] @ T0
    sl = slice(cable.index, cable.index + cable.n_coords)
    tension = np.array([cable.axial_force(q[sl], [0.0, 0.5 * length, length]) for q in r.q])
    catch = (1.0 - start) * length / v0
    free = r.t < catch - 0.5 * h
    assert np.abs(tension[free]).max() < 1e-9
    np.testing.assert_allclose(x[free], start * length + v0 * r.t[free], rtol=0, atol=1e-12)
    first = r.t[np.argmax(tension[:, 2] > 0.0)]
    assert abs(first - catch) < 1.5 * h
    # the largest stretch: all the energy (the mass's and the cable's) in the cable
    k = int(np.argmax(x))
    stretch = x[k] - length
    expected = brentq(lambda d: r.energy[0] - length * ea / 2 * (((1 + d / length) ** 2 - 1)
                                                                 / 2) ** 2, 0.0, 1.0)
    assert stretch == pytest.approx(expected, rel=1e-4)
    after = r.t > r.t[k]
    released = r.t[np.flatnonzero(after & (tension[:, 2] <= 0.0))[0]]
    assert released - first == pytest.approx(math.pi * math.sqrt(mass * length / ea), rel=1e-2)
    assert (x[-1] - x[-2]) / h == pytest.approx(-v0, rel=1e-3)


# --- the planar beam is the cable in its plane ------------------------------------------------
def test_in_plane_cable_has_the_planar_beams_forces_tangents_and_mass():
    beam = ANCFBeam("b", (0, 0), (0.6, 0.8), 5, 1.3, 2.0, 1e3, damping=0.01)
    cable = ANCFCable("c", (0, 0, 0), (0.6, 0.8, 0), 5, 1.3, 1e3, 2.0, damping=0.01)
    E = planar_embedding(beam, cable)
    rng = np.random.default_rng(2)
    q2, _ = beam.initial_coordinates()
    q2 = q2 + 0.05 * rng.normal(size=q2.size)
    v2 = rng.normal(size=q2.size)
    f2, f3 = beam.internal_forces(q2, v2), cable.internal_forces(q2 @ E, v2 @ E)
    np.testing.assert_allclose(E @ f3, f2, rtol=0, atol=1e-13 * np.abs(f2).max())
    assert np.all(f3[2::3] == 0)            # no force out of the plane
    K2, C2 = beam.tangent_matrices(q2, v2, sparse=False)
    K3, C3 = cable.tangent_matrices(q2 @ E, v2 @ E, sparse=False)
    np.testing.assert_allclose(E @ K3 @ E.T, K2, rtol=0, atol=1e-13 * np.abs(K2).max())
    np.testing.assert_allclose(E @ C3 @ E.T, C2, rtol=0, atol=1e-13 * np.abs(C2).max())
    np.testing.assert_allclose(E @ cable.mass_matrix() @ E.T, beam.mass_matrix(), atol=1e-15)
    assert cable.strain_energy(q2 @ E) == pytest.approx(beam.strain_energy(q2), rel=1e-13)


def test_in_plane_cable_reproduces_the_planar_engines_elastica():
    """Large tip load P L^2/EI = 2 on the clamped cable in the x-y plane against the
    planar engine's cantilever (a Weld at the root, its own Newton solver): the same
    equilibrium to 1e-9 m."""
    planar = cantilever(n_elements=8, ea=1e5)
    sol = static_equilibrium(planar, {"beam.tip": (0.0, -2.0)})
    cable = ANCFCable("c", (0, 0, 0), (1, 0, 0), 8, 1.0, 1e5, 1.0)
    problem = HeldCoordinates(cable, "clamp", loads=[DeadPointLoad(cable, "tip", (0, -2.0, 0))])
    q3 = static_deflection(problem, steps=2).q
    E = planar_embedding(planar.body("beam"), cable)
    np.testing.assert_allclose(q3 @ E.T, sol.q, rtol=0, atol=1e-9)
    assert np.all(q3[2::3] == 0)
    assert cable.tip_deflection(q3)[1] == pytest.approx(-0.49346, abs=5e-4)   # Bisshopp


@pytest.mark.parametrize("method, h", [("rk4", 5e-4), ("generalized-alpha", 2e-3)])
def test_in_plane_cable_swings_as_the_planar_beam(method, h):
    """A flexible pendulum: the cable pinned at its root falls from horizontal under
    gravity, beside the planar beam with the same elements, held and integrated alike
    (0.4 s; the tip falls by 0.9 m): the same motion to 1e-9 m, none of it out of the
    plane, and the energy kept to the method's accuracy."""
    gravity = (0.0, -G0)
    beam = ANCFBeam("b", (0, 0), (1, 0), 4, 1.0, 10.0, 1e3)
    cable = ANCFCable("c", (0, 0, 0), (1, 0, 0), 4, 1.0, 1e3, 10.0)
    p2 = HeldCoordinates(beam, "pin", gravity=gravity)
    p3 = HeldCoordinates(cable, "pin", gravity=gravity + (0.0,))
    r2 = simulate(p2, 0.4, h, method=method)
    r3 = simulate(p3, 0.4, h, method=method)
    q2 = np.array([p2.full(z) for z in r2.q])
    q3 = np.array([p3.full(z) for z in r3.q])
    E = planar_embedding(beam, cable)
    np.testing.assert_allclose(q3 @ E.T, q2, rtol=0, atol=1e-9)
    assert np.all(q3[:, 2::3] == 0)
    assert q3[-1, -5] < -0.8                          # the tip fell (a large motion)
    drift = np.ptp(r3.energy) / (cable.rho_a * G0 * 0.5)
    assert drift < (1e-5 if method == "rk4" else 1e-3)


def test_free_cable_tumbling_in_space_conserves_energy_and_momenta():
    """A free cable spinning about a tilted axis, with bending modes out of the plane of
    the spin excited, no gravity: linear and angular momentum (about the origin,
    L = sum_kl m_kl e_k x e'_l over the position and slope vectors, m the scalar Hermite
    mass) are constants of the motion; RK4 keeps the linear momentum exactly (a linear
    invariant) and the angular momentum and energy to its accuracy."""
    cable = tilted(4, ea=1e3, ei=1.0)
    problem = HeldCoordinates(cable, hold=[])
    z0, _ = problem.initial_state()
    nodes = z0.reshape(-1, 6)
    omega = 2.0 * W
    v0 = np.column_stack([np.cross(omega, nodes[:, :3]) + 0.3 * U,
                          np.cross(omega, nodes[:, 3:])]).ravel()
    f, shapes = vibration_modes(problem)
    assert np.all(np.abs(f[:5]) < 1e-3) and f[5] > 1.0      # 3 + 2 rigid motions
    v0 = v0 + 0.3 * shapes[:, 5] + 0.2 * shapes[:, 6]        # the two first bending modes
    h = 0.5 * 2.8 / (2 * math.pi * f[-1])
    r = simulate(problem, 1.0, h, method="rk4", q0=z0, v0=v0, record_every=100)
    p, ang = momenta(cable, r.q, r.v)
    drift = np.ptp(r.energy) / r.energy[0]
    print(f"energy drift {drift:.1e}, momentum drift {np.ptp(p, axis=0).max():.1e}, "
          f"angular momentum drift {np.ptp(ang, axis=0).max():.1e}")
    centre = nodes[0, :3] + 0.5 * T0
    np.testing.assert_allclose(p[0], (0.3 * U + np.cross(omega, centre)) * cable.rho_a,
                               rtol=1e-12)
    assert np.ptp(p, axis=0).max() < 1e-12
    assert np.ptp(ang, axis=0).max() < 1e-8
    assert drift < 1e-6
    assert np.linalg.norm(r.q[-1][-6:-3] - r.q[0][-6:-3]) > 0.5       # it did tumble


# --- statics in a tilted plane ------------------------------------------------------------------
@pytest.mark.parametrize("n_elements", [1, 2, 4])
def test_small_tip_load_gives_p_l3_over_3_ei(n_elements):
    """Hermite cubics are exact at the nodes for the linear cantilever; what is left is
    the geometric nonlinearity, O((P L^2/EI)^2) = 2.5e-9 here (measured relative errors
    1.7e-7, 5.6e-9, 4.0e-10 for 1, 2, 4 elements: one cubic element cannot bend without
    stretching its Green strain, which stiffens it slightly)."""
    P = 1e-4
    cable = tilted(n_elements, ei=2.0)
    problem = HeldCoordinates(cable, "clamp", loads=[DeadPointLoad(cable, "tip", P * U)])
    q = static_deflection(problem).q
    d = cable.tip_deflection(q)
    assert d @ U == pytest.approx(P / (3 * 2.0), rel=3e-7)
    assert abs(d @ W) < 1e-12 and abs((q[-6:-3] - q[:3]) @ T0 - 1.0) < 1e-9


def test_own_weight_deflection_converges_at_fourth_order_between_the_nodes():
    """Distributed load q = rho_a g along W: w(x) = q x^2 (6 L^2 - 4 L x + x^2)/(24 EI),
    a quartic the cubic elements interpolate with an O(l^4) error between the nodes
    (x = L/3 is never a node here); at the tip, a node, they are exact: q L^4 / 8 EI."""
    load = 1e-4
    exact = load * (1 / 3) ** 2 * (6 - 4 / 3 + 1 / 9) / 24
    errors = []
    for n in (1, 2, 4, 8):
        cable = tilted(n, rho_a=load / G0)
        q = static_deflection(HeldCoordinates(cable, "clamp", gravity=-G0 * W)).q
        assert -cable.tip_deflection(q) @ W == pytest.approx(load / 8, rel=1e-5)
        r = cable.positions(q, 1 / 3)[0] - cable.positions(cable.initial_coordinates()[0],
                                                          1 / 3)[0]
        errors.append(abs(-r @ W - exact) / exact)
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    print("rel. errors at L/3:", np.array2string(np.array(errors), precision=2),
          "orders", np.array2string(orders, precision=2))
    assert np.all(orders > 3.7)


def test_tip_moment_bends_the_cable_into_the_exact_circle():
    """A conservative tip moment M about W bends the clamped cable, in the plane of T0 and
    U, into a circle.  Exact for this strain energy (no axial force, moment M
    everywhere): a uniform stretch lambda^2 = 1 + 2 M^2/(EA EI) and curvature
    M lambda / EI, so the tip is at R (sin phi T0 + (1 - cos phi) U) from the root with
    R = EI/(M lambda) and phi = M lambda^2 L / EI.  (EA is chosen soft enough that the
    stretch, 4e-4, is resolved: the inextensible EI/M circle is 4e-4 away.)"""
    M, ea = 2.0, 1e4
    lam = math.sqrt(1.0 + 2.0 * M**2 / (ea * 1.0))
    radius, phi = 1.0 / (M * lam), M * lam**2
    exact = radius * (math.sin(phi) * T0 + (1.0 - math.cos(phi)) * U)
    errors, turns = [], []
    for n in (2, 4, 8, 16):
        cable = tilted(n, ea=ea)
        moment = ConservativeMoment(cable, "tip", M, W)
        sol = static_deflection(HeldCoordinates(cable, "clamp", loads=[moment]), steps=4)
        tip = sol.q[-6:-3] - sol.q[:3]
        errors.append(np.linalg.norm(tip - exact))
        eps, kappa = cable.strains(sol.q)
        turns.append(moment.angle(sol.q))
    errors = np.array(errors)
    print("tip errors [m]:", np.array2string(errors, precision=2), "tip rotations [rad]:",
          np.array2string(np.array(turns), precision=8), "exact", phi)
    turn_errors = np.abs(np.array(turns) - phi)
    for e in (errors, turn_errors):
        assert np.all(e[1:] < e[:-1] / 12.0)          # about 2^4 per halving
    assert errors[-1] < 2e-6 and turn_errors[-1] < 5e-6
    # converged: uniform stretch and curvature as predicted, every point in the plane
    # (the cubic's Green strain ripples by 2e-6 about the exact 4e-4)
    np.testing.assert_allclose(eps, 0.5 * (lam**2 - 1.0), rtol=0, atol=5e-6)
    # (pointwise, a cubic's curvature converges at second order only: 1e-3 at N = 16)
    np.testing.assert_allclose(kappa, M * lam, rtol=2e-3)
    rel = sol.q.reshape(-1, 6)[:, :3] - sol.q[:3]
    assert np.abs(rel @ W).max() < 1e-12
    assert 1.0 - exact @ T0 > 0.5 and abs(exact @ U) > 0.5      # a large deflection


# --- vibration ----------------------------------------------------------------------------------
def test_cantilever_bending_frequencies_in_two_perpendicular_planes():
    """Euler-Bernoulli: f_k = (beta_k L)^2 sqrt(EI/(rho_a L^4)) / 2 pi, twice each for the
    round section, the two modes bending in perpendicular planes; the Hermite elements
    converge at fourth order."""
    ei, rho_a, length = 3.0, 0.7, 1.3
    exact = clamped_free_betas(2) ** 2 * math.sqrt(ei / (rho_a * length**4)) / (2 * math.pi)
    assert exact[0] * 2 * math.pi == pytest.approx(1.8751**2 * math.sqrt(ei / rho_a)
                                                   / length**2, rel=1e-4)
    errors = []
    for n in (4, 8, 16):
        cable = tilted(n, ei=ei, rho_a=rho_a, length=length)
        f, shapes = vibration_modes(HeldCoordinates(cable, "clamp"), n=4)
        errors.append(np.abs(f / np.repeat(exact, 2) - 1.0))
        # the pair of first modes: tip motions transverse and mutually perpendicular
        tips = shapes[-6:-3, :2].T
        tips /= np.linalg.norm(tips, axis=1)[:, None]
        assert np.abs(tips @ T0).max() < 1e-8
        assert abs(tips[0] @ tips[1]) < 1e-8
    errors = np.array(errors)
    print("rel. errors (two planes, two modes):", np.array2string(errors, precision=2))
    assert np.all(errors[-1] < 2e-5)
    assert np.all(errors[1] / errors[2] > 12.0)


def test_pretensioned_cable_vibrates_as_a_taut_string_with_bending_stiffness():
    """Stress-free length L0 < L: the straight cable pinned at both ends carries
    N = EA eps lambda (lambda = L/L0, eps = (lambda^2 - 1)/2) and vibrates at
    omega_k^2 = (k pi/L)^2 (N + EI/lambda (k pi/L)^2)/(rho_a/lambda) (mass and
    bending stiffness per unit stretched length)."""
    length, l0, ea, ei, rho_a, n = 2.0, 1.99, 1e4, 1e-2, 0.5, 16
    cable = ANCFCable("c", (0, 0, 0), 2.0 * W, n, rho_a, ea, ei, stress_free_length=l0)
    lam = length / l0
    tension = ea * 0.5 * (lam**2 - 1.0) * lam
    q, _ = cable.initial_coordinates()
    f = cable.internal_forces(q)
    np.testing.assert_allclose(f[-6:-3], -tension * W, rtol=1e-12)    # pulls the end in
    assert np.abs(f[6:-12:6]).max() < 1e-9 * tension                 # balanced inside
    tip = cable.markers["tip"]
    held = list(range(3)) + [cable.n_coords - 6 + k for k in range(3)]
    freqs, _ = vibration_modes(HeldCoordinates(cable, held), n=4)
    k = np.array([1, 1, 2, 2])
    wave = k * math.pi / length
    exact = np.sqrt(wave**2 * (tension + ei / lam * wave**2) / (rho_a / lam)) / (2 * math.pi)
    np.testing.assert_allclose(freqs, exact, rtol=1e-6)
    assert tip == pytest.approx(l0)


# --- construction -----------------------------------------------------------------------------
def test_cable_through_nodes_on_a_circle_stores_the_bending_energy_of_the_circle():
    """From nodes on a quarter circle of radius R (unit tangents, arc lengths as
    stress-free lengths): the strain energy tends to EI L / (2 R^2) at fourth order."""
    radius, ei = 0.5, 2.0
    exact = ei * (math.pi / 2 * radius) / (2 * radius**2)
    errors = []
    for n in (2, 4, 8):
        t = np.linspace(0.0, math.pi / 2, n + 1)
        nodes = radius * np.column_stack([np.cos(t), np.sin(t), np.zeros_like(t)]) @ \
            np.column_stack([T0, U, W]).T
        slopes = np.column_stack([-np.sin(t), np.cos(t), np.zeros_like(t)]) @ \
            np.column_stack([T0, U, W]).T
        cable = ANCFCable.from_nodes("arc", nodes, 1.0, 1e6, ei, slopes=slopes,
                                     lengths=np.diff(t) * radius)
        q, v = cable.initial_coordinates()
        np.testing.assert_array_equal(q.reshape(-1, 6)[:, :3], nodes)
        errors.append(abs(cable.strain_energy(q) / exact - 1.0))
    print("rel. energy errors:", np.array2string(np.array(errors), precision=2))
    assert errors[-1] < 1e-4 and errors[0] / errors[1] > 12 and errors[1] / errors[2] > 12
    # straight nodes give the straight constructor's cable exactly
    straight = ANCFCable.from_nodes("s", np.outer(np.linspace(0, 1, 4), T0), 1.0, 1.0, 1.0)
    reference = ANCFCable("r", (0, 0, 0), T0, 3, 1.0, 1.0, 1.0)
    np.testing.assert_allclose(straight.initial_coordinates()[0],
                               reference.initial_coordinates()[0], atol=1e-15)
    assert straight.strain_energy(straight.initial_coordinates()[0]) < 1e-28


def test_markers_and_point_kinematics():
    cable = tilted(3, markers={"mid": 0.5})
    assert cable.markers == {"root": 0.0, "tip": 1.0, "mid": 0.5}
    q, v = cable.initial_coordinates()
    rng = np.random.default_rng(3)
    q, v = q + 0.1 * rng.normal(size=q.size), rng.normal(size=q.size)
    for s in (0.0, 0.2, 0.5, 1.0):
        r, rd, J, quad = cable.state(q, v).point(s)
        np.testing.assert_allclose(r, J @ q, atol=1e-15)
        np.testing.assert_allclose(rd, J @ v, atol=1e-14)
        a, ad, Js, quad_s = cable.state(q, v).slope(s)
        np.testing.assert_allclose(ad, Js @ v, atol=1e-14)
        if 0.0 < s < 1.0:           # the slope is dr/ds
            h = 1e-6
            fd = (cable.state(q, v).point(s + h)[0] - cable.state(q, v).point(s - h)[0]) / (2 * h)
            np.testing.assert_allclose(a, fd, atol=1e-8)
        assert not np.any(quad) and not np.any(quad_s)
    assert cable.coordinate_names()[:6] == ["c.n0.rx", "c.n0.ry", "c.n0.rz", "c.n0.dx",
                                            "c.n0.dy", "c.n0.dz"]
    with pytest.raises(ParameterError, match="outside the body"):
        cable.add_marker("beyond", 1.5)


@pytest.mark.parametrize("change, match", [
    ({"rho_a": 0.0}, "rho_a = 0.0 is invalid"),
    ({"ea": -1.0}, "ea = -1.0 is invalid"),
    ({"ei": float("nan")}, "ei = nan is invalid"),
    ({"damping": -0.1}, "damping = -0.1 is invalid"),
    ({"n_elements": 0}, "n_elements = 0 is invalid"),
    ({"end": (0.0, 0.0, 0.0)}, "zero length"),
    ({"stress_free_length": 0.0}, "stress_free_length = 0.0 is invalid"),
    ({"start": (0.0, float("nan"), 0.0)}, "not finite"),
    ({"tension_only": "yes"}, "tension_only = 'yes' is invalid"),
    ({"tension_only": True, "min_stretch": 1.0}, "min_stretch = 1.0 is invalid"),
])
def test_bad_parameters_are_refused_naming_them(change, match):
    args = {"start": (0.0, 0.0, 0.0), "end": (1.0, 0.0, 0.0), "n_elements": 2, "rho_a": 1.0,
            "ea": 1.0, "ei": 1.0, **change}
    with pytest.raises(ParameterError, match=match):
        ANCFCable("c", **args)


def test_bad_nodes_are_refused_naming_them():
    good = np.outer(np.linspace(0, 1, 3), T0)
    bad = good.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ParameterError, match=r"positions\[1\] .* not finite"):
        ANCFCable.from_nodes("c", bad, 1.0, 1.0, 1.0)
    with pytest.raises(ParameterError, match=r"positions\[0\] and positions\[1\] coincide"):
        ANCFCable.from_nodes("c", good[[0, 0, 2]], 1.0, 1.0, 1.0)
    with pytest.raises(ParameterError, match=r"lengths\[1\] = -0.5 is invalid"):
        ANCFCable.from_nodes("c", good, 1.0, 1.0, 1.0, lengths=[0.5, -0.5])
    with pytest.raises(ParameterError, match="one per element"):
        ANCFCable.from_nodes("c", good, 1.0, 1.0, 1.0, lengths=[0.5])
    with pytest.raises(ParameterError, match=r"slopes must be an array of shape \(3, 3\)"):
        ANCFCable.from_nodes("c", good, 1.0, 1.0, 1.0, slopes=np.ones((2, 3)))


# --- the fully parameterised beam ---------------------------------------------------------------
def tilted_beam(n_elements, ea=1e6, rho_yy=1e-4, rho_zz=1e-4, **kw):
    """A beam along T0 with its section's y axis along U (so z along W): EI_xy = 1 and
    EI_xz = 4 N m^2 (a 2:1 rectangle's ratio of bending stiffnesses), GJ = 0.5 N m^2."""
    args = dict(rho_a=1.0, ea=ea, ei_xy=1.0, ei_xz=4.0, gj=0.5, rho_yy=rho_yy, rho_zz=rho_zz)
    args.update(kw)
    root = np.array([0.1, -0.2, 0.3])
    return ANCFBeam3D("b", root, root + T0, n_elements, section_y=U, **args)


@pytest.mark.parametrize("damping", [0.0, 0.02])
def test_beam_element_loop_equals_the_numpy_reference_and_its_own_derivative(damping):
    """native/ancf3d.c's beam kernel (the strain table of dot and triple products,
    Gauss and nodal) against the Levi-Civita numpy reference to 1e-12, the tangents
    against central differences, the forces against the energy's gradient, on a beam
    bent, twisted and stretched, with its sections sheared and deformed."""
    beam = tilted_beam(3, ea=1e3, penalty=5e2, damping=damping)
    rng = np.random.default_rng(5)
    q, _ = beam.initial_coordinates()
    q = q + 0.05 * rng.normal(size=q.size)
    v = rng.normal(size=q.size)
    f_ref, k_ref, c_ref = beam_element_terms(beam, q, v)
    assert_equals_reference(beam._elastic(q, v, True),
                            (beam._assemble_vector(f_ref), k_ref, c_ref), damped=bool(damping))
    assert_tangents_are_derivatives(beam, q, v, range(q.size), damped=bool(damping), rel=1e-7)
    assert_forces_are_energy_gradient(beam, q)
    # rigid motions: a turned and moved straight beam is unstressed
    q0, _ = beam.initial_coordinates()
    rot = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]]) @ np.array(
        [[1, 0, 0], [0, 0.6, -0.8], [0, 0.8, 0.6]])
    turned = (q0.reshape(-1, 3) @ rot.T).reshape(-1, 12)
    turned[:, :3] += (1.0, -2.0, 0.5)
    assert np.abs(beam.internal_forces(turned.ravel())).max() < 1e-10


@pytest.mark.parametrize("n_elements", [1, 2, 4])
def test_beam_tip_loads_bend_it_in_its_two_planes_with_their_own_stiffness(n_elements):
    """P L^3 / 3 EI with EI_xy = 1 for a load along the section's y axis and EI_xz = 4
    along z: nodally exact, up to the geometric nonlinearity (1.4e-6 with one element)."""
    P = 1e-4
    for direction, ei in ((U, 1.0), (W, 4.0)):
        beam = tilted_beam(n_elements)
        load = DeadPointLoad(beam, "tip", P * direction)
        q = static_deflection(HeldCoordinates(beam, "clamp", loads=[load])).q
        d = beam.tip_deflection(q)
        assert d @ direction == pytest.approx(P / (3 * ei), rel=2e-6)
        assert abs(d @ np.cross(T0, direction)) < 1e-12


def test_beam_tip_torque_twists_it_by_t_l_over_gj():
    """Saint-Venant: a torque T about the axis turns the tip section by T L / GJ (the
    linear directors represent the linear twist exactly); nothing bends."""
    torque = 1e-3
    for n in (1, 4):
        beam = tilted_beam(n)
        moment = ConservativeMoment(beam, "tip", torque, T0, vector="y")
        q = static_deflection(HeldCoordinates(beam, "clamp", loads=[moment])).q
        assert beam.twist(q) == pytest.approx(torque / 0.5, rel=5e-6)
        assert np.linalg.norm(beam.tip_deflection(q)) < 1e-12


def test_beam_large_twist_converges_at_second_order():
    """A torque twisting the tip by T L/GJ = 1 rad: the linear directors measure an
    element's twist phi_e as sin(phi_e)/l_e, so the beam twists too far by about
    phi_e^2/6 (4.7e-2, 1.1e-2, 2.6e-3 rad with 4, 8, 16 elements), second order, and
    nothing bends.  (An element twisted by more than 45 deg softens: mesh torsion finely.)"""
    errors = []
    for n in (4, 8, 16):
        beam = tilted_beam(n)
        moment = ConservativeMoment(beam, "tip", 0.5, T0, vector="y")
        q = static_deflection(HeldCoordinates(beam, "clamp", loads=[moment]), steps=2).q
        errors.append(beam.twist(q) - 1.0)
        assert np.linalg.norm(beam.tip_deflection(q)) < 1e-12
    errors = np.array(errors)
    print("twist errors [rad]:", " ".join(f"{e:.2e}" for e in errors))
    assert np.all(errors > 0) and np.all(errors[:-1] / errors[1:] > 3.9)
    assert errors[-1] < 3e-3


def test_beam_tip_moment_bends_it_into_a_circle():
    """A moment M about the section's z axis (W): the circle of radius EI_xy/M in the
    plane of T0 and U (inextensible), M L / EI = 2.  Fourth-order convergence (after
    the locking of the stiff Green strain on the coarsest mesh) down to the model's own
    stretch couplings, of order M^2/(EA EI) = 4e-7 (3.8e-6 m at 32 elements)."""
    M = 2.0
    exact = (math.sin(M) * T0 + (1.0 - math.cos(M)) * U) / M
    errors = []
    for n in (4, 8, 16):
        beam = tilted_beam(n, ea=1e7)
        moment = ConservativeMoment(beam, "tip", M, W)
        q = static_deflection(HeldCoordinates(beam, "clamp", loads=[moment]), steps=4).q
        errors.append(np.linalg.norm(q[-12:-9] - q[:3] - exact))
        rel = q.reshape(-1, 12)[:, :3] - q[:3]
        assert np.abs(rel @ W).max() < 1e-12         # it stays in its plane
    print("beam tip errors [m]:", np.array2string(np.array(errors), precision=2))
    assert errors[1] < errors[0] / 16 and errors[2] < 5e-6


def test_beam_bending_frequencies_in_its_two_planes_and_torsional_frequency():
    """Clamped-free: bending 1.8751^2 sqrt(EI/(rho_a L^4))/2 pi with EI_xy = 1 and
    EI_xz = 4 (twice the frequency; small rotary inertia, r_g^2 = 1e-7 m^2), and
    torsion (pi/2L) sqrt(GJ/(rho I_p))/2 pi (Saint-Venant) converging at second order
    (linear directors)."""
    beta1 = clamped_free_betas(1)[0]
    bending = beta1**2 * np.sqrt([1.0, 4.0]) / (2 * math.pi)
    errors = []
    for n in (4, 8, 16):
        f, shapes = vibration_modes(HeldCoordinates(tilted_beam(n, rho_yy=1e-7, rho_zz=1e-7),
                                                    "clamp"), n=2)
        errors.append(np.abs(f / bending - 1.0))
        tips = shapes.reshape(n + 1, 4, 3, 2)[-1, 0].T      # the tip's motion per mode
        assert abs(tips[0] @ U) / np.linalg.norm(tips[0]) == pytest.approx(1.0, abs=1e-9)
        assert abs(tips[1] @ W) / np.linalg.norm(tips[1]) == pytest.approx(1.0, abs=1e-9)
    errors = np.array(errors)
    print("beam bending rel. errors (x-y, x-z):", np.array2string(errors, precision=2))
    assert np.all(errors[1] / errors[2] > 8.0) and np.all(errors[2] < 3e-7)
    rho_ip = 2e-4
    torsion = math.pi / 2 * math.sqrt(0.5 / rho_ip) / (2 * math.pi)
    t_errors = []
    for n in (4, 8, 16):
        f, shapes = vibration_modes(HeldCoordinates(tilted_beam(n, rho_yy=1e-4, rho_zz=1e-4),
                                                    "clamp"), n=8)
        x = shapes.reshape(n + 1, 4, 3, -1)
        centre = np.abs(x[:, 0]).max(axis=(0, 1))
        sections = np.abs(x[:, 2:]).max(axis=(0, 1, 2))
        k = np.flatnonzero(centre < 1e-8 * sections)[0]        # the first pure twist
        t_errors.append(f[k] / torsion - 1.0)
    t_errors = np.array(t_errors)
    print("torsion rel. errors:", " ".join(f"{e:.2e}" for e in t_errors))
    assert np.all(t_errors > 0) and np.all(t_errors[:-1] / t_errors[1:] > 3.5)
    assert t_errors[-1] < 5e-4


def test_free_beam_tumbling_and_twisting_keeps_its_momenta():
    """A free beam spinning about its section's z axis and twisting about its own axis,
    a bending mode excited, no gravity (penalty 1e3 N and sizeable section inertia, so
    that RK4 can take 0.6 ms steps): the linear momentum (positions only: the directors'
    first moments vanish about the centroid) is exact, the angular momentum
    sum_kl m_kl e_k x e'_l over positions, slopes and directors and the energy are kept
    to RK4's accuracy.  The beam's own damping is stiffness-proportional at rest."""
    root = np.array([0.1, -0.2, 0.3])
    beam = ANCFBeam3D("b", root, root + T0, 3, 1.0, 1e3, 1.0, 4.0, 0.5, 1e-2, 2e-2,
                      section_y=U, penalty=1e3)
    problem = HeldCoordinates(beam, hold=[])
    z0, _ = problem.initial_state()
    vectors = z0.reshape(-1, 4, 3).copy()
    vectors[:, 0] -= root                                  # positions about the root
    omega = 2.0 * W + 3.0 * T0
    v0 = np.cross(omega, vectors).ravel()
    f, shapes = vibration_modes(problem)
    assert np.all(np.abs(f[:6]) < 1e-3) and f[6] > 1.0       # six rigid motions
    v0 = v0 + 0.3 * shapes[:, 6]
    h = 0.5 * 2.8 / (2 * math.pi * f[-1])
    r = simulate(problem, 0.5, h, method="rk4", q0=z0, v0=v0, record_every=50)
    p, ang = momenta(beam, r.q, r.v)
    drift = np.ptp(r.energy) / r.energy[0]
    print(f"beam: energy drift {drift:.1e}, momentum drift {np.ptp(p, axis=0).max():.1e}, "
          f"angular momentum drift {np.ptp(ang, axis=0).max():.1e}")
    assert np.ptp(p, axis=0).max() < 1e-12
    assert np.ptp(ang, axis=0).max() < 1e-8 * np.abs(ang[0]).max()
    assert drift < 1e-6
    # Kelvin-Voigt on every strain: C = beta K about the unstressed beam
    damped = tilted_beam(3, damping=2e-3)
    q, _ = damped.initial_coordinates()
    K, C = damped.tangent_matrices(q, np.zeros_like(q), sparse=False)
    np.testing.assert_allclose(C, 2e-3 * K, atol=1e-13 * np.abs(K).max())


def test_bad_beam_parameters_are_refused_naming_them():
    for change, match in (({"gj": 0.0}, "gj = 0.0 is invalid"),
                          ({"rho_yy": -1.0}, "rho_yy = -1.0 is invalid"),
                          ({"ei_xz": float("nan")}, "ei_xz = nan is invalid"),
                          ({"section_y": T0}, "section_y .* along the beam's axis")):
        with pytest.raises(ParameterError, match=match):
            tilted_beam(2, **change) if "section_y" not in change else ANCFBeam3D(
                "b", (0, 0, 0), T0, 2, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, **change)
