"""Integrators of first-order ODEs y' = f(t, y): one-step interface, Runge-Kutta
family (RK4, Gill, Treanor), BDF/Gear multistep methods, scipy's adaptive
solvers, and the table that names them."""

from mbdcore.integrators.base import (RHS, IntegrationError, Integrator)
from mbdcore.integrators.runge_kutta import (ExplicitRungeKutta, RK4, GillTableau, Gill,
    Treanor)
from mbdcore.integrators.multistep import (EPS, BDF_TABLE, BDF_STABILITY_ANGLE,
    multistep_coefficients, RADAU_A, RADAU_C, LinearMultistep, BDF, ImprovedGear,
    NEWTON_MAXITER, MIN_FACTOR, MAX_FACTOR, GearResult, GearSolver, GearIntegrator,
    BDF_INTEGRATORS)
from mbdcore.integrators.scipy_ivp import (ScipyAdaptive)
from mbdcore.integrators.registry import (FIXED_STEP, ADAPTIVE, INTEGRATOR_NAMES,
    make_integrator, integrate)

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
    "BDF_INTEGRATORS",
    "ScipyAdaptive",
    "FIXED_STEP",
    "ADAPTIVE",
    "INTEGRATOR_NAMES",
    "make_integrator",
    "integrate",
]
