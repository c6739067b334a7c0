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

import ctypes
import warnings
from functools import cache
from pathlib import Path

import numpy as np

from mbdcore.blocks import (
    ModelRangeWarning,
    Parameter,
    ParameterError,
    Signal,
)
from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.codegen import CModel, table_setup
from mbdcore.dae.ode_block import AUTO_SUBSTEPS, OdeBlock, ode_stepper, stepping_parameters
from mbdcore.dae.problem import ConstrainedProblem
from mbdcore.dae.simulate import integrate_held
from mbdcore.integrators.base import IntegrationError
from mbdcore.integrators.piecewise import PiecewiseInput
from mbdcore.integrators.runge_kutta import C_FIXED_STEP_HEADER, CSteppedKernel
from mbdcore.multibody.beam_modes import (
    BEAM_KINEMATICS,
    BEAM_KINEMATICS_C_SOURCE,
    SEGMENT_NODES,
    ClampedBeamModes,
    segment_tables,
)
from mbdcore.native import TableLayout, kernel_library, table_layout

__all__ = ["ArmProblem", "ARM_OUTPUT_SIGNALS", "ARM_INPUTS", "ARM_OUTPUTS", "ARM_MEASURED", "JOINT_STATES",
           "ARM_PARAMETERS", "KINEMATICS", "KINEMATICS_RANGE", "N_QUAD", "validate_arm_parameters", "FlexibleManipulator",
           "arm_layout", "bang_bang_torque", "BANG_BANG_TORQUE", "FlexibleManipulatorBlock"]

#: The link kinematics (module docstring): the second-order form of the literature and the
#: exact inextensible form (the engine's modal beam has the same two, from the same C).
KINEMATICS = BEAM_KINEMATICS
#: Largest tip deflection, as a fraction of the link length, up to which each kinematics
#: is accurate (docs/manipulator.md, "Range of validity": against a converged ANCF arm on
#: the open-loop case); beyond it the arm warns once.
KINEMATICS_RANGE = {"second-order": 0.05, "exact": 0.30}

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
    Parameter("geometric_stiffening", 1, "", "1: keep the foreshortening terms, 0: drop them "
              "(second-order kinematics only)", min=0, max=1),
    Parameter("damping", 0.0, "s", "stiffness-proportional structural damping D = c K",
              min=0.0),
    Parameter("kinematics", "exact", "", "link kinematics: 'second-order' "
              "(foreshortening to second order in the deflection) or 'exact' (inextensible, "
              "slope angle = modal sum)", choices=KINEMATICS),
)

#: The joint torques' size in normal use [N m] (the inputs' FMI nominal): the benchmark's
#: torques are 0.05-0.2 N m and the controllers' limits 1-2 N m.
TORQUE_NOMINAL = 1.0

N_QUAD = 24  # Gauss points per link: exact to ~1e-13 for the mode products up to N = 5


#: The arm's equations in C (one implementation: an extension module here, compiled into the C FMU).
ARM_C_SOURCE = Path(__file__).resolve().parent / "native" / "arm.c"
#: What the arm compiles from, in order: the beam point kinematics it shares with the
#: engine's modal beam, then the arm.
ARM_C_SOURCES = (BEAM_KINEMATICS_C_SOURCE, ARM_C_SOURCE)
#: The headers those include: the fixed-step loop and the macros of the table layout.
ARM_C_HEADERS = (C_FIXED_STEP_HEADER, TABLE_LAYOUT_HEADER)
_arm_library = kernel_library("mbdcore.models._arm", ARM_C_SOURCES, ARM_C_HEADERS)


@cache
def arm_layout() -> TableLayout:
    """The layout of the arm's table, ``ARM_LAYOUT`` of arm.c (its one declaration)."""
    return table_layout(_arm_library, "ARM_LAYOUT")


