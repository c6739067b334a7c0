"""Error-controlled step size for the implicit steppers: an interval of the caller (one
step of its output grid) covered by steps whose embedded local error estimate is within
the tolerance, landing on the interval's end (docs/step_control.md).

:class:`ErrorControl` holds the settings and the controller (the step factor from the
error estimate); :class:`ErrorControlledSteps` is the loop, a mixin of a stepper with
the rollback of :class:`~mbdcore.integrators.base.StepHalving` (``_checkpoint``,
``_roll_back``, ``_step_size_changed``): a step whose estimate exceeds the tolerance,
or whose Newton iteration fails, is rolled back and tried again with a smaller step; an
accepted step proposes the next.  Below ``h_min`` the interval fails with
:class:`StepSizeError`, naming the time, the step and why.
"""
from __future__ import annotations

import math

import numpy as np

from mbdcore.integrators.base import ConvergenceError

__all__ = ["SAFETY", "GROWTH_LIMIT", "SHRINK_LIMIT", "NEWTON_SHRINK", "ErrorControl",
           "StepSizeError", "ErrorControlledSteps"]

#: the proposed step is this fraction of the one the estimate says would just meet the
#: tolerance (Hairer, Norsett and Wanner, Solving ODEs I, II.4), so that the next step
#: is accepted with a margin rather than on the edge
SAFETY = 0.9
#: the most a step may grow, and the least it may shrink to, after one decision: an
#: estimate near zero (a smooth stretch, a symmetric moment) does not make the next
#: step huge, one that is far off is not trusted to its last digit either
GROWTH_LIMIT = 4.0
SHRINK_LIMIT = 0.2
#: the step after a failed Newton iteration, as a fraction of the failed one: the
#: predictor's error falls as h^2 to h^3, so a quarter of the step usually converges
NEWTON_SHRINK = 0.25


class StepSizeError(ConvergenceError):
    """The error-controlled step fell below ``h_min`` (a
    :class:`~mbdcore.integrators.base.ConvergenceError`, so a caller that treats a
    failed implicit step handles it alike); ``time``, ``step`` as there, ``reason``:
    ``"error estimate"`` or ``"newton"``."""

    def __init__(self, message, time, step, reason, residual=None):
        super().__init__(message, time, step, residual)
        self.reason = reason


class ErrorControl:
    """Settings of the error control and the step controller.

    Parameters
    ----------
    rtol, atol : float
        The local error of each coordinate must satisfy
        ``|e_i| <= atol + rtol max(|q_i(t)|, |q_i(t + h)|)`` [m, rad]; rtol in
        (0, 1), atol > 0.
    h_min : float or None
        Smallest step [s] the controller may take, > 0; None: 1e-6 of the interval the
        caller asked for.
    order : int
        Order p of the local error estimate (err ~ h^p): the controller's exponent is
        1/p.

    The norm is the max norm of the scaled error (one coordinate that a snapping cable
    throws is not averaged away by the thousands that did not move).
    """

    def __init__(self, rtol: float = 1e-3, atol: float = 1e-6, h_min: float | None = None,
                 order: int = 3):
        for name, value in (("rtol", rtol), ("atol", atol)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} = {value!r}: accepted a finite number > 0")
        if rtol >= 1.0:
            raise ValueError(f"rtol = {rtol!r}: accepted 0 < rtol < 1")
        if h_min is not None and not (isinstance(h_min, (int, float))
                                      and math.isfinite(h_min) and h_min > 0):
            raise ValueError(f"h_min = {h_min!r} s: accepted None or a finite number > 0")
        self.rtol, self.atol = float(rtol), float(atol)
        self.h_min = None if h_min is None else float(h_min)
        self.order = int(order)

    def norm(self, error, y_old, y_new) -> float:
        """max_i |e_i| / (atol + rtol max(|y_old,i|, |y_new,i|)): <= 1 accepts the step
        (inf where the error is not finite)."""
        scale = self.atol + self.rtol * np.maximum(np.abs(y_old), np.abs(y_new))
        with np.errstate(all="ignore"):
            value = float(np.max(np.abs(error) / scale)) if error.size else 0.0
        return value if math.isfinite(value) else math.inf

    def factor(self, err: float) -> float:
        """The next step over this one for a scaled error ``err``: safety times
        err^(-1/p), within [SHRINK_LIMIT, GROWTH_LIMIT]."""
        if err <= 0.0:
            return GROWTH_LIMIT
        return min(GROWTH_LIMIT, max(SHRINK_LIMIT, SAFETY * err ** (-1.0 / self.order)))


