"""The reflector's front net form-found to a paraboloid (issue 24 item 2; docs/ring_truss.md,
"The paraboloid net").

An AstroMesh-class reflector (Thomson 1999): the front net's free nodes are placed on the
paraboloid z = z_v + (x^2 + y^2)/(4 F) through the truss's top joint blocks, the rear
net's on a paraboloid opening the other way through the bottom ones (the mirror image, or
shallower), every free front node tied to its rear twin straight below it (ties along the
axis).  With the geometry fixed, node equilibrium sum_e q_e (x_j - x_i) = 0 is linear in
the force densities q; :func:`member_force_densities` chooses one density per member:
the equilibrium exactly (the null space of the equilibrium matrix), the nets' tensions
as uniform as that allows (least squares towards the pretension level) and every
tension above a floor (a bound-constrained step when the least-squares one falls
below).  The force-density method with these densities then returns the designed
nodes (:func:`mbdcore.models.cable_net.force_density_form`).  The flat facets between the
front net's cables miss the paraboloid: :func:`facet_surface_error` integrates that
error exactly, :func:`equilateral_facet_error` is its closed form for an equilateral
facet (Agrawal, Anderson & Card 1981).  :func:`plot_net_form` and
:func:`plot_net_tensions` draw a form.

The topology (node numbering, members) is :mod:`mbdcore.models.cable_net`'s, which
calls this module from :func:`~mbdcore.models.cable_net.add_cable_net`; here it is
read through ``topology.node(net, ring, k)``, ``members`` and ``fixed``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize

from mbdcore.blocks import Parameter, ParameterError
from mbdcore.timeseries import axis_label

__all__ = ["PARABOLOID_PARAMETERS", "Paraboloid", "paraboloid_dishes", "paraboloid_nodes",
           "equilibrium_matrix", "member_force_densities", "front_facets", "FacetError",
           "facet_surface_error", "equilateral_facet_error", "plot_net_form",
           "plot_net_tensions"]

#: Parameters of the paraboloid net (with the cable parameters and ``net_rings`` of
#: :data:`mbdcore.models.cable_net.NET_PARAMETERS`, whose force densities it replaces).
PARABOLOID_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("focal_length", 6.0, "m", "focal length F of the front net's paraboloid "
              "z = z_v + r^2/(4 F) through the top joint blocks (the dishes of front and "
              "rear net must not meet: F > (D/2)^2 (1 + 1/rear_focal_ratio)/(4 H))",
              min=0.0, exclusive_min=True),
    Parameter("rear_focal_ratio", 1.0, "", "focal length of the rear net's paraboloid "
              "over the front's (1: the mirror image; larger: a shallower rear net)",
              min=1.0, max=1.0e3),
    Parameter("net_pretension", 10.0, "N", "pretension level: the tension the radial and "
              "hoop cables of both nets are made as close to as equilibrium allows", min=0.0,
              exclusive_min=True),
    Parameter("min_tension_ratio", 0.05, "", "smallest tension of any cable (ties "
              "included) over net_pretension: a floor that keeps every cable taut",
              min=0.0, max=1.0, exclusive_min=True),
)


@dataclass(frozen=True)
class Paraboloid:
    """The surface z = vertex_z + opening (x^2 + y^2)/(4 F), (x, y) about ``centre``
    [m]; ``opening`` +1 opens upwards (the front net), -1 downwards (the rear net)."""

    centre: np.ndarray
    vertex_z: float
    focal_length: float
    opening: float

    def height(self, xy) -> np.ndarray:
        """z [m] of the surface above the points ``xy`` (..., 2) [m]."""
        d = np.asarray(xy, float) - self.centre
        return self.vertex_z + self.opening * np.sum(d * d, axis=-1) / (4.0 * self.focal_length)


def paraboloid_dishes(front_rim, rear_rim, focal_length: float,
                      rear_focal_ratio: float = 1.0) -> tuple[Paraboloid, Paraboloid]:
    """The front and rear paraboloids through the rims (N, 3) [m] (the top and bottom
    joint blocks of the deployed truss): axis through the rim's centroid, the front
    opening upwards with focal length F through the top rim, the rear downwards with
    ``rear_focal_ratio`` F through the bottom one.  ParameterError naming
    ``focal_length`` when the two dishes (depths (D/2)^2/(4 F) each) would meet."""
    front_rim, rear_rim = np.asarray(front_rim, float), np.asarray(rear_rim, float)
    centre = front_rim[:, :2].mean(axis=0)
    radius = float(np.linalg.norm(front_rim[:, :2] - centre, axis=1).mean())
    z_front, z_rear = float(front_rim[:, 2].mean()), float(rear_rim[:, 2].mean())
    height = z_front - z_rear
    smallest = radius ** 2 * (1.0 + 1.0 / rear_focal_ratio) / (4.0 * height)
    if not (math.isfinite(focal_length) and focal_length > smallest):
        raise ParameterError(
            f"parameter 'focal_length' = {focal_length!r} is invalid: accepted values are "
            f"> {smallest:.6g} m for this truss (aperture {2 * radius:.6g} m, height "
            f"{height:.6g} m, rear_focal_ratio {rear_focal_ratio:g}): the front and rear "
            "dishes must not meet")
    rear_f = rear_focal_ratio * focal_length
    front = Paraboloid(centre, z_front - radius ** 2 / (4.0 * focal_length), focal_length, 1.0)
    rear = Paraboloid(centre, z_rear + radius ** 2 / (4.0 * rear_f), rear_f, -1.0)
    return front, rear


def paraboloid_nodes(topology, front_rim, rear_rim, dishes) -> np.ndarray:
    """The designed node positions [m] (n, 3) of the spoke-and-ring ``topology``: the rim
    nodes at the joint blocks; ring r of R at the radius (1 - r/(R + 1)) of the rim's on
    each rim node's azimuth (the planar projection of the spoke-and-ring layout: equal
    radial steps), the centre on the axis, each at the height of its net's paraboloid
    (``dishes``, front and rear), so every tie is along the axis."""
    rims = (np.asarray(front_rim, float), np.asarray(rear_rim, float))
    positions = np.empty((topology.n_nodes, 3))
    R = topology.rings
    for net, (rim, dish) in enumerate(zip(rims, dishes)):
        spoke = rim[:, :2] - dish.centre
        for ring in range(R + 1):
            xy = dish.centre + (1.0 - ring / (R + 1)) * spoke
            at = [topology.node(net, ring, k) for k in range(topology.n_bays)]
            positions[at, :2] = xy
            positions[at, 2] = dish.height(xy)
        positions[topology.node(net, "centre"), :2] = dish.centre
        positions[topology.node(net, "centre"), 2] = dish.vertex_z
        positions[[topology.node(net, 0, k) for k in range(topology.n_bays)]] = rim
    return positions


def equilibrium_matrix(topology, positions) -> np.ndarray:
    """A (3 n_free, m): column e holds member e's direction vectors x_j - x_i [m] at its
    free end nodes (with the sign towards the other end), so A q is the out-of-balance
    force [N] at every free node of densities q [N/m], x, y, z per node."""
    positions = np.asarray(positions, float)
    members = topology.members
    i, j = members[:, 0], members[:, 1]
    d = positions[j] - positions[i]
    m, n = members.shape[0], positions.shape[0]
    A = np.zeros((n, 3, m))
    A[i, :, np.arange(m)] += d
    A[j, :, np.arange(m)] -= d
    return A[~topology.fixed].reshape(-1, m)


def member_force_densities(topology, positions, is_tie, pretension: float,
                           min_tension_ratio: float) -> np.ndarray:
    """One force density per member [N/m] that holds every free node of ``positions`` in
    equilibrium: q = Z y with Z an orthonormal basis of the null space of
    :func:`equilibrium_matrix` (so A q = 0 to rounding whatever y is), y the least-squares
    solution of T_e = q_e L_e = ``pretension`` over the nets' members (not the ties,
    whose tensions follow from the nets').  When a tension of that solution falls below
    ``min_tension_ratio`` pretension (ties included), y is found again with the floor as
    constraints (SLSQP over y; its result scaled onto the floor where it ends a
    tolerance below it).  A floor is reached by scaling whenever some
    equilibrium has every cable taut (A q = 0 is homogeneous in q: a high floor raises
    the tensions above the pretension level); ParameterError naming
    ``min_tension_ratio`` when SLSQP finds none (a geometry without such a
    self-stress)."""
    members = topology.members
    length = np.linalg.norm(positions[members[:, 1]] - positions[members[:, 0]], axis=1)
    A = equilibrium_matrix(topology, positions)
    Z = scipy.linalg.null_space(A)
    if Z.shape[1] == 0:
        raise ParameterError("net_rings: this layout has no self-equilibrated force "
                             "densities (the equilibrium matrix has full column rank)")
    net = ~np.asarray(is_tie, bool)
    B = Z[net] * (length[net] / pretension)[:, None]
    y, *_ = np.linalg.lstsq(B, np.ones(int(net.sum())), rcond=None)
    tension_basis = Z * length[:, None]
    floor = min_tension_ratio * pretension
    if (tension_basis @ y).min() < floor:
        y = _floored_solution(B, tension_basis, floor, y)
        least = (tension_basis @ y).min()
        if least > 0.0:
            # SLSQP meets its constraints to its tolerance, not exactly: a solution a
            # hair below the floor is scaled onto it (the equilibrium is homogeneous)
            y = y * max(1.0, floor / least)
        else:
            raise ParameterError(
                f"parameter 'min_tension_ratio' = {min_tension_ratio!r}: no equilibrium of "
                f"this net with every tension above {floor:.6g} N was found (the least "
                f"tension reached is {(tension_basis @ y).min():.6g} N); accepted: a "
                "geometry with a self-stress of taut cables (another focal_length, "
                "rear_focal_ratio or net_rings)")
    return Z @ y


def _floored_solution(B, tension_basis, floor, y0) -> np.ndarray:
    """The least-squares y of :func:`member_force_densities` with every tension at least
    ``floor`` [N] (SLSQP; equilibrium is exact in y, so only the floor is iterated)."""
    ones = np.ones(B.shape[0])
    scale = floor
    result = scipy.optimize.minimize(
        lambda y: float(np.sum((B @ y - ones) ** 2)), y0,
        jac=lambda y: 2.0 * B.T @ (B @ y - ones), method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda y: (tension_basis @ y - floor) / scale,
                      "jac": lambda y: tension_basis / scale}],
        options={"ftol": 1e-14, "maxiter": 500})
    return result.x


def front_facets(topology) -> np.ndarray:
    """The front net's facets as node triangles (n_facets, 3): each quadrilateral cell
    between two spokes and two rings (the rim's cells closed by the truss's upper bars)
    split along a diagonal, and the triangles at the centre."""
    N, R = topology.n_bays, topology.rings
    node = topology.node
    facets = []
    for ring in range(R):
        for k in range(N):
            a, b = node(0, ring, k), node(0, ring, k + 1)
            c, d = node(0, ring + 1, k + 1), node(0, ring + 1, k)
            facets += [(a, b, c), (a, c, d)]
    facets += [(node(0, R, k), node(0, R, k + 1), node(0, "centre")) for k in range(N)]
    return np.array(facets)


#: Dunavant's 6-point rule on the triangle, exact for polynomials of degree 4 (the
#: squared error of a flat facet over a paraboloid): barycentric points and weights
_A, _B = 0.445948490915965, 0.091576213509771
_RULE_POINTS = np.array([[_A, _A, 1 - 2 * _A], [_A, 1 - 2 * _A, _A], [1 - 2 * _A, _A, _A],
                         [_B, _B, 1 - 2 * _B], [_B, 1 - 2 * _B, _B], [1 - 2 * _B, _B, _B]])
_RULE_WEIGHTS = np.array([0.223381589678011] * 3 + [0.109951743655322] * 3)


@dataclass
class FacetError:
    """The flat facets' axial distance e = z_facet - z_paraboloid [m], weighted by the
    facets' projected (aperture) area: ``rms`` sqrt(<e^2>) to the design paraboloid,
    ``mean`` <e>, ``best_fit_rms`` sqrt(<e^2> - <e>^2) (to the paraboloid moved along
    its axis by the mean, the refocused one), per facet ``facet_rms``, ``area`` [m^2]
    (projected)."""

    rms: float
    mean: float
    best_fit_rms: float
    facet_rms: np.ndarray
    area: np.ndarray


def facet_surface_error(positions, facets, dish: Paraboloid) -> FacetError:
    """The error of the flat facets (triangles of node indices into ``positions`` [m])
    against ``dish``, integrated exactly over each facet's projection (the error is
    quadratic in x, y: the facet's plane minus the paraboloid; its square quartic,
    which Dunavant's degree-4 rule integrates exactly)."""
    corners = np.asarray(positions, float)[np.asarray(facets)]        # (f, 3, 3)
    points = np.einsum("pk,fkc->fpc", _RULE_POINTS, corners)           # (f, 6, 3)
    error = points[..., 2] - dish.height(points[..., :2])              # plane - surface
    u, v = corners[:, 1, :2] - corners[:, 0, :2], corners[:, 2, :2] - corners[:, 0, :2]
    area = 0.5 * np.abs(u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0])
    mean_sq = error ** 2 @ _RULE_WEIGHTS
    mean = error @ _RULE_WEIGHTS
    total = area.sum()
    rms2, avg = float(area @ mean_sq / total), float(area @ mean / total)
    return FacetError(math.sqrt(rms2), avg, math.sqrt(max(rms2 - avg ** 2, 0.0)),
                      np.sqrt(mean_sq), area)


