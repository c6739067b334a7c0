"""Sparse LU of a square matrix whose pattern is fixed per model topology, in C
(``native/sparse_lu.c``; the algorithm and its references are in docs/sparse_lu.md).

:class:`SparseLU` is made once per pattern — the fill-reducing ordering (minimum degree
on A + A^T, or on A^T A for a matrix with zero diagonal entries) computed then — and
factors matrices of that pattern (or any part of it):
:meth:`SparseLU.factor` chooses pivots (threshold partial pivoting, the diagonal
preferred), :meth:`SparseLU.refactor` keeps the last factorisation's pivot order and the
patterns of L and U and only recomputes their values, falling back to a fresh
factorisation when a kept pivot fails the threshold test.  The index-3/GGL integrators'
sparse path (:mod:`mbdcore.dae.index3`) factors its Newton matrices with it.

:class:`PardisoFactors` (:func:`pardiso_factors`) are the factors of Intel MKL's
PARDISO, a multithreaded sparse direct solver, through the optional package pypardiso
(the extra ``parallel``: ``pip install flexcosim[parallel]``), imported only when asked
for; the integrators' ``sparse_solver="pardiso"``.  Its analysis (phase 11: ordering and
symbolic factorisation) is made once per pattern, :class:`PardisoAnalysis`, and every
factorisation of a matrix of that pattern is then its numerical phase (22) alone, as
SparseLU keeps its ordering per pattern.

Every array the C touches is allocated here, sized from the pattern: the C allocates
nothing.  With the A^T A ordering the analysis bounds the room L and U need; with the
A + A^T ordering a factorisation needing more room than the first guess (pivoting can
exceed the Cholesky factor of the ordered A + A^T) is redone with more.
"""
from __future__ import annotations

import copy
import ctypes
import weakref
from pathlib import Path

import numpy as np
import scipy.sparse

from mbdcore.native import kernel_library

__all__ = ["SparseLU", "SingularMatrixError", "PatternError", "ORDERINGS", "PIVOT_TOLERANCE", "SINGULAR_RATIO",
           "SPARSE_LU_C_SOURCE", "sparse_lu_library", "PardisoAnalysis", "PardisoFactors",
           "PARDISO_SLOTS", "pardiso_factors", "pardiso_threads", "require_pardiso",
           "PARALLEL_EXTRA"]

#: the optional extra that installs the parallel sparse solver (pypardiso: PARDISO)
PARALLEL_EXTRA = "parallel"

#: a pivot is accepted within this fraction of its column's largest candidate, and a
#: kept one while it stays within it (KLU's default is 0.001; on the ring truss's Newton
#: matrix at 24 bays 0.01 leaves a residual 30 times SuperLU's, 0.1 one as SuperLU's)
PIVOT_TOLERANCE = 0.1
#: fill-reducing orderings: minimum degree on the pattern of A + A^T ("symmetric", for a
#: matrix whose diagonal is pivoted on) or of A^T A ("normal", any pivot rows; its fill
#: bounds L's and U's, so the room is known before factoring); "auto": "normal" where
#: the pattern has a zero diagonal entry (a saddle point), "symmetric" elsewhere
ORDERINGS = ("auto", "symmetric", "normal")
#: a matrix whose smallest pivot is at most this times the largest is singular (the
#: test of the dense path, Index3Integrator._factor, and of index1.sparse_lu)
SINGULAR_RATIO = 1e-14

SPARSE_LU_C_SOURCE = Path(__file__).resolve().parent / "native" / "sparse_lu.c"
_library = kernel_library("mbdcore.dae._sparse_lu", SPARSE_LU_C_SOURCE)
#: the loader of native/sparse_lu.c's extension module (its functions' addresses: C
#: that factors through them, mbdcore.dae.sparse_step)
sparse_lu_library = _library
# return codes of native/sparse_lu.c
_OK, _SINGULAR, _NONFINITE, _NO_ROOM, _BAD_PIVOT, _BAD_PATTERN = range(6)


