"""Planar ANCF beams (Shabana 1997; docs/benchmarks.md §8.2): gradient-deficient
absolute-nodal-coordinate elements.

A straight beam of length L [m] is meshed into N equal two-node elements of length
l = L/N.  Each node j carries its position and the gradient of the position with
respect to the undeformed arc length x [m]::

    e_j = (r_x, r_y, r'_x, r'_y)        (m, m, -, -)

and neighbouring elements share their node, so the beam has 4 (N + 1) coordinates,
ordered node by node.  Inside an element, with xi = (x - x_A)/l in [0, 1], the
position is interpolated by cubic Hermite polynomials (linear in e)::

    r(x) = N1 r_A + l N2 r'_A + N3 r_B + l N4 r'_B
    N1 = 1 - 3 xi^2 + 2 xi^3,  N2 = xi - 2 xi^2 + xi^3,  N3 = 3 xi^2 - 2 xi^3,  N4 = xi^3 - xi^2

so the mass matrix ``M = int rho_a S^T S dx`` is constant (exactly integrated, the
classical 156/22/54/13 Hermite matrix per direction) and there are no
velocity-quadratic inertia terms: large rotations cost nothing in the inertia.

Strain energy (Euler-Bernoulli, per unit undeformed length)::

    U = 1/2 int ( EA eps^2 + EI kappa^2 ) dx
    eps   = 1/2 (r'.r' - 1)                     Green-Lagrange axial strain
    kappa = (r' x r'') / |r'|^3                 exact curvature of the deformed centreline

Why these forms: the Green strain is a polynomial in e, so its energy, forces and
tangent are exact under Gauss quadrature and cheap; it differs from the engineering
strain |r'| - 1 only at second order in the strain, which for a beam (eps << 1) is
irrelevant.  The curvature is the exact one of a curve parametrised by x, so it does
not rely on |r'| = 1: it is frame invariant, zero for any rigid motion, and gives the
large-deflection elastica without a condition on the axial stiffness.  The simplified
r' x r'' (valid when |r'| = 1) would bias bending wherever the beam stretches.

The quadrature uses 5 Gauss points per element: exact for the axial energy (a
polynomial of degree 8 in xi) and, for the rational curvature, far more accurate than
the discretisation.  The element loop (forces, and the element blocks of the tangents)
is C (``native/ancf.c``, one call per evaluation); the tangent stiffness
is assembled block-banded (bandwidth 7: an element couples only its own 8 coordinates),
so a force or Jacobian evaluation costs O(N).

Optional material (Kelvin-Voigt) damping adds ``beta`` times the strain rates to the
stresses: ``Q_d = -beta int (EA eps' d eps/de + EI kappa' d kappa/de) dx``.  Linearised
about the straight beam this is stiffness-proportional damping (zeta_i = beta omega_i/2)
and, unlike ``-beta K(q) q'``, it vanishes for any rigid motion of a pre-stressed beam.

Markers are arc lengths s in [0, L] [m] along the undeformed axis from ``start``;
``"root"`` (s = 0) and ``"tip"`` (s = L) always exist, as on every beam of the engine
(``"start"`` and ``"end"`` are the same two points under their former names, kept so
existing models keep working).  A joint sees the point r(s) and the orientation of the
tangent, theta(s) = angle of r'(s).  :meth:`ANCFBeam.tip_deflection` is the transverse
tip displacement in the frame of the root, as for the modal and finite-segment beams.

The mass matrix is kept sparse only (block-banded, about 100 n entries against n^2):
:meth:`ANCFBeam.mass_matrix` builds the dense array on demand for small systems.

Also here: :func:`cantilever`, :func:`static_equilibrium` (Newton with load stepping
on a constrained System) and :func:`modal_analysis` / :func:`natural_frequencies`
(constrained linearisation with a null-space basis of the constraint Jacobian, with
the stiffness of the reactions d(G^T lambda)/dq that :mod:`mbdcore.multibody.modal` leaves out).
"""
from __future__ import annotations

import ctypes
import math
from functools import cache
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.sparse

from mbdcore.blocks import ParameterError
from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.multibody.terms import CompiledForces
from mbdcore.multibody.constraints import Weld
from mbdcore.multibody.system import BodyBase, BodyState, System, finite_array
from mbdcore.native import TableLayout, kernel_library, table_layout

__all__ = ["ancf_body_layout", "N_GAUSS", "END_MARKERS", "hermite_shape", "positive_parameter", "element_count",
           "gauss_count", "HermiteLineBody", "HermiteLineState", "ANCFBeam", "ANCFState",
           "cantilever"]

