"""Two-link planar flexible manipulator (De Luca & Siciliano 1991; docs/benchmarks.md §1).

Minimal coordinates ``q = (theta1, theta2, delta1[0:N], delta2[0:N])``: joint angles
[rad] and assumed-mode amplitudes [m] of each link (shapes normalised to unit tip
deflection, so ``sum(delta_i)`` is the tip deflection of link i).  The equations of
motion are Lagrange's equations of the kinetic and strain energies written below; the
full derivation is in ``docs/manipulator.md``.

Kinematics (planar, complex notation r = x + i y, E = multiplication by i)
-------------------------------------------------------------------------
Link i has a floating frame at its joint, rotated by phi_i.  A material point at
distance x along the undeformed link sits at

    r_i(x) = o_i + e^{i phi_i} s_i(x),     s_i(x) = (x + u_i(x), w_i(x))

with transverse deflection w_i = sum_j phi_ij(x) delta_ij and the axial
*foreshortening* of an inextensible beam

    u_i(x) = -1/2 int_0^x (w_i')^2 dxi = -1/2 delta_i^T G_i(x) delta_i,
    G_i(x)_jk = int_0^x phi_ij' phi_ik' dxi.

Frames: phi_1 = theta1, o_1 = 0; phi_2 = theta1 + w_1'(l1) + theta2 (joint 2 measured
from the tangent at the tip of link 1), o_2 = r_1(l1).

Energies
--------
    T = 1/2 sum_i int rho_A_i |r_i'|^2 dx + 1/2 m_h2 |o_2'|^2 + 1/2 m_p |r_2(l2)'|^2
        + 1/2 [J_h1 theta1'^2 + J_s (theta1' + w1'(l1)')^2 + J_h2 phi_2'^2
               + J_p (phi_2' + w2'(l2)')^2]
    V = 1/2 sum_i delta_i^T K_i delta_i,   K_i jk = int EI_i phi_ij'' phi_ik'' dx

(' on a kinematic quantity is d/dt).  Writing the velocity of each mass point as
r' = J(q) q', Lagrange's equations take the form

    M(q) q'' = Q - sum_points m J^T a_q(q, q') - K q - D q',
    M(q) = sum_points m J^T J + sum_rotors J_r c c^T,   Q = (tau1, tau2, 0, ..., 0)

where a_q = J' q' is the velocity-dependent part of the point's acceleration and the
sums over "points" are Gauss-Legendre quadratures of the link integrals plus the
lumped masses.  Keeping u_i in the kinematics is what produces the centrifugal
(geometric) stiffening of Liu et al. (1999) and Kane et al. (1987) (docs/benchmarks.md §8.5):
for a link spinning at rate Omega the term 1/2 Omega^2 |r|^2 of T contains
-1/2 Omega^2 int rho_A x (w')^2, the stiffening.  Switching ``geometric_stiffening``
off sets u_i = 0 (the classical linear model that diverges above the first bending
frequency).  The joint torques enter as tau1 on theta1 and tau2 on theta2 because tau2
acts between the stator (angle theta1 + w1'(l1)) and the rotor (angle phi_2).

The equations are exact for the assumed kinematics (no truncation of T), so the total
energy T + V is conserved exactly by the continuous model without damping and input.
"""
from __future__ import annotations

import math

import numpy as np

from mbdcore.blocks import (
    Parameter,
    ParameterError,
    Signal,
)
from mbdcore.dae.ode_block import OdeBlock, ode_stepper, stepping_parameters
from mbdcore.dae.problem import ConstrainedProblem
from mbdcore.dae.simulate import integrate_held
from mbdcore.jit import njit
from mbdcore.multibody.beam_modes import ClampedBeamModes, frame_point

__all__ = ["ArmProblem", "ARM_OUTPUT_SIGNALS", "ARM_INPUTS", "ARM_OUTPUTS", "ARM_MEASURED", "JOINT_STATES",
           "ARM_PARAMETERS", "N_QUAD", "validate_arm_parameters", "FlexibleManipulator",
           "bang_bang_torque", "FlexibleManipulatorBlock"]

