"""Spatial benchmark mechanisms built with :mod:`mbdcore.spatial` (docs/spatial.md).

* :func:`heavy_top`: a symmetric top on a ball joint started in steady precession.
* :func:`bricard`: Bricard's over-constrained linkage, IFToMM multibody benchmark A04.
* :func:`hub_beam_3d`: the hub-beam spin-up (Kane et al. 1987) with a 3D ANCF cable, the
  spatial counterpart of :func:`mbdcore.models.mechanisms.hub_beam`.
* :func:`cable_net`: a square net of 3D ANCF cables joined by spherical joints at its
  junctions and pinned at its border, sagging under gravity (the spatial case of
  ``bench/exudyn_compare.py``).
* :func:`spatial_twin`: a planar engine system of rigid bodies and revolute joints (the
  four-bar of :func:`mbdcore.models.mechanisms.four_bar`) rebuilt in 3D.
"""
from __future__ import annotations

import math

import numpy as np

from mbdcore.blocks import ParameterError, with_overrides
from mbdcore.models.mechanisms import HUB_BEAM, SpinUp
from mbdcore.multibody.system import System
from mbdcore.spatial.ancf import ANCFCable
from mbdcore.spatial.joints import AngleDriver, CableClamp, Revolute, Spherical
from mbdcore.spatial.system import SpatialSystem

__all__ = ["HEAVY_TOP", "heavy_top", "precession_spin_rate", "BRICARD", "bricard",
           "BRICARD_POINTS", "BRICARD_AXES", "rotation_z", "spatial_twin", "hub_beam_3d",
           "CABLE_NET", "cable_net"]

#: The heavy symmetric top (assumed values, a toy top): mass [kg], distance from the
#: fixed point to the centre of mass [m], transverse and axial inertia about the centre
#: of mass [kg m^2], nutation angle from the vertical [rad], precession rate [rad/s],
#: gravity [m/s^2] along -z.
HEAVY_TOP = dict(mass=1.0, arm=0.2, transverse_inertia=0.05, axial_inertia=0.08,
                 nutation=0.5, precession_rate=2.0, gravity=9.81)


def precession_spin_rate(mass: float, arm: float, transverse_inertia: float,
                         axial_inertia: float, nutation: float, precession_rate: float,
                         gravity: float) -> float:
    """Spin component omega_3 [rad/s] (angular velocity along the symmetry axis) for which
    the top precesses steadily at ``precession_rate`` Omega with constant nutation theta:

        m g l = Omega (I_a omega_3 - I_1 Omega cos theta),   I_1 = I_t + m l^2

    (the moment of gravity about the fixed point turns the horizontal part of the
    angular momentum; Goldstein, Poole & Safko, *Classical Mechanics*, 3rd ed., sec. 5.7)."""
    i1 = transverse_inertia + mass * arm * arm
    return (mass * gravity * arm + i1 * precession_rate ** 2 * math.cos(nutation)) / \
        (axial_inertia * precession_rate)


def heavy_top(**overrides) -> SpatialSystem:
    """The top of :data:`HEAVY_TOP` (override any by keyword): its tip on a ball joint
    ``pivot`` at the origin, symmetry axis (the body's third axis, ``w``) tilted by the
    nutation angle from +z in the x-z plane, started with the angular velocity
    Omega e_z + psi' w of steady precession (psi' = omega_3 - Omega cos theta)."""
    p = with_overrides(HEAVY_TOP, overrides, "heavy top")
    th, om = p["nutation"], p["precession_rate"]
    if not om > 0.0:
        raise ParameterError(f"heavy top: precession_rate = {om!r} is invalid: accepted "
                             "values are > 0 rad/s")
    w3 = precession_spin_rate(**p)
    c, s = math.cos(th), math.sin(th)
    A = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    omega = om * np.array([0.0, 0.0, 1.0]) + (w3 - om * c) * A[:, 2]
    system = SpatialSystem(gravity=(0.0, 0.0, -p["gravity"]))
    system.ground.add_marker("O", (0.0, 0.0, 0.0))
    it, ia = p["transverse_inertia"], p["axial_inertia"]
    system.add_body("top", mass=p["mass"], inertia=(it, it, ia),
                    center_of_mass=(0.0, 0.0, p["arm"]), orientation=A,
                    angular_velocity=omega, markers={"tip": (0.0, 0.0, 0.0)})
    system.add_joint(Spherical("ground.O", "top.tip", name="pivot"))
    return system


#: Bricard's mechanism, IFToMM multibody benchmark A04 (benchmark library of the IFToMM
#: Technical Committee for Multibody Dynamics; González, Dopico, Pastorino & Cuadrado,
#: Multibody System Dynamics 16, 2006): five rods of length [m], mass [kg], square
#: section side [m], gravity [m/s^2] along -y, started at rest.
BRICARD = dict(length=1.0, mass=1.0, side=0.1, gravity=9.81)
#: The six joint points P1 ... P6 in units of the rod length (P1 and P6 on the ground).
BRICARD_POINTS = ((0, 0, 0), (1, 0, 0), (1, -1, 0), (1, -1, 1), (0, -1, 1), (0, 0, 1))
#: The hinge axis at each point: each is normal to both rods it joins.
BRICARD_AXES = ((0, 1, 0), (0, 0, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 0))


