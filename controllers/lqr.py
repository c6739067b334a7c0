"""LQG state feedback for the flexible arm: joint angles, rates and tip deflections
measured, the modal states estimated by a Kalman predictor.

:func:`design_arm_lqg` linearises the arm (:func:`~controllers.ioadapters.linearize_arm`)
and designs the loop (:func:`~controllers.design.lqg`); :class:`ArmLQGController` is the
block that runs it, in Python, in python-control (``block_iosys``) and as an FMU: the
whole design is one JSON text parameter, ``design``.

Law (``xh`` estimates the deviation of the arm state from the linearisation point),
with ``reference="rigid"``::

    x_ref = (theta_ref, 0, omega_ref, 0)                 # rigid reference, links straight
    tau   = sat( tau_ff + K (x_ref - x_lin - xh) )
    xh   <- Ad xh + Bd tau + L (y - y_lin - C xh)       # at the end of each step

``tau_ff`` is the rigid-arm inverse dynamics on the reference (as the joint PD).  That
reference is not a motion of the flexible arm (the feedforward bends the links the
regulator holds straight): the joints overshoot the target by 15-20 % and creep back
over seconds.

``reference="model"`` is a two-degree-of-freedom structure: the feedforward torques
are inputs (``tau1_ff``, ``tau2_ff``, from :class:`FlexibleArmReference`) and the state
reference is the design's own linear model driven by them, so it is a motion of the
flexible arm by construction and the loop corrects only the model error::

    tau   = sat( tau_ff + K (r - xh) )
    r    <- Ad r + Bd tau_ff                           # r(0) = 0: starts at x_lin
    xh   <- Ad xh + Bd tau + L (y - y_lin - C xh)

:class:`FlexibleArmReference` makes ``tau_ff`` a rest-to-rest move of that linear model
(every mode at rest at the end), so the reference leaves no vibration behind.

Integral action (``design_arm_lqg(integrated=INTEGRATED)``, an
:class:`~controllers.design.LQIDesign`): the measured joint angles' error against the
state reference (``x_ref`` or ``r``) is summed, and its integrators are part of the
LQR design::

    tau_u = tau_ff + K (x_ref - x_lin - xh) - Ki z      # (or K (r - xh))
    tau   = sat(tau_u)
    z    <- z + dt (theta - theta_ref)                   # unless it winds up (below)

so a constant disturbance torque or a model error leaves no joint offset at rest.
Anti-windup by conditional integration: ``z`` keeps its value over a step in which a
joint's torque is at its limit and the step's integration would drive ``tau_u``
further past it.  The observer always sees the applied (clipped) torque.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sl

from mbdcore.blocks import Block, Parameter, ParameterError, Signal, StepError
from mbdcore.models.manipulator import ARM_PARAMETERS
from mbdcore.models.rigid_arm import RIGID_PARAMETER_NAMES, RigidTwoLinkArm

from controllers.design import (DesignError, LQGDesign, LQIDesign, design_from_json,
    integral_state_names)
from controllers.ioadapters import VectorState
from controllers.joint_pd import JointPDController
from controllers.trajectory import QuinticJointTrajectory, quintic
from controllers.design import lqg, lqg_integral, modal_weight, weight_matrix
from controllers.ioadapters import linearize_arm

__all__ = ["DEFAULT_Q", "DEFAULT_R", "DEFAULT_PROCESS_NOISE", "DEFAULT_MEASUREMENT_NOISE",
           "MEASURED", "DEFAULT_Q_INTEGRAL", "INTEGRATED", "design_arm_lqg",
           "ROBUST_MODE_WEIGHTS", "ROBUST_PROCESS_NOISE", "ROBUST_PAYLOADS",
           "ROBUST_EI_FACTORS", "design_arm_lqg_robust", "arm_plant_grid",
           "default_design_json", "TextParameter", "FEEDFORWARD_INPUTS", "design_parameter",
           "ArmLQGController", "rest_to_rest_feedforward", "FlexibleArmReference"]

#: Default weights of :func:`design_arm_lqg` (SI units: rad, m, N m).
DEFAULT_Q = {"theta1": 1.0e3, "theta2": 5.0e2, "w1": 1.0e5, "w2": 2.0e4}
DEFAULT_R = {"tau1": 1.0, "tau2": 1.0}
DEFAULT_PROCESS_NOISE = {"tau1": 1.0, "tau2": 1.0}
DEFAULT_MEASUREMENT_NOISE = {"theta1": 1e-4, "theta2": 1e-4, "omega1": 1e-2, "omega2": 1e-2,
                             "w1": 1e-4, "w2": 1e-4}
MEASURED = ("theta1", "theta2", "omega1", "omega2", "w1", "w2")
#: Default weights of the joint-angle integrators (``integrated=INTEGRATED``) [1/(rad s)^2].
DEFAULT_Q_INTEGRAL = {"theta1_int": 1.0e4, "theta2_int": 5.0e3}
INTEGRATED = ("theta1", "theta2")


def design_arm_lqg(Q=None, R=None, process_noise=None, measurement_noise=None,
                   theta_lin=(0.0, 0.0), dt: float = 1e-3, measured=MEASURED,
                   integrated=(), mode_weights=None, **arm_params) -> LQGDesign:
    """LQG design for the arm linearised at rest at ``theta_lin`` [rad].

    Weights default to :data:`DEFAULT_Q` etc.; named by arm state, output or input
    (see :func:`controllers.design.lqr`).  Returns an :class:`LQGDesign` whose
    ``to_json()`` is the ``design`` parameter of :class:`ArmLQGController`.

    ``integrated`` (e.g. :data:`INTEGRATED`, the joint angles) adds integral action on
    those measured outputs (:func:`controllers.design.lqg_integral`): the result is an
    :class:`~controllers.design.LQIDesign`, and ``Q`` may weight the integrators
    ``theta1_int``, ``theta2_int`` [1/(rad s)^2] (default :data:`DEFAULT_Q` with
    :data:`DEFAULT_Q_INTEGRAL`).

    ``mode_weights`` ({frequency [Hz]: weight}) adds to ``Q`` a penalty on the amplitude
    of the arm's mode nearest each frequency (:func:`controllers.design.modal_weight`);
    ``process_noise`` may name states as well as inputs
    (:func:`controllers.design.process_noise_covariance`).  :func:`design_arm_lqg_robust`
    uses both.
    """

    plant = linearize_arm(theta=theta_lin, outputs=MEASURED, **arm_params)
    x_lin = np.zeros(plant.nstates)
    x_lin[:2] = theta_lin
    noise = (DEFAULT_PROCESS_NOISE if process_noise is None else process_noise,
             DEFAULT_MEASUREMENT_NOISE if measurement_noise is None else measurement_noise)
    R = DEFAULT_R if R is None else R
    if mode_weights:

        Q = (({**DEFAULT_Q, **DEFAULT_Q_INTEGRAL} if integrated else DEFAULT_Q)
             if Q is None else Q)
        if integrated:      # the integrators are not plant states: weigh them apart
            names = integral_state_names(integrated)
            Q_int = {k: v for k, v in Q.items() if k in names} if isinstance(Q, dict) else {}
            Q = {k: v for k, v in Q.items() if k not in names} if isinstance(Q, dict) else Q
        Qm = weight_matrix(plant, Q, "state") + sum(
            w * modal_weight(plant, f) for f, w in mode_weights.items())
        if integrated:
            n = plant.nstates
            Qa = np.zeros((n + len(integrated),) * 2)
            Qa[:n, :n] = Qm
            for k, name in enumerate(integral_state_names(integrated)):
                Qa[n + k, n + k] = float(Q_int.get(name, 0.0))
            Qm = Qa
        Q = Qm
    if integrated:
        Q = {**DEFAULT_Q, **DEFAULT_Q_INTEGRAL} if Q is None else Q
        design = lqg_integral(plant, Q, R, list(measured), *noise, dt, list(integrated),
                              x_lin=x_lin)
    else:
        design = lqg(plant, DEFAULT_Q if Q is None else Q, R, list(measured), *noise, dt,
                     x_lin=x_lin)
    design.info.update(theta_lin=list(theta_lin), arm_params=arm_params)
    return design


#: Weights of :func:`design_arm_lqg_robust`: the default ones, plus a penalty on the
#: amplitude of the 2.63 Hz mode (link 2 bending, which the default regulator damps by
#: only 0.06) and process noise on the modal rates of link 1 and of link 2's first mode,
#: so that the observer corrects those modes from the measured tip deflections
#: [(m/s)^2 per 1 ms step].  Not on ``delta2_2_rate``: that costs 25 deg of phase margin
#: at tau2 (tests/test_control_lqg_robust2.py).
ROBUST_MODE_WEIGHTS = {2.63: 1.0e3}
ROBUST_PROCESS_NOISE = {**DEFAULT_PROCESS_NOISE, "delta1_1_rate": 1e-5,
                        "delta1_2_rate": 1e-5, "delta2_1_rate": 1e-5}
#: Plants of :func:`arm_plant_grid`: payload [kg] and factor on both links' EI.
ROBUST_PAYLOADS = (0.08, 0.1, 0.125, 0.15)
ROBUST_EI_FACTORS = (0.9, 1.0, 1.1)


def design_arm_lqg_robust(**kwargs) -> LQGDesign:
    """:func:`design_arm_lqg` with :data:`ROBUST_MODE_WEIGHTS` and
    :data:`ROBUST_PROCESS_NOISE` (either may be overridden by keyword): the option
    whose linear closed loop keeps its link modes damped on every arm of
    :func:`arm_plant_grid` (payload 0.08-0.15 kg, EI +/-10 %), at the price of the
    16 Hz mode (see tests/test_control_lqg_robust2.py for the figures)."""
    kwargs.setdefault("mode_weights", ROBUST_MODE_WEIGHTS)
    kwargs.setdefault("process_noise", ROBUST_PROCESS_NOISE)
    return design_arm_lqg(**kwargs)


def arm_plant_grid(payloads=ROBUST_PAYLOADS, ei_factors=ROBUST_EI_FACTORS, theta=(0.0, 0.0),
                   outputs=MEASURED, **arm_params) -> dict:
    """Linear arms for :func:`controllers.design.robustness_scan`.

    Returns ``{(m_p, factor): StateSpace}``: the arm linearised at ``theta`` [rad] with
    payload ``m_p`` [kg] and both links' flexural stiffness ``factor`` times its value
    (``arm_params`` or the default, 1 N m^2), continuous time.
    """

    ei = {k: arm_params.pop(k, 1.0) for k in ("ei1", "ei2")}
    return {(m_p, f): linearize_arm(theta=theta, outputs=outputs, m_p=m_p, ei1=f * ei["ei1"],
                                    ei2=f * ei["ei2"], **arm_params)
            for m_p in payloads for f in ei_factors}


@functools.lru_cache(maxsize=1)
def default_design_json() -> str:
    """The design used when ``design`` is empty (default weights, default arm)."""
    return design_arm_lqg().to_json()


@dataclass(frozen=True)
class TextParameter(Parameter):
    """A free-text (FMI String) parameter holding JSON; ``""`` means "default"."""

    def accepted(self) -> str:
        return "a JSON object, or '' for the default"

    def validate(self, value):
        if not isinstance(value, str):
            raise ParameterError(f"parameter {self.name!r} must be a string "
                                 f"({self.accepted()}), got {type(value).__name__}")
        if value:
            try:
                if not isinstance(json.loads(value), dict):
                    raise ValueError("not an object")
            except ValueError as e:
                raise ParameterError(f"parameter {self.name!r} is not {self.accepted()}: {e}") \
                    from None
        return value


FEEDFORWARD_INPUTS = (Signal("tau1_ff", "N.m", "feedforward torque, joint 1"),
                      Signal("tau2_ff", "N.m", "feedforward torque, joint 2"))


def design_parameter(text: str) -> LQGDesign:
    """The LQG design held by a ``design`` parameter ('' : the default design)."""
    try:
        return design_from_json(text or default_design_json())
    except (DesignError, TypeError, ValueError) as e:
        raise ParameterError(f"parameter 'design' is not a valid LQG design: {e}") from None


class ArmLQGController(Block):
    """LQG state feedback + feedforward for the two-link flexible arm (module doc).

    Discrete time: the block must be stepped with the design's sample time.  With
    ``reference="model"`` the move must start at the design's linearisation point.
    A design with integrators (:class:`~controllers.design.LQIDesign`) switches on the
    integral action and its anti-windup (module doc).
    """

    INPUTS = JointPDController.INPUTS + (
        Signal("w1", "m", "measured tip deflection of link 1"),
        Signal("w2", "m", "measured tip deflection of link 2"),
    ) + FEEDFORWARD_INPUTS
    OUTPUTS = JointPDController.OUTPUTS
    PARAMETERS = (
        TextParameter("design", "", "", "LQG design as JSON (LQGDesign.to_json())"),
        Parameter("tau_max1", 2.0, "N.m", "torque limit, joint 1", min=0.0, exclusive_min=True),
        Parameter("tau_max2", 1.0, "N.m", "torque limit, joint 2", min=0.0, exclusive_min=True),
        Parameter("feedforward", 1, "", "reference 'rigid': 1 rigid-model feedforward on, 0 off",
                  min=0, max=1),
        Parameter("reference", "rigid", "", "state reference: 'rigid' (theta_ref, straight "
                  "links) or 'model' (the design's model driven by tau1_ff, tau2_ff)",
                  choices=("rigid", "model")),
    ) + tuple(p for p in ARM_PARAMETERS if p.name in RIGID_PARAMETER_NAMES)
    # the estimate is updated at the end of a step: tau depends on the measurements only
    # through the state, on the reference and the feedforward directly
    FEEDTHROUGH = {o: tuple(s.name for s in JointPDController.INPUTS[:6] + FEEDFORWARD_INPUTS)
                   for o in ("tau1", "tau2")}
    DEFAULT_STOP_TIME = 3.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self.design = d = design_parameter(p["design"])
        if d.inputs != ["tau1", "tau2"]:
            raise ParameterError(f"parameter 'design': inputs {d.inputs}, expected ['tau1', 'tau2']")
        bad = [m for m in d.measured if m not in self._input_spec]
        if bad:
            raise ParameterError(f"parameter 'design' measures {bad}, which are not inputs of "
                                 f"{type(self).__name__}: {', '.join(self._input_spec)}")
        self.Ad, self.Bd, self.C, self.K, self.L = (np.asarray(getattr(d, a), float)
                                                    for a in ("Ad", "Bd", "C", "K", "L"))
        self.x_lin = np.asarray(d.x_lin, float)
        self.y_lin = np.asarray(d.y_lin, float)
        self._ref_index = [d.states.index(n) for n in ("theta1", "theta2", "omega1", "omega2")]
        if isinstance(d, LQIDesign):
            self.Ki = np.asarray(d.Ki, float)
            self._int_rows = d.integrated_rows()
            self.C_int = self.C[self._int_rows]
        else:
            self.Ki = np.zeros((2, 0))
            self._int_rows = np.zeros(0, dtype=int)
            self.C_int = np.zeros((0, len(self.Ad)))
        self.rigid = RigidTwoLinkArm.from_flexible(**{k: p[k] for k in RIGID_PARAMETER_NAMES})
        self.tau_max = np.array([p["tau_max1"], p["tau_max2"]])
        self.reset()

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self.xh = np.zeros(len(self.Ad))
        self.r = np.zeros(len(self.Ad))
        self.z = np.zeros(len(self._int_rows))

    def _feedforward(self) -> np.ndarray:
        return np.array([self.inputs["tau1_ff"], self.inputs["tau2_ff"]])

    def _reference(self):
        """The state reference as a deviation from ``x_lin``, and the feedforward [N m]."""
        if self.params["reference"] == "model":
            return self.r, self._feedforward()
        u = self.inputs
        th = np.array([u["theta1_ref"], u["theta2_ref"]])
        om = np.array([u["omega1_ref"], u["omega2_ref"]])
        x_ref = np.zeros(len(self.Ad))
        x_ref[self._ref_index] = np.r_[th, om]
        ff = (self.rigid.inverse_dynamics(th, om, (u["alpha1_ref"], u["alpha2_ref"]))
              if self.params["feedforward"] else np.zeros(2))
        return x_ref - self.x_lin, ff

    def _unsaturated_torques(self) -> np.ndarray:
        dx_ref, ff = self._reference()
        return ff + self.K @ (dx_ref - self.xh) - self.Ki @ self.z

    def _torques(self) -> np.ndarray:
        return np.clip(self._unsaturated_torques(), -self.tau_max, self.tau_max)

    def outputs(self) -> dict:
        tau = self._torques()
        return {"tau1": float(tau[0]), "tau2": float(tau[1])}

    def do_step(self, t: float, h: float) -> None:
        if abs(h - self.design.dt) > 1e-9 * self.design.dt:
            raise StepError(f"{type(self).__name__} is designed for steps of "
                            f"{self.design.dt!r} s; got a step of {h!r} s at t = {t!r} s")
        y = np.array([self.inputs[m] for m in self.design.measured])
        tau_u = self._unsaturated_torques()
        tau = np.clip(tau_u, -self.tau_max, self.tau_max)
        if len(self.z):
            # error of the integrated outputs against the state reference
            e = y[self._int_rows] - self.y_lin[self._int_rows] - self.C_int @ self._reference()[0]
            dz = self.design.dt * e
            push = -self.Ki @ dz                       # what integrating adds to tau_u
            winding = (np.abs(tau_u) > self.tau_max) & (push * tau_u > 0)
            if not winding.any():
                self.z = self.z + dz
        self.xh = self.Ad @ self.xh + self.Bd @ tau + self.L @ (y - self.y_lin - self.C @ self.xh)
        if self.params["reference"] == "model":
            self.r = self.Ad @ self.r + self.Bd @ self._feedforward()
        self.time = t + h

    def vector_state(self) -> VectorState:
        n = len(self.Ad)

        def set_x(block, x):
            block.xh = np.array(x[:n], dtype=float)
            block.r = np.array(x[n:2 * n], dtype=float)
            block.z = np.array(x[2 * n:], dtype=float)
        integrators = (integral_state_names(self.design.integrated)
                       if isinstance(self.design, LQIDesign) else [])
        return VectorState([f"xh_{s}" for s in self.design.states]
                           + [f"ref_{s}" for s in self.design.states] + integrators,
                           lambda block: np.r_[block.xh, block.r, block.z], set_x)

    def _get_internal(self):
        return {"xh": self.xh.copy(), "r": self.r.copy(), "z": self.z.copy()}

    def _set_internal(self, internal):
        self.xh = np.array(internal["xh"], dtype=float)
        self.r = np.array(internal["r"], dtype=float)
        self.z = np.array(internal.get("z", ()), dtype=float)


def rest_to_rest_feedforward(design: LQGDesign, theta_start, theta_end, duration: float,
                             rigid: RigidTwoLinkArm | None = None, n_basis: int = 10,
                             deflection_weight: float = 100.0):
    """Feedforward torques that move the design's linear arm model rest to rest.

    The torque is the rigid-arm inverse dynamics of the quintic from ``theta_start`` to
    ``theta_end`` [rad] in ``duration`` [s], plus for each joint a correction
    ``sum_j c_j s^2 (1 - s)^2 P_j(s)`` (``s = t / duration``, ``P_j`` Legendre
    polynomials, ``j < n_basis``) that vanishes with its slope at both ends.  The
    coefficients satisfy exactly the linear conditions "the sampled model
    ``x[k+1] = Ad x[k] + Bd tau_ff[k]`` ends at the target joint angles with every other
    state (modes, rates) zero" and, among those solutions, minimise

        sum_k |theta[k] - theta_quintic[k]|^2 + deflection_weight (w1[k]^2 + w2[k]^2)

    (joint angles [rad], tip deflections ``w_i = sum_j delta<i>_j`` [m]): the joints
    stay near the quintic and the links bend little.  Without that cost the least-norm
    coefficients swing the joints far past the target and bend link 1 by 20 % of its
    length in a 2 s move.

    Parameters
    ----------
    design : LQGDesign
        Gives the model (``Ad``, ``Bd`` at ``dt``, state names) and its linearisation
        point, which must be the start of the move.
    rigid : RigidTwoLinkArm, optional
        For the rigid part (default: the arm of BENCHMARKS.md §1).
    n_basis : int
        Correction functions per joint; ``2 n_basis`` must exceed the number of states.
    deflection_weight : float
        Weight of the tip deflections [rad^2/m^2] against the joint deviation.

    Returns
    -------
    tau_ff : ndarray, shape (N, 2)
        Torques [N m] held over the steps ``k dt``, ``N = round(duration / dt)``.
    x_ref : ndarray, shape (N + 1, n)
        The model's state (absolute: ``x_lin`` added), at rest at the target at ``N``.

    Raises
    ------
    DesignError
        The start is not the linearisation point, or the model cannot reach the
        target at rest with these basis functions.
    """
    dt = design.dt
    Ad, Bd = np.asarray(design.Ad), np.asarray(design.Bd)
    n = len(Ad)
    x_lin = np.asarray(design.x_lin)
    th = [design.states.index(name) for name in ("theta1", "theta2")]
    theta_start, theta_end = np.asarray(theta_start, float), np.asarray(theta_end, float)
    if not np.allclose(theta_start, x_lin[th], atol=1e-12):
        raise DesignError(f"the move starts at theta = {theta_start.tolist()} rad, not at the "
                          f"design's linearisation point {x_lin[th].tolist()} rad")
    if 2 * n_basis <= n:
        raise DesignError(f"n_basis = {n_basis}: 2 n_basis must exceed the {n} states of the "
                          "model (the end conditions)")
    rigid = rigid or RigidTwoLinkArm.from_flexible()
    N = int(round(duration / dt))
    t = dt * np.arange(N + 1)
    q = np.array([[quintic(tk, a, b, duration) for a, b in zip(theta_start, theta_end)]
                  for tk in t])                                     # (N + 1, joint, order)
    s = t[:N] / duration
    basis = np.array([s**2 * (1 - s)**2 * np.polynomial.legendre.Legendre.basis(
        j, domain=[0, 1])(s) for j in range(n_basis)]).T            # (N, n_basis)
    # columns: the rigid torque, then each basis function on each joint
    U = np.zeros((N, 2, 1 + 2 * n_basis))
    U[:, :, 0] = [rigid.inverse_dynamics(*q[k].T) for k in range(N)]
    U[:, 0, 1:1 + n_basis] = basis
    U[:, 1, 1 + n_basis:] = basis
    X = np.zeros((N + 1, n, U.shape[2]))                            # state response per column
    for k in range(N):
        X[k + 1] = Ad @ X[k] + Bd @ U[k]
    target = np.zeros(n)
    target[th] = theta_end - theta_start
    G, miss = X[-1, :, 1:], target - X[-1, :, 0]
    # end conditions G c = miss exactly: c = c0 + Z z over the null space of G
    c0, *_ = np.linalg.lstsq(G, miss, rcond=None)
    err = np.abs(G @ c0 - miss).max()
    if err > 1e-9 * max(1.0, np.abs(target).max()):
        raise DesignError(f"the feedforward cannot bring the model to rest at the target in "
                          f"{duration:g} s with {n_basis} basis functions per joint "
                          f"(state error {err:.3g})")
    Z = sl.null_space(G)
    rows = [(X[:, th[i]], q[:, i, 0] - theta_start[i], 1.0) for i in (0, 1)]
    for link in (1, 2):
        modes = [i for i, name in enumerate(design.states) if name.startswith(f"delta{link}_")
                 and not name.endswith("_rate")]
        rows.append((X[:, modes].sum(axis=1), 0.0, deflection_weight))
    A = np.vstack([np.sqrt(w) * resp[:, 1:] for resp, _, w in rows])
    b = np.concatenate([np.sqrt(w) * (ref - resp[:, 0]) for resp, ref, w in rows])
    z, *_ = np.linalg.lstsq(A @ Z, b - A @ c0, rcond=None)
    c = c0 + Z @ z
    tau = U[:, :, 0] + np.column_stack([basis @ c[:n_basis], basis @ c[n_basis:]])
    x = X[:, :, 0] + X[:, :, 1:] @ c
    return tau, x + x_lin


class FlexibleArmReference(QuinticJointTrajectory):
    """Rest-to-rest move of the linear flexible arm: feedforward torques and the joint
    reference they produce (:func:`rest_to_rest_feedforward`), for
    :class:`ArmLQGController` with ``reference="model"`` (same ``design``).

    Outputs the joint reference angle, rate and acceleration of the model (the
    acceleration as the rate difference over a step) and ``tau1_ff``, ``tau2_ff``
    [N m]; before ``start_time`` the start at rest, after the move the target at rest
    with zero torque.  Must be stepped with the design's sample time.
    """

    OUTPUTS = QuinticJointTrajectory.OUTPUTS + tuple(
        Signal(s.name, s.unit, s.description) for s in FEEDFORWARD_INPUTS)
    PARAMETERS = QuinticJointTrajectory.PARAMETERS + (
        TextParameter("design", "", "", "LQG design as JSON (LQGDesign.to_json())"),
        Parameter("n_basis", 10, "", "correction functions per joint", min=1, max=40),
        Parameter("deflection_weight", 100.0, "rad2/m2", "weight of the tip deflections "
                  "against the joint deviation from the quintic", min=0.0),
    ) + tuple(p for p in ARM_PARAMETERS if p.name in RIGID_PARAMETER_NAMES)

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self.design = d = design_parameter(p["design"])
        rigid = RigidTwoLinkArm.from_flexible(**{k: p[k] for k in RIGID_PARAMETER_NAMES})
        try:
            self.tau_ff, self.x_ref = rest_to_rest_feedforward(
                d, (p["theta1_start"], p["theta2_start"]), (p["theta1_end"], p["theta2_end"]),
                p["move_time"], rigid, p["n_basis"], p["deflection_weight"])
        except DesignError as e:
            raise ParameterError(f"FlexibleArmReference: {e}") from None
        idx = [d.states.index(n) for n in ("theta1", "theta2", "omega1", "omega2")]
        self._joint = self.x_ref[:, idx]
        self._alpha = np.vstack([np.diff(self._joint[:, 2:], axis=0) / d.dt, np.zeros((1, 2))])

    def outputs(self) -> dict:
        k = int(round((self.time - self.params["start_time"]) / self.design.dt))
        k = min(max(k, 0), len(self.tau_ff))
        th1, th2, om1, om2 = self._joint[k]
        tau = self.tau_ff[k] if k < len(self.tau_ff) else (0.0, 0.0)
        return {"theta1_ref": th1, "theta2_ref": th2, "omega1_ref": om1, "omega2_ref": om2,
                "alpha1_ref": self._alpha[k, 0], "alpha2_ref": self._alpha[k, 1],
                "tau1_ff": float(tau[0]), "tau2_ff": float(tau[1])}