#: Physical parameters of the arm (docs/benchmarks.md §1) with their accepted ranges.
ARM_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("l1", 0.5, "m", "length of link 1", min=0.0, exclusive_min=True),
    Parameter("l2", 0.5, "m", "length of link 2", min=0.0, exclusive_min=True),
    Parameter("rho_a1", 0.2, "kg/m", "linear density of link 1", min=0.0, exclusive_min=True),
    Parameter("rho_a2", 0.2, "kg/m", "linear density of link 2", min=0.0, exclusive_min=True),
    Parameter("ei1", 1.0, "N.m2", "flexural stiffness of link 1", min=0.0, exclusive_min=True),
    Parameter("ei2", 1.0, "N.m2", "flexural stiffness of link 2", min=0.0, exclusive_min=True),
    Parameter("j_h1", 0.1, "kg.m2", "hub (rotor) inertia of joint 1", min=0.0),
    Parameter("j_h2", 0.1, "kg.m2", "hub (rotor) inertia of joint 2, turns with link 2", min=0.0),
    Parameter("m_h2", 1.0, "kg", "mass of the joint-2 hub at the tip of link 1", min=0.0),
    Parameter("j_s", 0.01, "kg.m2", "joint-2 stator inertia, turns with the tip of link 1", min=0.0),
    Parameter("m_p", 0.1, "kg", "payload mass at the tip of link 2", min=0.0),
    Parameter("j_p", 0.0005, "kg.m2", "payload inertia", min=0.0),
    Parameter("n_modes", 2, "", "assumed modes per link", min=1, max=5),
    Parameter("mode_shapes", "clamped-mass", "", "shape functions",
              choices=("clamped-mass", "clamped-free")),
    Parameter("geometric_stiffening", 1, "", "1: keep the foreshortening terms, 0: drop them",
              min=0, max=1),
    Parameter("damping", 0.0, "s", "stiffness-proportional structural damping D = c K",
              min=0.0),
)

N_QUAD = 24  # Gauss points per link: exact to ~1e-13 for the mode products up to N = 5


@njit
def _add_point(M, hq, J, ax, ay, m):
    """M += m J^T J and hq += m J^T a for one mass point (J is 2 x n)."""
    n = M.shape[0]
    for a in range(n):
        ja0 = m * J[0, a]
        ja1 = m * J[1, a]
        hq[a] += ja0 * ax + ja1 * ay
        for b in range(a, n):
            M[a, b] += ja0 * J[0, b] + ja1 * J[1, b]


@njit
def _add_rotor(M, c, jr):
    n = M.shape[0]
    for a in range(n):
        if c[a] != 0.0:
            for b in range(a, n):
                M[a, b] += jr * c[a] * c[b]


@njit
def _link_point(J, x, phi, G, d, dd, w_om, i0, fs):
    """Frame-components of one link point (:func:`frame_point`): fills the delta
    columns of J and returns (s_x, s_y, sd_x, sd_y, quad_x, quad_y) where s = (x+u, w),
    sd = s', and quad is the velocity-quadratic part of s'' (= -dd^T G dd on the axial
    component).  ``fs`` is 1.0 with foreshortening, 0.0 without.
    """
    nm = phi.shape[0]
    # the delta columns of J are the frame derivatives themselves (a view, no copy)
    sx, sy, sdx, sdy, udd = frame_point(x, phi, G, d, dd, fs, J[:, i0:i0 + nm])
    return sx, sy, sdx, sdy, udd, 0.0


