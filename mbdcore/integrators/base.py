"""The one-step interface of every ODE integrator: ``step(fun, t, y, h) -> y_new``.

An integrator owns the history it carries between steps (``get_state`` /
``set_state``) and counts its steps and right-hand-side evaluations.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["RHS", "IntegrationError", "Integrator"]

RHS = Callable[[float, np.ndarray], np.ndarray]


class IntegrationError(RuntimeError):
    """The integrator could not take the step (solver failure or non-finite result)."""


class Integrator:
    """Base class: one step of size ``h`` of ``y' = fun(t, y)``.

    Attributes
    ----------
    name : str
        Registry name.
    order : int
        Formal order of accuracy.
    nsteps, nfev : int
        Steps taken and right-hand-side evaluations since construction or reset.
    """

    name = "base"
    order = 0

    def __init__(self) -> None:
        self.nsteps = 0
        self.nfev = 0

    def reset(self) -> None:
        """Forget all history (start of a new simulation)."""
        self.nsteps = 0
        self.nfev = 0

    def step(self, fun: RHS, t: float, y: np.ndarray, h: float) -> np.ndarray:
        """Return y(t + h) [same units as y]."""
        raise NotImplementedError

    def accept_correction(self, y: np.ndarray) -> None:
        """The caller replaced the last result by ``y`` (for example a projection onto
        the constraint manifold); multistep methods take it into their history instead
        of restarting.  One-step methods need nothing."""

    def get_state(self) -> dict:
        """History needed to continue bit for bit (counters included)."""
        return {"nsteps": self.nsteps, "nfev": self.nfev}

    def set_state(self, state: dict) -> None:
        self.nsteps = int(state["nsteps"])
        self.nfev = int(state["nfev"])

    def stats(self) -> dict:
        return {"method": self.name, "nsteps": self.nsteps, "nfev": self.nfev}
