"""The deployable ring truss of a mesh reflector antenna, rigid part (issue 14, items 5 and
6; docs/ring_truss.md).

A ring of ``n_bays`` (N, even, >= 4) parallelogram bays around a circle of diameter
``aperture`` D [m] (the circumcircle of the vertical bars at full deployment) and of
height ``height`` H [m].  Bay k (k = 0 ... N-1) lies between the vertical bars k and
k+1 (mod N): an upper and a lower horizontal bar hinged to the joint blocks at the ends
of the verticals, and a telescopic diagonal (a thick tube hinged to one vertical, a thin
tube, a slender bar, on a ball joint at the other vertical, sliding in the thick one).
Every hinge axis is normal to its bay's plane.  Synchronous gears at the joint blocks
keep the two horizontal bars that meet at a block at equal angles to the vertical bar
(the source patent CN107220421A).  Vertical 0 is welded to the spacecraft (the ground).

Folding pattern (docs/ring_truss.md): the verticals stay parallel to z; the horizontal
bars of bay k turn about the bay normal by the *bay angle* theta_k (angle between a
horizontal bar and the vertical, pi/2 deployed) with the bays folding alternately up
(k even) and down (k odd), so a folded truss is a bundle of verticals on a circle of
radius R sin(theta) at two alternating heights.  Without gears the closed ring has
N - 3 deployment degrees of freedom (N bay angles, 3 loop-closure conditions); the
gears leave one.  At full deployment the loop closure is stationary (a singular
configuration of the ungeared ring); the geared truss judges its redundant equations
there (:class:`RingTruss`), so the kept rows stay independent through it.

Drive: a DC motor (:class:`~mbdcore.models.drive.DCMotorBody`) per bay turning a screw
that extends the diagonal (:class:`DiagonalScrewDrive`, the gear law of
:func:`~mbdcore.models.drive.gear_torque` on the screw's axial twist); a latch
(:class:`DiagonalLatch`) stops and holds each diagonal at its deployed length.
Controllers: :class:`DeploymentRateController` (PI on the deployment rate, sampled at
the step) or an :class:`~mbdcore.spatial.AngleDriver` on one hinge for kinematic runs.

The cable net that hangs on the truss is :mod:`mbdcore.models.cable_net`.

Material and sections (assumptions, docs/ring_truss.md): carbon-fibre/epoxy tubes,
density 1600 kg/m^3 (a T300/epoxy laminate of about 60 % fibre volume: 1.76 g/cm^3
fibre, 1.2 g/cm^3 resin); verticals and horizontals 30 mm outer diameter, 1.5 mm wall;
thick diagonal tube 30 x 1.5 mm, thin diagonal tube 24 x 1.5 mm (it slides inside);
joint blocks of 0.1 kg lumped at the ends of the verticals.
"""
from __future__ import annotations

import math
import os

import numpy as np

from mbdcore.blocks import Parameter, ParameterError
from mbdcore.models.drive import (
    DCMotorBody,
    MotorVoltage,
    gear_law,
    gear_torque,
    motor_parameters,
)
from mbdcore.multibody.forces import Force, line_element
from mbdcore.multibody.terms import spring_law
from mbdcore.multibody.system import scatter_force
from mbdcore.spatial.joints import (
    AngleDriver,
    Fixed,
    Prismatic,
    Revolute,
    Spherical,
    SynchronousGear,
)
from mbdcore.spatial.system import SpatialSystem
from mbdcore.timeseries import axis_label

__all__ = ["RING_TRUSS_PARAMETERS", "MOTOR_DEFAULTS", "TUBE_FRACTION", "ring_truss_parameters", "RingTruss", "ring_truss",
           "tube_mass_properties", "DiagonalScrewDrive", "DiagonalLatch",
           "DeploymentRateController", "smooth_deployment_motion", "add_deployment_driver", "plot_configuration",
           "write_animation", "checked_parameters", "MAX_BAYS", "MAX_NET_RINGS",
           "MAX_CABLE_ELEMENTS", "MEMORY_FRACTION", "build_coordinates", "build_bytes",
           "check_build_size"]

#: Upper limits of the structural sizes: the largest ring trusses flown or proposed
#: have some 30 to 60 bays (AstroMesh); beyond these a build takes minutes and gigabytes
#: (64 bays: 65 s, 444 MB on the project's 2-core machine) for no model anyone needs.
#: What fits in memory is checked besides (:func:`check_build_size`).
MAX_BAYS = 100
MAX_NET_RINGS = 20
MAX_CABLE_ELEMENTS = 20