N_GAUSS = 5

#: The element loop of the elastic forces and tangents in C (its one implementation).
ANCF_C_SOURCE = Path(__file__).resolve().parent / "native" / "ancf.c"
_ancf_library = kernel_library("mbdcore.multibody._ancf", ANCF_C_SOURCE,
                               (TABLE_LAYOUT_HEADER,))


@cache
def ancf_body_layout() -> TableLayout:
    """The beam's parameters of its compiled force kernel, ``ancf_body_t`` of ancf.c,
    declared once as ``ANCF_BODY_LAYOUT``."""
    return table_layout(_ancf_library, "ANCF_BODY_LAYOUT")


#: The markers every ANCF beam has, as fractions of its length: ``root`` and ``tip`` (the
#: names of every beam of the engine) and their former names ``start`` and ``end``.
END_MARKERS = {"root": 0.0, "tip": 1.0, "start": 0.0, "end": 1.0}


def hermite_shape(xi, length: float, derivative: int = 0) -> np.ndarray:
    """Cubic Hermite shape functions of an element and their x-derivatives.

    Parameters
    ----------
    xi : array_like, shape (k,)
        Element coordinates in [0, 1].
    length : float
        Element length l [m].
    derivative : {0, 1, 2}
        Order of the derivative with respect to the arc length x = l xi.

    Returns
    -------
    ndarray, shape (k, 4)
        Coefficients of (r_A, r'_A, r_B, r'_B): r^(d)(x) = sum_k S[:, k] e_k.
        Units m^-d for the position columns and m^(1-d) for the gradient columns.
    """
    xi = np.atleast_1d(np.asarray(xi, dtype=float))
    one = np.ones_like(xi)
    if derivative == 0:
        cols = (1 - 3 * xi**2 + 2 * xi**3, length * (xi - 2 * xi**2 + xi**3),
                3 * xi**2 - 2 * xi**3, length * (xi**3 - xi**2))
    elif derivative == 1:
        cols = ((-6 * xi + 6 * xi**2) / length, 1 - 4 * xi + 3 * xi**2,
                (6 * xi - 6 * xi**2) / length, 3 * xi**2 - 2 * xi)
    elif derivative == 2:
        cols = ((-6 + 12 * xi) / length**2, (-4 + 6 * xi) / length,
                (6 - 12 * xi) / length**2, (-2 + 6 * xi) / length)
    else:
        raise ValueError(f"derivative = {derivative!r}: accepted 0, 1, 2")
    return np.column_stack([c * one for c in cols])


