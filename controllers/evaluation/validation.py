"""Closed-loop validation of an arm controller in the nonlinear co-simulation.

Residual vibration (one definition for every controller, demo, example and sweep)
---------------------------------------------------------------------------------
The *end-effector deflection* ``e(t)`` [m] is the vector from the end effector of the
rigid arm with the measured joint angles, ``l1 e^{i theta1} + l2 e^{i (theta1 + theta2)}``,
to the actual end effector ``(x_tip, y_tip)`` of the flexible arm.  It contains the
deflection and slope of link 1 and the deflection of link 2.

The *move time* ``t_m`` [s] is the time after which both joints stay within 2 % of
their move until the end of the record.  The *residual vibration* [m] is the
peak-to-peak size of ``e`` over the second after it: the diameter (largest distance
between two points) of the curve ``e(t)`` for ``t_m <= t <= t_m + 1 s``
(:func:`settled_move`).

A move that has not settled has one value, :data:`NOT_SETTLED` = ``inf``: its move
time, when a joint is outside the band at the end of the record, and its residual
vibration, when the joints never settle or settle too late for the record to hold the
window after it.  ``inf`` and not ``nan``: an unsettled move is worse than any settled
one, so a sweep's ranking (``min``, ``sorted``, ``np.argmin``) puts it last, where a
``nan`` would compare false with everything and land anywhere.  A controller is judged
from the time its own joints have arrived: it is not credited for vibration that ends
before they do.  :func:`move_report` (the demo, the examples, the sweeps) reports that
same figure; the size of ``e`` over the window that starts when the *reference* ends is
a different figure, ``vibration_after_reference``.
"""
from __future__ import annotations

import numpy as np

from controllers.evaluation.metrics import move_metrics, residual_vibration
from fmu.cosim.components import BlockComponent, Component
from fmu.cosim.master import Master
from fmu.cosim.system import System
from mbdcore.models.manipulator import ARM_MEASURED, FlexibleManipulatorBlock

__all__ = ["RESIDUAL_WINDOW", "SETTLING_BAND", "NOT_SETTLED", "SETTLE_ALLOWANCE",
           "end_effector_deflection", "move_report", "settled_move", "arm_closed_loop",
           "closed_loop_move",
           "validate_move", "reference_move"]

#: Length [s] of the residual-vibration window (module docstring).
RESIDUAL_WINDOW = 1.0
#: Settling band of the move time, a fraction of each joint's move.
SETTLING_BAND = 0.02
#: The move time and residual vibration of a move that has not settled (module docstring).
NOT_SETTLED = float("inf")
#: Time [s] :func:`validate_move` records past the reference's end before the residual
#: window, for the joints to settle.
SETTLE_ALLOWANCE = 1.0



def end_effector_deflection(theta1, theta2, x_tip, y_tip, l1: float = 0.5, l2: float = 0.5):
    """e(t) [m], shape (n, 2): actual minus rigid end-effector position (module docstring).

    Parameters
    ----------
    theta1, theta2 : array_like, shape (n,)
        Joint angles [rad].
    x_tip, y_tip : array_like, shape (n,)
        End-effector position of the flexible arm [m].
    l1, l2 : float
        Link lengths [m].
    """
    th1, th2 = np.asarray(theta1, float), np.asarray(theta2, float)
    rigid = l1 * np.exp(1j * th1) + l2 * np.exp(1j * (th1 + th2))
    return np.column_stack([np.asarray(x_tip, float) - rigid.real,
                            np.asarray(y_tip, float) - rigid.imag])


