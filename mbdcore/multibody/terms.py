"""A system's Newton residual terms and Newton matrix blocks in C.

:class:`SystemTerms` (``System.compiled_terms``) evaluates, for a planar or spatial
system whose every part has a compiled form, the constraint rows g, their Jacobian G
and rate g_t through the batched plan (:mod:`mbdcore.multibody.assembly`,
``native/constraint_plan.c``), the applied forces F from the bodies' compiled kernels
(:class:`CompiledForces`) and the force elements' (:class:`CompiledElement`; most of
them measure elements, :func:`measure_element`: a force law on one scalar measure of
the state, docs/spatial.md, "Force elements as measure elements") and the blocks
K = -dF/dq + d(G^T lam)/dq, C = -dF/dv, H = d(G v)/dq of the Newton matrix, all in
``native/system_terms.c``.

Two outputs of the same C functions: dense (G m x n, K, C n x n, H m x n; the compiled
Newton iterations of small systems, ``native/newton.c``) and sparse, the values of CSR
patterns computed once per topology here (every non-zero the terms can have: the plan's
Jacobian entries, the bodies' tangent patterns, the geometric terms' positions), from
which the sparse Newton path gets its scipy matrices without a Python call per body or
joint (:meth:`SystemTerms.sparse_residual`, :meth:`SystemTerms.sparse_jacobian`).
"""
from __future__ import annotations

import ctypes
import dataclasses
from pathlib import Path

import numpy as np
import scipy.sparse

from mbdcore.dae.problem import SparseBlocks
from mbdcore.multibody.assembly import plan_function
from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.native import kernel_library, table_layout

__all__ = ["CompiledForces", "CompiledElement", "SystemTerms", "SYSTEM_TERMS_C_SOURCE",
           "csr_pattern", "measure_layout", "measure_element", "point_terms", "angle_terms",
           "spring_law", "contact_law", "constant_law", "linear_layout",
           "linear_element"]

_P, _N = ctypes.c_void_p, ctypes.c_int


@dataclasses.dataclass(frozen=True)
class CompiledForces:
    """A body's applied forces as compiled terms (:meth:`BodyBase.compiled_forces
    <mbdcore.multibody.system.BodyBase.compiled_forces>`): ``constant`` [N, N m] (one
    per body coordinate) plus, if ``kernel`` is not 0, the C function at that address,
    called as ``kernel(params, q_b, v_b, f_b)`` (``body_force_fn`` of
    ``native/system_terms.c``: f_b overwritten with the state-dependent forces of the
    body's coordinates q_b, rates v_b), with its parameters at address ``params``, and
    its tangents at address ``tangent`` (``body_tangent_fn``: adds -df/dq and -df/dv
    into dense matrices at the body's diagonal block; 0 without: then the system's
    Newton matrix blocks are not compiled); ``owner`` holds the memory both point
    into; ``pattern``, the (rows, cols) of the body's block the tangents can fill
    (local indices; None: the whole block), for the sparse blocks; ``kernels``, the
    (extension module, C source, API macro) of kernels beyond the system terms' whose
    functions these are (a C model carries their sources)."""

    constant: np.ndarray
    kernel: int = 0
    params: int = 0
    owner: object = None
    tangent: int = 0
    pattern: tuple | None = None
    kernels: tuple = ()


@dataclasses.dataclass(frozen=True)
class CompiledElement:
    """A force element's generalised forces as a compiled kernel over the system
    coordinates ``cols`` it reads (:meth:`Force.compiled_element
    <mbdcore.multibody.forces.Force.compiled_element>`): ``kernel(params, q_e, v_e, f_e)``
    and ``tangent(params, q_e, v_e, K, C, ld)`` of the body kernels' signatures over the
    gathered q_e = q[cols], v_e = v[cols]; ``owner`` holds the memory they point into;
    ``kernels`` as :class:`CompiledForces`'."""

    cols: np.ndarray
    kernel: int
    params: int
    tangent: int
    owner: object = None
    kernels: tuple = ()


