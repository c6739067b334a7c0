"""LQG design for the two-link flexible arm: the arm linearised at rest
(:func:`~controllers.design.adapters.linearize_arm`), discrete LQR on joint angles and
tip deflections with a steady-state Kalman predictor on the measured joint angles, rates
and tip deflections (:func:`~controllers.design.lq.lqg`), optionally with
integral action on the joint angles and a robust variant that weights the lightly
damped 2.63 Hz mode.  The law that runs a design is
:class:`controllers.laws.arm_lqg.ArmLQGController`; a design is one JSON text.  Also
the arm's joint PD from two PD tunings (:func:`joint_pd_controller`).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from controllers.design.adapters import linearize_arm
from controllers.design.errors import DesignError
from controllers.design.lq import lqg, lqg_integral, modal_weight, weight_matrix
from controllers.design.pid_tuning import PIDTuning
from controllers.laws.arm_lqg import (
    DEFAULT_DESIGN_FILE,
    LQGDesign,
    integral_state_names,
)
from controllers.laws.joint_pd import JointPDController
from mbdcore.models.manipulator import ARM_MEASURED, ARM_OUTPUT_SIGNALS

__all__ = ["DEFAULT_Q", "DEFAULT_R", "DEFAULT_PROCESS_NOISE", "DEFAULT_MEASUREMENT_NOISE",
           "MEASURED", "DEFAULT_Q_INTEGRAL", "INTEGRATED", "design_arm_lqg",
           "ROBUST_MODE_WEIGHTS", "ROBUST_PROCESS_NOISE", "ROBUST_PAYLOADS",
           "ROBUST_EI_FACTORS", "design_arm_lqg_robust", "arm_plant_grid",
           "write_default_design", "ARM_SIGNAL_UNITS", "joint_pd_controller"]

#: Units of the arm's signals, for the axis labels of
#: :func:`controllers.design.plots.plot_step` (its ``units``).
ARM_SIGNAL_UNITS = {**{s.name: s.unit for s in ARM_OUTPUT_SIGNALS}, "tau1": "N m", "tau2": "N m"}

#: Default weights of :func:`design_arm_lqg` (SI units: rad, m, N m).
DEFAULT_Q = {"theta1": 1.0e3, "theta2": 5.0e2, "w1": 1.0e5, "w2": 2.0e4}
DEFAULT_R = {"tau1": 1.0, "tau2": 1.0}
DEFAULT_PROCESS_NOISE = {"tau1": 1.0, "tau2": 1.0}
DEFAULT_MEASUREMENT_NOISE = {"theta1": 1e-4, "theta2": 1e-4, "omega1": 1e-2, "omega2": 1e-2,
                             "w1": 1e-4, "w2": 1e-4}
#: The LQG measures every sensor of the arm.
MEASURED = ARM_MEASURED
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
#: at tau2 (tests/test_controllers/design/test_control_lqg_robust2.py).
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
    16 Hz mode (see tests/test_controllers/design/test_control_lqg_robust2.py for the figures)."""
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


def write_default_design(path=DEFAULT_DESIGN_FILE) -> Path:
    """Write the default design (:func:`design_arm_lqg` with its defaults) to ``path``
    (default: the file :class:`~controllers.laws.arm_lqg.ArmLQGController` reads when
    its ``design`` parameter is empty).  Run after changing a default weight or an arm
    default: ``python -m controllers.design default-lqg``."""
    path = Path(path)
    path.write_text(json.dumps(json.loads(design_arm_lqg().to_json()), indent=1) + "\n")
    return path


def joint_pd_controller(joint1: PIDTuning, joint2: PIDTuning,
                        **parameters) -> JointPDController:
    """The arm's joint PD with the gains of two PD tunings, one per joint
    (:func:`~controllers.design.tune_pid` with ``kind="pd"`` on the channels
    ``tau<i> -> theta<i>``): ``kp<i>`` [N m/rad], ``kd<i>`` [N m s/rad] and the rate
    filter ``tf<i>`` [s] of tuning i, so that joint i's law from its angle error is the
    tuned ``C(s) = kp + kd s / (tf s + 1)`` (the rate measured is the angle's
    derivative).  ``parameters``: the other parameters of
    :class:`~controllers.laws.joint_pd.JointPDController` (torque limits, feedforward).

    Raises
    ------
    DesignError
        A tuning with integral action (``ki != 0``): the joint PD has none.
    """
    gains = {}
    for i, tuning in ((1, joint1), (2, joint2)):
        p = tuning.params
        if p["ki"] != 0.0:
            raise DesignError(f"joint {i}: the tuning has integral action (ki = {p['ki']:g}); "
                              "the joint PD has none: tune with kind='pd'")
        gains.update({f"kp{i}": p["kp"], f"kd{i}": p["kd"], f"tf{i}": p["tf"]})
    return JointPDController(**{**gains, **parameters})
