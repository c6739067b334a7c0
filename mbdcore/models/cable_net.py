"""The pretensioned cable net of the ring truss (issue 14 item 5; docs/ring_truss.md,
"Cable net").

Front and rear spoke-and-ring nets on the top and bottom joint blocks of the deployed truss
with tension ties between them, form-found by the force-density method
(:func:`force_density_form`, Schek 1974); every member a tension-only ANCF cable on ball
joints, pretensioned by its stress-free length (:func:`stress_free_length`); on a folded
truss the net starts slack (:func:`folded_net_nodes`); :func:`net_static_equilibrium`
checks the ANCF net against the form; :meth:`CableNet.tensions` gives the cable tensions
[N].  The truss it hangs on is :mod:`mbdcore.models.ring_truss`.

With ``focal_length`` given, :func:`add_cable_net` makes the reflector's net instead: the
front net on a paraboloid, the rear net on a mirror or shallower one, the ties along the
axis, one force density per member (:func:`paraboloid_form`, the design in
:mod:`mbdcore.models.reflector_net`); :meth:`CableNet.surface_error` is then the front
net's flat-facet error to its paraboloid.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from mbdcore.blocks import Parameter, ParameterError
from mbdcore.models.ring_truss import (
    MAX_CABLE_ELEMENTS,
    MAX_NET_RINGS,
    RingTruss,
    check_build_size,
    checked_parameters,
)
from mbdcore.models.reflector_net import (
    PARABOLOID_PARAMETERS,
    FacetError,
    Paraboloid,
    facet_surface_error,
    front_facets,
    member_force_densities,
    paraboloid_dishes,
    paraboloid_nodes,
)
from mbdcore.spatial.ancf import ANCFCable, CableEquilibriumError
from mbdcore.spatial.joints import Spherical

__all__ = ["NET_PARAMETERS", "NET_MEMBER_KINDS", "cable_net_parameters",
           "PARABOLOID_NET_PARAMETERS", "paraboloid_net_parameters", "paraboloid_form",
           "NetTopology", "cable_net_topology", "NetForm", "node_force_balance",
           "force_density_form", "stress_free_length", "CableNet", "folded_net_nodes",
           "SLACK_MARGIN", "SLACK_SWEEPS",
           "add_cable_net", "NetEquilibrium", "net_static_equilibrium"]


#: Parameters of the cable net (validated by :func:`cable_net_parameters`).  Cable
#: properties: a 1 mm Kevlar-49 cord taken as a solid round rod (E = 112 GPa, 1440
#: kg/m^3; a braided cord bends far more easily, so EI is an upper bound).
NET_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("net_rings", 2, "", "rings of free nodes in each net between its rim (the "
              "joint blocks) and its centre node", min=1, max=MAX_NET_RINGS),
    Parameter("radial_force_density", 20.0, "N/m", "force density q = T/L of the radial "
              "cables of both nets", min=0.0, exclusive_min=True),
    Parameter("hoop_force_density", 4.0, "N/m", "force density of the hoop (ring) cables "
              "of both nets", min=0.0, exclusive_min=True),
    Parameter("tie_force_density", 2.0, "N/m", "force density of the tension ties between "
              "front and rear net", min=0.0, exclusive_min=True),
    Parameter("cable_elements", 2, "", "ANCF cable elements per cable", min=1,
              max=MAX_CABLE_ELEMENTS),
    Parameter("cable_ea", 8.8e4, "N", "axial stiffness EA of every cable", min=0.0,
              exclusive_min=True),
    Parameter("cable_ei", 5.5e-3, "N.m2", "bending stiffness EI of every cable", min=0.0,
              exclusive_min=True),
    Parameter("cable_rho_a", 1.13e-3, "kg/m", "cable mass per unit stress-free length",
              min=0.0, exclusive_min=True),
    Parameter("cable_damping", 0.0, "s", "Kelvin-Voigt damping time of the cables",
              min=0.0),
)

#: member kinds of the net, in the order of :attr:`NetForm.kind` codes
NET_MEMBER_KINDS = ("radial", "hoop", "tie")


#: Parameters of the paraboloid net (validated by :func:`paraboloid_net_parameters`):
#: those of :data:`NET_PARAMETERS` but the force densities per kind, which the form
#: finding chooses per member, and :data:`~mbdcore.models.reflector_net.PARABOLOID_PARAMETERS`
PARABOLOID_NET_PARAMETERS: tuple[Parameter, ...] = tuple(
    p for p in NET_PARAMETERS if not p.name.endswith("_force_density")) + PARABOLOID_PARAMETERS


def cable_net_parameters(**params) -> dict:
    """The checked net parameters (defaults of :data:`NET_PARAMETERS` filled in):
    ParameterError naming the parameter and its accepted range otherwise."""
    return checked_parameters(NET_PARAMETERS, "cable net", params)


def paraboloid_net_parameters(**params) -> dict:
    """The checked parameters of the paraboloid net (defaults of
    :data:`PARABOLOID_NET_PARAMETERS` filled in; a flat net's force density is an
    unknown parameter here): ParameterError naming the parameter otherwise."""
    return checked_parameters(PARABOLOID_NET_PARAMETERS, "paraboloid cable net", params)


@dataclass
class NetTopology:
    """Nodes and members of the two nets and their ties.

    Node numbering, per net (front first, then rear; ``per_net`` nodes each): the N rim
    nodes (fixed: the joint blocks), then ring r = 1 ... R (outermost first) of N nodes,
    then the centre node.  Members (i, j) with ``kind`` codes into
    :data:`NET_MEMBER_KINDS`: radials from the rim through the rings to the centre
    (N (R + 1) per net), hoops around each ring (N R per net), ties from each free front
    node to its rear twin (N R + 1)."""

    n_bays: int
    rings: int
    members: np.ndarray          # (m, 2) node indices
    kind: np.ndarray             # (m,) codes into NET_MEMBER_KINDS
    fixed: np.ndarray            # (n,) True at the rim nodes
    labels: list                 # (n,) node names

    @property
    def per_net(self) -> int:
        return self.n_bays * (self.rings + 1) + 1

    @property
    def n_nodes(self) -> int:
        return 2 * self.per_net

    def node(self, net: int, ring, k: int = 0) -> int:
        """Index of node k (modulo N) of ring ``ring`` (0 the rim, or ``"centre"``) of
        net ``net`` (0 front, 1 rear)."""
        return _node_index(self.n_bays, self.rings, net, ring, k)


def _node_index(n_bays: int, rings: int, net: int, ring, k: int = 0) -> int:
    """The node numbering of :class:`NetTopology` (its ``node``)."""
    per_net = n_bays * (rings + 1) + 1
    return net * per_net + (n_bays * (rings + 1) if ring == "centre"
                            else ring * n_bays + k % n_bays)


def cable_net_topology(n_bays: int, rings: int) -> NetTopology:
    """The spoke-and-ring topology of the front and rear nets with ties
    (:class:`NetTopology`)."""
    N, R = int(n_bays), int(rings)
    per_net = N * (R + 1) + 1
    members, kind, labels = [], [], []

    def node(net, ring, k=0):
        return _node_index(N, R, net, ring, k)

    for net, side in enumerate(("front", "rear")):
        labels += [f"{side}_rim{k}" for k in range(N)]
        labels += [f"{side}_ring{r}_{k}" for r in range(1, R + 1) for k in range(N)]
        labels.append(f"{side}_centre")
        for k in range(N):
            for r in range(1, R + 1):
                members.append((node(net, r - 1, k), node(net, r, k)))
                kind.append(0)
            members.append((node(net, R, k), node(net, "centre")))
            kind.append(0)
        for r in range(1, R + 1):
            for k in range(N):
                members.append((node(net, r, k), node(net, r, k + 1)))
                kind.append(1)
    for r in range(1, R + 1):
        for k in range(N):
            members.append((node(0, r, k), node(1, r, k)))
            kind.append(2)
    members.append((node(0, "centre"), node(1, "centre")))
    kind.append(2)
    fixed = np.zeros(2 * per_net, bool)
    fixed[:N] = fixed[per_net:per_net + N] = True
    return NetTopology(N, R, np.array(members), np.array(kind), fixed, labels)


@dataclass
class NetForm:
    """A form-finding solution: node ``positions`` (n, 3) [m], per member its
    ``force_density`` q [N/m], ``length`` L [m] and ``tension`` T = q L [N]."""

    topology: NetTopology
    positions: np.ndarray
    force_density: np.ndarray
    length: np.ndarray
    tension: np.ndarray

    def residual(self) -> np.ndarray:
        """Out-of-balance force [N] at every free node (n_free, 3) of the tensions
        along the members at the positions: sum over members of T e (e the unit vector
        from the node along the member)."""
        return node_force_balance(self.positions, self.topology.members,
                                  self.tension)[~self.topology.fixed]


def node_force_balance(positions, members, tensions) -> np.ndarray:
    """Sum of the member forces T_e e_e [N] acting on every node (n, 3), e_e the unit
    vector from the node towards the member's other end."""
    positions = np.asarray(positions, float)
    i, j = members[:, 0], members[:, 1]
    d = positions[j] - positions[i]
    f = np.asarray(tensions, float)[:, None] * d / np.linalg.norm(d, axis=1)[:, None]
    out = np.zeros_like(positions)
    np.add.at(out, i, f)
    np.add.at(out, j, -f)
    return out