def positive_parameter(owner: str, label: str, value, unit: str,
                       allow_zero: bool = False) -> float:
    """``value`` as a float if finite and > 0 (>= 0 with ``allow_zero``), else
    ParameterError naming ``owner`` (the body's kind and name, e.g. "ANCF beam 'b'"),
    the parameter ``label`` and the accepted range in ``unit``."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and \
        math.isfinite(value) and (value >= 0.0 if allow_zero else value > 0.0)
    if not ok:
        rel = ">= 0" if allow_zero else "> 0"
        if isinstance(value, (np.integer, np.floating)):
            value = value.item()                 # 0.5, not np.float64(0.5)
        raise ParameterError(f"{owner}: {label} = {value!r} is invalid: accepted "
                             f"values are finite numbers {rel} [{unit}]")
    return float(value)


def element_count(owner: str, n_elements) -> int:
    """The number of elements of a body as an int (>= 1), else ParameterError naming
    ``owner`` (its kind and name)."""
    if not (isinstance(n_elements, (int, np.integer)) and n_elements >= 1):
        raise ParameterError(f"{owner}: n_elements = {n_elements!r} is "
                             "invalid: accepted values are integers >= 1")
    return int(n_elements)


def gauss_count(owner: str, n_gauss) -> int:
    """The number of Gauss points per element as an int (>= 3), else ParameterError
    naming ``owner`` (its kind and name)."""
    if not (isinstance(n_gauss, (int, np.integer)) and n_gauss >= 3):
        raise ParameterError(f"{owner}: n_gauss = {n_gauss!r}: accepted integers >= 3")
    return int(n_gauss)


class HermiteLineBody(BodyBase):
    """What every body of cubic Hermite line elements shares, planar or spatial: nodes
    of ``node_size`` coordinates that begin with the position r and the slope r' (``dim``
    components each; a spatial beam's nodes add its section axes), neighbouring elements
    sharing their node; its constant mass, distributed gravity, markers by arc length
    from the first node with ``root`` and ``tip`` always there, the assembly of element
    vectors and blocks (block-banded), the internal forces and their tangents from one
    call of a compiled element loop, and the positions along the line.

    A subclass sets ``length``, ``damping``, ``_gravity_weights`` and the mass
    (``_mass_sparse``), calls :meth:`_setup_nodes` and :meth:`_add_markers`, and gives
    the element loop (:meth:`_element_loop`), ``locate`` and the shape functions at a
    point (:meth:`_point_terms`)."""

    constant_mass = True
    #: components of a position (2 planar, 3 spatial)
    dim = 2
    #: coordinates per node: r (dim) and r' (dim) first, then whatever a subclass adds
    node_size = 4
    #: what error messages call the body, before its name
    kind = "ANCF beam"
    #: what a location beyond the ends is outside of, in error messages
    extent = "beam"
    #: the markers every such body has, as fractions of its length
    end_markers = END_MARKERS
    #: the names of a node's coordinates (:meth:`coordinate_names`)
    coordinate_labels = ("rx", "ry", "dx", "dy")
    _gravity_cache = (None, None)

    def _owner(self) -> str:
        """What error messages call this body: its kind and name."""
        return f"{self.kind} {self.name!r}"

    # -- set-up ------------------------------------------------------------------------
    def _line_parameters(self, rho_a, ea, damping) -> None:
        """The parameters every line body has, checked: mass per unit length rho_a
        [kg/m], axial stiffness ea [N], Kelvin-Voigt time damping [s]."""
        self.rho_a = positive_parameter(self._owner(), "rho_a", rho_a, "kg/m")
        self.ea = positive_parameter(self._owner(), "ea", ea, "N")
        self.damping = positive_parameter(self._owner(), "damping", damping, "s",
                                          allow_zero=True)

    def _setup_nodes(self, n_elements: int) -> None:
        """Element, node and coordinate counts of ``n_elements`` elements in a row."""
        self.n_elements = int(n_elements)
        self.n_nodes = self.n_elements + 1
        self.n_coords = self.node_size * self.n_nodes
        d, ns = self.dim, self.node_size
        # the element's columns of (r_A, r'_A, r_B, r'_B), each a dim-vector
        self.hermite_columns = np.concatenate([np.arange(2 * d), ns + np.arange(2 * d)])
        # nodes of r and r' only: those columns are one slice (cheaper than an index)
        self.hermite_contiguous = ns == 2 * d

    def _add_markers(self, markers: dict | None) -> None:
        """The end markers and the named arc lengths ``markers`` [m]; an end marker's
        name given again is accepted at its own location only."""
        self._point_cache: dict[float, tuple] = {}
        for key, frac in self.end_markers.items():
            self.add_marker(key, frac * self.length)
        for key, s in (markers or {}).items():
            if key in self.end_markers:
                at = self.check_location(f"marker {self.name}.{key}", s)
                if abs(at - self.markers[key]) > 1e-9 * self.length:
                    end = "root" if self.end_markers[key] == 0.0 else "tip"
                    raise ParameterError(
                        f"{self._owner()}: marker {key!r} = {s!r} m: {key!r} is the "
                        f"{self.extent}'s {end} at s = {self.markers[key]:g} m; accepted: "
                        "that value, or another name")
                continue
            self.add_marker(key, s)

    # -- assembly of element vectors and blocks -------------------------------------------
    def element_coordinates(self, qb) -> np.ndarray:
        """Element coordinate vectors, shape (N, 2 node_size): a strided view, no copy."""
        ns = self.node_size
        return np.lib.stride_tricks.sliding_window_view(np.asarray(qb, float), 2 * ns)[::ns]

    def _assemble_vector(self, f_el: np.ndarray) -> np.ndarray:
        ns = self.node_size
        out = np.zeros(self.n_coords)
        nodes = out.reshape(self.n_nodes, ns)
        nodes[:-1] += f_el[:, :ns]
        nodes[1:] += f_el[:, ns:]
        return out

    def _assemble_dense(self, k_el: np.ndarray) -> np.ndarray:
        """Dense (n, n) matrix from element blocks (N, 2 node_size, 2 node_size), filling
        only the band."""
        n_n, ns = self.n_nodes, self.node_size
        out = np.zeros((self.n_coords, self.n_coords))
        blocks = out.reshape(n_n, ns, n_n, ns)
        i = np.arange(self.n_elements)
        blocks[i, :, i, :] += k_el[:, :ns, :ns]
        blocks[i + 1, :, i + 1, :] += k_el[:, ns:, ns:]
        blocks[i, :, i + 1, :] += k_el[:, :ns, ns:]
        blocks[i + 1, :, i, :] += k_el[:, ns:, :ns]
        return out

    def tangent_pattern(self):
        """(rows, cols) of the entries the element blocks fill in the body's K and C
        (local indices, each once): the band of the shared nodes."""
        n, ns = self.n_coords, self.node_size
        dofs = ns * np.arange(self.n_elements)[:, None] + np.arange(2 * ns)[None, :]
        keys = np.unique(np.repeat(dofs, 2 * ns, axis=1).ravel() * n
                         + np.tile(dofs, (1, 2 * ns)).ravel())
        return keys // n, keys % n

    def _assemble_sparse(self, k_el: np.ndarray) -> scipy.sparse.csr_matrix:
        """CSR matrix from element blocks (N, 2 node_size, 2 node_size); the pattern is
        computed once and the shared node blocks summed by one bincount (no sort per
        call)."""
        n, ns = self.n_coords, self.node_size
        if not hasattr(self, "_csr_pattern"):
            dofs = ns * np.arange(self.n_elements)[:, None] + np.arange(2 * ns)[None, :]
            rows = np.repeat(dofs, 2 * ns, axis=1).ravel()
            cols = np.tile(dofs, (1, 2 * ns)).ravel()
            keys, where = np.unique(rows * n + cols, return_inverse=True)
            indptr = np.searchsorted(keys // n, np.arange(n + 1))
            self._csr_pattern = (where, keys % n, indptr, keys.size)
        where, indices, indptr, nnz = self._csr_pattern
        data = np.bincount(where, weights=np.ascontiguousarray(k_el).ravel(), minlength=nnz)
        return scipy.sparse.csr_matrix((data, indices.copy(), indptr.copy()), shape=(n, n))

    # -- internal forces ----------------------------------------------------------------
    def _element_loop(self, qb, vb, f, k_el, c_el) -> None:
        """Fill ``f`` with the internal forces and, where not None, ``k_el`` and
        ``c_el`` with the element blocks of K and C: the compiled element loop."""
        raise NotImplementedError

    def _elastic(self, qb, vb, tangents: bool):
        """The elastic and damping forces -dU/de - Q_d [N] and, with ``tangents``, the
        element blocks (N, 2 node_size, 2 node_size) of K = -dF/dq and C = -dF/dv (C None
        without damping or rates): one call of the compiled element loop."""
        qb = np.ascontiguousarray(qb, dtype=float)
        damped = self.damping > 0.0 and vb is not None
        vb = np.ascontiguousarray(vb, dtype=float) if damped else None
        ne = 2 * self.node_size
        f = np.empty(self.n_coords)
        k_el = np.empty((self.n_elements, ne, ne)) if tangents else None
        c_el = np.empty((self.n_elements, ne, ne)) if tangents and damped else None
        self._element_loop(qb, vb, f, k_el, c_el)
        return f, k_el, c_el

    def internal_forces(self, qb: np.ndarray, vb: np.ndarray | None = None) -> np.ndarray:
        """Elastic (and damping) generalised forces -dU/de - Q_d, shape (n_coords,) [N]."""
        return self._elastic(qb, vb, False)[0]

    def tangent_matrices(self, qb, vb=None, sparse: bool = True):
        """Tangent stiffness K = -dF/dq [N/m] and damping C = -dF/dv [N s/m] of the
        internal forces: CSR matrices (``sparse=True``) or dense arrays; C is None without
        damping.  Block-banded: bandwidth 2 node_size - 1 in the coordinate order."""
        _, k_el, c_el = self._elastic(qb, vb, True)
        asm = self._assemble_sparse if sparse else self._assemble_dense
        return asm(k_el), (None if c_el is None else asm(c_el))

    # -- BodyBase interface ---------------------------------------------------------------
    def check_location(self, label, location):
        try:
            s = float(location)
        except (TypeError, ValueError):
            raise ParameterError(f"{label}: location {location!r} must be an arc length "
                                 f"in [0, {self.length:g}] m") from None
        tol = 1e-12 * self.length
        if not (math.isfinite(s) and -tol <= s <= self.length + tol):
            raise ParameterError(f"{label}: arc length {location!r} is outside the "
                                 f"{self.extent}: accepted values are 0 .. {self.length:g} m")
        return min(max(s, 0.0), self.length)

    def mass_matrix(self, qb=None) -> np.ndarray:
        """The constant consistent mass matrix as a new dense array [kg, kg m, kg m^2]
        (built on demand from the sparse one: for small systems and dense solvers)."""
        return self._mass_sparse.toarray()

    def mass_matrix_sparse(self, qb=None) -> scipy.sparse.csr_matrix:
        """The constant consistent mass matrix as a CSR matrix [kg, kg m, kg m^2]."""
        return self._mass_sparse

    def gravity_forces(self, gravity) -> np.ndarray:
        """Generalised forces of distributed gravity (dim,) [m/s^2]: int rho_a S^T g dx
        [N, N m]."""
        key = tuple(float(x) for x in gravity)
        if self._gravity_cache[0] != key:       # gravity is a constant of the system
            self._gravity_cache = (key, self._gravity_weights
                                   * np.tile(key, self.n_coords // self.dim))
        return self._gravity_cache[1].copy()

    def applied_forces(self, t, qb, vb, gravity):
        return self.internal_forces(qb, vb) + self.gravity_forces(gravity)

    def force_jacobians(self, t, qb, vb, gravity):
        k, c = self.tangent_matrices(qb, vb, sparse=False)
        return -k, (np.zeros_like(k) if c is None else -c)

    def force_jacobians_sparse(self, t, qb, vb, gravity):
        k, c = self.tangent_matrices(qb, vb, sparse=True)
        return -k, (scipy.sparse.csr_matrix(k.shape) if c is None else -c)

    def potential_energy(self, qb, gravity):
        return self.strain_energy(qb) - float(self.gravity_forces(gravity) @ qb)

    def kinetic_energy(self, qb, vb):
        return 0.5 * float(vb @ (self._mass_sparse @ vb))

    def coordinate_names(self):
        return [f"{self.name}.n{j}.{c}" for j in range(self.n_nodes)
                for c in self.coordinate_labels]

    # -- points along the line --------------------------------------------------------------
    def _point_terms(self, s: float) -> tuple:
        """(first coordinate of the element, S, ...) at arc length s: the shape
        functions a body's state needs there (uncached)."""
        raise NotImplementedError

    def interp(self, s: float) -> tuple:
        """:meth:`_point_terms` of arc length s, cached (markers are few and fixed)."""
        hit = self._point_cache.get(s)
        if hit is None:
            hit = self._point_terms(s)
            if len(self._point_cache) < 1024:
                self._point_cache[s] = hit
        return hit

    def positions(self, qb, s) -> np.ndarray:
        """Positions r(s) [m] of the arc lengths s (array), shape (k, dim)."""
        qb = np.asarray(qb, float)
        s = np.atleast_1d(np.asarray(s, float))
        out = np.empty((s.size, self.dim))
        for j, sj in enumerate(s):
            i0, s0, *_ = self.interp(float(sj))
            out[j] = s0 @ qb[i0 + self.hermite_columns].reshape(4, self.dim)
        return out