def bricard(redundant: str = "remove", **overrides) -> SpatialSystem:
    """Bricard's linkage (:data:`BRICARD`): rods ``rod1`` ... ``rod5`` from P_k to
    P_{k+1}, each a rigid body with its frame origin at its first end (markers ``i``,
    ``j`` at the ends), x axis along the rod; revolute joints ``P1`` ... ``P6``.  Five
    bodies (30 degrees of freedom) and six hinges (30 equations): Grübler's count gives
    0, the linkage has 1, so one equation is redundant."""
    p = with_overrides(BRICARD, overrides, "Bricard")
    L, m, a = p["length"], p["mass"], p["side"]
    axial, transverse = m * a * a / 6.0, m * (L * L + a * a) / 12.0   # solid square rod
    pts = [L * np.array(x, float) for x in BRICARD_POINTS]
    system = SpatialSystem(gravity=(0.0, -p["gravity"], 0.0), redundant=redundant)
    system.ground.add_marker("P1", pts[0])
    system.ground.add_marker("P6", pts[5])
    for k in range(5):
        x = (pts[k + 1] - pts[k]) / L
        y = np.array(BRICARD_AXES[k], float)        # the first hinge's axis, normal to x
        A = np.column_stack([x, y, np.cross(x, y)])
        system.add_body(f"rod{k + 1}", mass=m, inertia=(axial, transverse, transverse),
                        center_of_mass=(0.5 * L, 0.0, 0.0), position=pts[k], orientation=A,
                        markers={"i": (0.0, 0.0, 0.0), "j": (L, 0.0, 0.0)})
    system.add_joint(Revolute("ground.P1", "rod1.i", BRICARD_AXES[0], name="P1"))
    for k in range(1, 5):
        system.add_joint(Revolute(f"rod{k}.j", f"rod{k + 1}.i", BRICARD_AXES[k],
                                  name=f"P{k + 1}"))
    system.add_joint(Revolute("rod5.j", "ground.P6", BRICARD_AXES[5], name="P6"))
    return system


