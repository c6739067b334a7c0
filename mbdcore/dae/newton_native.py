"""Newton iterations of the implicit index-3/GGL integrators in C (native/newton.c).

Iterations in C.  A problem whose residual terms are all compiled
(:meth:`ConstrainedProblem.compiled_terms <mbdcore.dae.problem.ConstrainedProblem.compiled_terms>`:
constant M, constraint rows and forces as C functions; a planar or spatial ``System``
of rigid bodies, bars and ANCF beams and cables with joints of closed form, see
:class:`~mbdcore.multibody.assembly.SystemTerms`) is iterated by ``native/newton.c`` on
the dense path of modified Newton: the same iterations, residual, correction and
convergence test as the Python loop, with the kept factors, returning to the loop at
the first iteration after which it has a decision to make (converged, slow or no
contraction, kept factors past the fresh ones' count, the iteration limit, a
non-finite residual or correction), and giving the residual's terms where factors are
made; the problem's compiled blocks (``CompiledTerms.jacobian``: C_t, K_t with the
exact constraint curvature terms, d(G v)/dq) replace the Python build of
:meth:`Index3Integrator._parts`.  The Python loop keeps every decision about the matrix
and stays the reference (``System.compiled_residual = False``); both give the same
Newton path to rounding (``tests/test_mbdcore/multibody/test_compiled_newton.py``).  An
iteration of the 8-element hub-beam then costs a few microseconds instead of about 40,
and a build of its blocks a sixth of the Python build's time.  On the sparse path the
iterations stay in Python, but the scaled residual (with G as CSR) and the Newton
matrix's blocks (C_t, K_t, Hg as CSR; M constant) come from the same compiled terms,
one C call each over patterns fixed per topology (``CompiledTerms.sparse_residual``,
``sparse_jacobian``, ``sparse_mass``), instead of a Python call per body and joint.
"""
from __future__ import annotations

import ctypes
import functools
from pathlib import Path

import numpy as np

from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.dae.problem import CompiledTerms
from mbdcore.native import TableLayout, kernel_library, table_layout

__all__ = ["NEWTON_C_SOURCE", "newton_library", "newton_layouts", "CompiledNewton"]

NEWTON_C_SOURCE = Path(__file__).resolve().parent / "native" / "newton.c"
#: the loader of native/newton.c's extension module (its Newton iterations and the whole
#: compiled generalized-alpha step, mbdcore.dae.compiled_step)
newton_library = kernel_library("mbdcore.dae._newton", NEWTON_C_SOURCE, (TABLE_LAYOUT_HEADER,))


@functools.cache
def newton_layouts() -> tuple[TableLayout, TableLayout]:
    """The layouts of ``newton_t`` and ``newton_state_t`` of native/newton.c, declared
    once there (``NEWTON_LAYOUT``, ``NEWTON_STATE_LAYOUT``): their ctypes classes are
    made from the same lists."""
    return (table_layout(newton_library, "NEWTON_LAYOUT"),
            table_layout(newton_library, "NEWTON_STATE_LAYOUT"))


class CompiledNewton:
    """Newton iterations with kept LU factors in C (native/newton.c) for a problem
    whose residual terms are compiled (:class:`~mbdcore.dae.problem.CompiledTerms`):
    the same iterations as :meth:`mbdcore.dae.index3.Index3Integrator._newton`'s Python loop, which keeps
    every decision about the matrix; :meth:`iterate` returns to it at the first
    iteration after which it has one to make."""

    #: return codes of newton_iterate
    CONVERGED, EVENT, LIMIT, BAD_RESIDUAL, BAD_STEP, RESIDUAL = range(6)

    def __init__(self, terms: CompiledTerms, integrator):
        n, m = terms.n, terms.m
        k = 2 * m if integrator.ggl else m
        self.terms, self.n, self.m = terms, n, m
        self.mass = np.ascontiguousarray(terms.mass_matrix(), dtype=float)
        self.work = np.zeros(5 * n + m * n + 3 * m + 2 * (n + k))
        self.G = np.zeros((m, n))
        self.w, self.v = np.zeros(n), np.zeros(n)
        problem_layout, state_layout = newton_layouts()
        st = problem_layout.ctypes_class()()
        st.n, st.m, st.ggl = n, m, int(integrator.ggl)
        st.constraints, st.forces, st.terms_ctx = terms.constraints, terms.forces, \
            terms.context
        st.M, st.work = self.mass.ctypes.data, self.work.ctypes.data
        st.tol, st.theta_refresh = integrator.tol, integrator.theta_refresh
        st.modified = int(integrator.iteration == "modified")
        st.max_iterations = integrator.max_iterations
        self.struct, self.state = st, state_layout.ctypes_class()()
        self._kernel = newton_library().newton_iterate
        self._args = (ctypes.addressof(st), ctypes.addressof(self.state))
        # arrays go to the binding as buffers (checked in C): cheaper than .ctypes.data
        self._out = (self.G, self.w, self.v)
        self._lu = None

    def begin(self, t, q_ref, v_ref, x_ref, cv, ca):
        """Before the iterations of a solve at time t [s] from (q_ref, v_ref, x_ref)
        with the scaling c_v [1/s], c_a [1/s^2]."""
        self.terms.prepare(t)
        st = self.struct
        self._refs = tuple(np.ascontiguousarray(a, dtype=float) for a in (q_ref, v_ref, x_ref))
        st.q_ref, st.v_ref, st.x_ref = (a.ctypes.data for a in self._refs)
        st.cv, st.ca = cv, ca

    def iterate(self, lu, dq, lam_s, mu, it, nu_prev, kept, its_fresh):
        """Iterations from iteration ``it`` with the factors ``lu`` (getrf's, a pair)
        until one the Python loop must see; dq, lam_s, mu updated in place.  Returns
        (code, index of the last iteration, iterations made, nu, theta or None).
        ``lu`` None: only the residual's terms at the iterate (``G``, ``w``, ``v``; code
        ``RESIDUAL`` or ``BAD_RESIDUAL``), to build factors there."""
        st, state = self.struct, self.state
        if lu is not self._lu:
            self._lu = lu
            st.lu, st.piv = (None, None) if lu is None else (lu[0].ctypes.data,
                                                             lu[1].ctypes.data)
        st.kept, st.its_fresh = kept, its_fresh
        state.it, state.done = it, 0
        state.nu_prev = -1.0 if nu_prev is None else nu_prev
        code = self._kernel(*self._args, dq, lam_s, mu, *self._out)
        theta = state.theta if state.theta >= 0.0 else None
        return code, state.it, state.done, state.nu, theta