def move_report(result, t_end: float, start=(0.0, 0.0), target=(0.2617993877991494,
                0.17453292519943295), window: float = RESIDUAL_WINDOW, arm: str = "arm",
                ctrl: str = "ctrl", l1: float = 0.5, l2: float = 0.5) -> dict:
    """Figures of a point-to-point move recorded by the co-simulation master.

    Parameters
    ----------
    result : fmu.cosim.recording.Result or mapping of str to array
        Signals ``"time"``, ``"<arm>.theta1"`` ... ``"<arm>.y_tip"``, ``"<ctrl>.tau1/2"``.
    t_end : float
        Time the reference reaches the target [s] (start of the window of
        ``vibration_after_reference``).
    start, target : pair of float
        Joint angles before and after the move [rad].
    window : float
        Length [s] of the window of ``vibration_after_reference`` (the residual
        vibration's is always :data:`RESIDUAL_WINDOW`).

    Returns
    -------
    dict
        ``residual_vibration`` [m] and ``move_time`` [s] (:func:`settled_move`, the
        module docstring; the residual vibration is :data:`NOT_SETTLED` if the joints
        never settle or settle too late for the record to hold the residual window
        after it),
        ``vibration_after_reference`` [m] (the size of the end-effector deflection over
        ``[t_end, t_end + window]``; ``nan`` if the record ends before that window does), ``move_end`` = ``t_end`` [s], and per joint i
        ``overshoot<i>`` and ``final_error<i>`` [fraction of the move],
        ``settling_time<i>`` [s] (2 % band), ``peak_tau<i>`` [N m].
    """
    t = np.asarray(result["time"])
    e = end_effector_deflection(result[f"{arm}.theta1"], result[f"{arm}.theta2"],
                                result[f"{arm}.x_tip"], result[f"{arm}.y_tip"], l1, l2)
    try:
        settled = settled_move(result, start, target, arm=arm, l1=l1, l2=l2)
    except ValueError:                     # the record ends before the residual window
        settled = None
    try:
        after_reference = residual_vibration(t, e, t_end, window)
    except ValueError:                     # the record ends inside that window
        after_reference = float("nan")
    out = {"vibration_after_reference": after_reference, "move_end": t_end}
    for i in (1, 2):
        m = move_metrics(t, result[f"{arm}.theta{i}"], start[i - 1], target[i - 1],
                         SETTLING_BAND)
        out[f"overshoot{i}"] = m["overshoot"]
        out[f"settling_time{i}"] = m["settling_time"]
        out[f"final_error{i}"] = m["final_error"]
        out[f"peak_tau{i}"] = float(np.abs(result[f"{ctrl}.tau{i}"]).max())
    if settled is None:
        settled = {"move_time": max(out["settling_time1"], out["settling_time2"]),
                   "residual_vibration": NOT_SETTLED}
    return {"residual_vibration": settled["residual_vibration"],
            "move_time": settled["move_time"], **out}


def settled_move(result, start=(0.0, 0.0), target=(0.2617993877991494, 0.17453292519943295),
                 band: float = SETTLING_BAND, window: float = RESIDUAL_WINDOW, arm: str = "arm",
                 l1: float = 0.5, l2: float = 0.5) -> dict:
    """Move time and the residual vibration after it: the project's one definition of
    the residual vibration of a move (module docstring).

    Returns
    -------
    dict
        ``move_time`` [s] (:data:`NOT_SETTLED` if a joint is outside the band at the
        end of the record), ``settling_time1/2`` [s] and ``residual_vibration`` [m]
        over ``[move_time, move_time + window]`` (:data:`NOT_SETTLED` if the joints
        never settle).

    Raises
    ------
    ValueError
        If the joints settle but the record ends before the window does.
    """
    t = np.asarray(result["time"])
    settle = [move_metrics(t, result[f"{arm}.theta{i}"], start[i - 1], target[i - 1],
                           band)["settling_time"] for i in (1, 2)]
    out = {"move_time": max(settle), "settling_time1": settle[0], "settling_time2": settle[1]}
    if not np.isfinite(out["move_time"]):
        return {**out, "residual_vibration": NOT_SETTLED}
    e = end_effector_deflection(result[f"{arm}.theta1"], result[f"{arm}.theta2"],
                                result[f"{arm}.x_tip"], result[f"{arm}.y_tip"], l1, l2)
    return {**out, "residual_vibration": residual_vibration(t, e, out["move_time"], window)}


def arm_closed_loop(controller, reference, arm=None, measured=ARM_MEASURED) -> System:
    """The closed loop reference -> controller -> arm as a co-simulation System: the
    one way an arm's closed loop is wired (:func:`closed_loop_move`, the demo, the
    benchmarks).

    Parameters
    ----------
    controller, reference, arm : Block or fmu.cosim.components.Component
        Named ``ctrl``, ``ref`` and ``arm`` in the system (a Block becomes a
        :class:`~fmu.cosim.components.BlockComponent` of that name; a Component, an FMU
        for instance, keeps its own).  Every output of the reference that is an input of
        the controller feeds it, so do the arm's ``measured`` outputs that the
        controller takes, and the controller's ``tau1``, ``tau2`` [N m] drive the arm.
        ``arm`` defaults to :class:`~mbdcore.models.manipulator.FlexibleManipulatorBlock`
        with its default parameters.
    measured : sequence of str
        The arm's outputs a controller may measure.
    """
    ctrl = _component("ctrl", controller)
    ref = _component("ref", reference)
    arm = _component("arm", FlexibleManipulatorBlock() if arm is None else arm)
    connections = {f"ref.{n}": f"ctrl.{n}" for n in ref.outputs if n in ctrl.inputs}
    connections.update({f"arm.{n}": f"ctrl.{n}" for n in measured if n in ctrl.inputs})
    connections.update({"ctrl.tau1": "arm.tau1", "ctrl.tau2": "arm.tau2"})
    return System([ref, ctrl, arm], connections)


