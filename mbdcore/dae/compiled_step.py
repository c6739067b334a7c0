"""Whole generalized-alpha steps in C, for a problem whose residual terms and Newton
matrix blocks are compiled (:class:`~mbdcore.dae.problem.CompiledTerms` with a
``jacobian_function``: a planar or spatial ``System`` of parts with compiled forms).

:class:`CompiledAlphaStep` takes the steps of a :class:`~mbdcore.dae.index3.
GeneralizedAlphaScheme` (generalized-alpha, HHT, Newmark; GGL or index-3 constraints;
dense or sparse linear algebra, as ``integrator.uses_sparse(problem)``) with one C call
each, ``alpha_step`` of
``mbdcore/dae/native/newton.c``: the predictor, the Newton iterations of
``newton_iterate`` (the same residual, correction and convergence test as the Python
loop), the Newton matrix built from the compiled blocks, assembled and factored in C,
and the update of the history (q, v, the acceleration-like variable a, q'', the
multipliers, and the last solve's increment as the next one's starting guess).  The
Python integrator stays the reference; its matrix policy (factors kept across steps,
the refresh ladder) is not repeated: C builds and factors the matrix at the first
iteration of every step and again at an iterate where the contraction is slower than
``theta_refresh``, so both converge to the same solution within the Newton tolerance,
not along the same iterations.  A solve that fails (diverging on fresh blocks, the
iteration limit, a non-finite residual or correction, a singular matrix) raises
:class:`~mbdcore.integrators.base.ConvergenceError` and leaves the history as it was;
there is no step halving here.  Nothing is allocated per step.

On the sparse path (:mod:`mbdcore.dae.sparse_step`) the matrix is assembled into a
pattern fixed per topology and factored by ``native/sparse_lu.c`` on a pivot order fixed
before the first step (:meth:`CompiledAlphaStep.fix_pivots`), and its factors are kept
across steps while the iterations contract on them (rebuilt where they do not; a solve
that fails on kept factors is made again on fresh ones, and one that converged on them
takes one iteration more); where they were made is the tail of :attr:`guess`, so a
state and guess given to another stepper continue with the same bits.

The scheme's table is declared once in the C file (``ALPHA_STEP_LAYOUT``) and filled by
name here through :func:`alpha_step_layout`.
"""
from __future__ import annotations

import ctypes
import functools
import math

import numpy as np

from mbdcore.dae.newton_native import newton_layouts, newton_library
from mbdcore.dae.schemes import GeneralizedAlphaScheme
from mbdcore.dae.sparse_step import SparseNewton
from mbdcore.integrators.base import ConvergenceError
from mbdcore.native import TableLayout, table_layout

__all__ = ["CompiledAlphaStep", "alpha_step_layout", "STEP_FAILURES"]

#: why alpha_step did not take a step, by its return code
STEP_FAILURES = {1: "diverging", 2: "iteration limit", 3: "non-finite residual",
                 4: "non-finite Newton correction", 5: "singular iteration matrix",
                 6: "sizes or step not accepted"}


@functools.cache
def alpha_step_layout() -> TableLayout:
    """The layout of ``alpha_step_t`` (native/newton.c, ``ALPHA_STEP_LAYOUT``)."""
    return table_layout(newton_library, "ALPHA_STEP_LAYOUT")