#: Parameters of the ring truss (validated by :func:`ring_truss_parameters`).
RING_TRUSS_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("n_bays", 6, "", f"number of bays N (even, 4 to {MAX_BAYS})", min=4,
              max=MAX_BAYS),
    Parameter("aperture", 4.0, "m", "designed aperture: diameter of the circumcircle of the "
              "vertical bars at full deployment", min=0.0, exclusive_min=True),
    Parameter("height", 0.5, "m", "truss height (length of the vertical bars)", min=0.0,
              exclusive_min=True),
    Parameter("folded_angle", 0.6, "rad", "initial bay angle theta_0 between the horizontal "
              "bars and the verticals (pi/2: deployed)", min=0.0, max=math.pi / 2,
              exclusive_min=True),
    Parameter("density", 1600.0, "kg/m3", "tube material density (carbon-fibre/epoxy)",
              min=0.0, exclusive_min=True),
    Parameter("tube_diameter", 0.030, "m", "outer diameter of verticals, horizontals and "
              "the thick diagonal tube", min=0.0, exclusive_min=True),
    Parameter("thin_tube_diameter", 0.024, "m", "outer diameter of the thin diagonal tube",
              min=0.0, exclusive_min=True),
    Parameter("wall", 0.0015, "m", "tube wall thickness", min=0.0, exclusive_min=True),
    Parameter("joint_block_mass", 0.1, "kg", "mass of a joint block, lumped at each end of a "
              "vertical", min=0.0),
    Parameter("gravity", 0.0, "m/s2", "gravity along -z (0 in orbit; 9.81 for a ground test)",
              min=0.0),
    Parameter("screw_lead", 2.0e-3, "m/rad", "diagonal screw: extension per output radian",
              min=0.0, exclusive_min=True),
    Parameter("gear_ratio", 4.0, "", "motor turns per screw turn", min=0.0,
              exclusive_min=True),
    Parameter("screw_stiffness", 2.0e5, "N/m", "axial stiffness of gearbox and screw", min=0.0,
              exclusive_min=True),
    Parameter("screw_damping", 2.0e3, "N.s/m", "axial damping of gearbox and screw", min=0.0),
    Parameter("latch_stiffness", 1.0e7, "N/m", "stiffness of the diagonal end stop / latch",
              min=0.0, exclusive_min=True),
    Parameter("latch_damping", 1.0e4, "N.s/m", "damping of the diagonal end stop / latch",
              min=0.0),
)

#: the motor parameters the truss changes from the drive module's defaults
MOTOR_DEFAULTS = {"friction_speed": 0.3}

#: the diagonal tubes' length as a fraction of the deployed diagonal (each; their sum
#: exceeds it by the overlap left in the thick tube at full deployment)
TUBE_FRACTION = 0.55


def checked_parameters(table, what: str, params: dict) -> dict:
    """Every parameter of ``table`` validated (defaults filled in); an unknown name is a
    ParameterError listing the accepted ones."""
    declared = {p.name: p for p in table}
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ParameterError(f"unknown {what} parameter(s) {unknown}; accepted: "
                             f"{list(declared)}")
    return {n: d.validate(params.get(n, d.default)) for n, d in declared.items()}


def ring_truss_parameters(**params) -> dict:
    """The checked parameters (defaults of :data:`RING_TRUSS_PARAMETERS` filled in):
    ParameterError naming the parameter and its accepted range otherwise."""
    p = checked_parameters(RING_TRUSS_PARAMETERS, "ring truss", params)
    if p["n_bays"] % 2:
        raise ParameterError(f"parameter 'n_bays' = {p['n_bays']!r} is invalid: accepted "
                             f"values are even integers in [4, {MAX_BAYS}] (the bays fold "
                             "alternately up and down)")
    for tube in ("tube_diameter", "thin_tube_diameter"):
        if not 2.0 * p["wall"] < p[tube]:
            raise ParameterError(f"parameter 'wall' = {p['wall']!r} is invalid: accepted "
                                 f"values are in (0, {tube}/2 = {p[tube] / 2:g}) m")
    if not p["thin_tube_diameter"] <= p["tube_diameter"] - 2.0 * p["wall"]:
        raise ParameterError(
            f"parameter 'thin_tube_diameter' = {p['thin_tube_diameter']!r} is invalid: "
            f"accepted values are in (2 wall, tube_diameter - 2 wall = "
            f"{p['tube_diameter'] - 2 * p['wall']:g}] m (the thin tube slides inside)")
    chord = p["aperture"] * math.sin(math.pi / p["n_bays"])
    deployed = math.hypot(chord, p["height"])
    folded = _diagonal_length(chord, p["height"], p["folded_angle"])
    if folded < TUBE_FRACTION * deployed:
        # the diagonal's tubes (each TUBE_FRACTION of the deployed diagonal) must fit
        cos_min = (chord ** 2 + p["height"] ** 2 - (TUBE_FRACTION * deployed) ** 2) / \
            (2.0 * chord * p["height"])
        raise ParameterError(
            f"parameter 'folded_angle' = {p['folded_angle']!r} is invalid: accepted values "
            f"are in [{math.acos(min(cos_min, 1.0)):.6g}, {math.pi / 2:.6g}] rad for this "
            "geometry (the folded diagonal must hold its two tubes)")
    return p


def _diagonal_length(chord: float, height: float, theta: float) -> float:
    """|diagonal| [m] of a bay at bay angle theta: sqrt(c^2 + H^2 - 2 c H cos(theta))."""
    return math.sqrt(chord ** 2 + height ** 2 - 2.0 * chord * height * math.cos(theta))


def tube_mass_properties(length: float, outer_diameter: float, wall: float,
                         density: float) -> tuple[float, float, float]:
    """(mass [kg], axial inertia [kg m^2], transverse inertia about the centre [kg m^2])
    of a uniform circular tube: m = rho pi (ro^2 - ri^2) L, J_axial = m (ro^2 + ri^2)/2,
    J_transverse = m (3 (ro^2 + ri^2) + L^2) / 12."""
    ro = 0.5 * outer_diameter
    ri = ro - wall
    m = density * math.pi * (ro * ro - ri * ri) * length
    return m, 0.5 * m * (ro * ro + ri * ri), m * (3.0 * (ro * ro + ri * ri) + length ** 2) / 12.0


def _frame(x, y) -> np.ndarray:
    """Rotation matrix with columns x, y, x cross y."""
    return np.column_stack([x, y, np.cross(x, y)])