def force_density_form(topology: NetTopology, fixed_positions, force_density) -> NetForm:
    """Form finding by the force-density method (Schek 1974): with q_e = T_e / L_e given
    per member, the equilibrium sum_e q_e (x_j - x_i) = 0 at every free node i is linear
    in the free coordinates, C_f^T Q C_f x_f = -C_f^T Q C_x x_x (C the branch-node
    matrix, split into free and fixed columns, Q = diag q), the same matrix for x, y
    and z.  ``fixed_positions`` (n_fixed, 3) [m] in node order; ``force_density``
    (m,) [N/m], all positive (then the matrix is positive definite)."""
    members, fixed = topology.members, topology.fixed
    q = np.asarray(force_density, float)
    if q.shape != (members.shape[0],) or not np.all(q > 0.0) or not np.all(np.isfinite(q)):
        raise ParameterError(f"force_density: accepted {members.shape[0]} finite positive "
                             "values [N/m] (one per member)")
    m, n = members.shape[0], fixed.size
    rows = np.repeat(np.arange(m), 2)
    C = scipy.sparse.csr_matrix((np.tile([1.0, -1.0], m), (rows, members.ravel())),
                                shape=(m, n))
    Cf, Cx = C[:, ~fixed], C[:, fixed]
    Q = scipy.sparse.diags(q)
    D = (Cf.T @ Q @ Cf).tocsc()
    x_fixed = np.asarray(fixed_positions, float)
    if x_fixed.shape != (int(fixed.sum()), 3) or not np.all(np.isfinite(x_fixed)):
        raise ParameterError(f"fixed_positions: accepted a finite ({int(fixed.sum())}, 3) "
                             f"array [m] (the fixed nodes in order); got shape {x_fixed.shape}")
    positions = np.empty((n, 3))
    positions[fixed] = x_fixed
    positions[~fixed] = scipy.sparse.linalg.spsolve(D, -(Cf.T @ Q @ Cx) @ x_fixed)
    length = np.linalg.norm(positions[members[:, 1]] - positions[members[:, 0]], axis=1)
    return NetForm(topology, positions, q, length, q * length)