class SingularMatrixError(ArithmeticError):
    """The matrix is singular (no pivot, or one at most :data:`SINGULAR_RATIO` times
    the largest) or has a non-finite entry; the message says which."""


class PatternError(ValueError):
    """The matrix has another shape than the pattern the SparseLU was made for, or an
    entry outside it."""


def _csr(A) -> scipy.sparse.csr_matrix:
    """A in compressed rows, summed and sorted (PARDISO's format)."""
    A = scipy.sparse.csr_matrix(A, dtype=float)
    if not A.has_canonical_format:
        A = A.copy()
        A.sum_duplicates()
    return A


def _index(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int32)


def _csc(A, name: str):
    if not scipy.sparse.issparse(A):
        raise TypeError(f"{name} must be a scipy sparse matrix, got {type(A).__name__}")
    A = scipy.sparse.csc_matrix(A)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be square, got shape {A.shape}")
    if not A.has_canonical_format:
        A = A.copy()
        A.sum_duplicates()
    return A


def _gather(indptr, indices, A, what: str) -> np.ndarray:
    """The values of the compressed matrix ``A`` (CSC, or CSR with a CSR pattern) at the
    positions of the pattern ``indptr``, ``indices`` of its shape, zero where A has no
    entry (scipy drops the entries its sums cancel); :class:`PatternError` if A has one
    outside the pattern."""
    data = np.ascontiguousarray(A.data, dtype=float)
    if A.nnz == indices.size and np.array_equal(A.indptr, indptr) \
            and np.array_equal(A.indices, indices):
        return data
    n = indptr.size - 1
    out = np.empty(indices.size)
    where = np.full(n, -1, dtype=np.int32)
    if _library().slu_gather(n, indptr, indices, _index(A.indptr), _index(A.indices), data,
                             out, where) != _OK:
        raise PatternError(f"A has entries outside the pattern this {what} was made for "
                           f"(make a {what} of the new pattern)")
    return out