class RingTruss:
    """A built ring truss: the :class:`~mbdcore.spatial.SpatialSystem` (``system``) and
    the geometry and outputs a user wants.  Made by :func:`ring_truss`.

    Names: verticals ``vertical{k}`` (markers ``bottom``, ``top``), horizontal bars
    ``upper{k}``, ``lower{k}`` (markers ``i``, ``j``), diagonal tubes ``thick{k}``
    (marker ``root``) and ``thin{k}`` (a bar; markers ``end``, ``tip``), hinges
    ``hinge_upper{k}_i`` ... ``hinge_lower{k}_j``, ``hinge_thick{k}``, gears
    ``gear_top{k}``, ``gear_bottom{k}`` (at vertical k), motors ``motor{k}`` with inputs
    ``voltage{k}`` [V], drives ``screw{k}``, latches ``latch{k}``.
    """

    def __init__(self, params: dict, gears: bool, drive: bool, latch: bool, motor: dict):
        self.params = p = params
        self.motor = motor
        self.gears, self.drive, self.latch = gears, drive, latch
        self.n_bays = N = p["n_bays"]
        self.radius = 0.5 * p["aperture"]
        self.height = p["height"]
        self.chord = 2.0 * self.radius * math.sin(math.pi / N)
        self.fold_sign = np.array([1.0 if k % 2 == 0 else -1.0 for k in range(N)])
        azimuth = 2.0 * math.pi * np.arange(N) / N
        self.azimuth = azimuth
        ez = np.array([0.0, 0.0, 1.0])
        # chord (tangent) direction and bay normal of bay k: fixed in the verticals
        self.tangent = np.array([[math.cos(a + math.pi / 2 + math.pi / N),
                                  math.sin(a + math.pi / 2 + math.pi / N), 0.0]
                                 for a in azimuth])
        self.normal = np.cross(ez, self.tangent)
        self.deployed_diagonal = math.hypot(self.chord, self.height)
        self.tube_length = TUBE_FRACTION * self.deployed_diagonal
        self.theta0 = p["folded_angle"]
        #: the cable net (:func:`add_cable_net`), None without
        self.net = None
        self.anchor = self._bottoms(self.theta0)[0]
        self.system = self._build()

    # -- geometry ------------------------------------------------------------------------
    def _bottoms(self, theta: float) -> np.ndarray:
        """Bottom points of the verticals at a synchronous bay angle theta, before the
        shift that keeps vertical 0 at the anchor: on a circle of radius R sin(theta),
        the odd ones raised by c cos(theta)."""
        r = self.radius * math.sin(theta)
        z = np.where(np.arange(self.n_bays) % 2 == 1, self.chord * math.cos(theta), 0.0)
        return np.column_stack([r * np.cos(self.azimuth), r * np.sin(self.azimuth), z])

    def bar_direction(self, k: int, theta: float) -> np.ndarray:
        """Unit direction of bay k's horizontal bars at bay angle theta:
        sin(theta) t_k + s_k cos(theta) e_z."""
        return math.sin(theta) * self.tangent[k] + \
            self.fold_sign[k] * math.cos(theta) * np.array([0.0, 0.0, 1.0])

    def diagonal_ends(self, k: int) -> tuple[str, str]:
        """Markers (on vertical k, on vertical k+1) of bay k's diagonal: the one that
        lengthens during deployment (top to bottom in a bay folding up)."""
        return ("top", "bottom") if self.fold_sign[k] > 0 else ("bottom", "top")

    def body_poses(self, theta: float) -> dict:
        """{body name: (position, orientation) or (end_i, end_j) for bars} of the truss
        at the synchronous bay angle theta [rad] (vertical 0 at its folded place)."""
        N, H = self.n_bays, self.height
        bottoms = self._bottoms(theta) - self._bottoms(theta)[0] + self.anchor
        up = np.array([0.0, 0.0, H])
        poses = {}
        for k in range(N):
            poses[f"vertical{k}"] = (bottoms[k], np.eye(3))
        for k in range(N):
            kn = (k + 1) % N
            d = self.bar_direction(k, theta)
            axis = self.fold_sign[k] * self.normal[k]
            poses[f"upper{k}"] = (bottoms[k] + up, _frame(d, axis))
            poses[f"lower{k}"] = (bottoms[k], _frame(d, axis))
            ends = self.diagonal_ends(k)
            a = bottoms[k] + (up if ends[0] == "top" else 0.0)
            b = bottoms[kn] + (up if ends[1] == "top" else 0.0)
            e = (b - a) / np.linalg.norm(b - a)
            poses[f"thick{k}"] = (a, _frame(e, axis))
            poses[f"thin{k}"] = (b, b - self.tube_length * e)
        return poses

    def coordinates(self, theta: float) -> np.ndarray:
        """System coordinates q of the truss at the synchronous bay angle theta [rad]
        (motors at rest angle, zero charge): exact, every constraint holds."""
        q = np.zeros(self.system.n)
        for name, pose in self.body_poses(theta).items():
            body = self.system.body(name)
            if name.startswith("thin"):
                q[body.index:body.index + 6] = np.concatenate(pose)
            else:
                q[body.index:body.index + 3] = pose[0]
                q[body.index + 3:body.index + 12] = pose[1].T.ravel()
        return q

    def coordinate_rates(self, theta: float, rate: float, step: float = 1e-6) -> np.ndarray:
        """Velocities q' of a synchronous deployment at bay angle theta and rate theta'
        [rad/s] (central difference of :meth:`coordinates`, O(step^2))."""
        return rate * (self.coordinates(theta + step) - self.coordinates(theta - step)) / \
            (2.0 * step)

    # -- building ------------------------------------------------------------------------
    def _build(self) -> SpatialSystem:
        p, N, H, c, L = self.params, self.n_bays, self.height, self.chord, self.tube_length
        s = SpatialSystem(gravity=(0.0, 0.0, -p["gravity"]))
        poses = self.body_poses(self.theta0)
        s.ground.add_marker("mount", self.anchor)
        dens, dt, dw = p["density"], p["tube_diameter"], p["wall"]
        mv, jav, jtv = tube_mass_properties(H, dt, dw, dens)
        mb = p["joint_block_mass"]
        rb = 0.5 * dt
        for k in range(N):
            # tube plus a joint block at each end (point masses on the axis, plus a
            # token axial inertia mb rb^2 of a block of the tube's radius)
            s.add_body(f"vertical{k}", mass=mv + 2 * mb,
                       inertia=(jtv + 2 * mb * (H / 2) ** 2, jtv + 2 * mb * (H / 2) ** 2,
                                jav + 2 * mb * rb * rb),
                       center_of_mass=(0.0, 0.0, H / 2), position=poses[f"vertical{k}"][0],
                       orientation=poses[f"vertical{k}"][1],
                       markers={"bottom": (0.0, 0.0, 0.0), "top": (0.0, 0.0, H)})
        mh, jah, jth = tube_mass_properties(c, dt, dw, dens)
        mk, jak, jtk = tube_mass_properties(L, dt, dw, dens)
        mn, _, jtn = tube_mass_properties(L, p["thin_tube_diameter"], dw, dens)
        for k in range(N):
            for level in ("upper", "lower"):
                pos, rot = poses[f"{level}{k}"]
                s.add_body(f"{level}{k}", mass=mh, inertia=(jah, jth, jth),
                           center_of_mass=(c / 2, 0.0, 0.0), position=pos, orientation=rot,
                           markers={"i": (0.0, 0.0, 0.0), "j": (c, 0.0, 0.0)})
            pos, rot = poses[f"thick{k}"]
            s.add_body(f"thick{k}", mass=mk, inertia=(jak, jtk, jtk),
                       center_of_mass=(L / 2, 0.0, 0.0), position=pos, orientation=rot,
                       markers={"root": (0.0, 0.0, 0.0)})
            ei, ej = poses[f"thin{k}"]
            s.add_bar(f"thin{k}", ei, ej, mass=mn, inertia=jtn,
                      markers={"end": 0.0, "tip": L})
        s.add_joint(Fixed("ground.mount", "vertical0.bottom", name="mount"))
        for k in range(N):
            kn = (k + 1) % N
            axis = tuple(self.fold_sign[k] * self.normal[k])
            for level, block in (("upper", "top"), ("lower", "bottom")):
                # angle of each hinge: the bar's rotation from the folded pose relative
                # to the vertical about s_k n_k = the bay angle's increase
                s.add_joint(Revolute(f"vertical{k}.{block}", f"{level}{k}.i", axis,
                                     name=f"hinge_{level}{k}_i"))
                s.add_joint(Revolute(f"vertical{kn}.{block}", f"{level}{k}.j", axis,
                                     name=f"hinge_{level}{k}_j"))
            a_end, b_end = self.diagonal_ends(k)
            s.add_joint(Revolute(f"vertical{k}.{a_end}", f"thick{k}.root", axis,
                                 name=f"hinge_thick{k}"))
            s.add_joint(Spherical(f"vertical{kn}.{b_end}", f"thin{k}.end", name=f"ball_thin{k}"))
            s.add_joint(Prismatic(f"thick{k}.root", f"thin{k}.tip",
                                  tuple(poses[f"thick{k}"][1][:, 0]), name=f"slide{k}"))
        if self.gears:
            for k in range(N):
                kp = (k - 1) % N
                for level, block in (("upper", "top"), ("lower", "bottom")):
                    # equal angles of the two bars at vertical k's joint block (the
                    # source patent): bar k-1 arrives with its end j, bar k leaves with i
                    s.add_joint(SynchronousGear(f"hinge_{level}{kp}_j", f"hinge_{level}{k}_i",
                                                name=f"gear_{block}{k}"))
        for k in range(N):
            a_end, b_end = self.diagonal_ends(k)
            ends = (f"vertical{k}.{a_end}", f"vertical{(k + 1) % N}.{b_end}")
            if self.drive:
                s.add(DCMotorBody(f"motor{k}", **self.motor))
                s.add_force(MotorVoltage(f"motor{k}", f"voltage{k}", name=f"supply{k}"))
                s.add_force(DiagonalScrewDrive(f"motor{k}", *ends, lead=p["screw_lead"],
                                               ratio=p["gear_ratio"],
                                               stiffness=p["screw_stiffness"],
                                               damping=p["screw_damping"], name=f"screw{k}"))
            if self.latch:
                s.add_force(DiagonalLatch(*ends, self.deployed_diagonal,
                                          p["latch_stiffness"], p["latch_damping"],
                                          name=f"latch{k}"))
        self.system = s
        if self.gears:
            # judged at full deployment, where the ring's loop closure is stationary: the
            # rows independent there stay independent on the whole deployment, while
            # rows picked at a folded state may lose rank at the deployed one
            s.check_redundancy(0.0, self.coordinates(math.pi / 2))
        return s

    # -- outputs -------------------------------------------------------------------------
    def _point(self, q, body: str, marker: str) -> np.ndarray:
        b = self.system.body(body)
        sl = slice(b.index, b.index + b.n_coords)
        return b.state(q[sl], np.zeros(b.n_coords)).point(b.markers[marker])[0]

    def vertical_points(self, q) -> tuple[np.ndarray, np.ndarray]:
        """(bottom points, top points) of the verticals [m], (N, 3) each."""
        return (np.array([self._point(q, f"vertical{k}", "bottom") for k in range(self.n_bays)]),
                np.array([self._point(q, f"vertical{k}", "top") for k in range(self.n_bays)]))

    def bay_angles(self, q) -> np.ndarray:
        """Bay angles theta_k [rad] (N,): angle between bay k's upper bar and the vertical
        k, measured on the fold side (pi/2 deployed, beyond it when over-deployed)."""
        out = np.empty(self.n_bays)
        for k in range(self.n_bays):
            d = self._point(q, f"upper{k}", "j") - self._point(q, f"upper{k}", "i")
            w = self._point(q, f"vertical{k}", "top") - self._point(q, f"vertical{k}", "bottom")
            w /= np.linalg.norm(w)
            along = float(d @ w)
            out[k] = math.atan2(float(np.linalg.norm(d - along * w)), self.fold_sign[k] * along)
        return out

    def aperture_diameter(self, q) -> float:
        """Diameter [m] of the circle through the verticals' axes (mean distance of the
        mid-points from their centroid, in the plane normal to vertical 0)."""
        bottom, top = self.vertical_points(q)
        mid = 0.5 * (bottom + top)
        w = top[0] - bottom[0]
        w /= np.linalg.norm(w)
        rel = mid - mid.mean(axis=0)
        rel -= np.outer(rel @ w, w)
        return 2.0 * float(np.linalg.norm(rel, axis=1).mean())

    def aperture_error(self, q) -> float:
        """Largest deviation [m] of a vertical's distance from the centroid from the
        designed radius, times 2 (a diameter error; 0 on the designed circle)."""
        bottom, top = self.vertical_points(q)
        mid = 0.5 * (bottom + top)
        w = top[0] - bottom[0]
        w /= np.linalg.norm(w)
        rel = mid - mid.mean(axis=0)
        rel -= np.outer(rel @ w, w)
        return 2.0 * float(np.abs(np.linalg.norm(rel, axis=1) - self.radius).max())

    def deployment_ratio(self, q) -> float:
        """Aperture diameter over the designed one: sin(theta) for a synchronous
        deployment, 1 deployed."""
        return self.aperture_diameter(q) / (2.0 * self.radius)

    def diagonal_lengths(self, q) -> np.ndarray:
        """Distance [m] between each diagonal's two joint points (N,)."""
        out = np.empty(self.n_bays)
        for k in range(self.n_bays):
            a, b = self.diagonal_ends(k)
            out[k] = np.linalg.norm(self._point(q, f"vertical{(k + 1) % self.n_bays}", b) -
                                    self._point(q, f"vertical{k}", a))
        return out

    def net_attachment_points(self, q) -> tuple[np.ndarray, np.ndarray]:
        """(front, rear) attachment points of the cable nets [m], (N, 3) each: the top and
        bottom joint blocks, where the nets of the cable-net increment attach."""
        bottom, top = self.vertical_points(q)
        return top, bottom

    def motor_currents(self, v) -> np.ndarray:
        """Armature currents [A] of the motors (N,), empty without a drive."""
        if not self.drive:
            return np.zeros(0)
        return np.array([v[self.system.body(f"motor{k}").index + 1] for k in range(self.n_bays)])

    def motor_torques(self, v) -> np.ndarray:
        """Electromagnetic torques Kt i [N m] of the motors (N,)."""
        if not self.drive:
            return np.zeros(0)
        kt = np.array([self.system.body(f"motor{k}").params["torque_constant"]
                       for k in range(self.n_bays)])
        return kt * self.motor_currents(v)

    def bars(self, q) -> list[tuple[np.ndarray, np.ndarray]]:
        """Every member as a segment (start, end) [m]: verticals, horizontals, the
        diagonals' thick and thin tubes."""
        segs = []
        for k in range(self.n_bays):
            segs.append((self._point(q, f"vertical{k}", "bottom"),
                         self._point(q, f"vertical{k}", "top")))
            for level in ("upper", "lower"):
                segs.append((self._point(q, f"{level}{k}", "i"), self._point(q, f"{level}{k}", "j")))
            thick = self.system.body(f"thick{k}")
            r0 = q[thick.index:thick.index + 3]
            segs.append((r0, r0 + self.tube_length * q[thick.index + 3:thick.index + 6]))
            thin = self.system.body(f"thin{k}")
            segs.append((q[thin.index:thin.index + 3], q[thin.index + 3:thin.index + 6]))
        return segs

    def structure_mobility(self, q) -> int:
        """Degrees of freedom of the truss structure at q: coordinates minus the rank of
        all constraint rows (motors excluded)."""
        G = _all_rows_jacobian(self.system, q)
        motor_coords = 2 * self.n_bays if self.drive else 0
        return self.system.n - motor_coords - int(np.linalg.matrix_rank(G, tol=1e-9 * np.abs(G).max()))