def paraboloid_form(topology: NetTopology, front_rim, rear_rim, **params
                    ) -> tuple[NetForm, tuple[Paraboloid, Paraboloid]]:
    """The reflector's form on the rims (N, 3) [m] (top and bottom joint blocks):
    the designed nodes on the front and rear paraboloids
    (:func:`~mbdcore.models.reflector_net.paraboloid_dishes`,
    :func:`~mbdcore.models.reflector_net.paraboloid_nodes`), one force density per
    member that holds them in equilibrium
    (:func:`~mbdcore.models.reflector_net.member_force_densities`), and the
    force-density solution of those densities (:func:`force_density_form`: it returns
    the designed nodes, to rounding).  ``params``: :data:`PARABOLOID_PARAMETERS`
    (checked).  Returns the form and the (front, rear) paraboloids."""
    p = checked_parameters(PARABOLOID_PARAMETERS, "paraboloid form", params)
    dishes = paraboloid_dishes(front_rim, rear_rim, p["focal_length"], p["rear_focal_ratio"])
    design = paraboloid_nodes(topology, front_rim, rear_rim, dishes)
    density = member_force_densities(topology, design,
                                     topology.kind == NET_MEMBER_KINDS.index("tie"),
                                     p["net_pretension"], p["min_tension_ratio"])
    form = force_density_form(topology, np.vstack([front_rim, rear_rim]), density)
    return form, dishes