class SparseLU:
    """LU factors P A Q = L U of a square sparse matrix of a fixed pattern.

    Parameters
    ----------
    pattern : scipy sparse matrix (n, n)
        The positions of the entries (values ignored); the matrices factored may have
        entries at any of these positions and nowhere else.
    tol : float
        Pivot threshold in (0, 1]: a pivot at least ``tol`` times its column's largest
        candidate is accepted, the diagonal of the ordered matrix first (1: partial
        pivoting).
    room : int
        Entries of L and of U to allocate for the first factorisation (default, 0: with
        the ``"normal"`` ordering the bound its analysis gives, else four times the
        entries of the Cholesky factor of the ordered A + A^T, which pivoting can
        exceed); one that needs more is redone with more, and the room kept.
    ordering : {"auto", "symmetric", "normal"}
        The fill-reducing ordering (:data:`ORDERINGS`, docs/sparse_lu.md).

    A factorisation is computed by :meth:`factor` or :meth:`refactor` (in place) or by
    :meth:`factored` / :meth:`refactored` (a new object, this one unchanged: the integrator
    keeps factors of earlier steps).  The arrays of a factorisation are never written
    after it: copies share them.

    Attributes
    ----------
    n : int
    order : ndarray of int32
        Q: the fill-reducing order of rows and columns (minimum degree on A + A^T).
    ordering : str
        The ordering used, ``"symmetric"`` or ``"normal"``.
    cholesky_nnz : int
        Entries below the diagonal of the Cholesky factor of Q^T (A + A^T) Q
        (``"symmetric"``: the fill without pivoting) or of Q^T A^T A Q (``"normal"``:
        a bound of the entries below the diagonal of L and above that of U).
    refactor_fallbacks : int
        Refactorisations whose kept pivots failed the threshold test (factored afresh);
        shared by the copies.
    """

    def __init__(self, pattern, tol: float = PIVOT_TOLERANCE, room: int = 0,
                 ordering: str = "auto"):
        if not (0.0 < tol <= 1.0):
            raise ValueError(f"tol = {tol!r}: accepted 0 < tol <= 1")
        if ordering not in ORDERINGS:
            raise ValueError(f"ordering = {ordering!r}: accepted {ORDERINGS}")
        P = _csc(pattern, "pattern")
        if ordering == "auto":
            diagonal = (P.indices == np.repeat(np.arange(P.shape[0]), np.diff(P.indptr)))
            ordering = "normal" if np.count_nonzero(diagonal) < P.shape[0] else "symmetric"
        self.ordering = ordering
        self.n, self.tol = int(P.shape[0]), float(tol)
        self.indptr, self.indices = _index(P.indptr), _index(P.indices)
        self.order = np.empty(self.n, dtype=np.int32)
        lib = _library()
        work = np.empty(lib.slu_analyse_size(self.n, int(self.indptr[-1])), dtype=np.int32)
        lnz = lib.slu_analyse(self.n, self.indptr, self.indices, int(ordering == "normal"),
                              self.order, work)
        if lnz < 0:
            raise ValueError("pattern has a row index out of range")
        self.cholesky_nnz = int(lnz)
        # room for the entries of L and of U (shared by the copies), grown on demand
        guess = self.cholesky_nnz if ordering == "normal" else 4 * self.cholesky_nnz + self.n
        self._room = [max(int(room), guess)]
        self._fallbacks = [0]
        self.factors = None      # (Lp, Li, Lx, Up, Ui, Ux, Udiag, prow) after a factor
        # the values (at the pattern's positions) of the matrix whose factorisation chose
        # the pivots in use: what the pivot order is made from again (pivot_state)
        self._pivot_source = None

    # -- the pattern -------------------------------------------------------------------
    @property
    def pattern(self) -> scipy.sparse.csc_matrix:
        """The analysed pattern (ones at its entries)."""
        return scipy.sparse.csc_matrix((np.ones(self.indices.size), self.indices, self.indptr),
                                       shape=(self.n, self.n))

    def fits(self, A) -> bool:
        """Whether ``A`` has this shape and entries only within the pattern."""
        try:
            self._values(A)
        except PatternError:
            return False
        return True

    def _values(self, A) -> np.ndarray:
        """A's values at the pattern's positions (:class:`PatternError` if A has another
        shape or an entry outside them)."""
        A = _csc(A, "A")
        if A.shape != (self.n, self.n):
            raise PatternError(f"A has shape {A.shape}; the pattern is {self.n} x {self.n}")
        return _gather(self.indptr, self.indices, A, "SparseLU")

    # -- factorisations ----------------------------------------------------------------
    def factor(self, A) -> "SparseLU":
        """Factor ``A`` afresh (pivots chosen); :class:`SingularMatrixError` if it is
        singular or not finite, :class:`PatternError` if it has an entry outside the
        pattern.  Returns self."""
        values = self._values(A)
        n, lib = self.n, _library()
        info = np.zeros(3, dtype=np.int32)
        while True:
            room = self._room[0]
            Lp, Up = np.empty(n + 1, dtype=np.int32), np.empty(n + 1, dtype=np.int32)
            Li, Ui = np.empty(room, dtype=np.int32), np.empty(room, dtype=np.int32)
            Lx, Ux = np.empty(room), np.empty(room)
            Udiag, prow = np.empty(n), np.empty(n, dtype=np.int32)
            code = lib.slu_factor(n, self.indptr, self.indices, values, self.order, self.tol,
                                  Lp, Li, Lx, room, Up, Ui, Ux, room, Udiag, prow,
                                  np.empty(6 * n, dtype=np.int32), np.zeros(n), info)
            if code != _NO_ROOM:
                break
            # the entries so far extrapolated to all n columns, at least twice the guess
            step = max(int(info[0]), 1)
            self._room[0] = max(2 * room, int(1.25 * max(info[1], info[2]) * n / step) + n)
        self.factors = None
        if code != _OK:
            self._raise(code, int(info[0]))
        lnz, unz = int(info[1]), int(info[2])
        self.factors = (Lp, Li[:lnz], Lx[:lnz], Up, Ui[:unz], Ux[:unz], Udiag, prow)
        self._pivot_source = values
        self._check_pivots(Udiag)
        return self

    def refactor(self, A) -> "SparseLU":
        """Factor ``A`` with the pivot order and the L, U patterns of the last
        factorisation (:meth:`factor` if there is none, or if a kept pivot fails the
        threshold test or the singularity test now).  Returns self."""
        if self.factors is None:
            return self.factor(A)
        values = self._values(A)
        Lp, Li, _, Up, Ui, _, _, prow = self.factors
        Lx, Ux, Udiag = np.empty(Li.size), np.empty(Ui.size), np.empty(self.n)
        info = np.zeros(3, dtype=np.int32)
        code = _library().slu_refactor(self.n, self.indptr, self.indices, values, self.order,
                                       self.tol, Lp, Li, Lx, Up, Ui, Ux, Udiag, prow,
                                       np.zeros(self.n), info)
        if code == _NONFINITE:
            self.factors = None
            self._raise(code, int(info[0]))
        if code == _OK and not self._singular(Udiag):
            self.factors = (Lp, Li, Lx, Up, Ui, Ux, Udiag, prow)
            return self
        self._fallbacks[0] += 1
        return self.factor(A)

    def pivot_state(self) -> dict:
        """What makes this SparseLU's pivot order and L, U patterns again, as plain
        arrays, numbers and a string (an FMU state holds it): the pattern, the ordering,
        the room and the values of the matrix whose factorisation chose the pivots
        (:meth:`from_pivot_state` factors it again: the same analysis and pivots, so a
        refactorisation on the result gives the same bits).  No copies: the arrays are
        never written after they are made."""
        if self.factors is None:
            raise RuntimeError("pivot_state before a successful factor")
        return {"indptr": self.indptr, "indices": self.indices, "values": self._pivot_source,
                "ordering": self.ordering, "tol": self.tol, "room": self.room}

    @classmethod
    def from_pivot_state(cls, state: dict) -> "SparseLU":
        """The SparseLU of a :meth:`pivot_state`: its pattern analysed and its matrix
        factored (the factors are those of that matrix)."""
        indptr, indices = _index(state["indptr"]), _index(state["indices"])
        n = indptr.size - 1
        pattern = scipy.sparse.csc_matrix((np.ones(indices.size), indices, indptr),
                                          shape=(n, n))
        lu = cls(pattern, tol=float(state["tol"]), room=int(state["room"]),
                 ordering=str(state["ordering"]))
        return lu.factor(scipy.sparse.csc_matrix(
            (np.asarray(state["values"], dtype=float), indices, indptr), shape=(n, n)))

    def factored(self, A) -> "SparseLU":
        """A new SparseLU of this pattern (the ordering shared) with ``A`` factored."""
        return copy.copy(self).factor(A)

    def refactored(self, A) -> "SparseLU":
        """A new SparseLU with ``A`` refactored (:meth:`refactor`); this one unchanged."""
        return copy.copy(self).refactor(A)

    @property
    def room(self) -> int:
        """Entries of L and of U allocated for a factorisation (grown as needed)."""
        return self._room[0]

    @property
    def refactor_fallbacks(self) -> int:
        return self._fallbacks[0]

    @property
    def lu_nnz(self) -> int:
        """Entries of L and U, both diagonals counted once (0 before a factorisation)."""
        if self.factors is None:
            return 0
        return int(self.factors[1].size + self.factors[4].size + self.n)

    @staticmethod
    def _singular(Udiag) -> bool:
        d = np.abs(Udiag)
        return bool(d.size) and d.min() <= SINGULAR_RATIO * d.max()

    def _check_pivots(self, Udiag) -> None:
        if self._singular(Udiag):
            d = np.abs(Udiag)
            self.factors = None
            raise SingularMatrixError(
                f"A is singular: smallest pivot {d.min():.3g} <= {SINGULAR_RATIO:g} times the "
                f"largest {d.max():.3g} (step {int(np.argmin(d))} of {self.n})")

    def _raise(self, code, step):
        if code == _SINGULAR:
            raise SingularMatrixError(f"A is singular: column {int(self.order[step])} has no "
                                      f"pivot left (step {step} of {self.n})")
        if code == _NONFINITE:
            raise SingularMatrixError(f"A has a non-finite entry or one arose in column "
                                      f"{int(self.order[step])} (step {step} of {self.n})")
        raise RuntimeError(f"sparse_lu.c returned code {code}")

    # -- solves ------------------------------------------------------------------------
    def solve(self, b) -> np.ndarray:
        """A^-1 b for b of shape (n,) or (n, k) (k right-hand sides at once)."""
        if self.factors is None:
            raise RuntimeError("solve before a successful factor")
        b = np.asarray(b, dtype=float)
        if b.shape[:1] != (self.n,) or b.ndim > 2:
            raise ValueError(f"b has shape {b.shape}; accepted ({self.n},) or ({self.n}, k)")
        x = np.array(b, dtype=float, order="F")       # columns contiguous
        Lp, Li, Lx, Up, Ui, Ux, Udiag, prow = self.factors
        _library().slu_solve(self.n, self.order, Lp, Li, Lx, Up, Ui, Ux, Udiag, prow, x.T,
                             1 if x.ndim == 1 else x.shape[1], np.empty(self.n))
        return x