def _all_rows_jacobian(system, q) -> np.ndarray:
    """G of every constraint row (removed dependent ones included): each constraint's
    analytic rows at q, stacked."""
    view = system.view(q, np.zeros_like(q))
    blocks = []
    for joint in system.joints:
        k = joint.n_eq
        G = np.zeros((k, system.n))
        joint.evaluate(0.0, view, np.zeros(k), G, np.zeros(k), np.zeros(k))
        blocks.append(G)
    return np.vstack(blocks)


def ring_truss(gears: bool = True, drive: bool = True, latch: bool = True,
               motor: dict | None = None, **params) -> RingTruss:
    """Build the ring truss of :data:`RING_TRUSS_PARAMETERS` (override any by keyword),
    folded at ``folded_angle``; with synchronous gears at every joint block (``gears``),
    a motor and screw per diagonal (``drive``; inputs ``voltage{k}`` [V]) and a latch
    per diagonal at its deployed length (``latch``).  ``motor``: overrides of
    :data:`~mbdcore.models.drive.MOTOR_PARAMETERS` (default: the project's motor with the
    Coulomb friction regularised over 0.3 rad/s, as the boom of
    :mod:`mbdcore.models.antenna` does: the 1e-3 rad/s default gives a friction slope
    Tc/w_c whose saturation the implicit integrators' Newton iterations cannot follow at
    millisecond steps)."""
    motor = {**MOTOR_DEFAULTS, **(motor or {})}
    motor_parameters(**motor)           # checked here, named in the error
    p = ring_truss_parameters(**params)
    check_build_size(p["n_bays"])
    return RingTruss(p, gears, drive, latch, motor)