class CompiledAlphaStep:
    """Steps of ``integrator``'s scheme on ``problem`` wholly in C (module docstring).

    Parameters
    ----------
    integrator : GeneralizedAlphaScheme
        Its parameters (alpha_m, alpha_f, beta, gamma) and Newton settings (tol,
        max_iterations, theta_refresh, geometric_stiffness, constraint_form, sparse)
        are used.
    problem : ConstrainedProblem
        With compiled terms and a compiled Newton matrix (``compiled_terms()`` giving a
        ``jacobian_function``), else ValueError.

    Attributes
    ----------
    q, v, a, qdd, lam : ndarray
        The state and history after :meth:`start` and each step [m, rad, /s, /s^2; the
        multipliers in the units of G^T lambda, N or N m].
    iterations, factorizations : int
        Newton iterations and factorisations of the last step.
    newton_struct, scheme_struct : ctypes.Structure
        The ``newton_t`` and ``alpha_step_t`` the C step takes (written out as C for a
        C FMU by :class:`mbdcore.cimage.CImage`).
    """

    def __init__(self, integrator: GeneralizedAlphaScheme, problem):
        if not isinstance(integrator, GeneralizedAlphaScheme):
            raise TypeError(f"integrator: a GeneralizedAlphaScheme (generalized-alpha, hht, "
                            f"newmark), not {type(integrator).__name__}")
        get = getattr(problem, "compiled_terms", None)
        terms = None if get is None else get()
        if terms is None or terms.jacobian_function is None:
            raise ValueError("the problem has parts without a compiled form (residual "
                             "terms and Newton matrix blocks in C are needed)")
        self.integrator, self.problem, self.terms = integrator, problem, terms
        n, m, ggl = terms.n, terms.m, integrator.ggl
        size = n + (2 * m if ggl else m)
        #: the sparse path's structures (SparseNewton; None: dense)
        self.sparse = None
        if integrator.uses_sparse(problem):
            self.sparse = SparseNewton(terms.sparse_blocks(), n, m, ggl)
        newton_layout, _ = newton_layouts()
        self.mass = None if self.sparse else np.ascontiguousarray(terms.mass_matrix(),
                                                                    dtype=float)
        self._newton_work = np.zeros(5 * n + m * n + 3 * m + 2 * size)
        st = newton_layout.ctypes_class()()
        st.n, st.m, st.ggl = n, m, int(ggl)
        st.constraints, st.forces = terms.constraints, terms.forces
        st.terms_ctx = self.sparse.blocks.context if self.sparse else terms.context
        st.M = None if self.sparse else self.mass.ctypes.data
        st.work = self._newton_work.ctypes.data
        st.tol, st.theta_refresh = integrator.tol, integrator.theta_refresh
        st.modified, st.max_iterations = 1, integrator.max_iterations
        st.sparse = ctypes.addressof(self.sparse.struct) if self.sparse else None
        # the dense blocks and factors only on the dense path (the sparse path's are the
        # SparseNewton's), G's dense rows in the work only there
        dense = 0 if self.sparse else 1
        self._work = {name: np.zeros(count) for name, count in
                      (("K", dense * n * n), ("C", dense * n * n), ("H", dense * m * n),
                       ("lu", dense * size * size), ("work", 7 * n + 4 * m + dense * m * n))}
        sc = alpha_step_layout().ctypes_class()()
        sc.n, sc.m, sc.ggl = n, m, int(ggl)
        sc.alpha_m, sc.alpha_f = integrator.alpha_m, integrator.alpha_f
        sc.beta, sc.gamma = integrator.beta, integrator.gamma
        sc.jacobian = terms.jacobian_function()
        sc.geometric = int(integrator.geometric_stiffness)
        # factors kept across steps on the sparse path (the guess then holds where they
        # were made: 1 + 2 n + m numbers more)
        sc.keep = int(self.sparse is not None)
        self._work["factored"] = np.zeros(1 + 2 * n + m)
        for name, array in self._work.items():
            setattr(sc, name, array.ctypes.data if array.size else None)
        self.newton_struct, self.scheme_struct = st, sc
        self.piv = np.zeros(size, dtype=np.int32)
        self.report = np.zeros(3)
        self.guess = np.zeros(n + (m if ggl else 0) + 1 + sc.keep * (1 + 2 * n + m))
        self._kernel = newton_library().alpha_step
        self.n, self.m = n, m
        self.q = self.v = self.a = self.qdd = self.lam = None
        self.iterations = self.factorizations = 0

    #: the step size [s] of the representative Newton matrix that fixes the sparse
    #: path's pivot order where :meth:`fix_pivots` is not called before the start
    REFERENCE_STEP = 1e-3

    def fix_pivots(self, t: float, q, v, h: float) -> None:
        """Fix the sparse path's pivot orders (:meth:`SparseNewton.reference
        <mbdcore.dae.sparse_step.SparseNewton.reference>`) by the Newton matrix at (t, q,
        v) [s, m, m/s] with zero multipliers and step h [s], and the start's matrix
        there; nothing on the dense path.  Once per topology, before the first step."""
        if self.sparse is None:
            return
        if not (h > 0.0 and math.isfinite(h)):
            raise ValueError(f"h = {h!r}: accepted a finite step > 0 s")
        n, m, ig = self.n, self.m, self.integrator
        q, v = (np.ascontiguousarray(x, dtype=float) for x in (q, v))
        self.terms.prepare(t)
        C, K, H = self.terms.sparse_jacobian(q, v, np.zeros(m), ig.geometric_stiffness)
        G = self.terms.sparse_residual(q, v, np.zeros(n), np.zeros(n), np.zeros(m),
                                       np.zeros(m), 1.0, 1.0, ig.ggl)[1]
        values = np.concatenate([self.sparse.values[:self.sparse.sizes[0]],
                                 *(X.data[:size] for X, size in
                                   zip((C, K, G, H), self.sparse.sizes[1:]))])
        cv = ig.gamma / (ig.beta * h)
        ca = (1.0 - ig.alpha_m) / ((1.0 - ig.alpha_f) * ig.beta * h * h)
        self.sparse.reference(values, (1.0, cv / ca, 1.0 / ca, 1.0, 1.0 / cv))

    def start(self, t: float, q, v, in_c: bool = False, gamma_t=None) -> None:
        """Consistent accelerations and multipliers at (t, q, v) [s, m, m/s], a = q'',
        no starting guess: by the integrator's own start, or ``in_c`` by
        ``alpha_start`` (native/newton.c: gamma = -d(G v)/dq v + ``gamma_t``, the
        rows' own time terms, m values; None: zeros, rows that do not depend on
        time)."""
        self.q, self.v = (np.array(x, dtype=float) for x in (q, v))
        if self.sparse is not None and not self.sparse.struct.step:
            self.fix_pivots(t, q, v, self.REFERENCE_STEP)
        if in_c:
            self.a, self.qdd, self.lam = np.zeros(self.n), np.zeros(self.n), np.zeros(self.m)
            self.terms.prepare(t)
            gamma_t = None if gamma_t is None else np.ascontiguousarray(gamma_t, dtype=float)
            code = newton_library().alpha_start(self.newton_struct, self.scheme_struct,
                                                self.q, self.v, gamma_t, self.a, self.qdd,
                                                self.lam, self.guess, self.piv)
            if code:
                raise ConvergenceError(f"initial accelerations at t = {t:.6g} s: "
                                       f"{STEP_FAILURES.get(code, code)}", time=t)
            return
        self.integrator.start(self.problem, t, q, v)
        self.a, self.qdd = self.integrator.a.copy(), self.integrator.qdd.copy()
        self.lam = np.array(self.integrator.lam, dtype=float)
        self.guess[:] = 0.0

    def step(self, t: float, h: float):
        """One step from t to t + h [s]; returns (q, v) at t + h (also :attr:`q`,
        :attr:`v`).  ConvergenceError, the state kept, if the Newton solve fails."""
        if self.q is None:
            raise RuntimeError("CompiledAlphaStep.step before start")
        self.terms.prepare(t + h)
        code = self._kernel(self.newton_struct, self.scheme_struct, float(h), self.q, self.v, self.a,
                            self.qdd, self.lam, self.guess, self.piv, self.report)
        self.iterations, self.factorizations = int(self.report[0]), int(self.report[1])
        if code:
            nu = self.report[2]
            raise ConvergenceError(
                f"{self.integrator.name} (compiled step): Newton did not converge at "
                f"t = {t + h:.9g} s (h = {h:.3g} s) after {self.iterations} iterations "
                f"({STEP_FAILURES.get(code, code)}); last increment "
                f"{nu:.3g} x tolerance", time=t + h, step=h,
                residual=math.nan)
        return self.q, self.v
