"""Constrained equations of motion M q'' + G^T lambda = F, g(q, t) = 0: the problem
protocol, the index-1 formulation (Baumgarte, projections, assembly), the
index-3/GGL implicit integrators (generalized-alpha, HHT, Newmark, Bathe) and the
fixed-step simulation driver."""

from mbdcore.dae.problem import (ConstrainedProblem)
from mbdcore.dae.index1 import (AssemblyError, SingularConfigurationError, problem_names,
    project_positions, project_velocities, assemble, sparse_mass_matrix,
    sparse_constraint_terms, sparse_lu, augmented_accelerations, Index1Baumgarte)
from mbdcore.dae.index3 import (ITERATIONS, CONSTRAINT_FORMS, SPARSE_AUTO_SIZE,
    ConvergenceError, consistent_accelerations, Index3Integrator, GeneralizedAlphaScheme,
    GeneralizedAlpha, HHT, Newmark, Bathe)
from mbdcore.dae.methods import (Method, METHODS, ODE_METHODS, DAE_METHODS, method_names,
    method_info, make_method)
from mbdcore.dae.simulate import (SimulationResult, simulate, integrate, integrate_index3,
    reference_solution)

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
    "make_method",
    "SimulationResult",
    "simulate",
    "integrate",
    "integrate_index3",
    "reference_solution",
]