class ANCFBeam(HermiteLineBody):
    """Straight planar ANCF beam of gradient-deficient Hermite elements (Shabana 1997;
    docs/benchmarks.md §8.2).

    Parameters
    ----------
    name : str
        Unique body name.
    start, end : (float, float)
        End points of the undeformed, unstressed beam [m]; marker ``"root"`` (alias
        ``"start"``) is at ``start``, marker ``"tip"`` (alias ``"end"``) at ``end``.
    n_elements : int
        Number N of equal elements (>= 1); the body has 4 (N + 1) coordinates.
    rho_a : float
        Mass per unit length [kg/m].
    ei : float
        Flexural stiffness [N m^2].
    ea : float
        Axial stiffness [N].  A realistic (large) value makes the beam nearly
        inextensible and its axial modes fast: use an implicit integrator then.
    damping : float
        Kelvin-Voigt coefficient beta [s] (stresses += beta * strain rates); mode i is
        damped by about zeta_i = beta omega_i / 2.  Default 0.
    markers : dict of str to float, optional
        Named arc lengths s in [0, L] [m] from ``start``.  ``"root"``, ``"tip"``,
        ``"start"`` and ``"end"`` always exist; naming one of them here is accepted at
        its own location only (0 or L).
    velocity : (float, float)
        Initial velocity of ``start`` [m/s].
    omega : float
        Initial angular rate [rad/s] of a rigid rotation about ``start``.
    n_gauss : int
        Gauss points per element (default 5).

    Notes
    -----
    See the module docstring for the strain measures.  ``theta(s)`` is the angle of
    the tangent r'(s) measured continuously from the undeformed direction: it is
    unique within +-pi of the initial orientation of the marker (an ANCF beam has no
    rotation coordinate that could count turns).
    """

    def __init__(self, name: str, start, end, n_elements: int, rho_a: float, ei: float,
                 ea: float, damping: float = 0.0, markers: dict | None = None,
                 velocity=(0.0, 0.0), omega: float = 0.0, n_gauss: int = N_GAUSS):
        super().__init__(name)
        self.start = finite_array(f"beam {name!r} start", start, (2,))
        self.end = finite_array(f"beam {name!r} end", end, (2,))
        chord = self.end - self.start
        self.length = float(np.hypot(*chord))
        if not self.length > 0.0:
            raise ParameterError(f"ANCF beam {name!r}: start and end coincide")
        n_elements = element_count(self._owner(), n_elements)
        n_gauss = gauss_count(self._owner(), n_gauss)
        self._line_parameters(rho_a, ea, damping)
        self.ei = positive_parameter(self._owner(), "ei", ei, "N.m2")
        self.velocity = finite_array(f"beam {name!r} velocity", velocity, (2,))
        self.omega = float(finite_array(f"beam {name!r} omega", omega))
        self.tangent0 = chord / self.length
        self.theta0 = math.atan2(self.tangent0[1], self.tangent0[0])
        self.element_length = self.length / n_elements
        self._setup_nodes(n_elements)
        self._setup_quadrature(n_gauss)
        self._setup_mass()
        self._add_markers(markers)

    # -- set-up ------------------------------------------------------------------------
    def _setup_quadrature(self, n_gauss: int) -> None:
        x, w = np.polynomial.legendre.leggauss(n_gauss)
        xi = 0.5 * (x + 1.0)
        l = self.element_length
        self.gauss_weights = 0.5 * w * l                 # dx = l dxi, dxi = dx_ref / 2
        d1 = hermite_shape(xi, l, 1)
        d2 = hermite_shape(xi, l, 2)
        # B maps the 8 element coordinates to (r'_x, r'_y, r''_x, r''_y) at each point,
        # shape (G, 4, 8): one small matrix shared by all (equal) elements
        eye = np.eye(2)
        self._B = np.concatenate([np.einsum("gk,ij->gikj", d1, eye),
                                  np.einsum("gk,ij->gikj", d2, eye)],
                                 axis=1).reshape(n_gauss, 4, 8)
        self._Bw = self._B * self.gauss_weights[:, None, None]
        # (a, b) at all points as one matrix product (strain energy, curvature output)
        self._B_flat_t = np.ascontiguousarray(self._B.reshape(-1, 8).T)       # (8, 4G)
        # the tables of the compiled element loop (native/ancf.c)
        self._B_c = np.ascontiguousarray(self._B)
        self._Bw_c = np.ascontiguousarray(self._Bw)

    def _setup_mass(self) -> None:
        l = self.element_length
        # degree-6 integrand: 4 Gauss points are exact
        x, w = np.polynomial.legendre.leggauss(4)
        s0 = hermite_shape(0.5 * (x + 1.0), l, 0)
        m_el = self.rho_a * np.einsum("g,gk,gm->km", 0.5 * w * l, s0, s0)
        self.element_mass = np.kron(m_el, np.eye(2))     # (8, 8), coordinate order
        n_el = self.n_elements
        # sparse only: a dense copy would be 8 (4 (N + 1))^2 bytes (128 MB at N = 1000)
        self._mass_sparse = self._assemble_sparse(np.broadcast_to(self.element_mass,
                                                                  (n_el, 8, 8)))
        # gravity: F_g = int rho_a S^T g dx, a weight per position/gradient column
        c_el = self.rho_a * np.einsum("g,gk->k", 0.5 * w * l, s0)   # (4,)
        c = np.zeros((self.n_nodes, 2))
        c[:-1] += c_el[:2]
        c[1:] += c_el[2:]
        self._gravity_weights = np.repeat(c.ravel(), 2)             # per coordinate

    #: the element coordinates under the name of the tests' numpy reference
    _elements = HermiteLineBody.element_coordinates

    # -- the strain field at the Gauss points ----------------------------------------------
    def _kinematics(self, qb):
        """a = r', b = r'' at every Gauss point, shape (N, G, 2) each."""
        ab = (self._elements(qb) @ self._B_flat_t).reshape(self.n_elements, -1, 4)
        return ab[..., :2], ab[..., 2:]

    @staticmethod
    def _strains(a, b):
        """The axial strain and curvature at the points (a, b) (module docstring)."""
        g = np.einsum("...i,...i->...", a, a)
        return 0.5 * (g - 1.0), (a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]) * g ** -1.5

    def _element_loop(self, qb, vb, f, k_el, c_el) -> None:
        """The element loop of ``native/ancf.c`` (:meth:`HermiteLineBody._elastic`)."""
        # None: not wanted (NULL)
        _ancf_library().ancf_forces(self.n_elements, len(self.gauss_weights), self._B_c,
                                    self._Bw_c, qb, vb, self.ea, self.ei, self.damping, f,
                                    k_el, c_el)

    def compiled_forces(self, gravity) -> CompiledForces:
        """Distributed gravity (constant) and the elastic and damping forces of the same
        element loop (``ancf_body_forces`` of ``native/ancf.c``) [N, N m], with their
        tangents (``ancf_body_tangents``)."""
        params = ancf_body_layout().structure(
            N=self.n_elements, G=len(self.gauss_weights), B=self._B_c, Bw=self._Bw_c,
            ea=self.ea, ei=self.ei, beta=self.damping, f=np.zeros(self.n_coords),
            k=np.zeros(64 * self.n_elements), c=np.zeros(64 * self.n_elements))
        lib = _ancf_library()
        return CompiledForces(
            self.gravity_forces(gravity),
            lib.ADDRESSES["ancf_body_forces"],
            ctypes.addressof(params), (params, self._B_c, self._Bw_c),
            lib.ADDRESSES["ancf_body_tangents"], self.tangent_pattern())

    # -- BodyBase interface ---------------------------------------------------------------
    def initial_coordinates(self):
        s = np.arange(self.n_nodes) * self.element_length
        r = self.start + np.outer(s, self.tangent0)
        q = np.column_stack([r, np.tile(self.tangent0, (self.n_nodes, 1))]).ravel()
        # rigid motion: r' = v + omega E (r - start), gradient rate omega E t0
        rot = self.omega * np.array([-1.0, 1.0])
        rd = self.velocity + rot * (r - self.start)[:, ::-1]
        td = np.tile(rot * self.tangent0[::-1], (self.n_nodes, 1))
        return q, np.column_stack([rd, td]).ravel()

    def tip_deflection(self, qb) -> float:
        """Transverse tip displacement in the frame of the root [m], as
        :meth:`ModalBeam.tip_deflection <mbdcore.multibody.flexible.ModalBeam.tip_deflection>`:
        ``(r(L) - r(0)) . n`` with ``n`` the root tangent r'(0)/|r'(0)| turned by +90 deg,
        so positive to the left of the root's direction (counter-clockwise bending).
        Zero for any rigid motion; exact for large deflections (no small-angle step)."""
        qb = np.asarray(qb, float)
        t = qb[2:4] / math.hypot(qb[2], qb[3])
        d = qb[-4:-2] - qb[0:2]
        return float(t[0] * d[1] - t[1] * d[0])

    def strain_energy(self, qb) -> float:
        """Axial plus bending strain energy [J]."""
        a, b = self._kinematics(np.asarray(qb, float))
        eps, kappa = self._strains(a, b)
        dens = 0.5 * (self.ea * eps**2 + self.ei * kappa**2)
        return float((dens @ self.gauss_weights).sum())

    def state(self, qb, vb):
        return ANCFState(self, qb, vb)

    def point_form(self, s):
        i0, s0, _, _ = self.interp(s)
        N = np.zeros((2, 8))
        N[0, 0::2] = s0
        N[1, 1::2] = s0
        return ("linear", list(range(i0, i0 + 8)), N, np.zeros(2))

    def angle_form(self, s):
        if s is None:
            self.default_location()
        i0, _, s1, _ = self.interp(s)
        return ("slope", (list(range(i0, i0 + 8, 2)), list(range(i0 + 1, i0 + 8, 2))),
                s1, self.theta0, self.tangent0)

    # -- fields along the beam --------------------------------------------------------------
    def locate(self, s: float) -> tuple[int, float]:
        """(element index, xi) of the arc length s [m]."""
        x = s / self.element_length
        i = min(int(x), self.n_elements - 1)
        return i, x - i

    def _point_terms(self, s: float):
        """(first coordinate, S, S', J_point) of arc length s, J read-only."""
        i, xi = self.locate(s)
        s0 = hermite_shape([xi], self.element_length, 0)[0]
        s1 = hermite_shape([xi], self.element_length, 1)[0]
        J = np.zeros((2, self.n_coords))
        J[0, 4 * i:4 * i + 8:2] = s0
        J[1, 4 * i + 1:4 * i + 8:2] = s0
        J.setflags(write=False)
        return 4 * i, s0, s1, J

    def curvature(self, qb, s) -> np.ndarray:
        """Curvature kappa(s) [1/m] of the deformed centreline at arc lengths s."""
        s = np.atleast_1d(np.asarray(s, float))
        out = np.empty(s.size)
        for j, sj in enumerate(s):
            i, xi = self.locate(float(sj))
            e = np.asarray(qb)[4 * i:4 * i + 8].reshape(4, 2)
            a = hermite_shape([xi], self.element_length, 1)[0] @ e
            b = hermite_shape([xi], self.element_length, 2)[0] @ e
            out[j] = (a[0] * b[1] - a[1] * b[0]) / (a @ a) ** 1.5
        return out

    def __repr__(self):
        return (f"ANCFBeam({self.name!r}, L={self.length:g} m, N={self.n_elements}, "
                f"rho_a={self.rho_a:g}, ei={self.ei:g}, ea={self.ea:g})")