class ArmKernel(CSteppedKernel):
    """The compiled right-hand side of the arm, ``kernel(x, tau1, tau2) -> x'``, with its
    own stepping loop for RK4, Gill and Treanor (``advance``, used by
    :meth:`~mbdcore.integrators.Integrator.step_autonomous`: one call per communication
    step)."""

    def __init__(self, table: np.ndarray):
        self.table = np.ascontiguousarray(table, dtype=float)
        self.lib = _arm_library()
        if self.lib.arm_table_length(self.table) != self.table.size:
            raise ValueError("arm table does not match the layout of arm.c")

    def __call__(self, x, tau1, tau2):
        x = np.ascontiguousarray(x, dtype=float)
        dx = np.empty_like(x)
        if self.lib.arm_rhs(self.table, x, float(tau1), float(tau2), dx):
            raise IntegrationError("singular mass matrix")
        return dx

    failure = "singular mass matrix or non-finite state"

    def _advance(self, x, register, args, h, n, method, first):
        return self.lib.arm_advance(self.table, x, register, float(args[0]), float(args[1]),
                                    h, n, method, first)

    rhs_failure = "singular mass matrix"
    n_inputs = 2      # tau1, tau2 [N m]

    def _run(self, inputs, x, register, t0, h, substeps, n_steps, method, record_every,
             record, done):
        return self.lib.arm_run(self.table, inputs, x, register, t0, h, substeps, n_steps,
                                method, record_every, record, done)

    def outputs(self, x) -> np.ndarray:
        out = np.empty(8)
        self.lib.arm_outputs(self.table, np.ascontiguousarray(x, dtype=float), out)
        return out


def validate_arm_parameters(**params) -> dict:
    """Checked arm parameters (defaults filled in); ParameterError names a bad one."""

    declared = {p.name: p for p in ARM_PARAMETERS}
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ParameterError(f"unknown arm parameter(s) {unknown}; accepted: {list(declared)}")
    checked = {name: p.validate(params.get(name, p.default)) for name, p in declared.items()}
    if checked["kinematics"] == "exact" and not checked["geometric_stiffening"]:
        raise ParameterError("geometric_stiffening = 0 drops the foreshortening of the "
                             "second-order kinematics; the exact kinematics always have it: "
                             "choose kinematics = 'second-order' to drop it")
    return checked