def stress_free_length(length, tension, ea) -> np.ndarray:
    """Stress-free length L0 [m] of a straight ANCF cable of length L [m] carrying the
    axial force T [N]: with the cable's Green strain eps = (lam^2 - 1)/2, lam = L/L0,
    the force it transmits is N = EA eps lam, so lam solves lam^3 - lam - 2 T/EA = 0
    (one root > 1 for T > 0; Newton from 1 + T/EA converges monotonically)."""
    length, tension = np.asarray(length, float), np.asarray(tension, float)
    if not (np.all(np.isfinite(tension)) and np.all(tension >= 0.0)):
        raise ParameterError(f"stress_free_length: tension = {tension!r}: accepted values "
                             "are finite and >= 0 [N] (a cable carries no compression)")
    if not (np.all(np.isfinite(length)) and np.all(length > 0.0)):
        raise ParameterError(f"stress_free_length: length = {length!r}: accepted values "
                             "are finite and > 0 [m]")
    if not (math.isfinite(ea) and ea > 0.0):
        raise ParameterError(f"stress_free_length: ea = {ea!r}: accepted values are "
                             "finite and > 0 [N]")
    c = 2.0 * tension / ea
    lam = 1.0 + tension / ea
    for _ in range(50):
        step = (lam ** 3 - lam - c) / (3.0 * lam ** 2 - 1.0)
        lam = lam - step
        if np.all(np.abs(step) <= 1e-15 * lam):
            break
    return length / lam


class CableNet:
    """The pretensioned cable net of a :class:`RingTruss` (made by
    :func:`add_cable_net`): every member of ``form`` is a tension-only (slack)
    :class:`~mbdcore.spatial.ANCFCable` ``cable{e}`` (``cables``), its stress-free
    length chosen so that, straight between its form-found end nodes on the deployed
    truss, it carries the form's tension; it starts straight between its ``start``
    nodes (the form itself on a deployed truss, the folded rule of
    :func:`add_cable_net` on a folded one).  Cable ends meet at the net's nodes through
    :class:`~mbdcore.spatial.Spherical` joints (the first cable end at a node carries
    it, the others are joined to it) and the rim ends are on balls at the joint blocks
    (``vertical{k}.top`` for the front net, ``.bottom`` for the rear).  A reflector's
    net (made with ``focal_length``) has its (front, rear) paraboloids in ``dishes``
    (None for the flat net)."""

    def __init__(self, truss: RingTruss, params: dict, form: NetForm, cables: list,
                 node_ends: list, joints: list, start: np.ndarray,
                 dishes: tuple[Paraboloid, Paraboloid] | None = None):
        self.truss, self.params, self.form = truss, params, form
        self.cables, self.node_ends, self.joints = cables, node_ends, joints
        #: the nodes' initial positions [m] (n, 3)
        self.start = start
        self.dishes = dishes

    def surface_error(self, q) -> FacetError:
        """The front net's flat facets at the nodes of ``q`` against the front
        paraboloid (:func:`~mbdcore.models.reflector_net.facet_surface_error`; its
        ``rms`` [m] the block's ``surface_rms_error``).  ParameterError for a flat net."""
        if self.dishes is None:
            raise ParameterError("surface_error: a flat net has no design surface; "
                                 "accepted: a net made with focal_length")
        return facet_surface_error(self.node_positions(q), front_facets(self.form.topology),
                                   self.dishes[0])

    @property
    def member_labels(self) -> list[str]:
        """``"<node>-<node>"`` of every cable, e.g. ``"front_rim0-front_ring1_0"`` (the
        names of the tension outputs)."""
        labels = self.form.topology.labels
        return [f"{labels[i]}-{labels[j]}" for i, j in self.form.topology.members]

    @property
    def member_kinds(self) -> list[str]:
        """The kind of every cable (radial, hoop, tie)."""
        return [NET_MEMBER_KINDS[c] for c in self.form.topology.kind]

    def coordinates(self, q_truss=None) -> np.ndarray:
        """System coordinates: the truss's (default: as built, at ``folded_angle``) and
        the cables' initial shapes."""
        q = self.truss.coordinates(self.truss.theta0) if q_truss is None else \
            np.array(q_truss, float)
        for cable in self.cables:
            q[cable.index:cable.index + cable.n_coords] = cable.initial_coordinates()[0]
        return q

    def form_coordinates(self) -> np.ndarray:
        """System coordinates of the deployed truss with every cable straight between
        its form-found nodes (each carrying the form's tension): the state a deployment
        ends in."""
        q = self.truss.coordinates(math.pi / 2)
        for cable, (i, j) in zip(self.cables, self.form.topology.members):
            q[cable.index:cable.index + cable.n_coords] = _straight_cable(
                cable, self.form.positions[i], self.form.positions[j])
        return q

    def tensions(self, q) -> np.ndarray:
        """Axial force [N] at the middle of every cable (m,): N = EA eps |a|."""
        return np.array([cable.axial_force(q[cable.index:cable.index + cable.n_coords],
                                           0.5 * cable.length)[0] for cable in self.cables])

    def node_positions(self, q) -> np.ndarray:
        """Positions [m] of the net's nodes (n, 3): the first cable end at each node."""
        out = np.empty((len(self.node_ends), 3))
        for i, ends in enumerate(self.node_ends):
            cable, marker = ends[0]
            qb = q[cable.index:cable.index + cable.n_coords]
            out[i] = cable.state(qb, None).point(cable.markers[marker])[0]
        return out