@njit
def _eom(q, qd, nm, xq1, wq1, phi1, g1, xq2, wq2, phi2, g2,
         dphil1, gl1, dphil2, gl2, scal, fs):
    """Mass matrix M (full, symmetric) and velocity term hq of M q'' = Q - hq - K q."""
    l1, l2, m_h2, m_p, j_h1, j_h2, j_s, j_p = (scal[0], scal[1], scal[2], scal[3],
                                                scal[4], scal[5], scal[6], scal[7])
    n = 2 + 2 * nm
    M = np.zeros((n, n))
    hq = np.zeros(n)
    J = np.zeros((2, n))
    th1d = qd[0]
    d1 = q[2:2 + nm]
    dd1 = qd[2:2 + nm]
    d2 = q[2 + nm:]
    dd2 = qd[2 + nm:]

    # --- link 1 (frame 1 components) ---
    for p in range(xq1.shape[0]):
        J[:, :] = 0.0
        sx, sy, sdx, sdy, qx, qy = _link_point(J, xq1[p], phi1[p], g1[p], d1, dd1, th1d, 2, fs)
        J[0, 0] = -sy
        J[1, 0] = sx
        # a_q = -th1d^2 s + 2 th1d E sd + quad
        ax = -th1d * th1d * sx - 2.0 * th1d * sdy + qx
        ay = -th1d * th1d * sy + 2.0 * th1d * sdx + qy
        _add_point(M, hq, J, ax, ay, wq1[p])

    # tip of link 1 = origin of link 2 (and the joint-2 hub mass)
    J1l = np.zeros((2, n))
    ones = np.ones(nm)
    sx, sy, sdx, sdy, qx, qy = _link_point(J1l, l1, ones, gl1, d1, dd1, th1d, 2, fs)
    J1l[0, 0] = -sy
    J1l[1, 0] = sx
    a1x = -th1d * th1d * sx - 2.0 * th1d * sdy + qx
    a1y = -th1d * th1d * sy + 2.0 * th1d * sdx + qy
    _add_point(M, hq, J1l, a1x, a1y, m_h2)

    # --- link 2 (frame 2 components) ---
    alpha = 0.0
    alphad = 0.0
    for j in range(nm):
        alpha += dphil1[j] * d1[j]
        alphad += dphil1[j] * dd1[j]
    beta = q[1] + alpha
    cb = math.cos(beta)
    sb = math.sin(beta)
    ph2d = th1d + qd[1] + alphad
    # base Jacobian and base quadratic acceleration rotated into frame 2: R(-beta)
    Jo = np.empty((2, n))
    for a in range(n):
        Jo[0, a] = cb * J1l[0, a] + sb * J1l[1, a]
        Jo[1, a] = -sb * J1l[0, a] + cb * J1l[1, a]
    aox = cb * a1x + sb * a1y
    aoy = -sb * a1x + cb * a1y
    cphi2 = np.zeros(n)  # d(phi_2')/d(q')
    cphi2[0] = 1.0
    cphi2[1] = 1.0
    for j in range(nm):
        cphi2[2 + j] = dphil1[j]

    for p in range(xq2.shape[0] + 1):
        J[:, :] = 0.0
        if p < xq2.shape[0]:
            sx, sy, sdx, sdy, qx, qy = _link_point(J, xq2[p], phi2[p], g2[p], d2, dd2, ph2d,
                                                   2 + nm, fs)
            m = wq2[p]
        else:  # payload at the tip
            sx, sy, sdx, sdy, qx, qy = _link_point(J, l2, ones, gl2, d2, dd2, ph2d, 2 + nm, fs)
            m = m_p
        for a in range(n):
            J[0, a] += Jo[0, a] - sy * cphi2[a]
            J[1, a] += Jo[1, a] + sx * cphi2[a]
        ax = aox - ph2d * ph2d * sx - 2.0 * ph2d * sdy + qx
        ay = aoy - ph2d * ph2d * sy + 2.0 * ph2d * sdx + qy
        _add_point(M, hq, J, ax, ay, m)

    # --- rotary inertias (angles linear in q: no velocity terms) ---
    c = np.zeros(n)
    c[0] = 1.0
    _add_rotor(M, c, j_h1)
    for j in range(nm):
        c[2 + j] = dphil1[j]
    _add_rotor(M, c, j_s)
    c[1] = 1.0
    _add_rotor(M, c, j_h2)
    for j in range(nm):
        c[2 + nm + j] = dphil2[j]
    _add_rotor(M, c, j_p)

    for a in range(n):
        for b in range(a):
            M[a, b] = M[b, a]
    return M, hq


@njit
def _accel(q, qd, tau1, tau2, nm, xq1, wq1, phi1, g1, xq2, wq2, phi2, g2,
           dphil1, gl1, dphil2, gl2, scal, fs, K, D):
    M, hq = _eom(q, qd, nm, xq1, wq1, phi1, g1, xq2, wq2, phi2, g2,
                 dphil1, gl1, dphil2, gl2, scal, fs)
    f = -hq - K @ q - D @ qd
    f[0] += tau1
    f[1] += tau2
    return np.linalg.solve(M, f)


@njit
def _rhs(x, tau1, tau2, nm, xq1, wq1, phi1, g1, xq2, wq2, phi2, g2,
         dphil1, gl1, dphil2, gl2, scal, fs, K, D):
    n = x.shape[0] // 2
    out = np.empty_like(x)
    out[:n] = x[n:]
    out[n:] = _accel(x[:n], x[n:], tau1, tau2, nm, xq1, wq1, phi1, g1, xq2, wq2, phi2, g2,
                     dphil1, gl1, dphil2, gl2, scal, fs, K, D)
    return out


