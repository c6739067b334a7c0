"""Spatial ANCF cables (Gerstmayr & Shabana 2006; docs/spatial.md, "ANCF cable and
beam"): gradient-deficient absolute-nodal-coordinate elements in 3D; and a fully
parameterised ANCF beam.

A cable of stress-free length L0 [m] is meshed into N two-node elements of stress-free
lengths l_e (summing to L0).  Each node j carries its position and the gradient of the
position with respect to the stress-free arc length x [m]::

    e_j = (r_x, r_y, r_z, r'_x, r'_y, r'_z)        (m, m, m, -, -, -)

and neighbouring elements share their node: 6 (N + 1) coordinates, node by node.
Inside an element, xi = (x - x_A)/l in [0, 1], the centreline is the cubic Hermite
interpolation of the two nodes (the planar beam's functions,
:func:`mbdcore.multibody.ancf.hermite_shape`, applied to each of the three components)::

    r(x) = N1 r_A + l N2 r'_A + N3 r_B + l N4 r'_B

so the mass matrix ``M = int rho_a S^T S dx`` is constant (the Hermite matrix times the
3 x 3 identity per element) and there are no velocity-quadratic inertia terms.

Strain energy per unit stress-free length, with a = r', b = r''::

    W = 1/2 EA eps^2 + 1/2 EI k.k
    eps = 1/2 (a.a - 1)                 Green-Lagrange axial strain
    k   = (a x b) / |a|^3               curvature vector: |k| is the exact curvature of
                                        the deformed centreline, k its binormal times it

Why these forms: the Green strain is a polynomial in e (exact under Gauss quadrature,
cheap forces and tangents) and differs from |a| - 1 only at second order in the strain.
The curvature is the exact one of a curve parametrised by any x, so it does not rely on
|a| = 1: it vanishes for every rigid motion and gives the large-deflection elastica
with any axial stiffness; the simpler |r''| (valid only for |a| = 1) would see
curvature in a uniformly stretched curve and spurious bending wherever the cable
stretches, which for a pretensioned cable is everywhere.  Using the vector k (rather
than its norm) keeps the energy smooth at zero curvature, so the tangent exists for the
straight cable, and k lies along z for a cable in the x-y plane, where k_z is the
planar :class:`~mbdcore.multibody.ancf.ANCFBeam`'s signed curvature: in its plane the
cable is that beam, element by element.  The section is round (one EI; no torsion, as
the gradient-deficient element carries no cross-section orientation).

Pretension: the stress-free length may differ from the geometric one; the coordinates
are positions, the strains are measured against the stress-free arc length, so a cable
built between points 1 m apart with ``stress_free_length=0.99`` starts in tension
N = EA eps |a| with |a| = 1/0.99.

Optional material (Kelvin-Voigt) damping adds ``beta`` times the strain rates to the
stresses (n = EA (eps + beta eps'), m = EI (k + beta k')): stiffness-proportional
damping about the straight state, and no force in any rigid motion.

A tension-only (slack) cable (``tension_only=True``) carries no compression: its axial
stress is n = max(0, EA (eps + beta eps')), elastic and damping part together (a cord
cannot push, whatever its rate), while the bending stays (docs/spatial.md, "Slack
cable").  The kink at n = 0 is kept exact: the energy EA max(eps, 0)^2 / 2 is convex and
once differentiable, the force continuous in e and e', and Newton's method on such a
piecewise-smooth monotone force converges once it knows which points are taut; a
smoothing width would change the taut cable's force, which now is bit-identical to the
cable without the option.

Floor: pushed shorter than ``min_stretch`` lam_f (|r'| = ds/dx, default 0.2) of its
length along its own line, a slack cable resists again, n = min(0, EA (eps - eps_f +
beta eps')) with eps_f = (lam_f^2 - 1)/2.  A slack element has no axial stiffness, so
the spacing of its material along its line drifts freely; without the floor a Gauss
point can run to |r'| -> 0, where the exact curvature (a x b)/|a|^3 is singular (in a
deploying net a slack tie went from |r'| = 0.56 to 0.08 in 0.08 s and Newton failed).
A real cord cannot be pushed into itself either: it folds, which the cable does once
the floor makes it a two-way cable locally (it buckles at its Euler load).

Active set: a plain Newton iteration of an implicit step can cycle across the kink of
a light, stiff cable (the slack tangent has no axial stiffness, so the first iterate
overshoots deep into tension, the taut one back; a net of cables going taut cycled for
25 iterations).  So the implicit integrators freeze which Gauss points are taut during a
step's Newton solve (:meth:`ANCFCable.freeze_switches`, through
:meth:`~mbdcore.multibody.system.System.freeze_switches`): the forces are smooth within
it and Newton converges quadratically; the converged state is then checked
(:meth:`ANCFCable.switches_hold`) and, where a point changed sides, the step is solved
again with the new set (a primal-dual active-set iteration, at most
:data:`~mbdcore.dae.index3.SWITCH_ROUNDS` times; the last solution is kept after that),
so an accepted step obeys the kink exactly unless the rounds ran out.  The first set is
that of the step's start.  Outside a solve no set is frozen and every evaluation takes
the sign of the axial stress.

The element loop (forces, exact element tangents) is C (``native/ancf3d.c``, one call
per evaluation); the tangent is assembled block-banded (bandwidth 11), so a force and
tangent evaluation costs O(N).

Markers are stress-free arc lengths s in [0, L0] [m] from the first node; ``"root"``
(s = 0) and ``"tip"`` (s = L0) always exist.  A body state gives ``point(s)`` and
``slope(s)`` as ``(value, rate, J, quad)`` with value'' = J e'' + quad (quad = 0: both
are linear in e).

:class:`ANCFBeam3D` is the fully parameterised beam: nodes with r, r_x, r_y, r_z, bending
in two planes and torsion, shear and section shape held at the nodes (its docstring and
docs/spatial.md).

Also here, for analyses of a single flexible body with some coordinates held (a clamp
or a pin at the root) before the spatial joints exist: :class:`HeldCoordinates` (a
:class:`~mbdcore.dae.problem.ConstrainedProblem` in the free coordinates, for the
drivers of :mod:`mbdcore.dae`), the loads :class:`DeadPointLoad` and
:class:`ConservativeMoment`, :func:`static_deflection` (Newton with load stepping) and
:func:`vibration_modes`.  They take any body of the planar engine too (the planar
``ANCFBeam``), which is how the two formulations are compared.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.sparse

from mbdcore.blocks import ParameterError
from mbdcore.dae.problem import ConstrainedProblem
from mbdcore.multibody.ancf import (
    N_GAUSS,
    HermiteLineBody,
    HermiteLineState,
    element_count,
    gauss_count,
    hermite_shape,
    positive_parameter,
)
from mbdcore.multibody.system import BodyBase
from mbdcore.multibody.terms import CompiledForces
from mbdcore.native import kernel_library

__all__ = ["ANCFCable", "ANCFBeam3D", "MIN_STRETCH", "StrainTable", "CableState", "ANCF3D_C_SOURCE",
           "HeldCoordinates", "DeadPointLoad", "ConservativeMoment", "StaticDeflection",
           "CableEquilibriumError", "static_deflection", "vibration_modes"]

#: The element loops of the cable's and the beam's elastic forces and tangents in C (their
#: one implementation).
ANCF3D_C_SOURCE = Path(__file__).resolve().parent / "native" / "ancf3d.c"
_ancf3d_library = kernel_library("mbdcore.spatial._ancf3d", ANCF3D_C_SOURCE)
#: the body kernels' (extension module, C source, API macro), which a C-source FMU of a
#: model with these bodies carries (:class:`~mbdcore.multibody.terms.CompiledForces`)
ANCF3D_KERNEL = ("mbdcore.spatial._ancf3d", ANCF3D_C_SOURCE, "ANCF3D_API")

#: The default floor stretch of a tension-only cable (:class:`ANCFCable` ``min_stretch``).
MIN_STRETCH = 0.2

#: The markers every cable has, as fractions of its stress-free length.
END_MARKERS = {"root": 0.0, "tip": 1.0}


def _vectors(owner: str, label: str, value, rows: int | None = None) -> np.ndarray:
    """A finite (k, 3) array (k = rows if given) or ParameterError naming ``label``."""
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        arr = None
    ok = arr is not None and arr.ndim == 2 and arr.shape[1] == 3 and \
        (rows is None or arr.shape[0] == rows)
    if not ok:
        want = f"({rows}, 3)" if rows is not None else "(k, 3)"
        raise ParameterError(f"{owner}: {label} must be an array of shape "
                             f"{want} [m]; got {value!r}")
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        raise ParameterError(f"{owner}: {label}[{bad[0][0]}] = "
                             f"{arr[bad[0][0]].tolist()} is not finite: accepted values are "
                             "finite numbers")
    return arr


_P, _N, _D = ctypes.c_void_p, ctypes.c_int, ctypes.c_double


class _CableParameters(ctypes.Structure):
    """``ancf3d_cable_t`` of native/ancf3d.c (same field order)."""

    c_type = "ancf3d_cable_t"       # what a C image (mbdcore.cimage) declares it as

    _fields_ = [("N", _N), ("G", _N), ("len", _P), ("xi", _P), ("w", _P), ("ea", _D),
                ("ei", _D), ("beta", _D), ("f", _P), ("k", _P), ("c", _P),
                ("tension_only", _N), ("floor_strain", _D), ("state", _P), ("frozen", _P)]


class _BeamParameters(ctypes.Structure):
    """``ancf3d_beam_t`` of native/ancf3d.c (same field order)."""

    c_type = "ancf3d_beam_t"

    _fields_ = [("N", _N), ("G", _N), ("len", _P), ("xi", _P), ("w", _P),
                ("gs_n", _N), ("gs_terms", _P), ("gs_i", _P), ("gs_j", _P), ("gs_m", _P),
                ("gs_c", _P), ("gs_s0", _P), ("gs_k", _P),
                ("ns_n", _N), ("ns_terms", _P), ("ns_i", _P), ("ns_j", _P), ("ns_m", _P),
                ("ns_c", _P), ("ns_s0", _P), ("ns_k", _P), ("beta", _D),
                ("f", _P), ("k", _P), ("c", _P)]


def _table_pointers(table, keep: list):
    """The arguments of a :class:`StrainTable` as (count, 7 addresses), the arrays kept
    in ``keep``."""
    count, *arrays = table.arguments()
    out = []
    for k, a in enumerate(arrays):
        a = np.ascontiguousarray(a, dtype=np.int32 if k < 4 else np.float64)
        keep.append(a)
        out.append(a.ctypes.data)
    return count, out


class _HermiteLine(HermiteLineBody):
    """What every spatial ANCF line element shares beyond
    :class:`~mbdcore.multibody.ancf.HermiteLineBody`: elements of any stress-free
    lengths, a section mass (none for a cable), point and slope kinematics in 3D, a
    translation as the initial velocity.  Subclasses set the parameters and give the
    element loop."""

    dim = 3
    points_linear = True
    #: coordinates per node: r (3) and r' (3) first, then whatever a subclass adds
    node_size = 6
    kind = "ANCF line"
    extent = "body"
    end_markers = END_MARKERS
    coordinate_labels = ("rx", "ry", "rz", "dx", "dy", "dz")

    def _straight(self, start, end, n_elements):
        """The ends (2, 3) [m], the chord end - start [m] and its length [m] of a
        straight initial shape, and the element count, checked."""
        ends = _vectors(self._owner(), "start, end", [np.ravel(start), np.ravel(end)]
                        if np.size(start) == 3 and np.size(end) == 3 else (start, end), 2)
        chord = ends[1] - ends[0]
        length = float(np.linalg.norm(chord))
        if not length > 0.0:
            raise ParameterError(f"{self._owner()}: start and end coincide (zero "
                                 "length): accepted are two distinct points [m]")
        return ends, chord, length, element_count(self._owner(), n_elements)

    def _setup_line(self, nodes, lengths, velocity, markers, n_gauss) -> None:
        """The shared set-up: ``nodes`` (N + 1, node_size) initial nodal coordinates,
        ``lengths`` (N,) stress-free element lengths [m] (rho_a set before)."""
        n_gauss = gauss_count(self._owner(), n_gauss)
        self.velocity = _vectors(self._owner(), "velocity", [np.ravel(velocity)]
                                 if np.size(velocity) == 3 else velocity, 1)[0]
        self.element_lengths = np.ascontiguousarray(lengths, dtype=float)
        self._setup_nodes(self.element_lengths.size)
        self.node_arc = np.concatenate([[0.0], np.cumsum(self.element_lengths)])
        self.length = float(self.node_arc[-1])          # stress-free length L0 [m]
        self._q0 = np.ascontiguousarray(nodes, dtype=float).ravel()
        self.tangent0 = nodes[0, 3:6] / np.linalg.norm(nodes[0, 3:6])
        self.n_gauss = int(n_gauss)          # Gauss points per element
        x, w = np.polynomial.legendre.leggauss(int(n_gauss))
        self._gauss_xi = np.ascontiguousarray(0.5 * (x + 1.0))
        self._gauss_w = np.ascontiguousarray(0.5 * w)       # on [0, 1]: sum 1
        self._setup_mass()
        self._add_markers(markers)

    def compiled_forces(self, gravity) -> CompiledForces | None:
        """Distributed gravity (constant) and the elastic and damping forces of the
        element loop in ``native/ancf3d.c`` (its body kernels ``*_body_forces``) [N],
        with their exact tangents (``*_body_tangents``); a tension-only cable's kernel
        reads its active set where :meth:`ANCFCable.hold_states` writes it (frozen per
        Newton solve by the implicit step, the signs of the stresses otherwise)."""
        kernel = self._body_kernel()
        if kernel is None:
            return None
        name, params, owner = kernel
        lib = _ancf3d_library()
        return CompiledForces(self.gravity_forces(gravity), lib.ADDRESSES[name + "_forces"],
                              ctypes.addressof(params), (params, owner),
                              lib.ADDRESSES[name + "_tangents"], self.tangent_pattern(),
                              kernels=(ANCF3D_KERNEL,))

    def _body_kernel(self):
        """(kernel name prefix, ctypes parameters, arrays they point into) of the
        compiled body kernel, or None."""
        raise NotImplementedError

    def _kernel_scratch(self, keep: list):
        """The addresses of the tangents' scratch (f, element K, element C) and of the
        shared geometry (lengths, Gauss points and weights), the arrays kept in
        ``keep``."""
        ne = 2 * self.node_size
        arrays = [np.zeros(self.n_coords), np.zeros(ne * ne * self.n_elements),
                  np.zeros(ne * ne * self.n_elements), self.element_lengths,
                  self._gauss_xi, self._gauss_w]
        keep.extend(arrays)
        return [a.ctypes.data for a in arrays]

    def _section_mass(self, length: float) -> np.ndarray:
        """The element mass of the coordinates beyond r and r' ((2 node_size)^2, zero
        for a cable)."""
        return np.zeros((2 * self.node_size, 2 * self.node_size))

    def _setup_mass(self) -> None:
        # degree-6 integrand: 4 Gauss points are exact
        x, w = np.polynomial.legendre.leggauss(4)
        xi, wq = 0.5 * (x + 1.0), 0.5 * w
        ne = 2 * self.node_size
        cols = self.hermite_columns
        m_el = np.empty((self.n_elements, ne, ne))
        c = np.zeros((self.n_nodes, self.node_size // 3))   # gravity: int rho_a S dx
        for length in np.unique(self.element_lengths):
            s0 = hermite_shape(xi, length, 0)
            m4 = self.rho_a * length * np.einsum("g,gk,gm->km", wq, s0, s0)
            block = self._section_mass(length)
            block[np.ix_(cols, cols)] += np.kron(m4, np.eye(3))
            where = self.element_lengths == length
            m_el[where] = block
            c_el = self.rho_a * length * (wq @ s0)
            idx = np.flatnonzero(where)
            np.add.at(c[:, :2], idx, c_el[:2])
            np.add.at(c[:, :2], idx + 1, c_el[2:])
        self.element_mass = m_el
        self._mass_sparse = self._assemble_sparse(m_el)
        self._gravity_weights = np.repeat(c.ravel(), 3)        # per coordinate

    def initial_coordinates(self):
        v = np.zeros((self.n_nodes, self.node_size))
        v[:, :3] = self.velocity
        return self._q0.copy(), v.ravel()

    def _gauss_gradients(self, qb):
        """a = r', b = r'' at every Gauss point, shape (N, G, 3) each."""
        e = self.element_coordinates(qb)[:, self.hermite_columns].reshape(
            self.n_elements, 4, 3)
        a = np.empty((self.n_elements, self._gauss_xi.size, 3))
        b = np.empty_like(a)
        for length in np.unique(self.element_lengths):
            where = self.element_lengths == length
            d1 = hermite_shape(self._gauss_xi, length, 1)
            d2 = hermite_shape(self._gauss_xi, length, 2)
            a[where] = np.einsum("gk,eki->egi", d1, e[where])
            b[where] = np.einsum("gk,eki->egi", d2, e[where])
        return a, b

    def _gradients_at(self, qb, s):
        i0, _, s1, s2, _, _ = self.interp(s)
        e = qb[i0 + self.hermite_columns].reshape(4, 3)
        return s1 @ e, s2 @ e

    def state(self, qb, vb):
        return CableState(self, qb, vb)

    def tip_deflection(self, qb) -> np.ndarray:
        """Tip displacement transverse to the root tangent [m], shape (3,): the part of
        r(L0) - r(0) normal to r'(0).  Zero for every rigid motion of the straight body;
        exact for large deflections."""
        qb = np.asarray(qb, float)
        t = qb[3:6] / np.linalg.norm(qb[3:6])
        tip = self.n_coords - self.node_size
        d = qb[tip:tip + 3] - qb[0:3]
        return d - (d @ t) * t

    def locate(self, s: float) -> tuple[int, float]:
        """(element index, xi) of the stress-free arc length s [m]."""
        i = int(np.searchsorted(self.node_arc, s, side="right")) - 1
        i = min(max(i, 0), self.n_elements - 1)
        return i, (s - self.node_arc[i]) / self.element_lengths[i]

    def _point_terms(self, s: float):
        """(first coordinate, S, S', S'', J_point, J_slope) of arc length s, J read-only."""
        i, xi = self.locate(s)
        length = self.element_lengths[i]
        s0, s1, s2 = (hermite_shape([xi], length, d)[0] for d in (0, 1, 2))
        J = np.zeros((3, self.n_coords))
        Js = np.zeros((3, self.n_coords))
        cols = self.node_size * i + self.hermite_columns.reshape(4, 3)
        for k in range(3):
            J[k, cols[:, k]] = s0
            Js[k, cols[:, k]] = s1
        J.setflags(write=False)
        Js.setflags(write=False)
        return self.node_size * i, s0, s1, s2, J, Js