class _SystemTermsStruct(ctypes.Structure):
    """``system_terms_t`` of native/system_terms.c (same field order)."""

    _fields_ = [("n", _N), ("m", _N), ("plan", _P), ("plan_data", _P), ("plan_work", _P),
                ("gam", _P), ("zeros", _P), ("n_offset", _N), ("offset_row", _P),
                ("offset", _P), ("offset_rate", _P), ("F0", _P), ("n_bodies", _N),
                ("body_start", _P), ("body_size", _P), ("body_fn", _P),
                ("body_params", _P), ("scratch", _P), ("body_tangent", _P),
                ("geometric", _P), ("geometric_data", _P), ("g_scratch", _P),
                ("G_scratch", _P), ("nK", _N), ("nC", _N), ("nH", _N),
                ("body_nnz", _P), ("body_first", _P), ("body_entry", _P),
                ("body_K_at", _P), ("body_C_at", _P), ("block_K", _P), ("block_C", _P),
                ("m_all", _N), ("n_G_take", _N), ("n_H_take", _N), ("kept", _P),
                ("G_take", _P), ("H_take", _P), ("g_all", _P), ("gt_all", _P), ("G_all", _P),
                ("H_all", _P), ("lam_all", _P), ("plan_gt", _P), ("G_indptr", _P),
                ("G_indices", _P), ("M_indptr", _P), ("M_indices", _P), ("M_data", _P),
                ("F_scratch", _P), ("n_elements", _N), ("elem_fn", _P),
                ("elem_tangent", _P), ("elem_params", _P), ("elem_first", _P),
                ("elem_size", _P), ("elem_cols", _P), ("elem_block", _P), ("elem_K_at", _P),
                ("elem_C_at", _P), ("elem_q", _P), ("elem_v", _P), ("elem_f", _P),
                ("elem_K", _P), ("elem_C", _P)]


SYSTEM_TERMS_C_SOURCE = Path(__file__).resolve().parent / "native" / "system_terms.c"
_terms_library = kernel_library("mbdcore.multibody._system_terms", SYSTEM_TERMS_C_SOURCE,
                                (TABLE_LAYOUT_HEADER,))


def measure_layout():
    """The struct of a measure element, ``MEASURE_LAYOUT`` of native/system_terms.c (its
    one declaration)."""
    return table_layout(_terms_library, "MEASURE_LAYOUT")


def spring_law(stiffness: float, damping: float, one_sided: bool = False):
    """(address, parameters) of the linear spring-damper law T = k s + c s' [N or N m]
    (``spring_law`` of native/system_terms.c); ``one_sided``: no force while s <= 0
    unless the parameters' last entry (engaged) is set (a latch's discrete state, which
    its owner writes between steps)."""
    return (_terms_library().ADDRESSES["spring_law"],
            np.array([stiffness, damping, float(one_sided), 0.0]))


def contact_law(stiffness: float, damping: float, exponent: float):
    """(address, parameters) of the penalty contact law of
    :class:`~mbdcore.multibody.forces.Contact` (``contact_law`` of
    native/system_terms.c) on s = -delta [m], the penetration's opposite."""
    return (_terms_library().ADDRESSES["contact_law"],
            np.array([stiffness, damping, exponent], dtype=float))


def constant_law(value: float):
    """(address, parameters) of the constant law T = value (``constant_law`` of
    native/system_terms.c): the force -value ds/dq."""
    return _terms_library().ADDRESSES["constant_law"], np.array([float(value)])


def point_terms(frame):
    """The closed form of the point of ``frame`` = (body, location) in system columns:
    ("rigid", [x, y, phi], c) for r = (x, y) + A(phi) c, or ("linear", cols, N, c) for
    r = N q[cols] + c; None if it has none (a body whose points are not linear in its
    coordinates, a modal beam's)."""
    body, loc = frame
    form = body.point_form(loc)
    base = body.index if body.index is not None else 0
    if form is not None and form[0] == "rigid":
        return "rigid", [base + k for k in range(3)], np.asarray(form[1], float)
    if form is not None:
        _, cols, N, c = form
        return ("linear", [base + int(k) for k in cols] if body.index is not None else [],
                np.asarray(N, float).reshape(len(c), -1), np.asarray(c, float))
    if not getattr(body, "points_linear", False):
        return None
    # r = J q + c with J constant: read at q = 0
    zeros = np.zeros(body.n_coords)
    r, _, J, _ = body.state(zeros, zeros).point(loc)
    J = np.asarray(J, float).reshape(len(r), -1)
    cols = [k for k in range(J.shape[1]) if J[:, k].any()] if body.index is not None else []
    return "linear", [base + k for k in cols], J[:, cols], np.asarray(r, float)