class HermiteLineState(BodyState):
    """A body of Hermite line elements (:class:`HermiteLineBody`) in one state: its
    coordinates ``qb`` and rates ``vb`` (zero if None), and the interpolation of both
    along an element."""

    __slots__ = ("body", "index", "qb", "vb")

    def __init__(self, body: HermiteLineBody, qb, vb):
        self.body = body
        self.index = body.index
        self.qb = np.asarray(qb, float)
        self.vb = np.zeros_like(self.qb) if vb is None else np.asarray(vb, float)

    def _along(self, i0: int, shape) -> tuple[np.ndarray, np.ndarray]:
        """``shape`` (4,) applied to the element at coordinate ``i0``: the interpolated
        vector (a position, S, or a slope, S') of the coordinates and of the rates."""
        body = self.body
        dim = body.dim
        cols = slice(i0, i0 + 4 * dim) if body.hermite_contiguous else \
            i0 + body.hermite_columns
        return shape @ self.qb[cols].reshape(4, dim), shape @ self.vb[cols].reshape(4, dim)


class ANCFState(HermiteLineState):
    """Kinematics of an ANCF beam in one state.

    ``point(s)``: r = S(s) e is linear in e, so J = S and quad = 0.
    ``angle(s)``: theta = theta0 + atan2(t0 x r', t0 . r'), with r' = S'(s) e and t0 the
    undeformed tangent; J = (E r')^T S' / |r'|^2 and, since theta'' = J e'' + quad,
    quad = -2 (r'.r'_t) theta' / |r'|^2 (r'_t the rate of r').
    """

    __slots__ = ()

    def point(self, s):
        i0, s0, _, J = self.body.interp(s)
        r, rd = self._along(i0, s0)
        return r, rd, J, np.zeros(2)

    def angle(self, s=None):
        if s is None:
            self.body.default_location()
        body = self.body
        i0, _, s1, _ = body.interp(s)
        a, ad = self._along(i0, s1)
        t0 = body.tangent0
        theta = body.theta0 + math.atan2(t0[0] * a[1] - t0[1] * a[0], t0 @ a)
        g = float(a @ a)
        dth_da = np.array((-a[1], a[0])) / g
        J = np.zeros(body.n_coords)
        J[i0:i0 + 8] = np.outer(s1, dth_da).ravel()
        thd = float(dth_da @ ad)
        quad = -2.0 * float(a @ ad) / g * thd
        return theta, thd, J, quad