def equilateral_facet_error(side, focal_length) -> tuple[float, float, float]:
    """(mean, rms, best-fit rms) [m] of the axial error of a flat equilateral facet of
    side L [m] with its corners on a paraboloid of focal length F [m]: the plane through
    three points of z = (x^2 + y^2)/(4 F) meets it over the circle through their
    projections, so e = (rho^2 - d^2)/(4 F) exactly (rho the circumradius, d the
    distance from its centre), anywhere on the paraboloid; over the equilateral
    triangle <d^2> = L^2/12 and <d^4> = L^4/90 give <e> = L^2/(16 F),
    sqrt(<e^2>) = L^2/(4 sqrt(15) F) and sqrt(<e^2> - <e>^2) = L^2/(16 sqrt(15) F)
    (= L^2/(8 sqrt(15) R) with the vertex's radius of curvature R = 2 F)."""
    s2f = np.asarray(side, float) ** 2 / np.asarray(focal_length, float)
    return s2f / 16.0, s2f / (4.0 * math.sqrt(15.0)), s2f / (16.0 * math.sqrt(15.0))


def _kind_colours(kinds) -> dict:
    return {kind: colour for kind, colour in zip(kinds, ("C0", "C1", "C2", "C3"))}


def plot_net_form(form, ax=None, cmap: str = "viridis"):
    """Draw a :class:`~mbdcore.models.cable_net.NetForm` on a matplotlib 3D axes (made on
    a new Agg figure when ``ax`` is None): every member a line coloured by its tension,
    a colour bar in N, axes in m (the height stretched to at least a third of the
    aperture where the dish is shallower).  Returns the axes."""
    # matplotlib is imported when a picture is asked for, not with the model
    from matplotlib import colormaps
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator
    if ax is None:
        fig = Figure(figsize=(7, 6))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot(projection="3d")
    norm = Normalize(float(form.tension.min()), float(form.tension.max()))
    colours = colormaps[cmap]
    for (i, j), tension in zip(form.topology.members, form.tension):
        a, b = form.positions[i], form.positions[j]
        ax.plot([a[0], b[0]], [a[1], b[1]], [a[2], b[2]], color=colours(norm(tension)), lw=1.4)
    ax.set_xlabel(axis_label("x", "m"))
    ax.set_ylabel(axis_label("y", "m"))
    ax.set_zlabel(axis_label("z", "m"))
    # a dish a few per cent of the aperture deep would be a flat line at true
    # proportions: the height is drawn at least a third of the aperture
    span = np.ptp(form.positions, axis=0)
    ax.set_box_aspect((span[0], span[1], max(span[2], span[:2].max() / 3.0)), zoom=0.8)
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_major_locator(MaxNLocator(5))
    mappable = ScalarMappable(norm=norm, cmap=colours)
    ax.figure.colorbar(mappable, ax=ax, shrink=0.7, label=axis_label("tension", "N"))
    return ax


def plot_net_tensions(form, kinds, ax=None):
    """The tension [N] of every member of ``form`` against its number, one colour per
    member kind (``kinds``: the kind names in the order of ``form.topology.kind``'s
    codes), on a new Agg figure when ``ax`` is None.  Returns the axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    if ax is None:
        fig = Figure(figsize=(7, 3.5))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    colours = _kind_colours(kinds)
    index = np.arange(form.tension.size)
    for code, kind in enumerate(kinds):
        at = form.topology.kind == code
        ax.bar(index[at], form.tension[at], color=colours[kind], label=kind)
    ax.set_xlabel("member")
    ax.set_ylabel(axis_label("tension", "N"))
    ax.legend()
    return ax