def _link_modes(p: dict, k: int, tip: tuple, tip_names: tuple) -> ClampedBeamModes:
    """The assumed modes of link ``k``; parameters each in its range whose combination
    has no modes in double precision (l1 = 1e308 m: the characteristic equation
    overflows) are a ParameterError naming them, not a RuntimeError of the root search."""
    names = [f"l{k}", f"rho_a{k}", f"ei{k}"] + (list(tip_names) if any(tip) else [])
    try:
        with np.errstate(all="ignore"):   # overflow in the scan: reported below, by name
            return ClampedBeamModes.compute(p["n_modes"], p[f"l{k}"], p[f"rho_a{k}"],
                                            p[f"ei{k}"], *tip)
    except RuntimeError as e:
        units = {d.name: d.unit for d in ARM_PARAMETERS}
        values = ", ".join(f"{n} = {p[n]:g}" + (f" {units[n]}" if units[n] else "")
                           for n in names)
        raise ParameterError(f"the modes of link {k} cannot be computed from {values} "
                             f"({e}): values this extreme, each within its declared range, "
                             "are not representable in the mode equations; accepted: "
                             "lengths, densities and tip loads of physical size") from None


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
        self.modes1 = _link_modes(p, 1, tip1, ("m_h2", "j_s", "j_h2"))
        self.modes2 = _link_modes(p, 2, tip2, ("m_p", "j_p"))
        xq1, wq1 = self.modes1.gauss_points(N_QUAD)
        xq2, wq2 = self.modes2.gauss_points(N_QUAD)
        phi1, g1 = self.modes1.shapes(xq1), self.modes1.foreshortening(xq1, 40)
        phi2, g2 = self.modes2.shapes(xq2), self.modes2.foreshortening(xq2, 40)
        gl1 = self.modes1.foreshortening(p["l1"])[0]
        gl2 = self.modes2.foreshortening(p["l2"])[0]
        dphil1 = self.modes1.shapes(p["l1"], 1)[0]
        dphil2 = self.modes2.shapes(p["l2"], 1)[0]
        self.K = np.zeros((self.n_dof, self.n_dof))
        self.K[2:2 + nm, 2:2 + nm] = self.modes1.stiffness()
        self.K[2 + nm:, 2 + nm:] = self.modes2.stiffness()
        self.D = p["damping"] * self.K
        exact = p["kinematics"] == "exact"
        m_seg = SEGMENT_NODES if exact else 0
        segments = {}
        for link, modes, xq, length in ((1, self.modes1, xq1, p["l1"]),
                                        (2, self.modes2, xq2, p["l2"])):
            # exact kinematics: segments [0, x_1], ..., [x_nq, l] of each link
            segments[f"wseg{link}"], segments[f"dseg{link}"] = (
                segment_tables(modes, np.append(xq, length), m_seg) if exact else ((), ()))
        self.kernel = ArmKernel(arm_layout().pack(
            nm=nm, nq1=len(xq1), nq2=len(xq2), fs=p["geometric_stiffening"],
            l1=p["l1"], l2=p["l2"], m_h2=p["m_h2"], m_p=p["m_p"], j_h1=p["j_h1"],
            j_h2=p["j_h2"], j_s=p["j_s"], j_p=p["j_p"], exact=exact, m_seg=m_seg,
            xq1=xq1, wq1=wq1 * p["rho_a1"], phi1=phi1, g1=g1,
            xq2=xq2, wq2=wq2 * p["rho_a2"], phi2=phi2, g2=g2,
            dphil1=dphil1, gl1=gl1, dphil2=dphil2, gl2=gl2, K=self.K, D=self.D, **segments))
        # the range checks run after every step: one message buffer, not one per call
        self._message = ctypes.create_string_buffer(512)

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
        return self._eom(q, np.zeros(self.n_dof))[0]

    def velocity_terms(self, q, qd) -> np.ndarray:
        """hq(q, q'): Coriolis/centrifugal generalised forces moved to the left side."""
        return self._eom(q, qd)[1]

    def _eom(self, q, qd):
        n = self.n_dof
        M, hq = np.empty((n, n)), np.empty(n)
        self.kernel.lib.arm_eom(self.kernel.table, np.ascontiguousarray(q, dtype=float),
                                np.ascontiguousarray(qd, dtype=float), M, hq)
        return M, hq

    def accelerations(self, q, qd, tau=(0.0, 0.0)) -> np.ndarray:
        """q'' for joint torques tau = (tau1, tau2) [N m]."""
        x = np.concatenate([np.asarray(q, float), np.asarray(qd, float)])
        return self.kernel(x, tau[0], tau[1])[self.n_dof:]

    def rhs(self, t: float, x: np.ndarray, tau1: float = 0.0, tau2: float = 0.0) -> np.ndarray:
        """First-order form x' = f(x) with x = (q, q')."""
        return self.kernel(x, tau1, tau2)

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

    def range_message(self, x) -> str:
        """Why state x is outside the range where the chosen kinematics are accurate
        (:data:`KINEMATICS_RANGE`), or "" inside it (``arm_range`` in ``native/arm.c``;
        the C FMU's ``arm_validity`` makes the same check with the same message)."""
        message = self._message
        limit = KINEMATICS_RANGE[self.params["kinematics"]]
        if self.kernel.lib.arm_range(self.kernel.table, np.ascontiguousarray(x, dtype=float),
                                     limit, message, len(message)):
            return message.value.decode()
        return ""

    def limit_message(self, x, limit: float) -> str:
        """Why state x is beyond the hard limit ``limit`` (tip deflection as a fraction of
        the link length), or "" within it (``arm_limit`` in ``native/arm.c``; the C FMU's
        ``arm_validity`` makes the same check with the same message)."""
        message = self._message
        if self.kernel.lib.arm_limit(self.kernel.table, np.ascontiguousarray(x, dtype=float),
                                     float(limit), message, len(message)):
            return message.value.decode()
        return ""

    def outputs(self, x) -> dict:
        """Measured signals of state x: joint angles [rad] and rates [rad/s], tip
        deflections w1, w2 [m] in each link's frame, end-effector x_tip, y_tip [m]."""
        return dict(zip(ARM_OUTPUTS, map(float, self.kernel.outputs(x))))

    def simulate(self, torque=None, t_end: float = 1.2, h: float = 1e-4, method: str = "rk4",
                 x0=None, substeps: int = 1, record_every: int = 1):
        """Simulate with the torques ``torque(t) -> (tau1, tau2)`` [N m] sampled at the
        start of each step ``h`` [s] and held over it (:func:`mbdcore.dae.integrate_held`;
        ``method`` an ODE method of the table), from 0 to ``t_end`` [s].  The default is
        load case 1a of docs/benchmarks.md §1: :data:`BANG_BANG_TORQUE` for 1.2 s at
        h = 1e-4 s.

        A torque with an exact piecewise form (a
        :class:`~mbdcore.integrators.PiecewiseInput`, or :func:`bang_bang_torque`,
        which declares one) with RK4, Gill or Treanor runs in one C call (``arm_run``);
        any other function or method steps from Python, with the same numbers.

        Returns ``(t, x)`` with t of shape (n+1,) and x of shape (n+1, 2 n_dof) (every
        ``record_every``-th step and the last).
        """
        x = self.initial_state() if x0 is None else np.array(x0, dtype=float)
        torque = BANG_BANG_TORQUE if torque is None else torque
        return integrate_held(self.kernel, torque, x, 0.0, h, int(round(t_end / h)),
                              ode_stepper(method), substeps, record_every)

    def derivatives(self, tau1: float, tau2: float):
        """(rhs, args): the compiled right-hand side ``rhs(x, *args)`` with the torques
        [N m] held (for :meth:`~mbdcore.integrators.Integrator.step_autonomous`)."""
        return self.kernel, (float(tau1), float(tau2))


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
    0.3 s each.  Its ``breakpoints`` attribute holds the jump times (0.3 s, 0.6 s).

    Exactly piecewise constant: its ``piecewise`` attribute is the same schedule as a
    table, :data:`BANG_BANG_TORQUE` (equal at every t, before 0 s too), which
    :meth:`FlexibleManipulator.simulate` samples in C."""
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

#: The open-loop torques of load case 1a (:func:`bang_bang_torque`) as a table a C loop
#: samples: tau1, tau2 [N m] constant from 0 s, 0.3 s and 0.6 s on.
BANG_BANG_TORQUE = PiecewiseInput.constant_pieces(
    (0.0, 0.3, 0.6), ((0.2, 0.05), (-0.2, -0.05), (0.0, 0.0)), names=ARM_INPUTS,
    units=("N.m", "N.m"))
#: The times [s] where the torques jump, for :func:`mbdcore.dae.simulate`'s
#: ``breakpoints`` (steps end there and the integrator restarts).
bang_bang_torque.breakpoints = BANG_BANG_TORQUE.breakpoints
#: The same torques as a table (:func:`mbdcore.integrators.piecewise_form`).
bang_bang_torque.piecewise = BANG_BANG_TORQUE


class FlexibleManipulatorBlock(OdeBlock):
    """The arm as a block: joint torques in, link states out.

    The torques are held constant over each communication step, which is divided into
    ``substeps`` steps of the chosen ``method`` (an ODE method of
    :mod:`mbdcore.dae.methods`; :class:`~mbdcore.dae.OdeBlock`).  A step that produces a
    non-finite state or fails in the solver raises StepError and leaves the state as
    it was.  Start: straight and at rest at (theta1_0, theta2_0).
    """

    INPUTS = (
        Signal("tau1", "N.m", "joint 1 motor torque", nominal=TORQUE_NOMINAL),
        Signal("tau2", "N.m", "joint 2 motor torque", nominal=TORQUE_NOMINAL),
    )
    OUTPUTS = ARM_OUTPUT_SIGNALS
    PARAMETERS = ARM_PARAMETERS + stepping_parameters(AUTO_SUBSTEPS, error_control=True) + (
        Parameter("theta1_0", 0.0, "rad", "initial joint 1 angle", min=-10.0, max=10.0),
        Parameter("theta2_0", 0.0, "rad", "initial joint 2 angle", min=-10.0, max=10.0),
        Parameter("max_tip_deflection", 1.0, "", "hard limit of a link's tip deflection, "
                  "as a fraction of its length: a step beyond it is refused", min=0.0,
                  exclusive_min=True, max=10.0),
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

    def _refused(self, x) -> str:
        return self.model.limit_message(x, self.params["max_tip_deflection"])

    def _state_changed(self) -> None:
        self._out = self.model.outputs(self._x)
        if not self._warned:
            message = self.model.range_message(self._x)
            if message:
                self._warned = True
                warnings.warn(message, ModelRangeWarning, stacklevel=2)

    def reset(self, t0: float = 0.0) -> None:
        self._warned = False         # the range warning, once per run
        super().reset(t0)

    def outputs(self) -> dict:
        return self._out

    def energy(self) -> float:
        """Total mechanical energy [J]."""
        return self.model.energy(self.x)

    def c_model(self) -> CModel:
        """The arm's C equations (``native/arm.c``, the code this block runs) over its
        table: the physical parameters, the number of modes, the shape family and the
        stiffening switch are built in; torques, initial angles, method, substeps (0,
        "auto", by the wrapper's step doubling as this block) and rtol/atol stay settable."""
        table = self.model.kernel.table
        limit = KINEMATICS_RANGE[self.params["kinematics"]]
        outputs = "\n".join(f"    OUT_{name} = y[{i}];" for i, name in enumerate(ARM_OUTPUTS))
        setup = table_setup("arm_table_length", "ARM_TABLE", "ARM_TABLE_SIZE",
                            "the arm's table")
        glue = f"""
#define ARM_TABLE_SIZE {table.size}

{setup}
void model_initial(ModelData *d) {{
    int i;
    for (i = 0; i < N_X; i++) d->x[i] = 0.0;
    X(0) = PAR_theta1_0;
    X(1) = PAR_theta2_0;
}}

void model_derivatives(const ModelData *d, const double *x, double *dx) {{
    int i;
    if (arm_rhs(ARM_TABLE, x, IN_tau1, IN_tau2, dx))   /* singular M: the step is undone */
        for (i = 0; i < N_X; i++) dx[i] = NAN;
}}

void model_update(ModelData *d, double h) {{ (void)d; (void)h; }}

void model_outputs(ModelData *d) {{
    double y[8] = {{0.0}};
    arm_outputs(ARM_TABLE, d->x, y);
{outputs}
}}

/* 2 beyond the hard limit (the step is discarded), 1 beyond the range of the
   kinematics (KINEMATICS_RANGE, docs/manipulator.md: a warning, once) */
int model_validity(const ModelData *d, char *msg, size_t n) {{
    return arm_validity(ARM_TABLE, d->x, PAR_max_tip_deflection, {limit!r}, msg, n);
}}
"""
        return CModel(glue, c_sources=ARM_C_SOURCES, api=("BEAM_API", "ARM_API"),
                      n_states=2 * self.model.n_dof, tables={"ARM_TABLE": table},
                      state_names=tuple(self.model.state_names()),
                      fixed_parameters=tuple(p.name for p in ARM_PARAMETERS))