def _component(name: str, obj) -> Component:
    return obj if isinstance(obj, Component) else BlockComponent(name, obj)


def closed_loop_move(controller, reference, arm_params: dict | None = None,
                     stop_time: float = 3.0, step: float = 1e-3, method: str = "jacobi",
                     measured=ARM_MEASURED, progress=None, arm=None):
    """Run reference -> controller -> arm (:func:`arm_closed_loop`) in the
    co-simulation master.

    Parameters
    ----------
    controller : Block or fmu.cosim.components.Component
        Inputs: the reference signals it uses and the measured arm outputs it names;
        outputs ``tau1``, ``tau2`` [N m].
    reference : Block or Component
        A joint trajectory (outputs ``theta<i>_ref``, ``omega<i>_ref``, ``alpha<i>_ref``).
    arm_params : dict, optional
        Parameters of :class:`~mbdcore.models.manipulator.FlexibleManipulatorBlock`.
    method : {"jacobi", "gauss-seidel"}
        Master stepping method.  Jacobi is the discrete-time semantics of
        python-control (every block steps from the signals of ``t_k``).
    progress : callable, optional
        ``progress(t, stop_time)`` [s], as for :meth:`fmu.cosim.master.Master.run`.
    arm : Block or Component, optional
        The arm itself (an FMU of it, for instance), instead of ``arm_params``.

    Returns
    -------
    fmu.cosim.recording.Result
    """
    if arm is not None and arm_params:
        raise ValueError("closed_loop_move: arm_params are for the default arm; accepted: "
                         "arm_params or arm (given with its own parameters), not both")
    if arm is None:
        arm = FlexibleManipulatorBlock(**(arm_params or {}))
    return Master(arm_closed_loop(controller, reference, arm, measured), step,
                  method=method).run(stop_time, progress=progress)


def validate_move(controller, reference, arm_params: dict | None = None, step: float = 1e-3,
                  method: str = "jacobi") -> dict:
    """The move of ``reference`` under ``controller`` on the arm, run and measured: the
    one call that validates any arm controller in co-simulation.

    Runs :func:`closed_loop_move` from 0 to the reference's end plus
    :data:`SETTLE_ALLOWANCE` plus :data:`RESIDUAL_WINDOW` (rounded up to whole steps)
    and returns :func:`move_report` of that record, with the reference's own start,
    target and end: joints settling later than :data:`SETTLE_ALLOWANCE` after the
    reference ends give a residual vibration of :data:`NOT_SETTLED`.

    Parameters
    ----------
    controller : Block or fmu.cosim.components.Component
        As for :func:`closed_loop_move`.
    reference : QuinticJointTrajectory
        A rest-to-rest joint move (the quintic, the input-shaped
        :class:`~controllers.laws.ShapedQuinticTrajectory` or the LQG's
        :class:`~controllers.laws.FlexibleArmReference`): its parameters ``start_time``
        [s], ``move_time`` [s], ``theta<i>_start`` and ``theta<i>_end`` [rad] give the
        move, and its ``duration`` [s], where it has one, the time it lasts.
    arm_params : dict, optional
        Parameters of :class:`~mbdcore.models.manipulator.FlexibleManipulatorBlock`.
    step : float
        Communication step [s].
    method : {"jacobi", "gauss-seidel"}
        Master stepping method.

    Returns
    -------
    dict
        :func:`move_report`'s figures.
    """
    t_end, start, target = reference_move(reference)
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"step = {step!r} s must be a finite number > 0")
    stop = float(np.ceil((t_end + SETTLE_ALLOWANCE + RESIDUAL_WINDOW) / step) * step)
    result = closed_loop_move(controller, reference, arm_params, stop, step, method)
    return move_report(result, t_end, start, target)


def reference_move(reference) -> tuple[float, tuple[float, float], tuple[float, float]]:
    """The move a rest-to-rest joint reference makes: when it ends [s] (a shaped
    reference lasts its quintic plus its shaper: its ``duration``), its start and its
    target joint angles [rad] -- what :func:`move_report` measures a record against."""
    p = getattr(reference, "params", {})
    missing = [k for k in ("start_time", "move_time", "theta1_start", "theta2_start",
                           "theta1_end", "theta2_end") if k not in p]
    if missing:
        raise ValueError(f"reference {type(reference).__name__} has no parameter "
                         f"{', '.join(missing)}: accepted a rest-to-rest joint move "
                         "(QuinticJointTrajectory or a subclass)")
    t_end = p["start_time"] + getattr(reference, "duration", p["move_time"])
    return t_end, (p["theta1_start"], p["theta2_start"]), (p["theta1_end"], p["theta2_end"])