# -- PARDISO (optional) ------------------------------------------------------------------
def require_pardiso():
    """The module pypardiso, imported here: an optional package (the extra
    ``parallel``) that only ``sparse_solver="pardiso"`` uses; ImportError naming the
    extra when it is not installed or MKL's library is not found."""
    try:
        import pypardiso
    except ImportError as exc:
        raise ImportError(
            "sparse_solver='pardiso' needs the package pypardiso (Intel MKL's PARDISO; "
            f"wheels for x86-64 Linux and Windows): pip install 'flexcosim[{PARALLEL_EXTRA}]'"
        ) from exc
    return pypardiso


#: PARDISO's phases (MKL's numbering): the analysis (fill-reducing ordering, symbolic
#: factorisation), the numerical factorisation, the solve with iterative refinement,
#: and the release of all its memory
_ANALYSIS, _FACTORIZATION, _SOLVE, _RELEASE = 11, 22, 33, -1
#: numerical factorisations of one pattern PARDISO holds at once (its ``maxfct``): the
#: integrator keeps factors per stage and a checkpoint's; one more asked for takes the
#: slot of the oldest, which factors its matrix again when next used
PARDISO_SLOTS = 4
_pardiso_call = None


def _pardiso():
    """MKL's ``pardiso`` function (its library as pypardiso finds it), typed once."""
    global _pardiso_call
    if _pardiso_call is None:
        call = require_pardiso().PyPardisoSolver().libmkl.pardiso
        i32, ptr = ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(None)
        call.argtypes = [ctypes.POINTER(ctypes.c_int64)] + [i32] * 5 + [ptr, i32, i32, i32,
                                                                       i32, i32, i32, ptr,
                                                                       ptr, i32]
        call.restype = None
        _pardiso_call = call
    return _pardiso_call


