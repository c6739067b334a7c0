"""Benchmark mechanisms built with the general engine (docs/benchmarks.md §5, §6).

Every builder returns a :class:`~mbdcore.multibody.System` with its initial guess set;
parameters are SI and documented here so tests and benchmarks share one definition.
"""
from __future__ import annotations

import math

from mbdcore.blocks import with_overrides
from mbdcore.models.manipulator import validate_arm_parameters
from mbdcore.multibody.constraints import (
    AngleDriver,
    Prismatic,
    Revolute,
    SpinUp,
    SynchronousGear,
    Weld,
    constant_rate,
)
from mbdcore.multibody.forces import (
    ConstantTorque,
    Contact,
    JointTorque,
    TranslationalSpringDamper,
)
from mbdcore.multibody.system import System

__all__ = ["G_STANDARD", "rigid_crank", "cylinder_inertia", "SLIDER_CRANK", "slider_crank",
           "slider_crank_with_contact", "four_bar", "geared_bars", "HUB_BEAM", "SpinUp",
           "hub_beam", "two_link_arm"]

G_STANDARD = 9.80665  # m/s^2


def rigid_crank(length: float = 0.75, mass: float = 1.4, torque: float = 62.0) -> System:
    """The rigid crank of docs/benchmarks.md §5: uniform bar turning in a horizontal plane
    about one end under a constant torque; angular acceleration
    torque / (m L^2 / 3) = 236.19 rad/s^2."""
    s = System()
    s.ground.add_marker("O", (0.0, 0.0))
    s.add_body("crank", mass=mass, inertia=mass * length**2 / 12.0, position=(length / 2, 0.0),
               markers={"O": (-length / 2, 0.0), "tip": (length / 2, 0.0)})
    s.add_joint(Revolute("ground.O", "crank.O", name="pivot"))
    s.add_force(ConstantTorque("ground", "crank", torque, name="motor"))
    return s


def cylinder_inertia(mass: float, length: float, radius: float) -> float:
    """Inertia [kg m^2] of a homogeneous cylinder about a transverse axis through its
    centre: m (3 r^2 + L^2) / 12."""
    return mass * (3.0 * radius**2 + length**2) / 12.0


#: Slider-crank of docs/benchmarks.md §6 (after Ji et al. 2020), vertical plane, gravity -y.
SLIDER_CRANK = dict(
    crank_length=0.2,      # m, L1
    rod_length=0.5,        # m, L2
    crank_mass=0.4,        # kg, homogeneous cylinder
    rod_mass=1.0,          # kg, homogeneous cylinder
    slider_mass=0.5,       # kg
    radius=0.01,           # m, radius of the crank and rod cylinders
    stiffness=200.0,       # N/m, spring between slider and ground
    damping=2.0,           # N s/m
    spring_rest=0.2,       # m: anchor at x = L1 + L2 + spring_rest, unstretched when straight
    theta1=math.pi / 3,    # rad, initial crank angle (mechanism at rest)
    gravity=G_STANDARD,
)


def slider_crank(**overrides) -> System:
    """Slider-crank: crank O-A pinned to ground at O = (0, 0), rod A-B, slider at B
    sliding along the x axis; spring-damper between slider and ground, unstretched
    when theta1 = theta2 = 0 (straight mechanism); gravity along -y.  Parameters:
    :data:`SLIDER_CRANK` (override any by keyword).  Inputs: ``tau`` [N m] on the crank.
    """
    p = with_overrides(SLIDER_CRANK, overrides, "slider-crank")
    l1, l2 = p["crank_length"], p["rod_length"]
    th1 = p["theta1"]
    th2 = math.asin(-l1 * math.sin(th1) / l2)
    a = (l1 * math.cos(th1), l1 * math.sin(th1))
    b = (a[0] + l2 * math.cos(th2), 0.0)
    s = System(gravity=(0.0, -p["gravity"]))
    s.ground.add_marker("O", (0.0, 0.0))
    s.ground.add_marker("rail", (0.0, 0.0))
    s.ground.add_marker("anchor", (l1 + l2 + p["spring_rest"], 0.0))
    s.add_body("crank", mass=p["crank_mass"],
               inertia=cylinder_inertia(p["crank_mass"], l1, p["radius"]),
               position=(a[0] / 2, a[1] / 2), angle=th1,
               markers={"O": (-l1 / 2, 0.0), "A": (l1 / 2, 0.0)})
    s.add_body("rod", mass=p["rod_mass"], inertia=cylinder_inertia(p["rod_mass"], l2, p["radius"]),
               position=((a[0] + b[0]) / 2, (a[1] + b[1]) / 2), angle=th2,
               markers={"A": (-l2 / 2, 0.0), "B": (l2 / 2, 0.0)})
    s.add_body("slider", mass=p["slider_mass"], inertia=1e-3, position=b,
               markers={"B": (0.0, 0.0)})
    s.add_joint(Revolute("ground.O", "crank.O", name="O"))
    s.add_joint(Revolute("crank.A", "rod.A", name="A"))
    s.add_joint(Revolute("rod.B", "slider.B", name="B"))
    s.add_joint(Prismatic("ground.rail", "slider.B", direction=(1.0, 0.0), name="rail"))
    s.add_force(TranslationalSpringDamper("slider.B", "ground.anchor", p["stiffness"],
                                          p["damping"], rest_length=p["spring_rest"],
                                          name="spring"))
    s.add_force(JointTorque("ground", "crank", "tau", name="motor"))
    return s