def rotation_z(angle: float) -> np.ndarray:
    """Rotation matrix [3 x 3] by ``angle`` [rad] about z."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def hub_beam_3d(final_rate: float = 6.0, n_elements: int = 8,
                axis=(0.0, 0.0, 1.0)) -> SpatialSystem:
    """The hub-beam spin-up of :func:`mbdcore.models.mechanisms.hub_beam` in 3D: a rigid
    hub (1 kg, inertia 1 kg m^2 about each axis) on a hinge about ``axis`` through the
    origin, turned by the prescribed spin-up to ``final_rate`` [rad/s] (an AngleDriver
    named ``spin``), and an ANCF cable of ``n_elements`` elements (the beam of
    :data:`~mbdcore.models.mechanisms.HUB_BEAM`: L = 10 m, rho A = 1.2 kg/m,
    EI = 1.4e4 N m^2, EA = 2.8e7 N) clamped to the hub at the axis (``clamp``, a
    :class:`~mbdcore.spatial.joints.CableClamp`), lying normal to the axis.  No gravity.
    With ``axis`` along z it moves in the x-y plane and equals the planar model."""
    p = HUB_BEAM
    axis = np.asarray(axis, float)
    if axis.shape != (3,) or not np.all(np.isfinite(axis)) or not np.linalg.norm(axis) > 0:
        raise ParameterError(f"hub_beam_3d: axis = {axis!r} must be a non-zero 3-vector")
    axis = axis / np.linalg.norm(axis)
    # the beam along the direction normal to the axis nearest to +x
    along = np.array([1.0, 0.0, 0.0]) - axis[0] * axis
    if np.linalg.norm(along) < 1e-6:
        along = np.array([0.0, 1.0, 0.0]) - axis[1] * axis
    along /= np.linalg.norm(along)
    s = SpatialSystem()
    s.ground.add_marker("axis", (0.0, 0.0, 0.0))
    s.add_body("hub", mass=1.0, inertia=(1.0, 1.0, 1.0), markers={"axis": (0.0, 0.0, 0.0)})
    s.add(ANCFCable("beam", (0.0, 0.0, 0.0), tuple(p["length"] * along), n_elements,
                    rho_a=p["rho_a"], ea=p["ea"], ei=p["ei"]))
    bearing = s.add_joint(Revolute("ground.axis", "hub.axis", tuple(axis), name="bearing"))
    s.add_joint(AngleDriver(bearing, SpinUp(final_rate, p["spin_up_time"]), name="spin"))
    s.add_joint(CableClamp("hub.axis", "beam.root", tuple(along), name="clamp"))
    return s


#: The cable net of :func:`cable_net`: junctions per side, their spacing [m], elements
#: per cable, mass per length [kg/m], axial [N] and flexural [N m^2] stiffness, gravity
#: [m/s^2] along -z.
CABLE_NET = dict(junctions=6, spacing=1.0, n_elements=4, rho_a=0.5, ea=1e5, ei=10.0,
                 gravity=9.81)


def cable_net(**overrides) -> SpatialSystem:
    """A square net of :data:`CABLE_NET` (override any by keyword): ``junctions`` x
    ``junctions`` points in the plane z = 0, ``spacing`` apart, each pair of neighbours
    joined by a straight, unstressed ANCF cable (``c<i>_<j>_x`` along x from junction
    (i, j), ``c<i>_<j>_y`` along y: 2 k (k - 1) cables of ``n_elements`` elements) whose
    ends meet at the junctions in spherical joints; the junctions on the border pinned
    to the ground by spherical joints.  Released at rest, it sags under gravity."""
    p = with_overrides(CABLE_NET, overrides, "cable net")
    k = p["junctions"]
    if not (isinstance(k, int) and k >= 2):
        raise ParameterError(f"cable net: junctions = {k!r} is invalid: accepted values "
                             "are integers >= 2")
    a = p["spacing"]
    s = SpatialSystem(gravity=(0.0, 0.0, -p["gravity"]))
    ends: dict = {}                 # junction -> cable ends ("name.root"/"name.tip")
    for i in range(k):
        for j in range(k):
            for di, dj, axis in ((1, 0, "x"), (0, 1, "y")):
                if i + di >= k or j + dj >= k:
                    continue
                name = f"c{i}_{j}_{axis}"
                s.add(ANCFCable(name, (i * a, j * a, 0.0), ((i + di) * a, (j + dj) * a, 0.0),
                                p["n_elements"], rho_a=p["rho_a"], ea=p["ea"], ei=p["ei"]))
                ends.setdefault((i, j), []).append(f"{name}.root")
                ends.setdefault((i + di, j + dj), []).append(f"{name}.tip")
    for (i, j), at in ends.items():
        for other in at[1:]:
            s.add_joint(Spherical(at[0], other, name=f"j{i}_{j}_{other.split('.')[0]}"))
        if i in (0, k - 1) or j in (0, k - 1):
            s.ground.add_marker(f"p{i}_{j}", (i * a, j * a, 0.0))
            s.add_joint(Spherical(f"ground.p{i}_{j}", at[0], name=f"pin{i}_{j}"))
    return s


def spatial_twin(planar: System) -> SpatialSystem:
    """The planar system rebuilt in 3D in the plane z = 0: each rigid body a
    natural-coordinate body (in-plane inertia the planar one; the two others, which a
    planar motion does not feel, 0.1 and 0.95 of it), each revolute joint a hinge about
    z with the same name, each angle driver between the ground and a body pinned to it a
    driver of that hinge (same motion, measured from the initial angle).  Other joints
    and force elements are refused.  The twin has 3 redundant equations per closed
    loop (a planar loop built in 3D), which it removes."""
    g = planar.gravity
    twin = SpatialSystem(gravity=(g[0], g[1], 0.0))
    for name, loc in planar.ground.markers.items():
        twin.ground.add_marker(name, (*loc, 0.0))
    for b in planar.bodies:
        if b.n_coords != 3:
            raise ParameterError(f"spatial_twin: body {b.name!r} is not a planar rigid body")
        iz = b.inertia
        twin.add_body(b.name, mass=b.mass, inertia=(0.1 * iz, 0.95 * iz, iz),
                      position=(*b.position, 0.0), orientation=rotation_z(b.angle),
                      velocity=(*b.velocity, 0.0), angular_velocity=(0.0, 0.0, b.omega),
                      markers={k: (*v, 0.0) for k, v in b.markers.items()})
    hinges = {}
    for j in planar.joints:
        if j.kind == "revolute":
            hinge = twin.add_joint(Revolute(j.a_ref, j.b_ref, (0.0, 0.0, 1.0), name=j.name))
            hinges[frozenset((j.a[0].name, j.b[0].name))] = hinge
        elif j.kind == "driver":
            hinge = hinges.get(frozenset((j.a_name, j.b_name)))
            if hinge is None or j.a_name != "ground":
                raise ParameterError(f"spatial_twin: driver {j.name!r} needs a hinge between "
                                     "the ground and its body")
            twin.add_joint(AngleDriver(hinge, _Shifted(j.motion, j.motion(0.0)[0]),
                                       name=j.name))
        else:
            raise ParameterError(f"spatial_twin: joint {j.name!r} of kind {j.kind!r} has no "
                                 "spatial twin here")
    if planar.forces_list:
        raise ParameterError("spatial_twin: force elements are not translated")
    return twin


class _Shifted:
    """motion(t) - (f0, 0, 0): a planar absolute angle as a hinge angle from the start."""

    def __init__(self, motion, f0: float):
        self.motion, self.f0 = motion, float(f0)

    def __call__(self, t):
        f, fd, fdd = self.motion(t)
        return f - self.f0, fd, fdd
