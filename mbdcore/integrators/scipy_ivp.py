"""scipy's adaptive solvers (``solve_ivp``) behind the one-step interface."""
from __future__ import annotations

from scipy.integrate import solve_ivp

from mbdcore.integrators.base import IntegrationError, Integrator

__all__ = ["ScipyAdaptive"]


class ScipyAdaptive(Integrator):
    """scipy's adaptive solvers over each step [t, t + h] (``solve_ivp``).

    The solver restarts at every call, so its own step-size history is not carried;
    this keeps the state of a co-simulation step self-contained (rollback-safe).
    """

    order = 0

    def __init__(self, method: str = "RK45", rtol: float = 1e-8, atol: float = 1e-10):
        super().__init__()
        self.method = method
        self.name = method.lower()
        self.rtol = rtol
        self.atol = atol

    def _advance(self, fun, t, y, h):
        sol = solve_ivp(fun, (t, t + h), y, method=self.method, rtol=self.rtol,
                        atol=self.atol)
        self.nfev += int(sol.nfev)
        self.nsteps += 1
        if not sol.success:
            raise IntegrationError(f"{self.method} failed on [{t}, {t + h}] s: {sol.message}")
        return sol.y[:, -1].copy()