def slider_crank_with_contact(stiffness: float = 1e6, exponent: float = 1.5,
                              radius: float = 0.05, touch_angle: float = -0.4,
                              position_on_rod: float = 0.1, damping_contact: float = 0.0,
                              **overrides) -> System:
    """The slider-crank with a fixed cylinder (docs/benchmarks.md §6) that the connecting rod
    strikes.

    A ground cylinder of ``radius`` [m] is placed below the rod so that it touches the
    rod's centre line at ``position_on_rod`` (fraction of the rod length from the crank
    end) when the crank angle is ``touch_angle`` [rad]; the
    crank, swinging down under gravity (to -1.40 rad without the cylinder), hits it.
    Contact force K delta^n (+ Hunt-Crossley damping C delta^n delta'), never pulling.
    """
    s = slider_crank(**overrides)
    p = with_overrides(SLIDER_CRANK, overrides, "slider-crank")
    l1, l2 = p["crank_length"], p["rod_length"]
    a = (l1 * math.cos(touch_angle), l1 * math.sin(touch_angle))
    th2 = math.asin(-a[1] / l2)
    f = position_on_rod
    mid = (a[0] + f * l2 * math.cos(th2), a[1] + f * l2 * math.sin(th2))
    normal = (math.sin(th2), -math.cos(th2))         # below the rod
    center = (mid[0] + radius * normal[0], mid[1] + radius * normal[1])
    s.ground.add_marker("post", center)
    # the rod's line, direction -x in the rod frame: its free side (E * direction) is below
    s.add_force(Contact("ground.post", "rod.A", radius_a=radius, stiffness=stiffness,
                        exponent=exponent, damping=damping_contact, line_direction=(-1.0, 0.0),
                        name="contact"))
    return s


def four_bar(ground_length: float = 0.4, crank_length: float = 0.1, coupler_length: float = 0.35,
             rocker_length: float = 0.25, mass_per_length: float = 2.0, omega: float = 6.0,
             theta0: float = 0.3, gravity: float = G_STANDARD) -> System:
    """Four-bar linkage in a vertical plane whose crank angle is prescribed,
    theta(t) = theta0 + omega t (an AngleDriver named ``drive``, multiplier = driving
    torque with the sign of G^T lambda).  Links are uniform bars of ``mass_per_length``
    [kg/m] (inertia m L^2 / 12).  Grashof crank-rocker with the defaults."""
    d, a, b, c = ground_length, crank_length, coupler_length, rocker_length
    A = (a * math.cos(theta0), a * math.sin(theta0))
    # rocker pivot at (d, 0); B from the circle intersection (elbow up)
    dx, dy = d - A[0], -A[1]
    dist = math.hypot(dx, dy)
    x = (b**2 - c**2 + dist**2) / (2 * dist)
    h = math.sqrt(max(b**2 - x**2, 0.0))
    ex, ey = dx / dist, dy / dist
    B = (A[0] + x * ex - h * ey, A[1] + x * ey + h * ex)
    s = System(gravity=(0.0, -gravity))
    s.ground.add_marker("O2", (0.0, 0.0))
    s.ground.add_marker("O4", (d, 0.0))

    def bar(name, p, q, length):
        ang = math.atan2(q[1] - p[1], q[0] - p[0])
        m = mass_per_length * length
        s.add_body(name, mass=m, inertia=m * length**2 / 12, angle=ang,
                   position=((p[0] + q[0]) / 2, (p[1] + q[1]) / 2),
                   markers={"P": (-length / 2, 0.0), "Q": (length / 2, 0.0)})

    bar("crank", (0.0, 0.0), A, a)
    bar("coupler", A, B, b)
    bar("rocker", (d, 0.0), B, c)
    s.add_joint(Revolute("ground.O2", "crank.P", name="O2"))
    s.add_joint(Revolute("crank.Q", "coupler.P", name="A"))
    s.add_joint(Revolute("coupler.Q", "rocker.Q", name="B"))
    s.add_joint(Revolute("ground.O4", "rocker.P", name="O4"))
    s.add_joint(AngleDriver("ground", "crank", constant_rate(theta0, omega), name="drive"))
    for body in s.bodies:
        body.omega = 0.0
    return s


