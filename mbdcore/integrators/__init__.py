"""Integrators of first-order ODEs y' = f(t, y): the stepper protocol (a stepper owns
its state: start / step / correct), the Runge-Kutta family (RK4, Gill, Treanor), BDF and
Gear multistep methods, scipy's adaptive solvers.  Their names are in the one method
table, :mod:`mbdcore.dae.methods`."""

from mbdcore.integrators.base import RHS, DivergenceError, IntegrationError, Integrator
from mbdcore.integrators.multistep import (
    BDF,
    BDF_STABILITY_ANGLE,
    BDF_TABLE,
    EPS,
    MAX_FACTOR,
    MIN_FACTOR,
    NEWTON_MAXITER,
    RADAU_A,
    RADAU_C,
    GearIntegrator,
    GearResult,
    GearSolver,
    ImprovedGear,
    LinearMultistep,
    multistep_coefficients,
)
from mbdcore.integrators.piecewise import PiecewiseInput, piecewise_form
from mbdcore.integrators.runge_kutta import (
    RK4,
    ExplicitRungeKutta,
    Gill,
    GillTableau,
    Treanor,
)
from mbdcore.integrators.scipy_ivp import ScipyAdaptive

__all__ = [
    "RHS",
    "IntegrationError",
    "DivergenceError",
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
    "PiecewiseInput",
    "piecewise_form",
]