def angle_terms(frame, sign: float):
    """sign times the orientation of ``frame`` [rad] as (terms, constant): terms the list
    of (system column, weight) of an orientation linear in the coordinates (a rigid
    body's, the ground's, a motor's rotor); None otherwise."""
    body, loc = frame
    form = body.angle_form(loc)
    if form is None or form[0] != "linear":
        return None
    _, cols, coef, c = form
    terms = [(body.index + int(k), sign * float(w)) for k, w in zip(cols, coef)] \
        if body.index is not None else []
    return terms, sign * float(c)


def measure_element(linear, s0: float, law, line=None, beta: float = 1.0, normal=None,
                    along: bool = False, tangent0=None):
    """The :class:`CompiledElement` of a force -T(s, s') ds/dq on the measure
    s = sum w q[col] + beta |r_b - r_a| + s0 (``measure_forces`` of
    native/system_terms.c): ``linear`` the (system column, weight) terms, ``law`` =
    (address, parameters) of a force law (and the ``kernels`` of
    :class:`CompiledElement` where the law is not the system terms'), ``line`` None or
    the :func:`point_terms` of the points (a, b); with a ``normal`` n (a vector in a's
    frame: a line's unit normal, a force; a float64 array is kept, not copied, so that
    its owner may write it before each solve), the projection beta n . (r_b - r_a) instead
    of the length; ``along``, a force -T n at b (and its reaction at a) whose turn with
    a does no work, no gradient (``along`` of ``MEASURE_LAYOUT``); with ``tangent0``
    t0 (planar, points linear in q), the angle beta atan2(t0 x d, t0 . d) of d = r_b -
    r_a instead (a beam's slope angle)."""
    cols = sorted({c for c, _ in linear} | ({c for p in line for c in p[1]} if line else set()))
    local = {c: k for k, c in enumerate(cols)}
    dim = 0 if line is None else len(line[0][-1]) if line[0][0] == "linear" else 2
    points = {}
    for name, p in zip("ab", line or ((None,), (None,))):
        if p[0] is None:
            points.update({f"{name}_rigid": 0, f"{name}_n": 0,
                           f"{name}_cols": np.zeros(0, np.intc), f"{name}_N": np.zeros(0),
                           f"{name}_c": np.zeros(dim)})
        elif p[0] == "rigid":
            points.update({f"{name}_rigid": 1, f"{name}_n": 3,
                           f"{name}_cols": np.array([local[c] for c in p[1]], np.intc),
                           f"{name}_N": np.zeros(dim * 3), f"{name}_c": p[2].copy()})
        else:
            points.update({f"{name}_rigid": 0, f"{name}_n": len(p[1]),
                           f"{name}_cols": np.array([local[c] for c in p[1]], np.intc),
                           f"{name}_N": np.ascontiguousarray(p[2], float).ravel(),
                           f"{name}_c": np.ascontiguousarray(p[3], float)})
    address, params, *kernels = law
    n = len(cols)
    params = np.ascontiguousarray(params, dtype=float)
    st = measure_layout().structure(
        n=n, n_lin=len(linear), lin_at=np.array([local[c] for c, _ in linear], np.intc),
        lin_w=np.array([w for _, w in linear], float), beta=beta if line else 0.0,
        s0=float(s0), dim=dim, projected=int(normal is not None), along=int(along),
        angle=int(tangent0 is not None),
        tangent0=np.zeros(0) if tangent0 is None else np.array(tangent0, float),
        normal=np.zeros(0) if normal is None else np.ascontiguousarray(normal, float),
        law=address,
        n_law=params.size, law_params=params,
        work=np.zeros((dim + 2) * n), **points)
    lib = _terms_library()
    return CompiledElement(np.array(cols, dtype=np.intc), lib.ADDRESSES["measure_forces"],
                           ctypes.addressof(st), lib.ADDRESSES["measure_tangent"], (st, params),
                           tuple(kernels[0]) if kernels else ())


def linear_layout():
    """The struct of a force element linear in q, ``LINEAR_LAYOUT`` of
    native/system_terms.c; its ctypes class declares its C type, ``linear_t``, for a C
    image (mbdcore.cimage)."""
    layout = table_layout(_terms_library, "LINEAR_LAYOUT")
    layout.ctypes_class().c_type = "linear_t"
    return layout