def _straight_cable(cable: ANCFCable, start, end) -> np.ndarray:
    """The coordinates of ``cable`` straight from ``start`` to ``end`` [m], uniformly
    stretched (as :class:`~mbdcore.spatial.ANCFCable` builds it)."""
    chord = np.asarray(end, float) - np.asarray(start, float)
    x = np.linspace(0.0, 1.0, cable.n_nodes)
    return np.column_stack([start + np.outer(x, chord),
                            np.tile(chord / cable.length, (cable.n_nodes, 1))]).ravel()


#: A net on a folded truss starts with every chord at most this fraction of its cable's
#: stress-free length, so that every tension is zero at the start (a margin of 0.1 %:
#: near full deployment a larger one cannot be had -- the 4-bay one-ring net at 1.3 rad
#: has no start slacker than 0.97 of it)
SLACK_MARGIN = 0.999
#: Sweeps of the projections that pull too long members short (see folded_net_nodes)
SLACK_SWEEPS = 500


def folded_net_nodes(form: NetForm, rim, fold_ratio: float,
                     slack_lengths=None) -> np.ndarray:
    """Initial node positions [m] (n, 3) of a net on a folded truss whose joint blocks
    (the fixed nodes, in node order) are at ``rim``: every free node the same weighted
    mean of the rim as in the form (the force-density solution of the form's densities
    on the folded rim: it shrinks with the rim), then the two ends of every tie moved
    towards their mid-point until the tie is ``fold_ratio`` (the folded over the
    deployed aperture, sin theta_0) of its form length -- the fold leaves the height
    between the nets, and so the ties, unchanged, which would start them taut.

    ``slack_lengths`` (m,) [m]: the longest chord each member may start with.  Where the
    rule leaves a member longer -- a radial cable from a rim node that the fold lifts
    high above the weighted means (4 bays: the zig-zag is about a bar's length times
    cos theta_0) -- its free ends are pulled towards each other, one member at a time,
    sweep after sweep (cyclic projections onto the convex sets |x_i - x_j| <= s_ij,
    which meet where every member is short enough).  Near full deployment no such
    start exists (the 4-bay one-ring net above about 1.45 rad): the net then starts as
    close to it as :data:`SLACK_SWEEPS` sweeps get, some cables taut."""
    topology = form.topology
    nodes = force_density_form(topology, rim, form.force_density).positions
    ties = topology.members[topology.kind == NET_MEMBER_KINDS.index("tie")]
    front, rear = nodes[ties[:, 0]], nodes[ties[:, 1]]
    mid, half = 0.5 * (front + rear), 0.5 * (front - rear)
    nodes[ties[:, 0]] = mid + fold_ratio * half
    nodes[ties[:, 1]] = mid - fold_ratio * half
    if slack_lengths is not None:
        _pull_short(nodes, topology, np.asarray(slack_lengths, float))
    return nodes


def _pull_short(nodes, topology: NetTopology, limit) -> None:
    """Move free nodes (in place) until every member's chord is at most ``limit``."""
    members, free = topology.members, ~topology.fixed
    for _ in range(SLACK_SWEEPS):
        chords = np.linalg.norm(nodes[members[:, 1]] - nodes[members[:, 0]], axis=1)
        long = np.flatnonzero(chords > limit)
        if long.size == 0:
            return
        for e in long:
            i, j = members[e]
            d = nodes[j] - nodes[i]
            excess = 1.0 - limit[e] / np.linalg.norm(d)
            if excess <= 0.0:
                continue
            share = excess / (int(free[i]) + int(free[j])) if free[i] or free[j] else 0.0
            if free[i]:
                nodes[i] += share * d
            if free[j]:
                nodes[j] -= share * d