class ANCFCable(_HermiteLine):
    """Spatial ANCF cable of gradient-deficient Hermite elements (Gerstmayr & Shabana
    2006; module docstring; docs/spatial.md).

    Parameters
    ----------
    name : str
        Unique body name.
    start, end : (float, float, float)
        End points of the straight initial shape [m], any direction; marker ``"root"``
        at ``start``, ``"tip"`` at ``end``.
    n_elements : int
        Number N of equal elements (>= 1); the body has 6 (N + 1) coordinates.
    rho_a : float
        Mass per unit stress-free length [kg/m].
    ea : float
        Axial stiffness [N].
    ei : float
        Flexural stiffness [N m^2] (round section: the same in every plane).
    damping : float
        Kelvin-Voigt time beta [s] (stresses += beta * strain rates; mode i damped by
        about zeta_i = beta omega_i / 2).  Default 0.
    stress_free_length : float, optional
        L0 [m]; default |end - start| (unstressed).  Shorter: the cable starts in
        tension (pretension), longer: in compression.
    markers : dict of str to float, optional
        Named stress-free arc lengths s in [0, L0] [m] from ``start``.
    velocity : (float, float, float)
        Initial velocity of every point [m/s] (a translation).
    n_gauss : int
        Gauss points per element (>= 3, default 5 as the planar beam).
    tension_only : bool
        A slack cable: the axial force n = max(0, EA (eps + beta eps')) never pushes
        (module docstring); bending unchanged.  Default False (the axial force both
        ways).
    min_stretch : float
        Of a tension-only cable: the stretch |r'| in [0, 1) below which it resists
        shortening again (the cord folded on itself; module docstring, "Floor").
        Default 0.2.

    See :meth:`from_nodes` for a curved initial shape.
    """

    kind = "ANCF cable"

    def __init__(self, name: str, start, end, n_elements: int, rho_a: float, ea: float,
                 ei: float, damping: float = 0.0, stress_free_length: float | None = None,
                 markers: dict | None = None, velocity=(0.0, 0.0, 0.0),
                 n_gauss: int = N_GAUSS, tension_only: bool = False,
                 min_stretch: float = MIN_STRETCH):
        super().__init__(name)
        ends, chord, length, n = self._straight(start, end, n_elements)
        l0 = length if stress_free_length is None else \
            positive_parameter(self._owner(), "stress_free_length", stress_free_length, "m")
        # the straight shape's arguments, kept as given (a model file writes them back)
        self.start, self.end, self.stress_free_length = ends[0], ends[1], l0
        x = np.linspace(0.0, 1.0, n + 1)
        positions = ends[0] + np.outer(x, chord)
        slopes = np.tile(chord / l0, (n + 1, 1))
        self._setup(positions, slopes, np.full(n, l0 / n), rho_a, ea, ei, damping, markers,
                    velocity, n_gauss, tension_only, min_stretch)

    @classmethod
    def from_nodes(cls, name: str, positions, rho_a: float, ea: float, ei: float,
                   slopes=None, lengths=None, damping: float = 0.0,
                   markers: dict | None = None, velocity=(0.0, 0.0, 0.0),
                   n_gauss: int = N_GAUSS, tension_only: bool = False,
                   min_stretch: float = MIN_STRETCH) -> "ANCFCable":
        """A cable through given nodes (a curved initial shape, e.g. of a cable net).

        Parameters
        ----------
        positions : (N + 1, 3) array
            Node positions [m], N >= 1.
        slopes : (N + 1, 3) array, optional
            r' at the nodes [-]: the tangent times the stretch |a| = ds/dx.  Default:
            unit tangents along the chords (one-sided at the ends, the mean of the two
            chords' directions inside), i.e. the shape taken as unstretched.
        lengths : (N,) array, optional
            Stress-free element lengths [m]; default the chord lengths.  Shorter
            lengths pretension the cable.
        rho_a, ea, ei, damping, markers, velocity, n_gauss, tension_only, min_stretch :
            see :class:`ANCFCable`.

        The stress-free state is straight (a cable has no preferred curvature): a
        curved initial shape stores bending energy EI k.k / 2.
        """
        self = cls.__new__(cls)
        HermiteLineBody.__init__(self, name)
        self.start = self.end = self.stress_free_length = None     # not a straight cable
        positions = _vectors(self._owner(), "positions", positions)
        if positions.shape[0] < 2:
            raise ParameterError(f"ANCF cable {name!r}: positions has {positions.shape[0]} "
                                 "node(s): accepted at least 2 (one element)")
        chords = np.diff(positions, axis=0)
        chord_lengths = np.linalg.norm(chords, axis=1)
        if not np.all(chord_lengths > 0.0):
            j = int(np.flatnonzero(~(chord_lengths > 0.0))[0])
            raise ParameterError(f"ANCF cable {name!r}: positions[{j}] and positions[{j + 1}] "
                                 "coincide (zero element length): accepted are distinct "
                                 "consecutive nodes [m]")
        if slopes is None:
            units = chords / chord_lengths[:, None]
            slopes = np.vstack([units[:1], units[:-1] + units[1:], units[-1:]])
            slopes /= np.linalg.norm(slopes, axis=1)[:, None]
        slopes = _vectors(self._owner(), "slopes", slopes, positions.shape[0])
        if lengths is None:
            lengths = chord_lengths
        else:
            lengths = np.array(lengths, dtype=float).ravel()
            if lengths.size != chords.shape[0]:
                raise ParameterError(f"ANCF cable {name!r}: lengths has {lengths.size} "
                                     f"entries: accepted one per element ({chords.shape[0]})")
            for j, lj in enumerate(lengths):
                positive_parameter(self._owner(), f"lengths[{j}]", lj, "m")
        self._setup(positions, slopes, lengths, rho_a, ea, ei, damping, markers, velocity,
                    n_gauss, tension_only, min_stretch)
        return self

    def _setup(self, positions, slopes, lengths, rho_a, ea, ei, damping, markers, velocity,
               n_gauss, tension_only, min_stretch) -> None:
        self._line_parameters(rho_a, ea, damping)
        if not isinstance(tension_only, (bool, np.bool_)):
            raise ParameterError(f"{self._owner()}: tension_only = {tension_only!r} is "
                                 "invalid: accepted values are True or False")
        self.tension_only = bool(tension_only)
        ok = isinstance(min_stretch, (int, float)) and 0.0 <= min_stretch < 1.0
        if not ok:
            raise ParameterError(f"{self._owner()}: min_stretch = {min_stretch!r} is invalid: "
                                 "accepted values are numbers in [0, 1)")
        self.min_stretch = float(min_stretch)
        #: the floor strain (lam_f^2 - 1)/2 of a tension-only cable [-]
        self.floor_strain = 0.5 * (self.min_stretch ** 2 - 1.0)
        #: the Gauss points' states (0 slack, 1 taut, 2 at the floor), frozen during an
        #: implicit step's Newton solve (int32, N G), or None: by the axial stress
        #: (:meth:`hold_states`, which writes them where the compiled kernel reads them)
        self.frozen_taut = None
        self.ei = positive_parameter(self._owner(), "ei", ei, "N.m2")
        self._setup_line(np.column_stack([positions, slopes]), lengths, velocity, markers,
                         n_gauss)

    def _element_loop(self, qb, vb, f, k_el, c_el) -> None:
        """The cable's element loop in ``native/ancf3d.c``
        (:meth:`~mbdcore.multibody.ancf.HermiteLineBody._elastic`)."""
        _ancf3d_library().ancf3d_forces(self.n_elements, self.element_lengths,
                                        self._gauss_xi.size, self._gauss_xi, self._gauss_w,
                                        qb, vb, self.ea, self.ei,
                                        self.damping, int(self.tension_only),
                                        self.floor_strain, self.frozen_taut, f, k_el, c_el)

    def _body_kernel(self):
        keep = []
        f, k, c, length, xi, w = self._kernel_scratch(keep)
        state, frozen = self._active_set_arrays()
        keep.extend([state, frozen])
        params = _CableParameters(self.n_elements, self._gauss_xi.size, length, xi, w,
                                  self.ea, self.ei, self.damping, f, k, c,
                                  int(self.tension_only), self.floor_strain,
                                  state.ctypes.data, frozen.ctypes.data)
        return "ancf3d_cable_body", params, keep

    def _active_set_arrays(self):
        """(states (N G,), frozen flag (1,)) as int32 arrays made once per cable: the
        compiled kernel reads the active set there at every call, so freezing it for a
        Newton solve (:meth:`hold_states`) reaches every compiled form of the cable."""
        if getattr(self, "_held_states", None) is None:
            self._held_states = np.zeros(self.n_elements * self.n_gauss, dtype=np.int32)
            self._held_flag = np.zeros(1, dtype=np.int32)
        return self._held_states, self._held_flag

    def hold_states(self, states) -> None:
        """Freeze the Gauss points' states (0 slack, 1 taut, 2 at the floor; N G values
        or one for all) for the evaluations that follow, Python's and the compiled
        kernel's; None: back to the signs of the stresses."""
        held, flag = self._active_set_arrays()
        if states is None:
            flag[0] = 0
            self.frozen_taut = None
            return
        held[:] = states
        flag[0] = 1
        self.frozen_taut = held

    def axial_states(self, qb, vb=None) -> np.ndarray:
        """The state of a tension-only cable at every Gauss point, (N, G) integers: 1
        taut (the axial stress n = EA (eps + beta eps') pulls), 2 at the floor (n - EA
        eps_f < 0), 0 slack; the rates' part with damping and ``vb`` only (in C,
        ``ancf3d_axial_states``: the element loop's own operations)."""
        qb = np.ascontiguousarray(qb, dtype=float)
        vb = None if vb is None else np.ascontiguousarray(vb, dtype=float)
        out = np.empty(self.n_elements * self._gauss_xi.size, dtype=np.int32)
        _ancf3d_library().ancf3d_axial_states(self.n_elements, self.element_lengths,
                                              self._gauss_xi.size, self._gauss_xi, qb, vb,
                                              self.ea, self.damping, self.floor_strain, out)
        return out.reshape(self.n_elements, self._gauss_xi.size)

    def freeze_switches(self, qb, vb, slack: bool = False) -> None:
        """Freeze the taut Gauss points of a tension-only cable at the state (qb, vb)
        (with ``slack``: none taut, those at the floor kept) for the forces and tangents that follow (module
        docstring, "Active set")."""
        if self.tension_only:
            states = self.axial_states(qb, vb).ravel()
            if slack:
                states[states == 1] = 0         # the floor stays: it keeps |r'| regular
            self.hold_states(states)

    def switches_hold(self, qb, vb) -> bool:
        """Whether the frozen taut points are those of the state (qb, vb) (True without
        a frozen set)."""
        if self.frozen_taut is None:
            return True
        return bool(np.array_equal(self.frozen_taut, self.axial_states(qb, vb).ravel()))

    def release_switches(self) -> None:
        """Back to the sign of the axial stress at every evaluation."""
        self.hold_states(None)

    def strains(self, qb, s=None):
        """Axial strain eps [-] and curvature |k| [1/m] at arc lengths s [m] (default:
        every Gauss point, element by element), each shape (k,)."""
        qb = np.asarray(qb, float)
        if s is None:
            a, b = self._gauss_gradients(qb)
        else:
            ab = np.array([self._gradients_at(qb, float(sj)) for sj in np.atleast_1d(s)])
            a, b = ab[:, 0], ab[:, 1]
        g = np.einsum("...i,...i->...", a, a)
        k = np.cross(a, b) * g[..., None] ** -1.5
        return 0.5 * (g - 1.0).ravel(), np.linalg.norm(k, axis=-1).ravel()

    def axial_force(self, qb, s) -> np.ndarray:
        """Axial force N = EA eps |a| [N] at stress-free arc lengths s [m], shape (k,): the
        force the cable transmits across a section (the Green strain's conjugate stress
        EA eps per unit stress-free length, times the stretch |a| = ds/dx; at a section
        of a straight cable it equals the end reactions).  The elastic part (no damping);
        a tension-only cable's is max(0, EA eps) |a| (0 where slack) above its floor and
        EA (eps - eps_f) |a| below."""
        qb = np.asarray(qb, float)
        a = np.array([self._gradients_at(qb, float(sj))[0] for sj in np.atleast_1d(s)])
        g = np.einsum("...i,...i->...", a, a)
        return self.ea * self._axial_strain(0.5 * (g - 1.0)) * np.sqrt(g)

    def _axial_strain(self, eps):
        """The strain the axial force is EA times: eps, or for a tension-only cable
        max(eps, 0) above the floor and eps - eps_f below."""
        if not self.tension_only:
            return eps
        return np.where(eps > 0.0, eps, np.minimum(eps - self.floor_strain, 0.0))

    def strain_energy(self, qb) -> float:
        """Axial plus bending strain energy [J] (a tension-only cable stores none in
        compression above its floor: EA max(eps, 0)^2 / 2, EA (eps - eps_f)^2 / 2
        below)."""
        a, b = self._gauss_gradients(np.asarray(qb, float))
        g = np.einsum("...i,...i->...", a, a)
        c = np.cross(a, b)
        eps = self._axial_strain(0.5 * (g - 1.0))
        dens = 0.5 * (self.ea * eps ** 2
                      + self.ei * np.einsum("...i,...i->...", c, c) / g**3)
        return float(np.einsum("eg,g,e->", dens, self._gauss_w, self.element_lengths))

    def __repr__(self):
        slack = ", tension_only=True" if self.tension_only else ""
        return (f"ANCFCable({self.name!r}, L0={self.length:g} m, N={self.n_elements}, "
                f"rho_a={self.rho_a:g}, ea={self.ea:g}, ei={self.ei:g}{slack})")