def linear_element(cols, B, b, scale) -> CompiledElement:
    """The :class:`CompiledElement` of f = sum_j scale[j] (B[j] q[cols] + b[j]) [N, N m]
    (``linear_forces`` of native/system_terms.c) over m terms, B (m, n, n), b (m, n);
    ``scale`` a float64 array of m numbers, which its owner may write before each solve
    (an input, a load at the solve's time)."""
    B = np.ascontiguousarray(B, dtype=float)
    st = linear_layout().structure(n=len(cols), m=B.shape[0], scale=scale, B=B.ravel(),
                                   b=np.ascontiguousarray(b, dtype=float).ravel())
    lib = _terms_library()
    return CompiledElement(np.asarray(cols, dtype=np.intc), lib.ADDRESSES["linear_forces"],
                           ctypes.addressof(st), lib.ADDRESSES["linear_tangent"],
                           (st, scale))


def csr_pattern(rows, cols, shape):
    """The CSR pattern (indptr, indices, int32) holding the positions (rows, cols) of a
    matrix of ``shape``, and where each position's value goes in it (int32)."""
    n_rows, n_cols = shape
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    uniq, at = np.unique(rows * n_cols + cols, return_inverse=True)
    indptr = np.searchsorted(uniq // max(n_cols, 1), np.arange(n_rows + 1))
    return (indptr.astype(np.int32), (uniq % max(n_cols, 1)).astype(np.int32),
            at.ravel().astype(np.int32))


def _take_rows(pattern, rows):
    """The CSR pattern (indptr, indices) of the rows ``rows`` of ``pattern`` and the
    value indices they take from it (int32 each)."""
    indptr, indices = pattern
    take = np.concatenate([np.arange(indptr[r], indptr[r + 1]) for r in rows]) \
        if len(rows) else np.zeros(0, dtype=np.int64)
    counts = np.diff(indptr)[np.asarray(rows, dtype=np.int64)]
    new = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return (new, np.asarray(indices)[take].astype(np.int32)), take.astype(np.int32)


class _Sparse:
    """The sparse context of a :class:`SystemTerms`: the CSR patterns of G, K, C, H and
    the C table that fills their values."""

    def __init__(self, terms: SystemTerms, plan, bodies, mass_sparse):
        n, m = terms.n, terms.m
        self.mass = scipy.sparse.csr_matrix(mass_sparse)
        st = _SystemTermsStruct.from_buffer_copy(terms.struct)
        keep = terms.keep
        kept = terms.kept
        if m:
            self.G_pattern = (plan.csr_indptr, plan.csr_indices)
            self._plan_struct = plan.kernel_struct(True)
            st.plan_data = ctypes.addressof(self._plan_struct)
            st.G_scratch = keep(np.zeros(max(1, plan.csr_indices.size)))
            (kr, kc), (hr, hc) = plan.geometric_positions()
            if kept is not None:
                self.G_pattern, take = _take_rows(self.G_pattern, kept)
                st.G_all = keep(np.zeros(max(1, plan.csr_indices.size)))
                st.n_G_take, st.G_take = take.size, keep(take)
        else:
            kr = kc = hr = hc = np.zeros(0, dtype=np.int64)
        # the bodies' tangent entries: local (row, col) of their blocks
        first, nnz, entry, b_rows, b_cols = [], [], [], [], []
        for start, size, forces in bodies:
            if forces.pattern is None:
                r, c = np.divmod(np.arange(size * size), size)
            else:
                r, c = (np.asarray(x, dtype=np.int64) for x in forces.pattern)
            first.append(sum(nnz))
            nnz.append(r.size)
            entry.append(r * size + c)
            b_rows.append(start + r)
            b_cols.append(start + c)
        cat = (lambda parts: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64))
        b_rows, b_cols = cat(b_rows), cat(b_cols)
        # the force elements' whole blocks over their gathered columns, after the bodies'
        e_rows = cat([np.repeat(e.cols, e.cols.size) for e in terms.elements])
        e_cols = cat([np.tile(e.cols, e.cols.size) for e in terms.elements])
        nb, ne = b_rows.size, e_rows.size
        K = csr_pattern(np.concatenate([b_rows, e_rows, kr]),
                        np.concatenate([b_cols, e_cols, kc]), (n, n))
        C = csr_pattern(np.concatenate([b_rows, e_rows]), np.concatenate([b_cols, e_cols]),
                        (n, n))
        if ne:
            st.elem_K_at = keep(np.ascontiguousarray(K[2][nb:nb + ne]))
            st.elem_C_at = keep(np.ascontiguousarray(C[2][nb:]))
        H = csr_pattern(hr, hc, (terms.m_all, n))
        self.K_pattern, self.C_pattern, self.H_pattern = K[:2], C[:2], H[:2]
        if kept is not None and m:
            self.H_pattern, take = _take_rows(H[:2], kept)
            st.H_all = keep(np.zeros(max(1, H[1].size)))
            st.n_H_take, st.H_take = take.size, keep(take)
        st.nK, st.nC, st.nH = K[1].size, C[1].size, H[1].size
        st.body_nnz = keep(np.array(nnz, dtype=np.int32))
        st.body_first = keep(np.array(first, dtype=np.int32))
        st.body_entry = keep(cat(entry).astype(np.int32))
        st.body_K_at = keep(np.ascontiguousarray(K[2][:nb]))
        st.body_C_at = keep(np.ascontiguousarray(C[2][:nb]))
        block = max([size * size for _, size, _ in bodies], default=1)
        st.block_K, st.block_C = keep(np.zeros(block)), keep(np.zeros(block))
        st.G_indptr = keep(np.ascontiguousarray(self.G_pattern[0], dtype=np.int32)) if m \
            else None
        st.G_indices = keep(np.ascontiguousarray(self.G_pattern[1], dtype=np.int32)) if m \
            else None
        self.mass.sort_indices()
        st.M_indptr = keep(np.ascontiguousarray(self.mass.indptr, dtype=np.int32))
        st.M_indices = keep(np.ascontiguousarray(self.mass.indices, dtype=np.int32))
        st.M_data = keep(np.ascontiguousarray(self.mass.data, dtype=np.float64))
        st.F_scratch = keep(np.zeros(max(n, terms.m_all, 1)))
        if m:
            self._K_at = np.ascontiguousarray(K[2][nb + ne:])
            self._H_at = np.ascontiguousarray(H[2])
            self._geometric = plan.geometric_struct(self._K_at, self._H_at)
            st.geometric_data = ctypes.addressof(self._geometric)
        self.struct = st
        self.address = ctypes.addressof(st)
        self.G_values = np.zeros(self.G_pattern[1].size if m else 0)


