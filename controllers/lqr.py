"""LQG state feedback for the flexible arm: joint angles, rates and tip deflections
measured, the modal states estimated by a Kalman predictor.

:func:`design_arm_lqg` linearises the arm (:func:`~controllers.ioadapters.linearize_arm`)
and designs the loop (:func:`~controllers.design.lqg`); :class:`ArmLQGController` is the
block that runs it, in Python, in python-control (``block_iosys``) and as an FMU: the
whole design is one JSON text parameter, ``design``.

Law (``xh`` estimates the deviation of the arm state from the linearisation point)::

    x_ref = (theta_ref, 0, omega_ref, 0)                 # rigid reference, links straight
    tau   = sat( tau_ff + K (x_ref - x_lin - xh) )
    xh   <- Ad xh + Bd tau + L (y - y_lin - C xh)       # at the end of each step

``tau_ff`` is the rigid-arm inverse dynamics on the reference (as the joint PD).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np

from mbdcore.blocks import Block, Parameter, ParameterError, Signal, StepError
from mbdcore.manipulator import ARM_PARAMETERS
from mbdcore.rigid_arm import RigidTwoLinkArm

from .design import DesignError, LQGDesign
from .ioadapters import VectorState
from .joint_pd import _RIGID_NAMES, JointPDController

#: Default weights of :func:`design_arm_lqg` (SI units: rad, m, N m).
DEFAULT_Q = {"theta1": 1.0e3, "theta2": 5.0e2, "w1": 1.0e5, "w2": 2.0e4}
DEFAULT_R = {"tau1": 1.0, "tau2": 1.0}
DEFAULT_PROCESS_NOISE = {"tau1": 1.0, "tau2": 1.0}
DEFAULT_MEASUREMENT_NOISE = {"theta1": 1e-4, "theta2": 1e-4, "omega1": 1e-2, "omega2": 1e-2,
                             "w1": 1e-4, "w2": 1e-4}
MEASURED = ("theta1", "theta2", "omega1", "omega2", "w1", "w2")


def design_arm_lqg(Q=None, R=None, process_noise=None, measurement_noise=None,
                   theta_lin=(0.0, 0.0), dt: float = 1e-3, measured=MEASURED,
                   **arm_params) -> LQGDesign:
    """LQG design for the arm linearised at rest at ``theta_lin`` [rad].

    Weights default to :data:`DEFAULT_Q` etc.; named by arm state, output or input
    (see :func:`controllers.design.lqr`).  Returns an :class:`LQGDesign` whose
    ``to_json()`` is the ``design`` parameter of :class:`ArmLQGController`.
    """
    from .design import lqg
    from .ioadapters import linearize_arm

    plant = linearize_arm(theta=theta_lin, outputs=MEASURED, **arm_params)
    x_lin = np.zeros(plant.nstates)
    x_lin[:2] = theta_lin
    design = lqg(plant, DEFAULT_Q if Q is None else Q, DEFAULT_R if R is None else R,
                 list(measured), DEFAULT_PROCESS_NOISE if process_noise is None else process_noise,
                 DEFAULT_MEASUREMENT_NOISE if measurement_noise is None else measurement_noise,
                 dt, x_lin=x_lin)
    design.info.update(theta_lin=list(theta_lin), arm_params=arm_params)
    return design


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


class ArmLQGController(Block):
    """LQG state feedback + rigid feedforward for the two-link flexible arm (module doc).

    Discrete time: the block must be stepped with the design's sample time.
    """

    INPUTS = JointPDController.INPUTS + (
        Signal("w1", "m", "measured tip deflection of link 1"),
        Signal("w2", "m", "measured tip deflection of link 2"),
    )
    OUTPUTS = JointPDController.OUTPUTS
    PARAMETERS = (
        TextParameter("design", "", "", "LQG design as JSON (LQGDesign.to_json())"),
        Parameter("tau_max1", 2.0, "N.m", "torque limit, joint 1", min=0.0, exclusive_min=True),
        Parameter("tau_max2", 1.0, "N.m", "torque limit, joint 2", min=0.0, exclusive_min=True),
        Parameter("feedforward", 1, "", "1: rigid-model feedforward on, 0: off", min=0, max=1),
    ) + tuple(p for p in ARM_PARAMETERS if p.name in _RIGID_NAMES)
    # the estimate is updated at the end of a step: tau depends on the measurements only
    # through the state, on the reference directly
    FEEDTHROUGH = {o: tuple(s.name for s in JointPDController.INPUTS[:6]) for o in ("tau1", "tau2")}
    DEFAULT_STOP_TIME = 3.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        try:
            self.design = LQGDesign.from_json(p["design"] or default_design_json())
        except (DesignError, TypeError) as e:
            raise ParameterError(f"parameter 'design' is not a valid LQG design: {e}") from None
        d = self.design
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
        self.rigid = RigidTwoLinkArm.from_flexible(**{k: p[k] for k in _RIGID_NAMES})
        self.tau_max = np.array([p["tau_max1"], p["tau_max2"]])
        self.reset()

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self.xh = np.zeros(len(self.Ad))

    def _torques(self) -> np.ndarray:
        u = self.inputs
        th = np.array([u["theta1_ref"], u["theta2_ref"]])
        om = np.array([u["omega1_ref"], u["omega2_ref"]])
        x_ref = np.zeros(len(self.Ad))
        x_ref[self._ref_index] = np.r_[th, om]
        tau = self.K @ (x_ref - self.x_lin - self.xh)
        if self.params["feedforward"]:
            tau = tau + self.rigid.inverse_dynamics(th, om, (u["alpha1_ref"], u["alpha2_ref"]))
        return np.clip(tau, -self.tau_max, self.tau_max)

    def outputs(self) -> dict:
        tau = self._torques()
        return {"tau1": float(tau[0]), "tau2": float(tau[1])}

    def do_step(self, t: float, h: float) -> None:
        if abs(h - self.design.dt) > 1e-9 * self.design.dt:
            raise StepError(f"{type(self).__name__} is designed for steps of "
                            f"{self.design.dt!r} s; got a step of {h!r} s at t = {t!r} s")
        y = np.array([self.inputs[m] for m in self.design.measured])
        tau = self._torques()
        self.xh = self.Ad @ self.xh + self.Bd @ tau + self.L @ (y - self.y_lin - self.C @ self.xh)
        self.time = t + h

    def vector_state(self) -> VectorState:
        def set_xh(block, x):
            block.xh = np.array(x, dtype=float)
        return VectorState([f"xh_{s}" for s in self.design.states],
                           lambda block: block.xh.copy(), set_xh)

    def _get_internal(self):
        return {"xh": self.xh.copy()}

    def _set_internal(self, internal):
        self.xh = np.array(internal["xh"], dtype=float)