def geared_bars(length1: float = 0.5, length2: float = 0.8, mass1: float = 1.0,
                mass2: float = 3.0, ratio: float = 1.0, torque: float = 2.0) -> System:
    """Two bars pinned to ground at different points, tied by a synchronous gear
    (their joint angles equal, or in ``ratio``), driven by a torque on bar 1 only."""
    s = System()
    s.ground.add_marker("P1", (0.0, 0.0))
    s.ground.add_marker("P2", (2.0, 0.0))
    s.add_body("bar1", mass=mass1, inertia=mass1 * length1**2 / 12, position=(length1 / 2, 0.0),
               markers={"P": (-length1 / 2, 0.0)})
    s.add_body("bar2", mass=mass2, inertia=mass2 * length2**2 / 12,
               position=(2.0 + length2 / 2, 0.0), markers={"P": (-length2 / 2, 0.0)})
    s.add_joint(Revolute("ground.P1", "bar1.P", name="pin1"))
    s.add_joint(Revolute("ground.P2", "bar2.P", name="pin2"))
    s.add_joint(SynchronousGear(("ground", "bar1"), ("ground", "bar2"), ratio=ratio, name="gear"))
    s.add_force(ConstantTorque("ground", "bar1", torque, name="motor"))
    return s


#: Hub-beam spin-up of docs/benchmarks.md §2 (Kane, Ryan & Banerjee 1987).
HUB_BEAM = dict(length=10.0, rho_a=1.2, ei=1.4e4, ea=2.8e7, spin_up_time=15.0)


def hub_beam(beam_factory, final_rate: float = 4.0) -> System:
    """A hub turning with the prescribed spin-up (an AngleDriver named ``spin``) and a
    beam clamped to it at the axis.  ``beam_factory(name, length, rho_a, ei, ea)``
    returns the beam body (modal, finite-segment or ANCF) lying along +x from the
    origin, with markers ``root`` and ``tip``."""

    p = HUB_BEAM
    s = System()
    s.ground.add_marker("axis", (0.0, 0.0))
    s.add_body("hub", mass=1.0, inertia=1.0, markers={"axis": (0.0, 0.0)})
    s.add(beam_factory("beam", p["length"], p["rho_a"], p["ei"], p["ea"]))
    s.add_joint(Revolute("ground.axis", "hub.axis", name="bearing"))
    s.add_joint(AngleDriver("ground", "hub", SpinUp(final_rate, p["spin_up_time"]), name="spin"))
    s.add_joint(Weld("hub.axis", "beam.root", name="clamp"))
    return s


def two_link_arm(link_factory, **arm) -> System:
    """The two-link flexible arm of docs/benchmarks.md §1 built from the general engine.

    ``link_factory(name, length, rho_a, ei, origin)`` makes each link as a beam body
    lying along +x from its root at ``origin`` [m] (markers ``root`` and ``tip``): a
    ModalBeam, a FiniteSegmentBeam or an ANCF beam.  Starting each link where it belongs
    matters for beams with nodal coordinates: the assembly's minimum-norm correction
    would otherwise move only the constrained nodes and start the link badly bent.  Rigid bodies: the joint-1 hub (J_h1), the joint-2 stator (J_s,
    half of m_h2) welded to the tip of link 1, the joint-2 rotor (J_h2, the other half
    of m_h2) pinned to it, and the payload (m_p, J_p) welded to the tip of link 2.
    Inputs ``tau1`` (ground -> hub 1) and ``tau2`` (stator -> rotor) [N m]; the joint
    angles are ``hub1.phi`` and ``rotor.phi - stator.phi``.  Arm parameters as in
    :data:`mbdcore.models.manipulator.ARM_PARAMETERS` (defaults of the table).
    """

    p = validate_arm_parameters(**arm)
    l1, l2 = p["l1"], p["l2"]
    tiny = 1e-9  # the hub at the base carries no mass of its own in the table
    s = System()
    s.ground.add_marker("O", (0.0, 0.0))
    s.add_body("hub1", mass=tiny, inertia=p["j_h1"], markers={"c": (0.0, 0.0)})
    s.add(link_factory("link1", l1, p["rho_a1"], p["ei1"], (0.0, 0.0)))
    s.add_body("stator", mass=max(p["m_h2"] / 2, tiny), inertia=max(p["j_s"], tiny),
               position=(l1, 0.0), markers={"c": (0.0, 0.0)})
    s.add_body("rotor", mass=max(p["m_h2"] / 2, tiny), inertia=max(p["j_h2"], tiny),
               position=(l1, 0.0), markers={"c": (0.0, 0.0)})
    link2 = link_factory("link2", l2, p["rho_a2"], p["ei2"], (l1, 0.0))
    s.add(link2)
    s.add_body("payload", mass=max(p["m_p"], tiny), inertia=max(p["j_p"], tiny),
               position=(l1 + l2, 0.0), markers={"c": (0.0, 0.0)})
    s.add_joint(Revolute("ground.O", "hub1.c", name="joint1"))
    s.add_joint(Weld("hub1.c", "link1.root", name="clamp1"))
    s.add_joint(Weld("link1.tip", "stator.c", name="elbow"))
    s.add_joint(Revolute("stator.c", "rotor.c", name="joint2"))
    s.add_joint(Weld("rotor.c", "link2.root", name="clamp2"))
    s.add_joint(Weld("link2.tip", "payload.c", name="tip"))
    s.add_force(JointTorque("ground", "hub1", "tau1", name="motor1"))
    s.add_force(JointTorque("stator", "rotor", "tau2", name="motor2"))
    return s