def add_cable_net(truss: RingTruss, **params) -> CableNet:
    """Form-find the front and rear nets with their ties on the deployed truss and add
    them to ``truss.system`` as tension-only ANCF cables (:class:`CableNet`, also
    ``truss.net``).

    The net is form-found by the force-density method (:func:`force_density_form`) with
    the joint blocks at full deployment fixed (``net_attachment_points`` at bay angle
    pi/2); each member's stress-free length is set by :func:`stress_free_length` so that
    the straight cable carries the form's tension.  Every cable is tension-only
    (``ANCFCable(tension_only=True)``): a cord carries no compression, and while taut it
    is the two-way cable to the last bit.

    With ``focal_length`` [m] given (not None) the form is the reflector's instead
    (:func:`paraboloid_form`: nodes on paraboloids, one force density per member;
    parameters :data:`PARABOLOID_NET_PARAMETERS`, which have no force densities per
    kind); otherwise today's flat net of :data:`NET_PARAMETERS`.

    On a deployed truss (``folded_angle`` = pi/2) the cables start on the form.  On a
    folded one they start straight between the nodes of :func:`folded_net_nodes` (the
    rim at the folded joint blocks, the free nodes the same weighted means of it as in
    the form, the ties shortened by sin theta_0): shorter than their stress-free lengths,
    so the net starts slack and tightens as the truss deploys (docs/ring_truss.md,
    "The net during deployment")."""
    if params.get("focal_length", None) is None:
        params.pop("focal_length", None)
        p, dishes = cable_net_parameters(**params), None
    else:
        p = paraboloid_net_parameters(**params)
    check_build_size(truss.n_bays, p["net_rings"], p["cable_elements"])
    if getattr(truss, "net", None) is not None:
        raise ParameterError("add_cable_net: the truss has a cable net already")
    topology = cable_net_topology(truss.n_bays, p["net_rings"])
    front, rear = truss.net_attachment_points(truss.coordinates(math.pi / 2))
    if "focal_length" in p:
        form, dishes = paraboloid_form(topology, front, rear,
                                       **{d.name: p[d.name] for d in PARABOLOID_PARAMETERS})
    else:
        density = np.array([p["radial_force_density"], p["hoop_force_density"],
                            p["tie_force_density"]])[topology.kind]
        form = force_density_form(topology, np.vstack([front, rear]), density)
    lengths0 = stress_free_length(form.length, form.tension, p["cable_ea"])
    if math.isclose(truss.theta0, math.pi / 2, rel_tol=0.0, abs_tol=1e-12):
        start = form.positions
    else:
        front0, rear0 = truss.net_attachment_points(truss.coordinates(truss.theta0))
        start = folded_net_nodes(form, np.vstack([front0, rear0]), math.sin(truss.theta0),
                                 SLACK_MARGIN * lengths0)
    system = truss.system
    cables, node_ends = [], [[] for _ in range(topology.n_nodes)]
    for e, (i, j) in enumerate(topology.members):
        cable = system.add(ANCFCable(f"cable{e}", start[i], start[j],
                                     p["cable_elements"], p["cable_rho_a"], p["cable_ea"],
                                     p["cable_ei"], damping=p["cable_damping"],
                                     stress_free_length=float(lengths0[e]),
                                     tension_only=True))
        cables.append(cable)
        node_ends[i].append((cable, "root"))
        node_ends[j].append((cable, "tip"))
    joints, per_net = [], topology.per_net
    for i, ends in enumerate(node_ends):
        if topology.fixed[i]:
            block = f"vertical{i % per_net}.{'top' if i < per_net else 'bottom'}"
            for cable, marker in ends:
                joints.append(system.add_joint(Spherical(
                    block, f"{cable.name}.{marker}", name=f"net_ball_{cable.name}_{marker}")))
            continue
        (first, first_marker), rest = ends[0], ends[1:]
        for cable, marker in rest:
            joints.append(system.add_joint(Spherical(
                f"{first.name}.{first_marker}", f"{cable.name}.{marker}",
                name=f"net_node{i}_{cable.name}_{marker}")))
    net = CableNet(truss, p, form, cables, node_ends, joints, start, dishes)
    truss.net = net
    # the truss's dependent rows judged again with the net, at the deployed state (as
    # the truss's own: rows picked folded may lose rank deployed); the net's rows are
    # independent by construction (every cable end but a node's first is in one joint
    # only), verified, and kept out of the dense QR
    system.check_redundancy(0.0, net.form_coordinates(), independent=joints)
    return net