# -- what a build costs (issue 22 item 10) -------------------------------------------------
#: Generalised coordinates of the truss per bay, with gears, drives and latches (its
#: bodies: verticals, horizontals, the diagonal's tubes, the joint blocks, the motor's
#: rotor and screw; tests/test_mbdcore/test_ring_truss_size.py counts them)
TRUSS_COORDINATES_PER_BAY = 56
#: Coordinates of an ANCF cable node (position and slope)
CABLE_NODE_COORDINATES = 6
#: Memory of a build per squared coordinate [bytes]: the build's dense matrices
#: (constraint Jacobian and its factorisation when the redundant equations are found)
#: grow with the square of the coordinates: 444 MB at 64 bays (3,584 coordinates), 35
#: bytes per squared coordinate, rounded up
BYTES_PER_COORDINATE_SQUARED = 40
#: A build is refused when its estimate exceeds this fraction of the memory available
MEMORY_FRACTION = 0.5


def build_coordinates(n_bays: int, net_rings: int = 0, cable_elements: int = 2) -> int:
    """The generalised coordinates of a truss of ``n_bays`` with a cable net of
    ``net_rings`` rings (0: none) of ``cable_elements`` elements per cable."""
    n = TRUSS_COORDINATES_PER_BAY * n_bays
    if net_rings:
        cables = 2 * (n_bays * (net_rings + 1) + n_bays * net_rings) + n_bays * net_rings + 1
        n += cables * (cable_elements + 1) * CABLE_NODE_COORDINATES
    return n


