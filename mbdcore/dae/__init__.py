"""Constrained equations of motion M q'' + G^T lambda = F, g(q, t) = 0: the problem
protocol, the index-1 formulation (Baumgarte, projections, assembly), the
index-3/GGL implicit integrators (generalized-alpha, HHT, Newmark, Bathe), the one
table of ODE and DAE methods by name (``methods``), the fixed-step drivers
(``simulate``, ``integrate``, ``integrate_held``, ``integrate_index3``) and the base of the
continuous-time blocks (``OdeBlock``)."""

from mbdcore.dae.index1 import (
    AssemblyError,
    consistent_accelerations,
    Index1Baumgarte,
    SingularConfigurationError,
    SparseFactors,
    assemble,
    augmented_accelerations,
    problem_names,
    project_positions,
    project_velocities,
    sparse_constraint_terms,
    sparse_lu,
    sparse_mass_matrix,
)
from mbdcore.dae.index3 import (
    CONSTRAINT_FORMS,
    ITERATIONS,
    SPARSE_AUTO_SIZE,
    ConvergenceError,
    Index3Integrator,
)
from mbdcore.dae.methods import (
    DAE_METHODS,
    METHODS,
    ODE_METHODS,
    Method,
    make_method,
    method_info,
    method_names,
)
from mbdcore.dae.ode_block import OdeBlock, ode_stepper, stepping_parameters
from mbdcore.dae.problem import ConstrainedProblem
from mbdcore.dae.schemes import HHT, Bathe, GeneralizedAlpha, GeneralizedAlphaScheme, Newmark
from mbdcore.dae.simulate import (
    DivergenceError,
    SimulationResult,
    integrate,
    integrate_held,
    integrate_index3,
    reference_solution,
    simulate,
)

__all__ = [
    "ConstrainedProblem",
    "AssemblyError",
    "SingularConfigurationError",
    "problem_names",
    "project_positions",
    "project_velocities",
    "assemble",
    "sparse_mass_matrix",
    "sparse_constraint_terms",
    "sparse_lu",
    "SparseFactors",
    "augmented_accelerations",
    "Index1Baumgarte",
    "ITERATIONS",
    "CONSTRAINT_FORMS",
    "SPARSE_AUTO_SIZE",
    "ConvergenceError",
    "consistent_accelerations",
    "Index3Integrator",
    "GeneralizedAlphaScheme",
    "GeneralizedAlpha",
    "HHT",
    "Newmark",
    "Bathe",
    "Method",
    "METHODS",
    "ODE_METHODS",
    "DAE_METHODS",
    "method_names",
    "method_info",
    "OdeBlock",
    "ode_stepper",
    "stepping_parameters",
    "make_method",
    "SimulationResult",
    "DivergenceError",
    "simulate",
    "integrate",
    "integrate_held",
    "integrate_index3",
    "reference_solution",
]