def validate_arm_parameters(**params) -> dict:
    """Checked arm parameters (defaults filled in); ParameterError names a bad one."""

    declared = {p.name: p for p in ARM_PARAMETERS}
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ParameterError(f"unknown arm parameter(s) {unknown}; accepted: {list(declared)}")
    return {name: p.validate(params.get(name, p.default)) for name, p in declared.items()}


class FlexibleManipulator:
    """The equations of motion of the two-link flexible arm (see module docstring).

    Parameters
    ----------
    **params
        Any of :data:`ARM_PARAMETERS` (SI units); the defaults are the table of
        docs/benchmarks.md §1.

    Attributes
    ----------
    n_modes : int
        Assumed modes per link N.
    n_dof : int
        2 + 2 N generalised coordinates.
    modes1, modes2 : ClampedBeamModes
        Shape functions of each link.
    K, D : ndarray, shape (n_dof, n_dof)
        Stiffness [N/m] and damping [N s/m] matrices in q (zero on the joint angles).
    """

    def __init__(self, **params):
        p = validate_arm_parameters(**params)
        self.params = p
        nm = p["n_modes"]
        self.n_modes = nm
        self.n_dof = 2 + 2 * nm
        if p["mode_shapes"] == "clamped-mass":
            tip1 = self.tip_load_link1()
            tip2 = (p["m_p"], p["j_p"], 0.0)
        else:
            tip1 = tip2 = (0.0, 0.0, 0.0)
        self.modes1 = ClampedBeamModes.compute(nm, p["l1"], p["rho_a1"], p["ei1"], *tip1)
        self.modes2 = ClampedBeamModes.compute(nm, p["l2"], p["rho_a2"], p["ei2"], *tip2)
        xq1, wq1 = self.modes1.gauss_points(N_QUAD)
        xq2, wq2 = self.modes2.gauss_points(N_QUAD)
        phi1, g1 = self.modes1.shapes(xq1), self.modes1.foreshortening(xq1, 40)
        phi2, g2 = self.modes2.shapes(xq2), self.modes2.foreshortening(xq2, 40)
        gl1 = self.modes1.foreshortening(p["l1"])[0]
        gl2 = self.modes2.foreshortening(p["l2"])[0]
        dphil1 = self.modes1.shapes(p["l1"], 1)[0]
        dphil2 = self.modes2.shapes(p["l2"], 1)[0]
        scal = np.array([p["l1"], p["l2"], p["m_h2"], p["m_p"], p["j_h1"], p["j_h2"],
                         p["j_s"], p["j_p"]])
        self.K = np.zeros((self.n_dof, self.n_dof))
        self.K[2:2 + nm, 2:2 + nm] = self.modes1.stiffness()
        self.K[2 + nm:, 2 + nm:] = self.modes2.stiffness()
        self.D = p["damping"] * self.K
        fs = float(p["geometric_stiffening"])
        self._geom = (nm, xq1, wq1 * p["rho_a1"], phi1, g1, xq2, wq2 * p["rho_a2"], phi2, g2,
                      dphil1, gl1, dphil2, gl2, scal, fs)
        self._args = self._geom + (self.K, self.D)
        self._tip_geometry = (dphil1, gl1, gl2, fs)

    # -- properties of the arm ---------------------------------------------------------
    def tip_load_link1(self) -> tuple[float, float, float]:
        """Load carried by the tip of link 1 when everything outboard is rigid and
        joint 2 is locked at theta2 = 0: mass [kg], rotary inertia about the tip
        [kg m^2] and first moment about the tip along the link axis [kg m].
        De Luca & Siciliano keep mass and inertia only; the first moment (the outboard
        centre of mass lies beyond the tip) couples tip deflection and slope, and
        without it the "clamped-mass" shapes are not the modes of the locked arm."""
        p = self.params
        m2 = p["rho_a2"] * p["l2"]
        mass = p["m_h2"] + m2 + p["m_p"]
        inertia = (p["j_s"] + p["j_h2"] + m2 * p["l2"] ** 2 / 3.0 + p["m_p"] * p["l2"] ** 2
                   + p["j_p"])
        moment = m2 * p["l2"] / 2.0 + p["m_p"] * p["l2"]
        return mass, inertia, moment

    # -- equations of motion -------------------------------------------------------------
    def mass_matrix(self, q) -> np.ndarray:
        """M(q), shape (n_dof, n_dof) [kg, kg m, kg m^2 by block]."""
        q = np.asarray(q, dtype=float)
        return _eom(q, np.zeros_like(q), *self._geom)[0]

    def velocity_terms(self, q, qd) -> np.ndarray:
        """hq(q, q'): Coriolis/centrifugal generalised forces moved to the left side."""
        return _eom(np.asarray(q, float), np.asarray(qd, float), *self._geom)[1]

    def accelerations(self, q, qd, tau=(0.0, 0.0)) -> np.ndarray:
        """q'' for joint torques tau = (tau1, tau2) [N m]."""
        return _accel(np.asarray(q, float), np.asarray(qd, float), float(tau[0]),
                      float(tau[1]), *self._args)

    def rhs(self, t: float, x: np.ndarray, tau1: float = 0.0, tau2: float = 0.0) -> np.ndarray:
        """First-order form x' = f(x) with x = (q, q')."""
        return _rhs(x, tau1, tau2, *self._args)

    def state_names(self) -> list[str]:
        """Names of x = (q, q'): joint angles ``theta1/2`` [rad], modal amplitudes
        ``delta<link>_<mode>`` [m], joint rates ``omega1/2`` [rad/s] and modal rates
        ``delta<link>_<mode>_rate`` [m/s]."""
        modal = [f"delta{i}_{j + 1}" for i in (1, 2) for j in range(self.n_modes)]
        return ["theta1", "theta2", *modal, "omega1", "omega2", *[m + "_rate" for m in modal]]

    def energy(self, x) -> float:
        """Total mechanical energy T + V [J] of state x = (q, q')."""
        x = np.asarray(x, dtype=float)
        q, qd = x[:self.n_dof], x[self.n_dof:]
        return 0.5 * qd @ self.mass_matrix(q) @ qd + 0.5 * q @ self.K @ q

    def initial_state(self, theta1: float = 0.0, theta2: float = 0.0) -> np.ndarray:
        x = np.zeros(2 * self.n_dof)
        x[0], x[1] = theta1, theta2
        return x

    def outputs(self, x) -> dict:
        """Measured signals of state x: joint angles [rad] and rates [rad/s], tip
        deflections w1, w2 [m] in each link's frame, end-effector x_tip, y_tip [m]."""
        nm, n = self.n_modes, self.n_dof
        q, qd = x[:n], x[n:]
        d1, d2 = q[2:2 + nm], q[2 + nm:n]
        dphil1, gl1, gl2, fs = self._tip_geometry
        l1, l2 = self.params["l1"], self.params["l2"]
        w1, w2 = float(d1.sum()), float(d2.sum())
        s1 = complex(l1 - 0.5 * fs * d1 @ gl1 @ d1, w1)
        s2 = complex(l2 - 0.5 * fs * d2 @ gl2 @ d2, w2)
        phi2 = q[0] + q[1] + dphil1 @ d1
        tip = np.exp(1j * q[0]) * s1 + np.exp(1j * phi2) * s2
        return {"theta1": float(q[0]), "theta2": float(q[1]), "omega1": float(qd[0]),
                "omega2": float(qd[1]), "w1": w1, "w2": w2,
                "x_tip": float(tip.real), "y_tip": float(tip.imag)}

    def simulate(self, torque, t_end: float, h: float, method: str = "rk4", x0=None,
                 substeps: int = 1):
        """Simulate with ``torque(t) -> (tau1, tau2)`` [N m] held over each step ``h`` [s]
        (:func:`mbdcore.dae.integrate_held`; ``method`` an ODE method of the table).

        Returns ``(t, x)`` with t of shape (n+1,) and x of shape (n+1, 2 n_dof).
        """
        x = self.initial_state() if x0 is None else np.array(x0, dtype=float)
        return integrate_held(_rhs, lambda t: (*map(float, torque(t)), *self._args), x,
                              0.0, h, int(round(t_end / h)), ode_stepper(method), substeps)

    def derivatives(self, tau1: float, tau2: float):
        """(rhs, args): the compiled right-hand side ``rhs(x, *args)`` with the torques
        [N m] held (for :meth:`~mbdcore.integrators.Integrator.step_autonomous`)."""
        return _rhs, (float(tau1), float(tau2), *self._args)


