"""The integrator table: ODE methods by name, and a fixed-step driver."""
from __future__ import annotations

import numpy as np

from mbdcore.integrators.base import RHS, IntegrationError, Integrator
from mbdcore.integrators.multistep import BDF_INTEGRATORS
from mbdcore.integrators.runge_kutta import RK4, Gill, GillTableau, Treanor
from mbdcore.integrators.scipy_ivp import ScipyAdaptive

__all__ = ["FIXED_STEP", "ADAPTIVE", "INTEGRATOR_NAMES", "make_integrator", "integrate"]


FIXED_STEP = {"rk4": RK4, "gill": Gill, "treanor": Treanor, "gill-tableau": GillTableau}
ADAPTIVE = {"rk45": "RK45", "dop853": "DOP853", "radau": "Radau", "bdf": "BDF", "lsoda": "LSODA"}
INTEGRATOR_NAMES = tuple(FIXED_STEP) + tuple(ADAPTIVE)


def make_integrator(name: str, rtol: float = 1e-8, atol: float = 1e-10) -> Integrator:
    """Integrator by registry name (see the module docstring).

    Raises
    ------
    ValueError
        For an unknown name; the message lists the accepted names.
    """
    key = name.lower()
    if key in FIXED_STEP:
        return FIXED_STEP[key]()
    if key in ADAPTIVE:
        return ScipyAdaptive(ADAPTIVE[key], rtol=rtol, atol=atol)
    if key in BDF_INTEGRATORS:
        return BDF_INTEGRATORS[key](rtol=rtol, atol=atol)
    names = INTEGRATOR_NAMES + tuple(BDF_INTEGRATORS)
    raise ValueError(f"integrator {name!r} is unknown; accepted: {', '.join(names)}")


def integrate(fun: RHS, y0, t0: float, h: float, n_steps: int,
              method: str | Integrator = "rk4", check_finite: bool = True):
    """Integrate ``n_steps`` steps of size ``h`` [s] from ``(t0, y0)``.

    Returns
    -------
    t : ndarray, shape (n_steps + 1,)
        Times t0 + k h [s] (computed from k, not accumulated).
    y : ndarray, shape (n_steps + 1, len(y0))
        Solution at those times.
    """
    integ = make_integrator(method) if isinstance(method, str) else method
    y = np.array(y0, dtype=float)
    t = t0 + h * np.arange(n_steps + 1)
    out = np.empty((n_steps + 1, y.size))
    out[0] = y
    for k in range(n_steps):
        y = integ.step(fun, t[k], y, h)
        if check_finite and not np.all(np.isfinite(y)):
            raise IntegrationError(f"non-finite state at t = {t[k + 1]:.6g} s ({integ.name})")
        out[k + 1] = y
    return t, out
