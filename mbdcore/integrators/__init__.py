"""Integrators of first-order ODEs y' = f(t, y): one-step interface, Runge-Kutta
family (RK4, Gill, Treanor), BDF/Gear multistep methods, scipy's adaptive
solvers (their table of names is mbdcore.dae.methods)."""

from mbdcore.integrators.base import (RHS, IntegrationError, Integrator)
from mbdcore.integrators.runge_kutta import (ExplicitRungeKutta, RK4, GillTableau, Gill,
    Treanor)
from mbdcore.integrators.multistep import (EPS, BDF_TABLE, BDF_STABILITY_ANGLE,
    multistep_coefficients, RADAU_A, RADAU_C, LinearMultistep, BDF, ImprovedGear,
    NEWTON_MAXITER, MIN_FACTOR, MAX_FACTOR, GearResult, GearSolver, GearIntegrator)
from mbdcore.integrators.scipy_ivp import (ScipyAdaptive)

__all__ = [
    "RHS",
    "IntegrationError",
    "Integrator",
    "ExplicitRungeKutta",
    "RK4",
    "GillTableau",
    "Gill",
    "Treanor",
    "EPS",
    "BDF_TABLE",
    "BDF_STABILITY_ANGLE",
    "multistep_coefficients",
    "RADAU_A",
    "RADAU_C",
    "LinearMultistep",
    "BDF",
    "ImprovedGear",
    "NEWTON_MAXITER",
    "MIN_FACTOR",
    "MAX_FACTOR",
    "GearResult",
    "GearSolver",
    "GearIntegrator",
    "ScipyAdaptive",
]