class ErrorControlledSteps:
    """The error-controlled loop over one caller's interval (module docstring).

    The stepper provides ``_checkpoint``, ``_roll_back``, ``_step_size_changed``
    (:class:`~mbdcore.integrators.base.StepHalving`) and calls
    :meth:`_clear_control` in its reset; ``error_control`` is an :class:`ErrorControl`
    or None (fixed steps).  State: ``_h_next`` (the step the controller proposes),
    ``_h_history`` (the step the stepper's history was made with); counters
    ``accepted_steps``, ``rejected_steps`` (estimate above the tolerance),
    ``newton_rejections`` (steps whose Newton iteration failed), the smallest and
    largest accepted step.  Every accepted step goes to the stepper's ``step_log``
    (:class:`~mbdcore.integrators.base.StepHalving`) when it has one."""

    error_control: ErrorControl | None = None
    #: what a step's rollback restores of the controller
    CONTROL_STATE = ("_h_next", "_h_history")

    def _clear_control(self) -> None:
        self._h_next = None
        self._h_history = None
        self.accepted_steps = self.rejected_steps = self.newton_rejections = 0
        self.h_smallest, self.h_largest = math.inf, 0.0

    def _control_state(self) -> dict:
        """The controller's part of ``get_state`` (finite numbers only, none for fixed
        steps: a block's saved state is checked to hold finite numbers)."""
        if self.error_control is None:
            return {}
        return {"h_next": self._h_next, "h_history": self._h_history,
                "accepted_steps": self.accepted_steps, "rejected_steps": self.rejected_steps,
                "newton_rejections": self.newton_rejections,
                "h_smallest": self.h_smallest if self.accepted_steps else 0.0,
                "h_largest": self.h_largest}

    def _set_control_state(self, state: dict) -> None:
        self._h_next = state.get("h_next")
        self._h_history = state.get("h_history")
        self.accepted_steps = int(state.get("accepted_steps", 0))
        self.rejected_steps = int(state.get("rejected_steps", 0))
        self.newton_rejections = int(state.get("newton_rejections", 0))
        self.h_smallest = (float(state["h_smallest"]) if self.accepted_steps
                           else math.inf)
        self.h_largest = float(state.get("h_largest", 0.0))

    def control_stats(self) -> dict:
        """The counters of the error control (empty for fixed steps)."""
        if self.error_control is None:
            return {}
        return {"accepted_steps": self.accepted_steps, "rejected_steps": self.rejected_steps,
                "newton_rejections": self.newton_rejections,
                "h_smallest": self.h_smallest if self.accepted_steps else math.nan,
                "h_largest": self.h_largest if self.accepted_steps else math.nan}

    def _controlled_interval(self, advance, t: float, interval: float, y):
        """[t, t + interval] from ``y`` in error-controlled steps: ``advance(t, h, y)``
        returns ``(y_new, err)`` with ``err`` the scaled error estimate of that step
        (:meth:`ErrorControl.norm`).  Lands on t + interval (the last step stretched
        by up to 10 % or shortened to reach it); returns y there."""
        control = self.error_control
        t_end = t + interval
        h_min = control.h_min if control.h_min is not None else 1e-6 * interval
        h = interval if self._h_next is None else min(self._h_next, interval)
        while True:
            remaining = t_end - t
            if remaining <= 1e-12 * interval:
                return y
            last = h >= remaining / 1.1
            if last:
                h = remaining
            saved = self._checkpoint()
            if self._h_history is not None and h != self._h_history:
                self._step_size_changed(self._h_history, h)
            reason, err, residual = None, math.inf, None
            try:
                y_new, err = advance(t, h, y)
            except ConvergenceError as exc:
                if exc.step is None:
                    raise           # not the step's fault (a singular start)
                reason, residual, cause = "newton", exc.residual, exc
            if reason is None and err <= 1.0:
                self._h_history = h
                self.accepted_steps += 1
                self.h_smallest, self.h_largest = min(self.h_smallest, h), max(self.h_largest, h)
                # after the interval's last step the proposal is the unshortened one
                self._h_next = h * control.factor(err)
                t, y = (t_end if last else t + h), y_new
                self._log_step(t, y)
                h = self._h_next
                continue
            self._roll_back(saved)
            if reason is None:
                reason, cause = "error estimate", None
                self.rejected_steps += 1
                h_new = h * min(1.0, control.factor(err))
            else:
                self.newton_rejections += 1
                h_new = h * NEWTON_SHRINK
            if h <= h_min * (1.0 + 1e-12):
                raise self._too_small(t, h, h_min, reason, err, residual, cause)
            h = max(h_new, h_min)

    def _too_small(self, t, h, h_min, reason, err, residual, cause):
        why = (f"the local error estimate is {err:.3g} x the tolerance "
               f"(rtol = {self.error_control.rtol:.3g}, atol = {self.error_control.atol:.3g})"
               if reason == "error estimate" else f"Newton failed ({cause})")
        return StepSizeError(
            f"{getattr(self, 'name', 'stepper')}: no step of at least h_min = {h_min:.3g} s "
            f"passes at t = {t:.9g} s: at h = {h:.3g} s {why}", t, h, reason, residual)