class PardisoAnalysis:
    """PARDISO's analysis (phase 11: fill-reducing nested-dissection ordering, symbolic
    factorisation; real unsymmetric, MKL's default settings: scaling and weighted
    matching, pivots perturbed rather than zero, two steps of iterative refinement) of
    one square sparse pattern, made once, and numerical factorisations (phase 22) of
    matrices of that pattern (or any part of it) on it: :meth:`factor`.  A matrix with
    an entry outside the pattern needs a new analysis (:meth:`fits`).

    It holds one PARDISO handle with :data:`PARDISO_SLOTS` factorisations at once
    (PARDISO's ``maxfct``), released when the object goes.

    Attributes
    ----------
    n : int
    indptr, indices : ndarray of int32
        The pattern, compressed rows.
    factorizations : int
        Numerical factorisations made on this analysis (those a factor whose slot was
        taken made again included).
    """

    def __init__(self, pattern, first=None):
        pattern = scipy.sparse.csr_matrix(pattern, dtype=float)
        pattern.sum_duplicates()
        pattern.sort_indices()
        if pattern.shape[0] != pattern.shape[1]:
            raise ValueError(f"pattern must be square, got shape {pattern.shape}")
        if not np.diff(pattern.indptr).all():
            raise SingularMatrixError("the pattern has an empty row: every matrix of it "
                                      "is singular")
        self.n = int(pattern.shape[0])
        self.indptr, self.indices = _index(pattern.indptr), _index(pattern.indices)
        self._ia, self._ja = self.indptr + 1, self.indices + 1      # PARDISO's 1-based
        self._handle = np.zeros(64, dtype=np.int64)
        self._iparm = np.zeros(64, dtype=np.int32)                  # MKL's defaults
        self._owners = [None] * PARDISO_SLOTS      # the factors each slot holds now
        self._age = 0
        self.factorizations = 0
        # the analysis scales and matches on values (MKL's default): the first matrix's
        values = np.ones(self.indices.size) if first is None else \
            _gather(self.indptr, self.indices, _csr(first), "PardisoAnalysis")
        code = self._call(_ANALYSIS, 1, values)[0]
        if code != 0:
            raise SingularMatrixError(f"PARDISO's analysis failed (error {code})")

    def _call(self, phase, slot, values, rhs=None):
        """One PARDISO call; its error code (0: success)."""
        rhs = np.zeros((self.n, 1)) if rhs is None else rhs
        x = np.zeros_like(rhs)
        error = ctypes.c_int32(0)
        i32 = ctypes.POINTER(ctypes.c_int32)
        f64 = ctypes.POINTER(ctypes.c_double)

        def ref(k):
            return ctypes.byref(ctypes.c_int32(k))
        _pardiso()(self._handle.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
                   ref(PARDISO_SLOTS), ref(slot), ref(11), ref(phase), ref(self.n),
                   values.ctypes.data_as(f64), self._ia.ctypes.data_as(i32),
                   self._ja.ctypes.data_as(i32), None,
                   ref(1 if rhs.ndim == 1 else rhs.shape[1]), self._iparm.ctypes.data_as(i32),
                   ref(0), rhs.ctypes.data_as(f64), x.ctypes.data_as(f64), ctypes.byref(error))
        return int(error.value), x

    @property
    def pattern(self) -> scipy.sparse.csr_matrix:
        """The analysed pattern (ones at its entries)."""
        return scipy.sparse.csr_matrix((np.ones(self.indices.size), self.indices,
                                        self.indptr), shape=(self.n, self.n))

    def fits(self, A) -> bool:
        """Whether ``A`` (CSR) has this shape and entries only within the pattern."""
        if A.shape != (self.n, self.n):
            return False
        try:
            _gather(self.indptr, self.indices, _csr(A), "PardisoAnalysis")
        except PatternError:
            return False
        return True

    def factor(self, A) -> "PardisoFactors | None":
        """PARDISO's numerical factorisation of ``A`` (CSR, within the pattern) on this
        analysis: :class:`PardisoFactors`, or None if PARDISO finds it singular or it
        is not finite; :class:`PatternError` if it has an entry outside the pattern."""
        values = _gather(self.indptr, self.indices, _csr(A), "PardisoAnalysis")
        if not np.all(np.isfinite(values)):
            return None
        factors = PardisoFactors(self, values)
        return factors if self._factor_into_slot(factors) else None

    def _factor_into_slot(self, factors) -> bool:
        """Factor ``factors``' matrix into a free slot, or the oldest's; False if
        PARDISO fails (a singular matrix)."""
        free = [k for k, owner in enumerate(self._owners)
                if owner is None or owner() is None]
        slot = free[0] if free else min(range(PARDISO_SLOTS),
                                        key=lambda k: self._owners[k]().age)
        self._age += 1
        factors.slot, factors.age = slot, self._age
        self._owners[slot] = weakref.ref(factors)
        self.factorizations += 1
        code, _ = self._call(_FACTORIZATION, slot + 1, factors.values)
        factors.perturbed_pivots = int(self._iparm[13])
        if code != 0:
            self._owners[slot] = None
        return code == 0

    def solve(self, factors, rhs) -> np.ndarray:
        """``factors``' A^-1 rhs (rhs of shape (n,) or (n, k)); factors whose slot went to a
        later factorisation are factored again first."""
        owner = self._owners[factors.slot]
        if owner is None or owner() is not factors:
            # its slot went to a later factorisation: factor its matrix again
            if not self._factor_into_slot(factors):
                raise SingularMatrixError("PARDISO failed to factor a matrix it factored "
                                          "before")
        rhs = np.asfortranarray(rhs, dtype=float)
        code, x = self._call(_SOLVE, factors.slot + 1, factors.values, rhs)
        if code != 0:
            raise SingularMatrixError(f"PARDISO's solve failed (error {code})")
        return np.ascontiguousarray(x)

    def __del__(self):
        if getattr(self, "_handle", None) is not None and self._handle.any():
            try:
                self._call(_RELEASE, 1, np.zeros(0))
            except Exception:       # at interpreter exit the library may be gone first
                pass