class StrainTable:
    """A table of strains, each a sum of at most two terms that are dot products
    c u_i . u_j or triple products c u_i . (u_j x u_k) of a few "slot" vectors u_s
    (3-vectors linear in the coordinates), plus an offset, with the energy density
    stiffness s^2 / 2: the form every strain of the fully parameterised beam takes
    (docs/spatial.md); the C kernel evaluates the table from these arrays.

    ``rows``: (name, [(i, j, c) or (i, j, k, c), ...], s0, stiffness) per strain."""

    def __init__(self, rows):
        self.names = [r[0] for r in rows]
        n = len(rows)
        self.n_terms = np.array([len(r[1]) for r in rows], dtype=np.int32)
        self.slot_i = np.zeros(2 * n, dtype=np.int32)
        self.slot_j = np.zeros(2 * n, dtype=np.int32)
        self.slot_k = np.full(2 * n, -1, dtype=np.int32)      # -1: a dot product
        self.coefficient = np.zeros(2 * n)
        for k, (_, terms, _, _) in enumerate(rows):
            for t, term in enumerate(terms):
                slots, c = term[:-1], term[-1]
                if len(set(slots)) != len(slots) and len(slots) == 3:
                    raise ParameterError(f"strain {rows[k][0]!r}: a triple product needs "
                                         "three different slots")
                self.slot_i[2 * k + t], self.slot_j[2 * k + t] = slots[0], slots[1]
                if len(slots) == 3:
                    self.slot_k[2 * k + t] = slots[2]
                self.coefficient[2 * k + t] = c
        self.offset = np.array([r[2] for r in rows], dtype=float)
        self.stiffness = np.array([r[3] for r in rows], dtype=float)

    def arguments(self):
        return (len(self.names), self.n_terms, self.slot_i, self.slot_j, self.slot_k,
                self.coefficient, self.offset, self.stiffness)

    def values(self, u) -> np.ndarray:
        """The strains at slot vectors u (..., n_slots, 3): shape (..., n_strains)."""
        out = np.empty(u.shape[:-2] + (len(self.names),))
        for k in range(len(self.names)):
            out[..., k] = self.offset[k]
            for t in range(self.n_terms[k]):
                i, j, m = self.slot_i[2 * k + t], self.slot_j[2 * k + t], self.slot_k[2 * k + t]
                other = u[..., j, :] if m < 0 else np.cross(u[..., j, :], u[..., m, :])
                out[..., k] += self.coefficient[2 * k + t] * np.einsum(
                    "...i,...i->...", u[..., i, :], other)
        return out