class ArmProblem(ConstrainedProblem):
    """The arm's equations of motion as an unconstrained :class:`ConstrainedProblem`
    (``M(q) q'' = F``), for :mod:`mbdcore.multibody.modal` and the DAE solvers."""

    def __init__(self, model: FlexibleManipulator, tau=(0.0, 0.0)):
        self.model = model
        self.n = model.n_dof
        self.m = 0
        self.tau = np.asarray(tau, float)

    def mass_matrix(self, q):
        return self.model.mass_matrix(q)

    def forces(self, t, q, v):
        m = self.model
        f = -m.velocity_terms(q, v) - m.K @ q - m.D @ v
        f[:2] += self.tau
        return f

    def initial_state(self):
        return np.zeros(self.n), np.zeros(self.n)


def bang_bang_torque(t: float) -> tuple[float, float]:
    """Open-loop torques of docs/benchmarks.md §1, load case 1a [N m]: +/-0.2 and +/-0.05 for
    0.3 s each."""
    if t < 0.3:
        return 0.2, 0.05
    if t < 0.6:
        return -0.2, -0.05
    return 0.0, 0.0


#: Output signals of the arm (:class:`FlexibleManipulatorBlock`), with units.
ARM_OUTPUT_SIGNALS = (
    Signal("theta1", "rad", "joint 1 angle (link 1 relative to ground)"),
    Signal("theta2", "rad", "joint 2 angle (link 2 relative to the tip tangent of link 1)"),
    Signal("omega1", "rad/s", "joint 1 rate"),
    Signal("omega2", "rad/s", "joint 2 rate"),
    Signal("w1", "m", "tip deflection of link 1, transverse, in its own frame"),
    Signal("w2", "m", "tip deflection of link 2, transverse, in its own frame"),
    Signal("x_tip", "m", "end-effector x position"),
    Signal("y_tip", "m", "end-effector y position"),
)
#: The arm's signal names, defined here once: inputs [N m], outputs, what its sensors
#: measure (joint encoders and tachometers, tip-deflection gauges) and the joint states.
ARM_INPUTS = ("tau1", "tau2")
ARM_OUTPUTS = tuple(s.name for s in ARM_OUTPUT_SIGNALS)
ARM_MEASURED = ("theta1", "theta2", "omega1", "omega2", "w1", "w2")
JOINT_STATES = ("theta1", "theta2", "omega1", "omega2")


