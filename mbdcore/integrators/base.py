"""The interface of every ODE integrator of ``y' = f(t, y)``: a stepper that owns its
state, as scipy's ``OdeSolver`` does.

``start(t, y)`` begins (or restarts) a trajectory; each ``step(fun, h)`` advances the
stepper's own ``(t, y)`` by ``h`` [s] and returns the new ``y``; ``correct(y)`` replaces
the current ``y`` (a projection onto the constraint manifold, say) and keeps whatever
history a multistep method carries.  Nothing is guessed: a method continues its history
exactly until the next ``start``.  ``get_state`` / ``set_state`` copy everything needed to
continue bit for bit (rollback of a co-simulation step), counters included.

An implicit step whose Newton iteration fails (:class:`ConvergenceError`) is retried
with halved steps before the error reaches the caller (:class:`StepHalving`, shared by
these steppers and the index-3 integrators of :mod:`mbdcore.dae.index3`): the step's
interval is covered by two steps of h/2, each of which is halved again if it fails, down
to ``h / 2**max_halvings`` (:data:`MAX_HALVINGS` = 6 by default, h/64), and the next
step is of the caller's h again.

``step_autonomous(rhs, args, h, n)`` is the same stepping for a right-hand side with its
inputs held, ``y' = rhs(y, *args)``.  A kernel written in C that brings its own stepping
loop (:class:`~mbdcore.integrators.runge_kutta.CSteppedKernel`: the arm, the drive, the
antenna axis, the linear plant) runs all ``n`` steps of RK4, Gill or Treanor in one C
call; any other method or right-hand side takes its ordinary steps.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["RHS", "IntegrationError", "DivergenceError", "ConvergenceError", "MAX_HALVINGS",
           "StepHalving", "Integrator"]

RHS = Callable[[float, np.ndarray], np.ndarray]


class IntegrationError(RuntimeError):
    """The integrator could not take the step (solver failure or non-finite result).

    Attributes
    ----------
    time : float or None
        Time [s] at the end of the step that failed, where the driver knows it.
    result : object or None
        The results up to the last accepted step, where the driver keeps them
        (:func:`mbdcore.dae.integrate_held`: ``(t, y)`` so far).
    """

    time: float | None = None
    result = None


class DivergenceError(IntegrationError):
    """The solution diverges: the state is not finite, or a body left its model's range
    (a beam whose tip deflection exceeds its length).  Raised in place of the
    linear-algebra or Newton failure that divergence ends in.

    Attributes
    ----------
    time : float or None
        Time [s] of the state found diverged (the last accepted one).
    body : str or None
        Name of the body out of its range (None for a non-finite state).
    quantity : str
        ``"state"`` (non-finite) or the quantity out of range, e.g. ``"tip deflection"``.
    value, limit : float or None
        The quantity and the bound it exceeded [m].
    result : object or None
        The results up to the last accepted step, where the driver keeps them
        (:func:`mbdcore.dae.simulate` sets a ``SimulationResult``).
    """

    def __init__(self, message: str, time: float | None = None, body: str | None = None,
                 quantity: str = "state", value: float | None = None,
                 limit: float | None = None, result=None):
        super().__init__(message)
        self.time, self.body, self.quantity = time, body, quantity
        self.value, self.limit, self.result = value, limit, result


class ConvergenceError(IntegrationError):
    """The nonlinear (Newton) solve of an implicit step did not converge.

    The message names the time, the step and the last residual; so do the attributes.

    Attributes
    ----------
    time : float or None
        Time [s] the failed solve was for (the end of the step or stage).
    step : float or None
        Step size [s] tried; None for a failure that does not depend on the step (the
        consistent accelerations at a start), which is not retried with smaller steps.
    residual : float or None
        Norm of the last Newton residual (the method says which norm), where known.
    halvings : int
        How many times the caller's step had been halved (:class:`StepHalving`) when
        this, the last attempt, failed.
    """

    def __init__(self, message: str, time: float | None = None, step: float | None = None,
                 residual: float | None = None, halvings: int = 0):
        super().__init__(message)
        self.time, self.step, self.residual, self.halvings = time, step, residual, halvings


#: How many times :class:`StepHalving` halves a step whose Newton iteration failed
#: before it gives up (steps down to h/64).  A Newton failure that a smaller step cures
#: (a step too large for the nonlinearity: an impact, a fast rotation, a stiff spring
#: coming into play) is cured within a few halvings, since the predictor's error falls
#: as h^2 to h^3 and the iteration matrix approaches the well-conditioned M (scaled
#: equations); one that persists at h/64 has another cause (a singular configuration,
#: forces that are not finite) and costs at most 2 * 6 + 1 further attempts to report.
MAX_HALVINGS = 6


class StepHalving:
    """Retry of a failed implicit step with halved steps, shared by every stepper that
    solves a nonlinear system per step (the ODE steppers' :meth:`Integrator.step` for
    the methods with ``halves_failed_steps``, and
    :meth:`mbdcore.dae.index3.Index3Integrator.step`), so :func:`mbdcore.dae.simulate`
    and the co-simulation blocks' substeps get it alike.

    When a step of h from t fails with a :class:`ConvergenceError` that depends on the
    step (its ``step`` is set), the stepper is put back exactly as it was before the
    attempt (everything :meth:`get_state` holds but the work counters -- Newton
    iterations, factorisations, failures -- which keep the failed attempt's work) and the
    interval [t, t + h] is covered by two steps of h/2; a half that fails is halved in
    turn, down to ``h / 2**max_halvings``.  After the interval, the next step is again
    of the caller's h (the interval ends on the caller's grid point).  A stepper whose
    history depends on the step size (generalized-alpha's acceleration-like variable)
    adapts it at every change of step (:meth:`_step_size_changed`).  If the smallest
    step fails too, the stepper is put back as it was before the whole step and the
    last attempt's :class:`ConvergenceError` is raised, with its time, its step and its
    last residual, and how many halvings were tried.  ``stats()`` counts the halvings
    (``step_retries``: failed attempts split into two halves) and the deepest level
    reached (``deepest_halving``: steps down to h / 2**deepest_halving were taken).

    ``max_halvings`` (default :data:`MAX_HALVINGS`): 0 switches the retry off.
    """

    max_halvings: int = MAX_HALVINGS
    #: counters of work done that a rollback keeps (the failed attempt's work was done)
    WORK_COUNTERS: tuple = ()
    #: None, or a list the stepper appends every step it takes and keeps to, as
    #: :meth:`_logged` makes it (default ``(t_end [s], y)``): the steps within one
    #: caller's step, which halving or error control (:mod:`mbdcore.integrators.step_control`)
    #: make.  Its owner empties it; a halved interval rolled back takes its steps out.
    #: :func:`mbdcore.dae.simulate` records them with ``record_steps=True``.
    step_log: list | None = None

    def _logged(self, t: float, y):
        """The :attr:`step_log` entry of a step ending at ``t`` [s] in state ``y``."""
        return (t, y)

    def _log_step(self, t: float, y) -> None:
        if self.step_log is not None:
            self.step_log.append(self._logged(t, y))

    def _clear_retries(self) -> None:
        self.step_retries = 0
        self.deepest_halving = 0

    def _retry_state(self) -> dict:
        return {"step_retries": self.step_retries, "deepest_halving": self.deepest_halving}

    def _set_retry_state(self, state: dict) -> None:
        self.step_retries = int(state.get("step_retries", 0))
        self.deepest_halving = int(state.get("deepest_halving", 0))

    def _step_size_changed(self, h_old: float, h_new: float) -> None:
        """The next step is of h_new [s] where the history was made with steps of h_old;
        a stepper whose history depends on the step adapts it here (default: nothing)."""

    def _checkpoint(self):
        """What :meth:`_roll_back` needs to put the stepper back as it is now (default:
        :meth:`get_state`; a stepper may keep references instead of copies where its
        step replaces its arrays rather than writing into them)."""
        return self.get_state()

    def _roll_back(self, saved) -> None:
        """Back to ``saved`` (a :meth:`_checkpoint`), keeping the work counters."""
        work = {k: getattr(self, k) for k in self.WORK_COUNTERS + ("step_retries",
                                                                    "deepest_halving")}
        self.set_state(saved)
        for k, val in work.items():
            setattr(self, k, val)

    def _halving_step(self, advance, t: float, h: float, y):
        """``advance(t, h, y) -> y_new``, one step of the method from its current state
        (and ``y``, what the caller passes), retried as the class docstring says;
        returns the state at t + h."""
        if self.max_halvings <= 0:
            y = advance(t, h, y)
            self._log_step(t + h, y)
            return y
        y, h_last = self._halved(advance, t, h, y, h, 0)
        if h_last != h:
            self._step_size_changed(h_last, h)      # back to the caller's step
        return y

    def _halved(self, advance, t, h, y, h_history, level):
        """The interval [t, t + h] from y, the history made with steps of h_history,
        at halving depth ``level``; returns (y at t + h, the last step taken)."""
        saved = self._checkpoint()
        logged = None if self.step_log is None else len(self.step_log)
        if h != h_history:
            self._step_size_changed(h_history, h)
        try:
            y_new = advance(t, h, y)
            self._log_step(t + h, y_new)
            return y_new, h
        except ConvergenceError as exc:
            self._roll_back(saved)
            if exc.step is None:
                raise               # not the step's fault (e.g. a singular start)
            if level >= self.max_halvings:
                if level == 0:
                    raise
                raise ConvergenceError(
                    f"{exc}; the step {h * 2 ** level:.3g} s was halved {level} times "
                    f"(max_halvings = {self.max_halvings}) down to this one",
                    exc.time, exc.step, exc.residual, level) from None
            self.step_retries += 1
            self.deepest_halving = max(self.deepest_halving, level + 1)
        half = 0.5 * h
        try:
            y, h_last = self._halved(advance, t, half, y, h_history, level + 1)
            return self._halved(advance, t + half, half, y, h_last, level + 1)
        except ConvergenceError:
            self._roll_back(saved)      # as before this interval
            if logged is not None:
                del self.step_log[logged:]
            raise


class Integrator(StepHalving):
    """Base class of the ODE steppers (see the module docstring).

    Subclasses implement ``_advance(fun, t, y, h) -> y_new`` and, if they carry history,
    ``_restart()`` (forget it), ``_corrected(y)`` (take a replaced current value) and
    ``get_state`` / ``set_state``.

    Attributes
    ----------
    name : str
        Name in the method table (:mod:`mbdcore.dae.methods`).
    order : int
        Formal order of accuracy.
    t : float or None
        Time of the current state [s] (``None`` before :meth:`start`).
    y : ndarray or None
        Current state.
    nsteps, nfev : int
        Steps taken and right-hand-side evaluations since construction or reset.
    """

    name = "base"
    order = 0
    #: right-hand-side evaluations per step
    stages = 1
    #: whether a step uses more than the current (t, y): a multistep history, the Gear
    #: solver's differences and step size.  Such a stepper carries information from
    #: before an input jump into the steps after it, so the co-simulation blocks
    #: (:class:`~mbdcore.dae.OdeBlock`, :class:`~mbdcore.multibody.SystemBlock`)
    #: restart it where a held input changed.  One-step methods have none (Gill's
    #: register holds round-off, O(1e-16), not pre-jump data).
    memory = False
    #: whether a step solves a nonlinear system that can fail to converge
    #: (:class:`ConvergenceError`), and is then retried with halved steps
    #: (:class:`StepHalving`); the explicit methods and the adaptive solvers, which
    #: choose their own steps, have nothing to retry
    halves_failed_steps = False
    #: whether a step's first stage is f(t, y) at the step's start (the explicit
    #: Runge-Kutta family, Gill, Treanor): then a caller that has that value may hand it
    #: in (``step(..., first_stage=)``, ``step_autonomous(..., first_stage=)``) instead of
    #: the stepper evaluating it again, with the same numbers
    first_stage_at_start = False
    WORK_COUNTERS = ("nfev",)

    def __init__(self) -> None:
        self.nsteps = 0
        self.nfev = 0
        self.t: float | None = None
        self.y: np.ndarray | None = None
        self._clear_retries()

    # -- the protocol ------------------------------------------------------------------
    def start(self, t: float, y) -> None:
        """Begin a trajectory at time ``t`` [s] from ``y`` (history forgotten, counters kept)."""
        self.t = float(t)
        self.y = np.array(y, dtype=float)
        self._restart()

    def step(self, fun: RHS, h: float, first_stage=None) -> np.ndarray:
        """Advance the current state from ``t`` to ``t + h`` [s]; returns the new ``y``
        (a copy: the stepper keeps its own).  ``first_stage``: ``fun(t, y)`` where the
        caller has it (:attr:`first_stage_at_start` steppers only), else None."""
        if self.y is None:
            raise IntegrationError(f"{self.name}: call start(t, y) before step")
        t = self.t
        if first_stage is not None:
            if not self.first_stage_at_start:
                raise ValueError(f"{self.name}: its first stage is not f(t, y) at the step's "
                                 "start; first_stage is for the explicit Runge-Kutta family")
            y_new = np.asarray(self._advance(fun, t, self.y, h, first_stage), dtype=float)
        elif self.halves_failed_steps:
            y_new = self._halving_step(
                lambda ts, hs, y: np.asarray(self._advance(fun, ts, y, hs), dtype=float),
                t, h, self.y)
        else:
            y_new = np.asarray(self._advance(fun, t, self.y, h), dtype=float)
        self.t = t + h
        self.y = y_new
        return y_new.copy()

    def step_autonomous(self, rhs: Callable, args: tuple, h: float, n: int = 1,
                        first_stage=None) -> np.ndarray:
        """``n`` steps of ``h`` [s] of ``y' = rhs(y, *args)`` (no explicit time
        dependence: the inputs in ``args`` are held); returns the new ``y``.
        ``first_stage``: ``rhs(y, *args)`` at the current ``y`` where the caller has it
        (:attr:`first_stage_at_start` steppers), taken as the first step's first stage.

        A kernel written in C may carry its own loop: ``rhs.advance(stepper, y, args, h,
        n, first_stage)`` returns the new y after n steps of ``stepper``'s method (and
        updates what the stepper carries, Gill's register), or None for a method it does
        not have; otherwise the steps go through :meth:`step`.
        """
        if self.y is None:
            raise IntegrationError(f"{self.name}: call start(t, y) before step")
        own_loop = getattr(rhs, "advance", None)
        y_new = (own_loop(self, self.y, args, h, int(n), first_stage)
                 if own_loop is not None else None)
        if y_new is None:              # no C loop for this method: its ordinary steps
            def fun(t, y):
                return rhs(y, *args)
            for k in range(int(n)):
                y_new = self.step(fun, h, first_stage if k == 0 else None)
            return y_new
        self.took_steps(n, h, y_new, given=0 if first_stage is None else 1)
        return self.y.copy()

    def took_steps(self, n: int, h: float, y, given: int = 0) -> None:
        """Account for ``n`` steps of ``h`` [s] of this method taken outside it (a C
        kernel's loop) that ended at ``y``, ``given`` of their stages handed in rather
        than evaluated: counters, time and state move on as if it had taken them."""
        self.nsteps += int(n)
        self.nfev += int(n) * self.stages - int(given)
        self.t = self.t + n * h
        self.y = np.array(y, dtype=float)

    def correct(self, y) -> None:
        """Replace the current ``y`` (same time); multistep history is kept."""
        if self.y is None:
            raise IntegrationError(f"{self.name}: call start(t, y) before correct")
        y = np.array(y, dtype=float)
        if y.shape != self.y.shape:
            raise ValueError(f"{self.name}: corrected state has shape {y.shape}, "
                             f"expected {self.y.shape}")
        self.y = y
        self._corrected(y)

    def reset(self) -> None:
        """Forget the trajectory, the history and the counters."""
        self.nsteps = 0
        self.nfev = 0
        self._clear_retries()
        self.t = None
        self.y = None
        self._restart()

    # -- for subclasses ----------------------------------------------------------------
    def _advance(self, fun: RHS, t: float, y: np.ndarray, h: float) -> np.ndarray:
        raise NotImplementedError

    def _restart(self) -> None:
        """Forget the history (one-step methods have none)."""

    def _corrected(self, y: np.ndarray) -> None:
        """The current value was replaced by ``y`` (one-step methods need nothing)."""

    # -- state -------------------------------------------------------------------------
    def get_state(self) -> dict:
        """Everything needed to continue bit for bit (counters included)."""
        return {"nsteps": self.nsteps, "nfev": self.nfev, "t": self.t,
                "y": None if self.y is None else self.y.copy(), **self._retry_state()}

    def set_state(self, state: dict) -> None:
        self.nsteps = int(state["nsteps"])
        self.nfev = int(state["nfev"])
        self.t = state["t"]
        self.y = None if state["y"] is None else np.array(state["y"], dtype=float)
        self._set_retry_state(state)

    def stats(self) -> dict:
        s = {"method": self.name, "nsteps": self.nsteps, "nfev": self.nfev}
        if self.halves_failed_steps:
            s.update(self._retry_state())
        return s