class ANCFBeam3D(_HermiteLine):
    """Fully parameterised spatial ANCF beam (docs/spatial.md, "ANCF cable and beam"):
    nodes carry r, r_x, r_y, r_z (12 coordinates), so the section's orientation is
    known and the beam has torsion and two bending stiffnesses.

    r(x) is the cubic Hermite of (r, r_x), as the cable's; the directors d2 = r_y and
    d3 = r_z are interpolated linearly.  Strains (polynomial in the coordinates):

    * at the Gauss points: axial eps = (r_x.r_x - 1)/2 [EA]; bending
      kappa_xy = d3 . (r_x x r_xx) [EI_xy] and kappa_xz = -d2 . (r_x x r_xx) [EI_xz]:
      the centreline's curvature vector (the cable's a x b) resolved on the section
      axes, each measured with the director about which that bending turns (which
      that bending leaves unturned, so its linear interpolation does not shorten it);
      cubic as the cable, fourth-order accurate; torsion
      kappa_t = (d3 . d2' - d2 . d3')/2 [GJ], the rate of turn of the section about the
      axis (linear directors: second order, sin(phi_e)/l for an element twisted by
      phi_e, so keep phi_e well below 45 deg, beyond which the element softens);
    * at the nodes (collocated, "assumed strains", weighted by the tributary length):
      the shears r_x . d2, r_x . d3 and the section's deformation (d2.d2 - 1)/2,
      (d3.d3 - 1)/2, d2.d3, held near zero by the stiffness ``penalty``.  Taken only at
      the nodes, they tie the directors to the centreline slope without the locking a
      cubic slope and linear directors would have at the Gauss points (and keep a
      linearly interpolated pair of unit directors from being charged for their chord's
      shortening in a bent element).

    So the beam is shear-rigid (Euler-Bernoulli bending with Saint-Venant torsion, for
    slender members; shear flexibility is not modelled).  The mass is that of the
    volume: rho_a on the centreline, ``rho_yy`` = rho int y^2 dA on d2 and ``rho_zz`` on
    d3 (rotary and torsional inertia).

    Parameters
    ----------
    name : str
    start, end : 3-vectors [m]; straight, unstressed initial shape.
    n_elements : int >= 1; the body has 12 (N + 1) coordinates.
    rho_a : mass per unit length [kg/m].
    ea : axial stiffness [N].
    ei_xy, ei_xz : bending stiffness in the plane of the axis and the section's y (z)
        axis [N m^2] (E int y^2 dA, E int z^2 dA).
    gj : torsional stiffness [N m^2].
    rho_yy, rho_zz : rho int y^2 dA, rho int z^2 dA [kg m].
    section_y : 3-vector, optional; the section's y axis (made normal to the beam's
        axis); default: the coordinate axis most normal to it.
    penalty : stiffness of the nodal shear and section-shape strains [N]; default ea.
    damping : Kelvin-Voigt time beta [s] on every strain.
    markers, velocity, n_gauss : as :class:`ANCFCable`.
    """

    node_size = 12
    kind = "ANCF beam"
    coordinate_labels = ("rx", "ry", "rz", "dx", "dy", "dz", "yx", "yy", "yz", "zx", "zy",
                         "zz")

    def __init__(self, name: str, start, end, n_elements: int, rho_a: float, ea: float,
                 ei_xy: float, ei_xz: float, gj: float, rho_yy: float, rho_zz: float,
                 section_y=None, penalty: float | None = None, damping: float = 0.0,
                 markers: dict | None = None, velocity=(0.0, 0.0, 0.0),
                 n_gauss: int = N_GAUSS):
        super().__init__(name)
        ends, chord, length, n = self._straight(start, end, n_elements)
        self._line_parameters(rho_a, ea, damping)
        owner = self._owner()
        self.ei_xy = positive_parameter(owner, "ei_xy", ei_xy, "N.m2")
        self.ei_xz = positive_parameter(owner, "ei_xz", ei_xz, "N.m2")
        self.gj = positive_parameter(owner, "gj", gj, "N.m2")
        self.rho_yy = positive_parameter(owner, "rho_yy", rho_yy, "kg.m")
        self.rho_zz = positive_parameter(owner, "rho_zz", rho_zz, "kg.m")
        self.penalty = self.ea if penalty is None else \
            positive_parameter(owner, "penalty", penalty, "N")
        t = chord / length
        section_y_given = section_y
        if section_y is None:
            section_y = np.eye(3)[int(np.argmin(np.abs(t)))]
        y_given = _vectors(self._owner(), "section_y", [np.ravel(section_y)], 1)[0]
        y = y_given - (y_given @ t) * t
        if not np.linalg.norm(y) > 1e-9:
            raise ParameterError(f"ANCF beam {name!r}: section_y = {section_y!r} is along "
                                 "the beam's axis: accepted a direction normal to it")
        y /= np.linalg.norm(y)
        # the arguments, kept as given (a model file writes them back)
        self.start, self.end = ends[0], ends[1]
        self.section_y = None if section_y_given is None else y_given
        z = np.cross(t, y)
        #: the section frame of the straight initial shape, columns (r_x, r_y, r_z):
        #: what a joint's direction is fixed to (:meth:`local_direction`)
        self.orientation = np.column_stack([t, y, z])
        x = np.linspace(0.0, 1.0, n + 1)
        nodes = np.column_stack([ends[0] + np.outer(x, chord), np.tile(t, (n + 1, 1)),
                                 np.tile(y, (n + 1, 1)), np.tile(z, (n + 1, 1))])
        # Gauss slots: 0 a = r_x, 1 b = r_xx, 2 d2, 3 d2', 4 d3, 5 d3'
        self.gauss_strains = StrainTable([
            ("axial", [(0, 0, 0.5)], -0.5, self.ea),
            ("torsion", [(4, 3, 0.5), (2, 5, -0.5)], 0.0, self.gj),
            ("bending_xy", [(4, 0, 1, 1.0)], 0.0, self.ei_xy),      # d3 . (a x b)
            ("bending_xz", [(2, 0, 1, -1.0)], 0.0, self.ei_xz),     # -d2 . (a x b)
        ])
        # nodal slots: 0 r_x, 1 r_y, 2 r_z
        k = self.penalty
        self.nodal_strains = StrainTable([
            ("shear_xy", [(0, 1, 1.0)], 0.0, k),
            ("shear_xz", [(0, 2, 1.0)], 0.0, k),
            ("section_yy", [(1, 1, 0.5)], -0.5, k),
            ("section_zz", [(2, 2, 0.5)], -0.5, k),
            ("section_yz", [(1, 2, 1.0)], 0.0, k),
        ])
        self._setup_line(nodes, np.full(n, length / n), velocity, markers, n_gauss)

    #: a frame at every arc length (r_x, r_y, r_z), so a joint's direction can be fixed
    #: to any section (mbdcore.spatial.joints); a cable has no frame about its axis
    frame_along = True

    def local_direction(self, direction) -> np.ndarray:
        """Components of a ground-frame direction on the section frame (r_x, r_y, r_z)
        of the initial straight shape: the direction a joint fixes to a section, which
        :meth:`CableState.vector` carries along as the section turns and bends."""
        return self.orientation.T @ np.asarray(direction, float)

    def _section_mass(self, length: float) -> np.ndarray:
        """rho_yy int N^T N dx on d2 and rho_zz on d3 (linear N): l/6 [2 1; 1 2]."""
        lin = length / 6.0 * np.array([[2.0, 1.0], [1.0, 2.0]])
        block = np.zeros((24, 24))
        for offset, rho in ((6, self.rho_yy), (9, self.rho_zz)):
            cols = np.concatenate([offset + np.arange(3), 12 + offset + np.arange(3)])
            block[np.ix_(cols, cols)] = np.kron(rho * lin, np.eye(3))
        return block

    def _element_loop(self, qb, vb, f, k_el, c_el) -> None:
        """The beam's element loop in ``native/ancf3d.c``: the strain tables
        (:meth:`~mbdcore.multibody.ancf.HermiteLineBody._elastic`)."""
        _ancf3d_library().ancf3d_beam_forces(
            self.n_elements, self.element_lengths, self._gauss_xi.size, self._gauss_xi,
            self._gauss_w, qb, vb, *self.gauss_strains.arguments(),
            *self.nodal_strains.arguments(), self.damping, f, k_el,
            c_el)

    def _body_kernel(self):
        keep = []
        f, k, c, length, xi, w = self._kernel_scratch(keep)
        gs_n, gs = _table_pointers(self.gauss_strains, keep)
        ns_n, ns = _table_pointers(self.nodal_strains, keep)
        params = _BeamParameters(self.n_elements, self._gauss_xi.size, length, xi, w,
                                 gs_n, *gs, ns_n, *ns, self.damping, f, k, c)
        return "ancf3d_beam_body", params, keep

    def gauss_slots(self, qb) -> np.ndarray:
        """(r_x, r_xx, d2, d2', d3, d3') at every Gauss point, shape (N, G, 6, 3)."""
        e = self.element_coordinates(qb).reshape(self.n_elements, 8, 3)
        out = np.empty((self.n_elements, self._gauss_xi.size, 6, 3))
        xi = self._gauss_xi
        for length in np.unique(self.element_lengths):
            where = self.element_lengths == length
            ew = e[where]
            out[where, :, 0] = np.einsum("gk,eki->egi", hermite_shape(xi, length, 1),
                                         ew[:, [0, 1, 4, 5]])
            out[where, :, 1] = np.einsum("gk,eki->egi", hermite_shape(xi, length, 2),
                                         ew[:, [0, 1, 4, 5]])
            for slot, vec in ((2, 2), (4, 3)):
                out[where, :, slot] = (np.einsum("g,ei->egi", 1.0 - xi, ew[:, vec])
                                       + np.einsum("g,ei->egi", xi, ew[:, vec + 4]))
                out[where, :, slot + 1] = ((ew[:, vec + 4] - ew[:, vec]) / length)[:, None]
        return out

    def strain_energy(self, qb) -> float:
        """Axial, bending, torsion and nodal (penalty) strain energy [J]."""
        qb = np.asarray(qb, float)
        s = self.gauss_strains.values(self.gauss_slots(qb))
        dens = 0.5 * (s**2 @ self.gauss_strains.stiffness)
        energy = float(np.einsum("eg,g,e->", dens, self._gauss_w, self.element_lengths))
        sn = self.nodal_strains.values(qb.reshape(self.n_nodes, 4, 3)[:, 1:])
        tributary = np.zeros(self.n_nodes)
        tributary[:-1] += 0.5 * self.element_lengths
        tributary[1:] += 0.5 * self.element_lengths
        return energy + float(tributary @ (0.5 * (sn**2 @ self.nodal_strains.stiffness)))

    def twist(self, qb) -> float:
        """Rotation of the tip section about the root's axis relative to the root
        section [rad] (the angle between the two y directors projected on the plane
        normal to the root tangent; continuous within +-pi)."""
        qb = np.asarray(qb, float)
        t = qb[3:6] / np.linalg.norm(qb[3:6])
        tip = self.n_coords - 12
        y0, y1 = qb[6:9], qb[tip + 6:tip + 9]
        y0, y1 = y0 - (y0 @ t) * t, y1 - (y1 @ t) * t
        return math.atan2(float(np.cross(y0, y1) @ t), float(y0 @ y1))

    def __repr__(self):
        return (f"ANCFBeam3D({self.name!r}, L={self.length:g} m, N={self.n_elements}, "
                f"ea={self.ea:g}, ei_xy={self.ei_xy:g}, ei_xz={self.ei_xz:g}, gj={self.gj:g})")