@dataclass
class NetEquilibrium:
    """Result of :func:`net_static_equilibrium`: system coordinates ``q``, the net
    joints' multipliers ``reactions`` [N], Newton ``iterations``, the last correction
    ``correction`` [m]."""

    q: np.ndarray
    reactions: np.ndarray
    iterations: int
    correction: float


def net_static_equilibrium(net: CableNet, q=None, tol: float = 1e-12,
                           max_iterations: int = 30) -> NetEquilibrium:
    """Static equilibrium of the ANCF net with the truss held at its coordinates in
    ``q`` (default :meth:`CableNet.coordinates`; the cables start from ``q`` too), every
    cable taut (the two-way law during the iteration; a slack cable at the result is a
    CableEquilibriumError):
    Newton on F(e) + G^T mu = 0, g(e) = 0 in the cable coordinates e (F the cables'
    elastic forces and gravity of the system), with the net's ball joints as the rows.
    A point of a cable and of a natural-coordinate body is linear in the coordinates,
    so those rows are linear, G is constant and Newton needs no geometric terms; the
    sparse KKT matrix is factorised at every iteration.  Converged when the correction
    is below ``tol`` times the largest coordinate (at least 1 m)."""
    system = net.truss.system
    q = net.coordinates() if q is None else np.array(q, float)
    cols = np.concatenate([np.arange(c.index, c.index + c.n_coords) for c in net.cables])
    n_rows = sum(j.n_eq for j in net.joints)
    zero = np.zeros(system.n)

    def rows(qq):
        view = system.view(qq, zero)
        g = np.zeros(n_rows)
        G = np.zeros((n_rows, system.n))
        at = 0
        for joint in net.joints:
            k = joint.n_eq
            joint.evaluate(0.0, view, g[at:at + k], G[at:at + k], np.zeros(k), np.zeros(k))
            at += k
        return g, scipy.sparse.csr_matrix(G[:, cols])

    _, Gc = rows(q)
    gravity = system.gravity
    mu = np.zeros(n_rows)
    # every cable two-way during the iteration (a start off the form may have slack
    # points, whose zero axial stiffness makes the static matrix singular), and taut
    # at the equilibrium found, checked
    for c in net.cables:
        c.hold_states(1)
    try:
        result = _net_newton(net, q, cols, rows, Gc, gravity, mu, tol, max_iterations)
    finally:
        for c in net.cables:
            c.release_switches()
    slack = [c.name for c in net.cables
             if not np.all(c.axial_states(result.q[c.index:c.index + c.n_coords]) == 1)]
    if slack:
        raise CableEquilibriumError(f"net_static_equilibrium: the equilibrium found has "
                                    f"slack cables {slack}: not a state of the tension-only net")
    return result


def _net_newton(net, q, cols, rows, Gc, gravity, mu, tol, max_iterations) -> NetEquilibrium:
    """The Newton iteration of :func:`net_static_equilibrium`."""
    for iteration in range(1, max_iterations + 1):
        F, K = [], []
        for c in net.cables:
            qb = q[c.index:c.index + c.n_coords]
            vb = np.zeros(c.n_coords)
            F.append(c.applied_forces(0.0, qb, vb, gravity))
            K.append(c.force_jacobians_sparse(0.0, qb, vb, gravity)[0])
        g, _ = rows(q)
        A = scipy.sparse.bmat([[scipy.sparse.block_diag(K), Gc.T], [Gc, None]], format="csc")
        x = scipy.sparse.linalg.spsolve(A, -np.concatenate([np.concatenate(F), g]))
        dq, mu = x[:cols.size], x[cols.size:]
        q[cols] += dq
        correction = float(np.abs(dq).max())
        if correction <= tol * max(1.0, float(np.abs(q[cols]).max())):
            return NetEquilibrium(q, mu, iteration, correction)
    raise CableEquilibriumError(f"net_static_equilibrium: no convergence in {max_iterations} "
                                f"Newton iterations (last correction {correction:.3g} m)")
