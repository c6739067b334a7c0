"""Models several test modules share, each with an answer that cannot be tuned.

* :class:`CartesianPendulum`: a point mass on a rod in Cartesian coordinates, one
  constraint; against the pendulum equation theta'' = -(g/L) sin(theta);
* :class:`JointPDWithFeedforward` and :data:`PERTURBED`: the arm's joint PD with the
  flexible reference's feedforward torques, and arms that differ from the design model
  (the LQG robustness tests);
* :func:`spatial_joint_kinds`: rigid bodies and a bar on every spatial joint kind with
  rows of closed form (revolute, spherical, prismatic on a body and on a bar, fixed);
* :func:`thrown_on_slack_cable`: a mass thrown away on a slack tension-only cable that
  snaps taut and throws it back (an elastic collision of known outcome).
"""
from __future__ import annotations

import math

import numpy as np

from controllers.laws.arm_lqg import FEEDFORWARD_INPUTS
from controllers.laws.joint_pd import JointPDController
from mbdcore.dae.problem import ConstrainedProblem
from mbdcore.models.spatial_mechanisms import rotation_z
from mbdcore.spatial.ancf import ANCFCable
from mbdcore.spatial.joints import Fixed, Prismatic, Revolute, Spherical
from mbdcore.spatial.system import SpatialSystem

G_ACC = 9.80665  # standard gravity [m/s^2]


class CartesianPendulum(ConstrainedProblem):
    """Point mass on a massless rod of length L [m], pivot at the origin, y up."""

    n, m = 2, 1

    def __init__(self, length=1.0, mass=1.0):
        self.length = length
        self.mass = mass

    def mass_matrix(self, q):
        return self.mass * np.eye(2)

    def forces(self, t, q, v):
        return np.array([0.0, -self.mass * G_ACC])

    def constraints(self, t, q):
        return np.array([q @ q - self.length ** 2])

    def constraint_jacobian(self, t, q):
        return 2.0 * q.reshape(1, 2)

    def gamma(self, t, q, v):
        return np.array([-2.0 * (v @ v)])

    def energy(self, t, q, v):
        return 0.5 * self.mass * (v @ v) + self.mass * G_ACC * q[1]

    def state_from_angle(self, theta, omega):
        """(q, v) for angle theta [rad] from the downward vertical and rate omega [rad/s]."""
        L = self.length
        q = L * np.array([np.sin(theta), -np.cos(theta)])
        v = L * omega * np.array([np.cos(theta), np.sin(theta)])
        return q, v


#: Arms that differ from the design model: payload [kg] and link stiffness factors.
PERTURBED = {"EI -10 %": {"m_p": 0.15, "ei1": 0.9, "ei2": 0.9},
             "EI +10 %": {"m_p": 0.15, "ei1": 1.1, "ei2": 1.1}}

class JointPDWithFeedforward(JointPDController):
    """tau = sat(tau_ff + Kp (theta_ref - theta) + Kd (omega_ref - omega)), with tau_ff
    the flexible reference's torques: the same two-degree-of-freedom structure as the
    LQG with ``reference="model"``, joint PD as the feedback."""

    INPUTS = JointPDController.INPUTS + FEEDFORWARD_INPUTS
    FEEDTHROUGH = dict.fromkeys(("tau1", "tau2"), tuple(s.name for s in INPUTS))

    def outputs(self) -> dict:
        u = self.inputs
        err = np.array([u["theta1_ref"] - u["theta1"], u["theta2_ref"] - u["theta2"]])
        rate = np.array([u["omega1_ref"] - u["omega1"], u["omega2_ref"] - u["omega2"]])
        tau = np.clip(self.kp * err + self.kd * rate + [u["tau1_ff"], u["tau2_ff"]],
                      -self.tau_max, self.tau_max)
        return {"tau1": float(tau[0]), "tau2": float(tau[1])}