class CableState(HermiteLineState):
    """Kinematics of an ANCF cable or beam in one state: ``point(s)`` and ``slope(s)`` ->
    (value, rate, J (3, n_coords), quad (3,)), value'' = J e'' + quad.  Both r and r' are
    linear in e, so J is the shape-function matrix and quad = 0."""

    __slots__ = ()

    def point(self, s):
        i0, s0, _, _, J, _ = self.body.interp(s)
        r, rd = self._along(i0, s0)
        return r, rd, J, np.zeros(3)

    def slope(self, s):
        i0, _, s1, _, _, Js = self.body.interp(s)
        a, ad = self._along(i0, s1)
        return a, ad, Js, np.zeros(3)

    def director(self, s, axis: str):
        """The beam's section axis ``"y"`` (r_y) or ``"z"`` (r_z) at s, interpolated
        linearly: (d, d', J, quad = 0)."""
        body = self.body
        if body.node_size < 12 or axis not in ("y", "z"):
            raise ParameterError(f"{body.kind} {body.name!r}: director {axis!r}: accepted "
                                 "'y' or 'z' of an ANCF beam")
        i, xi = body.locate(s)
        offset = 6 if axis == "y" else 9
        cols = body.node_size * i + offset + np.array([0, 1, 2])
        d = (1.0 - xi) * self.qb[cols] + xi * self.qb[cols + 12]
        dd = (1.0 - xi) * self.vb[cols] + xi * self.vb[cols + 12]
        J = np.zeros((3, body.n_coords))
        J[:, cols] = (1.0 - xi) * np.eye(3)
        J[:, cols + 12] = xi * np.eye(3)
        return d, dd, J, np.zeros(3)

    def vector(self, s, a):
        """The section direction a[0] r_x + a[1] r_y + a[2] r_z at s (``a`` from the
        beam's :meth:`ANCFBeam3D.local_direction`): (value, rate, J, quad = 0), linear in
        the coordinates as r_x and the directors are.  Only a beam has the directors: a
        cable has no frame about its axis."""
        a = np.asarray(a, float)
        x, xd, J, _ = self.slope(s)
        n, nd, J = a[0] * x, a[0] * xd, a[0] * J
        for k, axis in ((1, "y"), (2, "z")):
            d, dd, Jd, _ = self.director(s, axis)
            n, nd, J = n + a[k] * d, nd + a[k] * dd, J + a[k] * Jd
        return n, nd, J, np.zeros(3)

    def angle(self, location=None):
        raise ParameterError(f"{self.body.kind} {self.body.name!r}: a spatial body has no "
                             "planar angle; use slope(s)")