class SystemTerms:
    """A planar or spatial system's Newton residual terms in C (the
    :class:`~mbdcore.dae.problem.CompiledTerms` of ``System.compiled_terms``): the
    constraint rows from the batched plan's C call, the forces from the bodies' compiled
    kernels.  :meth:`build` returns None unless every part has a compiled form: every
    row batched in C (point, angle, quadratic and hinge-angle rows; no per-joint
    fallback; removed redundant rows left out of g, G, g_t and H, their
    multipliers zero), force elements whose force does not depend on the state
    (:meth:`~mbdcore.multibody.forces.Force.state_independent`: evaluated once per
    solve) or that have a compiled form
    (:meth:`~mbdcore.multibody.forces.Force.compiled_element`), constant mass, every
    body with :class:`CompiledForces`.

    Built from the system's parts at the time of the call: parameters changed later
    (a beam's EA) are seen by the next build, which the integrators make at every
    start."""

    def __init__(self, plan, n: int, m: int, mass_matrix, bodies, timed_forces=(),
                 apply=None, mass_sparse=None, kept=None, elements=(), element_forces=()):
        self.plan = plan
        self.elements = list(elements)
        #: the force element each compiled element is of (same order)
        self.element_forces = list(element_forces)
        self._mass_matrix, self._mass_sparse = mass_matrix, mass_sparse
        self._mass = None
        self._keep = [b.owner for _, b in bodies]
        self.F0 = np.zeros(n)
        self._timed_forces, self._apply = list(timed_forces), apply
        kernels = []
        for start, forces in bodies:
            self.F0[start:start + forces.constant.size] += forces.constant
            if forces.kernel:
                kernels.append((start, forces.constant.size, forces.kernel, forces.params,
                                forces.tangent, forces))
        self._kernels = kernels
        #: the Newton matrix's blocks are compiled too (every force kernel has tangents)
        self.has_jacobian = all(k[4] for k in kernels)
        #: the rows kept after redundant ones were removed (None: all m)
        self.kept = None if kept is None else np.asarray(kept, dtype=np.int32)
        self.n, self.m_all = n, m
        self.m = m if kept is None else self.kept.size
        st = _SystemTermsStruct()
        st.n, st.m, st.m_all = n, self.m, m
        self._arrays = []
        keep = self.keep
        if m:
            st.plan = plan_function("plan_evaluate")
            # a copy of the plan's table that always writes a dense G (the plan's own
            # is switched between dense and sparse by its Python callers)
            self._plan_struct = plan.kernel_struct(False)
            st.plan_data = ctypes.addressof(self._plan_struct)
            st.plan_work = plan.work.ctypes.data
            st.plan_gt = plan.a_gt.ctypes.data if plan.ad_row.size else None
            st.gam = keep(np.zeros(m))
        st.zeros = keep(np.zeros(max(n, 1)))
        self._offsets = [offset for _, offset in plan.sum_rows] if m else []
        self.offset = np.zeros(len(self._offsets))
        self.offset_rate = np.zeros(len(self._offsets))
        st.n_offset = len(self._offsets)
        st.offset_row = keep(np.array([row for row, _ in plan.sum_rows] if m else [],
                                      dtype=np.int32))
        st.offset, st.offset_rate = keep(self.offset), keep(self.offset_rate)
        self._body_constant = self.F0.copy()
        st.F0 = keep(self.F0)
        st.n_bodies = len(kernels)
        st.body_start = keep(np.array([k[0] for k in kernels], dtype=np.int32))
        st.body_size = keep(np.array([k[1] for k in kernels], dtype=np.int32))
        self._fn = (ctypes.c_void_p * max(1, len(kernels)))(*[k[2] for k in kernels])
        self._params = (ctypes.c_void_p * max(1, len(kernels)))(*[k[3] for k in kernels])
        st.body_fn = ctypes.addressof(self._fn)
        st.body_params = ctypes.addressof(self._params)
        st.scratch = keep(np.zeros(max([k[1] for k in kernels], default=1)))
        self._tangent = (ctypes.c_void_p * max(1, len(kernels)))(*[k[4] for k in kernels])
        st.body_tangent = ctypes.addressof(self._tangent)
        if m:
            st.geometric = plan_function("plan_geometric")
            st.geometric_data = ctypes.addressof(plan.geometric_table())
            st.g_scratch = keep(np.zeros(m))
        st.nK, st.nC, st.nH = n * n, n * n, m * n
        if self.kept is not None:
            # every row into these, the kept ones taken (rows of a dense G, H)
            st.kept = keep(self.kept)
            st.g_all, st.gt_all, st.lam_all = (keep(np.zeros(m)) for _ in range(3))
            st.G_all = keep(np.zeros(m * n))
            take = (self.kept[:, None] * n + np.arange(n)[None, :]).ravel().astype(np.int32)
            st.n_G_take = st.n_H_take = take.size
            st.G_take = st.H_take = keep(take)
        self._element_table(st)
        self.struct = st
        lib = _terms_library()
        self.constraints_address = lib.ADDRESSES["system_constraints"]
        self.forces_address = lib.ADDRESSES["system_forces"]
        self.context_address = ctypes.addressof(st)
        self._sparse = None

    def kernel_sources(self) -> tuple:
        """The (extension module, C source, API macro) of the kernels beyond the system
        terms' that the bodies' and elements' functions are in."""
        found = [k for b in self._kernels for k in b[5].kernels] + \
            [k for e in self.elements for k in e.kernels]
        return tuple(dict.fromkeys(found))

    def _element_table(self, st) -> None:
        """The force elements' part of the C table: their kernels, gathered columns and
        scratch (dense; the sparse context adds where their blocks go)."""
        els, keep = self.elements, self.keep
        st.n_elements = len(els)
        if not els:
            return
        sizes = [e.cols.size for e in els]
        self._elem_fn = (ctypes.c_void_p * len(els))(*[e.kernel for e in els])
        self._elem_tangent = (ctypes.c_void_p * len(els))(*[e.tangent for e in els])
        self._elem_params = (ctypes.c_void_p * len(els))(*[e.params for e in els])
        st.elem_fn = ctypes.addressof(self._elem_fn)
        st.elem_tangent = ctypes.addressof(self._elem_tangent)
        st.elem_params = ctypes.addressof(self._elem_params)
        st.elem_first = keep(np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int32))
        st.elem_size = keep(np.array(sizes, dtype=np.int32))
        st.elem_cols = keep(np.concatenate([e.cols for e in els]).astype(np.int32))
        st.elem_block = keep(np.concatenate([[0], np.cumsum(np.square(sizes))[:-1]])
                             .astype(np.int32))
        big = max(sizes)
        st.elem_q, st.elem_v, st.elem_f = (keep(np.zeros(big)) for _ in range(3))
        st.elem_K, st.elem_C = (keep(np.zeros(big * big)) for _ in range(2))
        self._keep.extend(e.owner for e in els)

    def mass_matrix(self) -> np.ndarray:
        """The constant mass matrix, dense (n, n) [kg, kg m, kg m^2], built on the first
        call."""
        if self._mass is None:
            self._mass = np.ascontiguousarray(self._mass_matrix(), dtype=float)
        return self._mass

    def keep(self, a):
        """Keep the array ``a`` alive with the terms; its address (None if empty)."""
        self._arrays.append(a)
        return a.ctypes.data if a.size else None

    @classmethod
    def build(cls, plan, n: int, bodies, forces, gravity, mass_matrix, apply=None,
              mass_sparse=None, kept=None):
        """The terms of a system of ``n`` coordinates with the constraint ``plan`` of
        its rows (None without constraints), its ``bodies`` (the moving ones), force
        elements ``forces`` and ``gravity`` [m/s^2]; ``mass_matrix()`` gives its dense
        M (called when the dense terms ask for it; ``mass_sparse()`` its CSR M, for the
        sparse terms), ``apply(force, t, f)``
        adds a force element's generalised force at time t to f; ``kept``, the rows the
        solvers see where redundant ones were removed (None: all).  None when a part has
        no compiled form (see the class docstring)."""
        if not all(b.constant_mass for b in bodies):
            return None
        timed, elements, owners = [], [], []
        for f in forces:
            if f.state_independent():
                timed.append(f)
                continue
            element = f.compiled_element()
            if element is None:
                return None
            elements.append(element)
            owners.append(f)
        compiled = []
        for b in bodies:
            f = b.compiled_forces(gravity)
            if f is None:
                return None
            compiled.append((b.index, f))
        if plan is not None and plan.fallback:
            return None
        return cls(plan, n, 0 if plan is None else plan.m, mass_matrix, compiled, timed,
                   apply, mass_sparse, kept, elements, owners)

    def jacobian(self, q, v, lam, geometric: bool = True):
        """(C_t, K_t, Hg) at (q, v, lam) as new dense arrays: C_t = -dF/dv [N s/m],
        K_t = -dF/dq + d(G^T lam)/dq [N/m], Hg = d(G v)/dq; the constraint curvature
        terms only with ``geometric``.  Requires :attr:`has_jacobian`."""
        n, m = self.n, self.m
        self.jacobian_function()
        K, C, H = np.empty((n, n)), np.empty((n, n)), np.empty((m, n))
        q, v, lam = (np.ascontiguousarray(a, dtype=np.float64) for a in (q, v, lam))
        _terms_library().system_jacobian(self.context_address, q, v, lam, int(geometric),
                                         K, C, H)
        return C, K, H

    def jacobian_function(self) -> int:
        """The address of ``system_jacobian`` (native/system_terms.c), which C calls with
        :attr:`context_address` for the dense blocks of :meth:`jacobian`, after making
        the scratch it needs there: the plan's dense G, and H over every row when rows
        were removed (made on the first call)."""
        if self.m and not self.struct.G_scratch:
            self.struct.G_scratch = self.keep(np.zeros(self.m_all * self.n))
            if self.kept is not None:
                self.struct.H_all = self.keep(np.zeros(self.m_all * self.n))
        return _terms_library().ADDRESSES["system_jacobian"]

    def sparse_context(self) -> _Sparse:
        """The sparse patterns and their C table, built on first use."""
        if self._sparse is None:
            mass = self._mass_sparse() if self._mass_sparse is not None else \
                self.mass_matrix()
            self._sparse = _Sparse(self, self.plan, [(k[0], k[1], k[5])
                                                     for k in self._kernels], mass)
        return self._sparse

    def sparse_blocks(self) -> SparseBlocks:
        """The sparse context's address, patterns and constant M for a step wholly in C
        (:class:`~mbdcore.dae.problem.SparseBlocks`)."""
        sp = self.sparse_context()
        return SparseBlocks(sp.address, _terms_library().ADDRESSES["system_residual_sparse"],
                            sp.mass, sp.G_pattern if self.m else (np.zeros(1, np.int32),
                                                                  np.zeros(0, np.int32)),
                            sp.C_pattern, sp.K_pattern, sp.H_pattern)

    def sparse_constraints(self, q):
        """(g, G, g_t) at q for the sparse Newton path (after :meth:`prepare` of the
        solve's time): G as CSR over the plan's pattern fixed per topology."""
        sp = self.sparse_context()
        n, m = self.n, self.m
        q = np.ascontiguousarray(q, dtype=np.float64)
        g, gt = np.empty(m), np.empty(m)
        Gx = np.empty(sp.G_values.size)
        _terms_library().system_constraints(sp.address, q, g, Gx, gt)
        G = scipy.sparse.csr_matrix((Gx, *sp.G_pattern[::-1]), shape=(m, n)) if m else \
            scipy.sparse.csr_matrix((0, n))
        return g, G, gt

    def sparse_residual(self, q_ref, v_ref, x_ref, dq, lam, mu, cv: float, ca: float,
                        ggl: bool):
        """The scaled Newton residual of the sparse path at the iterate (dq, lam~, mu) in
        one C call (``system_residual_sparse``; :mod:`mbdcore.dae.index3`): returns
        (q, G, w, v, x, r), G as CSR over the fixed pattern, after :meth:`prepare` of
        the solve's time."""
        sp = self.sparse_context()
        n, m = self.n, self.m
        q, v, x, w = (np.empty(n) for _ in range(4))
        Gx = np.empty(sp.G_values.size)
        r = np.empty(n + (2 * m if ggl else m))
        args = (np.ascontiguousarray(a, dtype=np.float64)
                for a in (q_ref, v_ref, x_ref, dq, lam, mu if ggl else np.zeros(m)))
        _terms_library().system_residual_sparse(sp.address, *args, float(cv), float(ca),
                                                int(ggl), q, v, x, w, Gx, r)
        G = scipy.sparse.csr_matrix((Gx, *sp.G_pattern[::-1]), shape=(m, n)) if m else \
            scipy.sparse.csr_matrix((0, n))
        return q, G, w, v, x, r

    def sparse_mass(self):
        """The constant mass matrix as CSR [kg, kg m, kg m^2]."""
        return self.sparse_context().mass

    def sparse_jacobian(self, q, v, lam, geometric: bool = True):
        """(C_t, K_t, Hg) of :meth:`jacobian` as CSR matrices over patterns fixed per
        topology (one C call)."""
        sp = self.sparse_context()
        n, m = self.n, self.m
        q, v, lam = (np.ascontiguousarray(a, dtype=np.float64) for a in (q, v, lam))
        Kx, Cx, Hx = (np.empty(max(1, p[1].size)) for p in
                      (sp.K_pattern, sp.C_pattern, sp.H_pattern))
        _terms_library().system_jacobian(sp.address, q, v, lam, int(geometric), Kx, Cx, Hx)

        def csr(x, pattern, shape):
            indptr, indices = pattern
            return scipy.sparse.csr_matrix((x[:indices.size], indices, indptr), shape=shape)
        return (csr(Cx, sp.C_pattern, (n, n)), csr(Kx, sp.K_pattern, (n, n)),
                csr(Hx, sp.H_pattern, (m, n)))

    def prepare(self, t: float) -> None:
        """Before the calls of a solve at time t [s]: the driving offsets f(t), f'(t)
        [rad, rad/s], the spatial angle drivers' motions and the state-independent force
        elements (inputs as they are now)."""
        if self.plan is not None:
            self.plan.set_time(t)
        if self._timed_forces:
            self.F0[:] = self._body_constant
            for force in self._timed_forces:
                self._apply(force, t, self.F0)
        for k, offset in enumerate(self._offsets):
            f, fd, _ = offset(t)
            self.offset[k] = f
            self.offset_rate[k] = fd