# -- models and analyses -----------------------------------------------------------------
def cantilever(length: float = 1.0, n_elements: int = 8, rho_a: float = 1.0,
               ei: float = 1.0, ea: float = 1e6, damping: float = 0.0,
               direction: float = 0.0, gravity=(0.0, 0.0), name: str = "beam") -> System:
    """A System with one ANCF beam clamped at its start to the ground.

    The clamp is a :class:`~mbdcore.multibody.constraints.Weld` between ground marker ``"clamp"``
    (at the origin) and ``"<name>.root"``: it fixes r(0) and the direction of r'(0),
    leaving the stretch |r'(0)| free.  The beam points along ``direction`` [rad].

    Parameters
    ----------
    length : float  beam length L [m]
    n_elements : int  number of ANCF elements
    rho_a, ei, ea, damping : see :class:`ANCFBeam`
    direction : float  angle of the undeformed beam [rad]
    gravity : (float, float)  [m/s^2]
    name : str  the beam's body name

    Returns
    -------
    System
        with the beam as ``system.body(name)`` and the weld named ``"clamp"``.
    """
    system = System(gravity=gravity)
    end = length * np.array([math.cos(direction), math.sin(direction)])
    system.add(ANCFBeam(name, (0.0, 0.0), end, n_elements, rho_a, ei, ea, damping))
    system.ground.add_marker("clamp", (0.0, 0.0))
    system.add_joint(Weld("ground.clamp", f"{name}.root", name="clamp"))
    return system