# -- single-body analyses with held coordinates ------------------------------------------------
class DeadPointLoad:
    """A force of fixed direction and size [N] at the arc length (or marker) ``at`` of a
    body; ``force`` has the body's dimension (2 or 3)."""

    def __init__(self, body: BodyBase, at, force):
        self.body = body
        self.at = body.markers[at] if isinstance(at, str) else body.check_location(
            f"load on {body.name}", at)
        self.force = np.asarray(force, float)
        if not np.all(np.isfinite(self.force)):
            raise ParameterError(f"load on {body.name!r}: force = {force!r} must be finite [N]")

    def forces(self, qb):
        J = self.body.state(qb, None).point(self.at)[2]
        return J.T @ self.force

    def stiffness(self, qb):
        """-d(forces)/dq: zero (the point is linear in the coordinates)."""
        return np.zeros((qb.size, qb.size))

    def work(self, qb):
        return float(self.force @ self.body.state(qb, None).point(self.at)[0])


class ConservativeMoment:
    """A moment of size ``moment`` [N m] about the fixed unit axis ``axis`` at the arc
    length (or marker) ``at`` of an ANCF cable or beam: the potential -M theta, with
    theta the angle about ``axis`` of a body vector's projection on the plane normal to
    it, measured from its initial direction (continuous within +-pi).  The vector is the
    slope (``vector="slope"``: a bending moment, as a dead end moment on a beam's end) or
    a beam's section axis (``"y"``, ``"z"``: a torque about the beam's axis)."""

    def __init__(self, body: _HermiteLine, at, moment: float, axis, vector: str = "slope"):
        self.body = body
        self.at = body.markers[at] if isinstance(at, str) else body.check_location(
            f"moment on {body.name}", at)
        axis = np.asarray(axis, float)
        if axis.shape != (3,) or not np.all(np.isfinite(axis)) or not np.linalg.norm(axis) > 0:
            raise ParameterError(f"moment on {body.name!r}: axis = {axis!r}: accepted a "
                                 "finite non-zero 3-vector")
        self.axis = axis / np.linalg.norm(axis)
        self.moment = float(moment)
        self.vector = vector
        q0, _ = body.initial_coordinates()
        a0 = self._vector(body.state(q0, None))[0]
        a0 = a0 - (a0 @ self.axis) * self.axis
        self.reference = a0 / np.linalg.norm(a0)

    def _vector(self, state):
        if self.vector == "slope":
            return state.slope(self.at)
        return state.director(self.at, self.vector)

    def _projected(self, qb):
        a, _, Js, _ = self._vector(self.body.state(qb, None))
        n = self.axis
        ap = a - (a @ n) * n
        return ap, Js

    def angle(self, qb) -> float:
        """theta [rad]."""
        ap, _ = self._projected(qb)
        t = self.reference
        return math.atan2(float(np.cross(t, ap) @ self.axis), float(t @ ap))

    def forces(self, qb):
        ap, Js = self._projected(qb)
        gp = ap @ ap
        return self.moment * (Js.T @ (np.cross(self.axis, ap) / gp))

    def stiffness(self, qb):
        """-d(forces)/dq [N m]."""
        ap, Js = self._projected(qb)
        n = self.axis
        gp = ap @ ap
        w = np.cross(n, ap)
        P = np.eye(3) - np.outer(n, n)
        Sn = np.array([[0.0, -n[2], n[1]], [n[2], 0.0, -n[0]], [-n[1], n[0], 0.0]])
        d = (Sn @ P) / gp - 2.0 * np.outer(w, ap) / gp**2
        return -self.moment * (Js.T @ d @ Js)

    def work(self, qb):
        return self.moment * self.angle(qb)


