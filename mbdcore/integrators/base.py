"""The interface of every ODE integrator of ``y' = f(t, y)``: a stepper that owns its
state, as scipy's ``OdeSolver`` does.

``start(t, y)`` begins (or restarts) a trajectory; each ``step(fun, h)`` advances the
stepper's own ``(t, y)`` by ``h`` [s] and returns the new ``y``; ``correct(y)`` replaces
the current ``y`` (a projection onto the constraint manifold, say) and keeps whatever
history a multistep method carries.  Nothing is guessed: a method continues its history
exactly until the next ``start``.  ``get_state`` / ``set_state`` copy everything needed to
continue bit for bit (rollback of a co-simulation step), counters included.

``step_autonomous(rhs, args, h, n)`` is the same stepping for a right-hand side with its
inputs held, ``y' = rhs(y, *args)``, when ``rhs`` is a compiled kernel
(:func:`mbdcore.jit.njit`): methods that are data (the Butcher tableaux, Gill's
coefficients) then run all ``n`` steps in compiled code, one crossing from Python per
call; any other method takes its ordinary steps.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["RHS", "IntegrationError", "DivergenceError", "Integrator"]

RHS = Callable[[float, np.ndarray], np.ndarray]


class IntegrationError(RuntimeError):
    """The integrator could not take the step (solver failure or non-finite result)."""


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


class Integrator:
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

    def __init__(self) -> None:
        self.nsteps = 0
        self.nfev = 0
        self.t: float | None = None
        self.y: np.ndarray | None = None

    # -- the protocol ------------------------------------------------------------------
    def start(self, t: float, y) -> None:
        """Begin a trajectory at time ``t`` [s] from ``y`` (history forgotten, counters kept)."""
        self.t = float(t)
        self.y = np.array(y, dtype=float)
        self._restart()

    def step(self, fun: RHS, h: float) -> np.ndarray:
        """Advance the current state from ``t`` to ``t + h`` [s]; returns the new ``y``
        (a copy: the stepper keeps its own)."""
        if self.y is None:
            raise IntegrationError(f"{self.name}: call start(t, y) before step")
        y_new = np.asarray(self._advance(fun, self.t, self.y, h), dtype=float)
        self.t = self.t + h
        self.y = y_new
        return y_new.copy()

    def step_autonomous(self, rhs: Callable, args: tuple, h: float, n: int = 1) -> np.ndarray:
        """``n`` steps of ``h`` [s] of ``y' = rhs(y, *args)`` (no explicit time
        dependence: the inputs in ``args`` are held); returns the new ``y``.

        ``rhs`` is a compiled kernel; methods with a compiled stepping loop override
        :meth:`_advance_compiled`, the others step through :meth:`step`.  A kernel
        written in C may carry its own loop: ``rhs.advance(stepper, y, args, h, n)``
        returns the new y after n steps of ``stepper``'s method (and updates what the
        stepper carries, Gill's register), or None for a method it does not have.
        """
        if self.y is None:
            raise IntegrationError(f"{self.name}: call start(t, y) before step")
        own_loop = getattr(rhs, "advance", None)
        y_new = own_loop(self, self.y, args, h, int(n)) if own_loop is not None else None
        if y_new is not None:
            self.nsteps += int(n)
            self.nfev += int(n) * self.stages
        elif hasattr(rhs, "py_func"):        # a numba kernel: the method's compiled loop
            y_new = self._advance_compiled(rhs, args, self.y, h, int(n))
        if y_new is None:
            def fun(t, y):
                return rhs(y, *args)
            for _ in range(int(n)):
                y_new = self.step(fun, h)
            return y_new
        self.t = self.t + n * h
        self.y = np.asarray(y_new, dtype=float)
        return self.y.copy()

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
        self.t = None
        self.y = None
        self._restart()

    # -- for subclasses ----------------------------------------------------------------
    def _advance(self, fun: RHS, t: float, y: np.ndarray, h: float) -> np.ndarray:
        raise NotImplementedError

    def _advance_compiled(self, rhs, args, y, h, n):
        """``n`` steps in compiled code, or None where the method has no compiled loop."""
        return None

    def _restart(self) -> None:
        """Forget the history (one-step methods have none)."""

    def _corrected(self, y: np.ndarray) -> None:
        """The current value was replaced by ``y`` (one-step methods need nothing)."""

    # -- state -------------------------------------------------------------------------
    def get_state(self) -> dict:
        """Everything needed to continue bit for bit (counters included)."""
        return {"nsteps": self.nsteps, "nfev": self.nfev, "t": self.t,
                "y": None if self.y is None else self.y.copy()}

    def set_state(self, state: dict) -> None:
        self.nsteps = int(state["nsteps"])
        self.nfev = int(state["nfev"])
        self.t = state["t"]
        self.y = None if state["y"] is None else np.array(state["y"], dtype=float)

    def stats(self) -> dict:
        return {"method": self.name, "nsteps": self.nsteps, "nfev": self.nfev}