def spatial_joint_kinds():
    """Rigid bodies a, b, c and a bar on a revolute (``h1``, to the ground), a ball joint,
    a second revolute (``h2``), prismatic joints on the bar (``sleeve``) and between two
    bodies (``slide``) and a weld, under gravity 9.81 m/s^2 along -z, redundant equations
    kept (a joint kind per row form of the spatial engine)."""
    s = SpatialSystem(gravity=(0.0, 0.0, -9.81), redundant="keep")
    s.ground.add_marker("O", (0.0, 0.0, 0.0))
    s.ground.add_marker("S", (2.0, 0.0, 0.0))
    tilt = rotation_z(0.3) @ np.array([[1, 0, 0], [0, math.cos(0.4), -math.sin(0.4)],
                                       [0, math.sin(0.4), math.cos(0.4)]])
    s.add_body("a", mass=2.0, inertia=(0.3, 0.4, 0.5), center_of_mass=(0.1, 0.0, 0.0),
               orientation=tilt, markers={"p": (0.5, 0.0, 0.0), "h": (0.0, 0.2, 0.0)})
    s.add_body("b", mass=1.0, inertia=(0.2, 0.2, 0.3), position=(0.5, 0.2, 0.1),
               markers={"p": (0.0, 0.0, 0.0), "h": (0.3, 0.0, 0.0)})
    s.add_body("c", mass=1.5, inertia=(0.1, 0.2, 0.25), position=(1.0, 1.0, 0.0),
               markers={"p": (0.0, 0.0, 0.0)})
    s.add_bar("rod", (2.0, 0.0, 0.0), (3.0, 0.5, 0.2), mass=0.7, markers={"m": 0.4})
    s.add_joint(Revolute("ground.O", "a.h", (0.2, 0.1, 1.0), name="h1"))
    s.add_joint(Spherical("a.p", "b.p", name="ball"))
    s.add_joint(Revolute("b.h", "c.p", (1.0, 0.3, 0.2), name="h2"))
    s.add_joint(Prismatic("ground.S", "rod.m", (1.0, 0.5, 0.2), name="sleeve"))
    s.add_joint(Prismatic("a.p", "c.p", (0.0, 1.0, 0.3), name="slide"))
    s.add_joint(Fixed("b.p", "c.p", name="weld"))
    return s


def thrown_on_slack_cable(direction, length=1.0, mass=1.0, ea=1e4, v0=2.0, start=0.6,
                          rho_a=1e-3, n_elements=4):
    """(system, cable, body, q0, v0): a mass [kg] on the tip of a tension-only cable
    (stress-free length ``length`` [m], ``ea`` [N], ``rho_a`` [kg/m], EI 1e-4 N m^2,
    anchored at the origin), no gravity, the cable straight along the unit vector
    ``direction`` at ``start`` of its length and stretching uniformly with the mass
    thrown away at ``v0`` [m/s] (its nodes at the linear velocity field): the mass flies
    free until the tip is ``length`` from the anchor, at t = (1 - start) length / v0,
    then the cable stops it like a spring and throws it back."""
    T0 = np.asarray(direction, dtype=float)
    system = SpatialSystem(gravity=(0.0, 0.0, 0.0))
    system.ground.add_marker("anchor", (0.0, 0.0, 0.0))
    cable = system.add(ANCFCable("c", (0, 0, 0), start * length * T0, n_elements, rho_a,
                                 ea, 1e-4, stress_free_length=length, tension_only=True))
    body = system.add_body("mass", mass=mass, inertia=(1e-4 * mass,) * 3,
                           position=start * length * T0, markers={"c": (0.0, 0.0, 0.0)})
    system.add_joint(Spherical("ground.anchor", "c.root"))
    system.add_joint(Spherical("c.tip", "mass.c"))
    q0, _ = system.initial_state()
    v_init = np.zeros(system.n)
    rates = np.zeros((cable.n_nodes, 6))
    rates[:, :3] = np.outer(v0 * cable.node_arc / length, T0)
    rates[:, 3:] = v0 / length * T0
    v_init[cable.index:cable.index + cable.n_coords] = rates.ravel()
    v_init[body.index:body.index + 3] = v0 * T0
    return system, cable, body, q0, v_init


def displaced_net_start(net, seed: int, size: float = 1e-5):
    """The net's coordinates with every cable node moved by ``size`` [m] at random (the
    nodes' slopes kept), and the largest tension difference that leaves at a cable's
    quarter point from the form's [N]: a start for ``net_static_equilibrium`` to return
    from."""
    rng = np.random.default_rng(seed)
    q_start = net.coordinates()
    for cable in net.cables:
        shift = np.zeros((cable.n_nodes, 6))
        shift[:, :3] = size * rng.standard_normal((cable.n_nodes, 3))
        q_start[cable.index:cable.index + cable.n_coords] += shift.ravel()
    start_error = max(abs(c.axial_force(q_start[c.index:c.index + c.n_coords],
                                        0.25 * c.length)[0] - t)
                      for c, t in zip(net.cables, net.form.tension))
    return q_start, start_error