class HeldCoordinates(ConstrainedProblem):
    """One flexible body with some coordinates held, as an unconstrained problem in the
    free coordinates z: q = q_held + T z (T has orthonormal columns).

    ``hold`` at the root (coordinates of node 0; the body's nodes carry a position and a
    slope of its dimension d, as :class:`ANCFCable` and the planar ANCF beam):

    * ``"pin"``: r(0) held, the slope free;
    * ``"clamp"``: r(0) held and r'(0) kept along its initial direction, its length
      (the root's stretch) free -- as the planar engine's Weld on an ANCF beam; a
      beam's section axes r_y(0), r_z(0) held;
    * ``"fixed"``: every coordinate of the root node held;
    * or an explicit list of held coordinate indices.

    ``loads`` are :class:`DeadPointLoad` / :class:`ConservativeMoment` objects; they and
    gravity [m/s^2, the body's dimension] are scaled by :attr:`load_factor` (1; the load
    stepping of :func:`static_deflection` changes it).
    It is a :class:`~mbdcore.dae.problem.ConstrainedProblem` (m = 0), so
    :func:`mbdcore.dae.simulate` integrates it with any method.
    """

    def __init__(self, body: BodyBase, hold="clamp", gravity=None, loads=()):
        self.body = body
        q0, v0 = body.initial_coordinates()
        dim = int(np.asarray(body.tangent0).size)
        node = getattr(body, "node_size", 2 * dim)
        n_full = q0.size
        held = np.zeros(n_full, bool)
        extra = None
        if isinstance(hold, str):
            if hold not in ("pin", "clamp", "fixed"):
                raise ParameterError(f"hold = {hold!r}: accepted 'pin', 'clamp', 'fixed' or "
                                     "a list of coordinate indices")
            held[:dim] = True
            if hold in ("clamp", "fixed"):
                held[dim:node] = True        # the slope and, on a beam, the section axes
            if hold == "clamp":
                extra = np.zeros(n_full)
                extra[dim:2 * dim] = body.tangent0
        else:
            idx = np.asarray(hold, int)
            if idx.size and (idx.min() < 0 or idx.max() >= n_full):
                raise ParameterError(f"hold = {hold!r}: indices must be in 0 .. {n_full - 1}")
            held[idx] = True
        free = np.flatnonzero(~held)
        T = np.zeros((n_full, free.size + (extra is not None)))
        T[free, np.arange(free.size)] = 1.0
        if extra is not None:
            T[:, -1] = extra
        self.T = T
        self._T_sparse = scipy.sparse.csr_matrix(T)
        self.q_held = q0 - T @ (T.T @ q0)
        self.n = T.shape[1]
        self.m = 0
        self.gravity = np.zeros(dim) if gravity is None else np.asarray(gravity, float)
        self.loads = list(loads)
        self.load_factor = 1.0
        self._z0 = T.T @ q0
        self._w0 = T.T @ v0
        self._mass = (self._T_sparse.T @ body.mass_matrix_sparse() @ self._T_sparse).toarray()

    def full(self, z) -> np.ndarray:
        """The body's coordinates q of the free coordinates z."""
        return self.q_held + self.T @ np.asarray(z, float)

    def full_rates(self, w) -> np.ndarray:
        return self.T @ np.asarray(w, float)

    def initial_state(self):
        return self._z0.copy(), self._w0.copy()

    def mass_matrix(self, q):
        return self._mass

    def forces(self, t, q, v):
        qb, vb = self.full(q), self.full_rates(v)
        f = self.body.applied_forces(t, qb, vb, self.load_factor * self.gravity)
        for load in self.loads:
            f = f + self.load_factor * load.forces(qb)
        return self.T.T @ f

    def force_jacobians(self, t, q, v):
        qb, vb = self.full(q), self.full_rates(v)
        kq, kv = self.body.force_jacobians_sparse(t, qb, vb, self.gravity)
        Ts = self._T_sparse
        kq = (Ts.T @ kq @ Ts).toarray()
        for load in self.loads:
            kq -= self.load_factor * (self.T.T @ load.stiffness(qb) @ self.T)
        return kq, (Ts.T @ kv @ Ts).toarray()

    def energy(self, t, q, v):
        qb, vb = self.full(q), self.full_rates(v)
        work = sum(self.load_factor * load.work(qb) for load in self.loads)
        return (self.body.kinetic_energy(qb, vb)
                + self.body.potential_energy(qb, self.load_factor * self.gravity) - work)