def build_bytes(n_bays: int, net_rings: int = 0, cable_elements: int = 2) -> int:
    """Estimated memory of building that truss [bytes] (:data:`BYTES_PER_COORDINATE_SQUARED`)."""
    return BYTES_PER_COORDINATE_SQUARED * build_coordinates(n_bays, net_rings,
                                                            cable_elements) ** 2


def _available_memory() -> int | None:
    """Memory available to a new allocation [bytes] (Linux ``MemAvailable``; else free
    physical pages), None where neither is known."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def check_build_size(n_bays: int, net_rings: int = 0, cable_elements: int = 2) -> None:
    """Refuse, before anything is built, a truss whose estimated build memory
    (:func:`build_bytes`) exceeds :data:`MEMORY_FRACTION` of the memory available:
    ParameterError saying the estimate and the limit."""
    need = build_bytes(n_bays, net_rings, cable_elements)
    available = _available_memory()
    if available is None or need <= MEMORY_FRACTION * available:
        return
    net = (f" with a cable net of {net_rings} ring(s) of {cable_elements} element(s) per "
           "cable" if net_rings else "")
    raise ParameterError(
        f"the ring truss of {n_bays} bays{net} ({build_coordinates(n_bays, net_rings, cable_elements):,} "
        f"coordinates) needs about {_size(need)} to build, more than {MEMORY_FRACTION:g} of "
        f"the {_size(available)} of memory available ({_size(MEMORY_FRACTION * available)}): "
        "accepted: fewer bays (n_bays), net rings (net_rings) or cable elements "
        "(cable_elements)")


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} PB"   # pragma: no cover


def _line_geometry(view, a, b):
    """(state a, state b, J_a, J_b, distance [m], unit vector a -> b, its rate [m/s]) of
    the markers a and b: what a force along the line between two points needs."""
    sa, sb = view[a[0]], view[b[0]]
    ra, rad, ja, _ = sa.point(a[1])
    rb, rbd, jb, _ = sb.point(b[1])
    d = rb - ra
    length = float(np.linalg.norm(d))
    e = d / length
    return sa, sb, ja, jb, length, e, float(e @ (rbd - rad))


class DiagonalScrewDrive(Force):
    """A motor turning a screw that extends a diagonal between two points a, b.

    Axial twist (screw side) d = lead phi / N - (l - l0), phi the rotor angle, N the
    gearbox ratio, ``lead`` [m/rad] the extension per screw radian, l = |r_b - r_a| and
    l0 its initial value (an unloaded screw); the push F = k d + c d' [N] (the gear law
    of :func:`~mbdcore.models.drive.gear_torque`, here axial) acts at b along the
    diagonal, -F at a, and the rotor feels -F lead / N [N m]."""

    kind = "screw_drive"

    def __init__(self, motor: str, a: str, b: str, lead: float, ratio: float,
                 stiffness: float, damping: float, name=None):
        super().__init__(name)
        self.motor_name, self.a_ref, self.b_ref = motor, a, b
        self.lead, self.ratio, self.k, self.c = lead, ratio, stiffness, damping

    def bind(self, system):
        super().bind(system)
        self.motor = system.body(self.motor_name)
        self.a, self.b = system.marker(self.a_ref), system.marker(self.b_ref)
        q, v = system.initial_state()
        self.l0 = 0.0
        self.l0 = self._geometry(system.view(q, v))[4] - self.lead / self.ratio * \
            self.motor.initial_coordinates()[0][0]

    def _geometry(self, view):
        return _line_geometry(view, self.a, self.b)

    def twist(self, view) -> tuple[float, float]:
        """(d [m], d' [m/s]) of the screw."""
        sa, sb, ja, jb, length, e, rate = self._geometry(view)
        phi, w, _, _ = view[self.motor].angle(None)
        k = self.lead / self.ratio
        return k * phi - (length - self.l0), k * w - rate

    def push(self, view) -> float:
        """Force [N] extending the diagonal."""
        d, dd = self.twist(view)
        return gear_torque(d, dd, self.k, self.c, 0.0, 1.0)

    def apply(self, t, view, f, inputs):
        sa, sb, ja, jb, length, e, rate = self._geometry(view)
        phi, w, _, _ = view[self.motor].angle(None)
        k = self.lead / self.ratio
        push = gear_torque(k * float(phi) - (length - self.l0), k * float(w) - rate,
                           self.k, self.c, 0.0, 1.0)
        scatter_force(f, sb, jb, push * e)
        scatter_force(f, sa, ja, -push * e)
        self._add_torque(f, view, (self.motor, None), -push * k)

    def potential(self, t, view):
        return 0.5 * self.k * self.twist(view)[0] ** 2

    def compiled_element(self):
        """The twist d = k phi - l + l0 (beta = -1) under the gear law without backlash."""
        element = line_element(self.a, self.b, self.l0, gear_law(self.k, self.c, 0.0, 1.0),
                               [(self.motor.index, self.lead / self.ratio)], beta=-1.0)
        return element


class DiagonalLatch(Force):
    """End stop and latch of a diagonal at its deployed length l_d [m]: before it
    latches, a stiff one-sided spring-damper F = -(k e + c e') for e = l - l_d > 0
    (the diagonal cannot extend beyond its design length); :meth:`update` latches it
    at the first accepted step with e >= 0, and from then on the spring-damper acts
    both ways (the diagonal is held at l_d)."""

    #: a penalty end stop: a model with it is stiff (its block defaults to an implicit method,
    #: mbdcore.multibody.system_block.stiff_parts)
    stiff = True

    kind = "latch"

    def __init__(self, a: str, b: str, deployed_length: float, stiffness: float,
                 damping: float, name=None):
        super().__init__(name)
        self.a_ref, self.b_ref = a, b
        self.length, self.k, self.c = deployed_length, stiffness, damping
        self._law = None
        self.latched = False
        #: time [s] the latch engaged (None before)
        self.latch_time = None

    def bind(self, system):
        super().bind(system)
        self.a, self.b = system.marker(self.a_ref), system.marker(self.b_ref)

    def _geometry(self, view):
        sa, sb, ja, jb, length, e, rate = _line_geometry(view, self.a, self.b)
        return sa, sb, ja, jb, length - self.length, e, rate

    def apply(self, t, view, f, inputs):
        sa, sb, ja, jb, ext, e, rate = self._geometry(view)
        # always scattered (zero when open): the sparse assembly learns the columns
        # a force loads from a first call
        tension = self.k * ext + self.c * rate if (self.latched or ext > 0.0) else 0.0
        scatter_force(f, sb, jb, -tension * e)
        scatter_force(f, sa, ja, tension * e)

    def potential(self, t, view):
        ext = self._geometry(view)[4]
        return 0.5 * self.k * ext * ext if (self.latched or ext > 0.0) else 0.0

    @property
    def latched(self) -> bool:
        """Whether the latch has engaged (its discrete state)."""
        return self._latched

    @latched.setter
    def latched(self, value: bool) -> None:
        self._latched = bool(value)
        if self._law is not None:
            self._law[1][3] = float(self._latched)   # the compiled law's "engaged"

    def compiled_element(self):
        """e = l - l_d under the one-sided linear law, engaged once latched (the law's
        last parameter, written with the discrete state: one array, shared by every
        compiled form made of this latch)."""
        if self._law is None:
            self._law = spring_law(self.k, self.c, one_sided=True)
            self.latched = self._latched
        self._law[1][:2] = self.k, self.c        # as they are now
        return line_element(self.a, self.b, -self.length, self._law)

    def compiled_engagement(self):
        """The compiled law's parameters (its entry 3, engaged, is :attr:`latched`)."""
        return None if self._law is None else self._law[1]

    def update(self, t, q, v) -> bool:
        if self.latched:
            return False
        ext = self._geometry(self.system.view(q, v))[4]
        if ext >= 0.0:
            self.latched, self.latch_time = True, float(t)
            return True
        return False

    def discrete_state(self):
        return {"latched": self.latched, "latch_time": self.latch_time}

    def set_discrete_state(self, state) -> None:
        self.latched, self.latch_time = bool(state["latched"]), state["latch_time"]


class DeploymentRateController:
    """Deployment-rate PI controller of the motors, as ``feedback(t, q, v)`` of
    :func:`~mbdcore.dae.simulate.simulate` (sampled at each step and held).

    Each motor's voltage u_k = kp (w* - w_k) + ki integral(w* - w_k) dt [V] with w_k the
    rate of bay k's diagonal length [m/s] and w* = ``rate`` [m/s] (a common set-point:
    without gears each bay follows it on its own); once bay k's latch has engaged its
    motor is switched off (0 V)."""

    def __init__(self, truss: RingTruss, rate: float, kp: float, ki: float,
                 voltage_limit: float = 48.0):
        for label, val in (("rate", rate), ("kp", kp), ("ki", ki),
                           ("voltage_limit", voltage_limit)):
            if not (isinstance(val, (int, float)) and math.isfinite(val) and val >= 0.0):
                raise ParameterError(f"DeploymentRateController: {label} = {val!r} is "
                                     "invalid: accepted values are finite numbers >= 0")
        self.truss, self.rate, self.kp, self.ki = truss, rate, kp, ki
        self.limit = voltage_limit
        self.integral = np.zeros(truss.n_bays)
        self.t_last = None
        by_name = {f.name: f for f in truss.system.forces_list}
        self.latches = [by_name.get(f"latch{k}") for k in range(truss.n_bays)]

    def diagonal_rates(self, q, v) -> np.ndarray:
        """Extension rates l_k' [m/s] of the diagonals (central difference along v)."""
        h = 1e-7
        return (self.truss.diagonal_lengths(q + h * v) - self.truss.diagonal_lengths(q - h * v)) \
            / (2 * h)

    def __call__(self, t, q, v) -> dict:
        dt = 0.0 if self.t_last is None else t - self.t_last
        self.t_last = t
        err = self.rate - self.diagonal_rates(q, v)
        self.integral += err * dt
        u = np.clip(self.kp * err + self.ki * self.integral, -self.limit, self.limit)
        out = {}
        for k in range(self.truss.n_bays):
            latch = self.latches[k]
            out[f"voltage{k}"] = 0.0 if (latch is not None and latch.latched) else float(u[k])
        return out


def smooth_deployment_motion(theta0: float, theta1: float, duration: float):
    """motion(t) -> (angle, rate, acceleration) of a hinge turning by theta1 - theta0
    [rad] in ``duration`` [s] along a cosine ramp (zero rate at both ends), measured from
    the start (for :class:`~mbdcore.spatial.AngleDriver`)."""
    span = theta1 - theta0

    def motion(t):
        if t >= duration:
            return span, 0.0, 0.0
        w = math.pi / duration
        return (0.5 * span * (1.0 - math.cos(w * t)), 0.5 * span * w * math.sin(w * t),
                0.5 * span * w * w * math.cos(w * t))
    return motion


def add_deployment_driver(truss: RingTruss, motion) -> AngleDriver:
    """Drive bay 0's upper hinge at vertical 0 along ``motion`` (a kinematic run)."""
    return truss.system.add_joint(AngleDriver("hinge_upper0_i", motion, name="deploy"))


def plot_configuration(truss: RingTruss, q, ax=None, color="k"):
    """Draw the truss at coordinates q as line segments on a matplotlib 3D axes (made on
    a new Agg figure when ``ax`` is None); axes in m.  Returns the axes."""
    # matplotlib is imported when a picture is asked for, not with the model
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator
    if ax is None:
        fig = Figure(figsize=(6, 6))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot(projection="3d")
    for a, b in truss.bars(q):
        ax.plot([a[0], b[0]], [a[1], b[1]], [a[2], b[2]], color=color, lw=1.2)
    ax.set_xlabel(axis_label("x", "m"))
    ax.set_ylabel(axis_label("y", "m"))
    ax.set_zlabel(axis_label("z", "m"))
    centre = truss.anchor - np.array([truss.radius * math.cos(truss.azimuth[0]),
                                      truss.radius * math.sin(truss.azimuth[0]), 0.0])
    r = 1.1 * truss.radius
    z0, z1 = centre[2] - 0.1 * truss.height, centre[2] + 1.1 * truss.height + truss.chord
    ax.set_xlim(centre[0] - r, centre[0] + r)
    ax.set_ylim(centre[1] - r, centre[1] + r)
    ax.set_zlim(z0, z1)
    # true proportions; the box drawn smaller than the axes so that its tick labels and
    # the z label stay inside them (a layout engine sees only the axes, and the z label
    # of a box filling them is cut by the edge or by the next axes)
    ax.set_box_aspect((2 * r, 2 * r, z1 - z0), zoom=0.8)
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_major_locator(MaxNLocator(5))
    return ax


def write_animation(truss: RingTruss, times, qs, path, fps: int = 10) -> bool:
    """Write an animated GIF of the configurations ``qs`` at ``times`` [s] to ``path``
    with matplotlib's PillowWriter; False (and nothing written) when Pillow is not
    installed, with the reason printed by the caller."""
    from matplotlib.animation import PillowWriter
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    try:
        import PIL  # noqa: F401
    except ImportError:
        return False
    fig = Figure(figsize=(5, 5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(projection="3d")
    writer = PillowWriter(fps=fps)
    with writer.saving(fig, str(path), dpi=80):
        for t, q in zip(times, qs):
            ax.cla()
            plot_configuration(truss, q, ax)
            ax.set_title(f"t = {t:.2f} s, deployment ratio {truss.deployment_ratio(q):.3f}")
            writer.grab_frame()
    return True