class PardisoFactors:
    """PARDISO's factors of one square sparse matrix A of an analysed pattern
    (:meth:`PardisoAnalysis.factor`, :func:`pardiso_factors`), in one of the analysis's
    slots; copying shares them (they are never changed after factorising) and pickling
    keeps A, from which unpickling analyses and factorises again.

    Attributes
    ----------
    analysis : PardisoAnalysis
    values : ndarray
        A's values at the analysis's pattern.
    perturbed_pivots : int
        Pivots PARDISO perturbed (iparm(14)): a matrix near singularity."""

    def __init__(self, analysis: PardisoAnalysis, values: np.ndarray):
        self.analysis, self.values = analysis, values
        self.slot = self.age = self.perturbed_pivots = 0

    @property
    def matrix(self) -> scipy.sparse.csr_matrix:
        """A (compressed rows, the analysis's pattern)."""
        a = self.analysis
        return scipy.sparse.csr_matrix((self.values, a.indices, a.indptr), shape=(a.n, a.n))

    def solve(self, rhs) -> np.ndarray:
        """A^-1 rhs for rhs of shape (n,) or (n, k)."""
        return self.analysis.solve(self, np.asarray(rhs, dtype=float))

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (pardiso_factors, (self.matrix,))


def pardiso_factors(A, analysis: PardisoAnalysis | None = None) -> PardisoFactors | None:
    """PARDISO's factors of the square sparse matrix ``A`` (:class:`PardisoFactors`) on
    ``analysis`` (default: a new one of A's pattern), or None if it is not finite or
    PARDISO finds it singular; ImportError naming the extra ``parallel`` if pypardiso
    is not installed."""
    require_pardiso()
    A = _csr(A)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    if not np.all(np.isfinite(A.data)):
        return None
    if analysis is None:
        try:
            analysis = PardisoAnalysis(A, A)
        except SingularMatrixError:         # an empty row
            return None
    return analysis.factor(A)


def pardiso_threads(threads: int) -> None:
    """Let MKL (and so PARDISO) use ``threads`` threads in this process (MKL's own
    setting, apart from OpenBLAS's: tests/conftest.py sets OPENBLAS_NUM_THREADS=1, not
    MKL_NUM_THREADS)."""
    if not (isinstance(threads, int) and threads >= 1):
        raise ValueError(f"threads = {threads!r}: accepted an integer >= 1")
    mkl = require_pardiso().PyPardisoSolver().libmkl
    mkl.MKL_Set_Num_Threads.argtypes = [ctypes.c_int]
    mkl.MKL_Set_Num_Threads(threads)