class CableEquilibriumError(RuntimeError):
    """Newton's method did not reach a static equilibrium of a held body."""


@dataclass
class StaticDeflection:
    """Result of :func:`static_deflection`: ``q`` the body's coordinates [m, -], ``z``
    the free ones, ``load_steps`` the load factors reached (ending with 1.0),
    ``iterations`` the Newton iterations in all."""

    q: np.ndarray
    z: np.ndarray
    load_steps: list = field(default_factory=list)
    iterations: int = 0


def static_deflection(problem: HeldCoordinates, steps: int = 1, tol: float = 1e-10,
                      max_iterations: int = 30, max_halvings: int = 10) -> StaticDeflection:
    """Static equilibrium F(z) + mu P(z) = 0 of a :class:`HeldCoordinates` problem (F the
    internal forces, P the loads and gravity) by Newton's method with the exact tangent,
    from the body's initial shape, the loads applied in ``steps`` equal increments of mu
    up to 1; a step that does not converge is halved (at most ``max_halvings`` times).
    Converged when a Newton correction is below ``tol`` times the largest coordinate
    (at least 1 m): with the exact tangent the next one would be of order tol^2.  (A
    slack cable of little bending stiffness far from its equilibrium is a form-finding
    problem this plain Newton solves only slowly, by tiny load steps.)"""
    z, _ = problem.initial_state()
    zero = np.zeros(problem.n)
    reached, done, mu, iterations = [], 0.0, 0.0, 0
    increment = 1.0 / steps
    halvings = 0
    while done < 1.0:
        target = min(1.0, done + increment)
        problem.load_factor = target
        trial = z.copy()
        ok = False
        for _ in range(max_iterations):
            iterations += 1
            r = problem.forces(0.0, trial, zero)
            kq, _ = problem.force_jacobians(0.0, trial, zero)
            if not np.all(np.isfinite(r)) or not np.all(np.isfinite(kq)):
                break
            dz = np.linalg.solve(kq, -r)
            trial = trial + dz
            if np.abs(dz).max() <= tol * max(1.0, np.abs(trial).max()):
                ok = True
                break
        if ok:
            z, done, mu = trial, target, target
            reached.append(target)
            continue
        halvings += 1
        if halvings > max_halvings:
            problem.load_factor = mu
            raise CableEquilibriumError(f"no equilibrium at load factor {target:g} after "
                                        f"{max_halvings} halvings of the load step")
        increment *= 0.5
    problem.load_factor = 1.0
    return StaticDeflection(problem.full(z), z, reached, iterations)


def vibration_modes(problem: HeldCoordinates, z=None, n: int | None = None):
    """Natural frequencies [Hz] and mode shapes (body coordinates, mass-normalised) of a
    :class:`HeldCoordinates` problem linearised at the free coordinates z (default the
    initial state), loads at their current factor: (K - omega^2 M) x = 0 with the exact
    tangent K = -dF/dz (pretension and load stiffness included)."""
    z = problem.initial_state()[0] if z is None else np.asarray(z, float)
    kq, _ = problem.force_jacobians(0.0, z, np.zeros(problem.n))
    K = -0.5 * (kq + kq.T)
    M = problem.mass_matrix(z)
    count = problem.n if n is None else min(n, problem.n)
    try:
        # M x = (1/omega^2) K x: the low modes are the well-conditioned end of this
        # problem (a beam's stiff penalties on light directors put omega^2 up to 1e13,
        # which would cost K x = omega^2 M x six digits in its lowest modes)
        mu, x = scipy.linalg.eigh(M, K, subset_by_index=[problem.n - count, problem.n - 1])
        lam, x = 1.0 / mu[::-1], x[:, ::-1]
        x = x / np.sqrt(np.einsum("ik,ij,jk->k", x, M, x))
    except np.linalg.LinAlgError:           # K not positive definite: free or unstable
        lam, x = scipy.linalg.eigh(K, M, subset_by_index=[0, count - 1])
    omega = np.sign(lam) * np.sqrt(np.abs(lam))
    return omega / (2.0 * math.pi), problem.T @ x