class FlexibleManipulatorBlock(OdeBlock):
    """The arm as a block: joint torques in, link states out.

    The torques are held constant over each communication step, which is divided into
    ``substeps`` steps of the chosen ``method`` (an ODE method of
    :mod:`mbdcore.dae.methods`; :class:`~mbdcore.dae.OdeBlock`).  A step that produces a
    non-finite state or fails in the solver raises StepError and leaves the state as
    it was.  Start: straight and at rest at (theta1_0, theta2_0).
    """

    INPUTS = (
        Signal("tau1", "N.m", "joint 1 motor torque"),
        Signal("tau2", "N.m", "joint 2 motor torque"),
    )
    OUTPUTS = ARM_OUTPUT_SIGNALS
    PARAMETERS = ARM_PARAMETERS + stepping_parameters(10) + (
        Parameter("theta1_0", 0.0, "rad", "initial joint 1 angle", min=-10.0, max=10.0),
        Parameter("theta2_0", 0.0, "rad", "initial joint 2 angle", min=-10.0, max=10.0),
    )
    DEFAULT_STOP_TIME = 3.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        arm = {p.name: self.params[p.name] for p in ARM_PARAMETERS}
        self.model = FlexibleManipulator(**arm)
        self.reset()

    def initial_state(self) -> np.ndarray:
        return self.model.initial_state(self.params["theta1_0"], self.params["theta2_0"])

    def state_names(self) -> list[str]:
        """x = (q, q') named by :meth:`FlexibleManipulator.state_names`."""
        return self.model.state_names()

    def derivatives(self):
        return self.model.derivatives(self.inputs["tau1"], self.inputs["tau2"])

    def _state_changed(self) -> None:
        self._out = self.model.outputs(self._x)

    def outputs(self) -> dict:
        return self._out

    def energy(self) -> float:
        """Total mechanical energy [J]."""
        return self.model.energy(self.x)
