"""The deployable ring truss as a Block (and so, through ``fmu.fmi.build``, as an FMU):
motor voltages in; deployment ratio, aperture, bay angles and motor currents out
(docs/ring_truss.md, "The truss as a block and an FMU").

The block is the planar engine's :class:`~mbdcore.multibody.system_block.SystemBlock`
on the truss that :func:`~mbdcore.models.ring_truss.ring_truss` builds from the block's
parameters: the same stepping (a DAE method, by default generalized-alpha with
rho_inf = 0.6, full Newton on the sparse path without the geometric terms, as the truss's
tests and example run), the same restarts where a voltage jumps between communication
steps (a latch that engages restarts the integrator too), the same state for rollback
(coordinates, rates, the integrator's accelerations and multipliers, the latches), the
same refusal of a non-finite state; what is added here is the truss's own range
(:meth:`RingTrussBlock.refused`: a telescopic diagonal shorter than one tube or longer
than both cannot happen) and its outputs.

**The number of bays fixes the signals** (one voltage, one bay angle and one current
per bay), so it is chosen when the class is made, as a model file's signals are:
``RingTrussBlock.configured({"n_bays": 4})`` (default, the class itself: the truss's
default number of bays).  It stays a parameter of the block and the FMU, whose accepted
range is that one value, as the C-source FMUs keep what was built in at export.

**One voltage per bay** (``voltage0`` ... ``voltage{N-1}`` [V], the truss system's own
input names): the deployment controller switches each bay's motor off when that bay's
latch engages, and without gears (or with gear backlash) the bays deploy at different
rates that only separate voltages can correct; a common voltage is the case of equal
inputs.

Outputs: ``deployment_ratio`` [1] (aperture diameter over the designed one),
``aperture_diameter`` [m], ``aperture_error`` [m], ``bay_angle{k}`` [rad], ``motor_current{k}``
[A], ``latched_bays`` [1] (how many latches have engaged).

**The cable net** (docs/ring_truss.md, "Cable net"): ``configured({"n_bays": N,
"net_rings": R})`` with R >= 1 adds the front and rear nets of R rings of free nodes with
their ties (:func:`~mbdcore.models.cable_net.add_cable_net`, tension-only ANCF cables);
R = 0, the default, is the truss without a net, its signals and parameters unchanged.
With a net the block has the net's parameters (force densities, cable properties;
``net_rings`` fixed as ``n_bays``) and one output per cable, ``cable_tension{j}`` [N]:
the axial force at the middle of cable j (:meth:`CableNet.tensions`), its description
naming the cable's end nodes and kind.

**The reflector's net** (docs/ring_truss.md, "The paraboloid net"): ``configured({"n_bays":
N, "net_rings": R, "paraboloid": True})`` form-finds the front net to a paraboloid
(:func:`~mbdcore.models.cable_net.paraboloid_form`); the block's net parameters are then
:data:`~mbdcore.models.cable_net.PARABOLOID_NET_PARAMETERS` (``focal_length``,
``rear_focal_ratio``, ``net_pretension``, ``min_tension_ratio`` instead of the force
densities per kind), and one more output, ``surface_rms_error`` [m]: the RMS axial
distance of the front net's flat facets, at the state's nodes, from the design
paraboloid (:meth:`CableNet.surface_error`).
"""
from __future__ import annotations

import dataclasses

from mbdcore.blocks import Parameter, ParameterError, Signal
from mbdcore.models.cable_net import (
    NET_MEMBER_KINDS,
    NET_PARAMETERS,
    PARABOLOID_NET_PARAMETERS,
    add_cable_net,
    cable_net_parameters,
    cable_net_topology,
)
from mbdcore.models.ring_truss import (
    RING_TRUSS_PARAMETERS,
    RingTruss,
    check_build_size,
    ring_truss,
    ring_truss_parameters,
)
from mbdcore.multibody.system import System
from mbdcore.multibody.system_block import SystemBlock

__all__ = ["RingTrussBlock", "STEPPING_DEFAULTS", "TRUSS_DAE_OPTIONS", "truss_inputs",
           "truss_outputs", "cable_tension_outputs", "SURFACE_ERROR_OUTPUT"]

#: defaults of the stepping parameters of the truss block (the planar block's
#: parameters, with the defaults the truss runs at: docs/ring_truss.md, "A stiff mode")
STEPPING_DEFAULTS = {"method": "generalized-alpha", "substeps": 2, "rho_inf": 0.6}

#: Newton options of the DAE methods on the truss: full Newton without the geometric
#: terms (80 % of a step's cost with the drives, same iterations without them) on the
#: sparse path
TRUSS_DAE_OPTIONS = {"iteration": "newton", "geometric_stiffness": False, "sparse": True}

#: the default number of bays (that of the truss's parameters)
_DEFAULT_BAYS = next(p.default for p in RING_TRUSS_PARAMETERS if p.name == "n_bays")


def truss_inputs(n_bays: int) -> tuple[Signal, ...]:
    """The motor voltages, one per bay, named as the truss system's inputs."""
    return tuple(Signal(f"voltage{k}", "V", f"armature voltage of bay {k}'s diagonal motor "
                        "(clipped to the motor's limit)", nominal=48.0)
                 for k in range(n_bays))


def truss_outputs(n_bays: int) -> tuple[Signal, ...]:
    """The outputs of an ``n_bays`` truss (cable tensions [N] join them with the cable
    net)."""
    return (
        Signal("deployment_ratio", "1", "aperture diameter over the designed one "
               "(sin(theta) for a synchronous deployment, 1 deployed)"),
        Signal("aperture_diameter", "m", "diameter of the circle through the verticals' axes "
               "(the parameter aperture once deployed)"),
        Signal("aperture_error", "m", "twice the largest deviation of a vertical from the "
               "designed radius"),
        *(Signal(f"bay_angle{k}", "rad", f"angle between bay {k}'s horizontal bars and the "
                 "vertical (pi/2 deployed)") for k in range(n_bays)),
        *(Signal(f"motor_current{k}", "A", f"armature current of bay {k}'s motor")
          for k in range(n_bays)),
        Signal("latched_bays", "1", "number of diagonals whose latch has engaged (N: the "
               "truss is locked deployed)"),
    )


def cable_tension_outputs(n_bays: int, net_rings: int) -> tuple[Signal, ...]:
    """One tension output [N] per cable of the net of ``net_rings`` rings (none for 0),
    in the order of :attr:`CableNet.cables`."""
    if net_rings == 0:
        return ()
    topology = cable_net_topology(n_bays, net_rings)
    labels = topology.labels
    return tuple(Signal(f"cable_tension{j}", "N", f"axial force at the middle of cable {j}, "
                        f"{labels[a]}-{labels[b]} ({NET_MEMBER_KINDS[kind]}; 0 slack)")
                 for j, ((a, b), kind) in enumerate(zip(topology.members, topology.kind)))


#: the paraboloid net's surface error output
SURFACE_ERROR_OUTPUT = Signal(
    "surface_rms_error", "m", "RMS axial distance of the front net's flat facets (at the "
    "nodes now) from the design paraboloid, weighted by projected area", min=0.0)


def _fixed(p: Parameter, value: int) -> Parameter:
    return dataclasses.replace(p, default=value, min=value, max=value,
                               description=f"{p.description}; fixed when the block is made "
                               "(it sets the number of signals)")


def _parameters(n_bays: int, net_rings: int = 0,
                paraboloid: bool = False) -> tuple[Parameter, ...]:
    """Stepping parameters, then the truss's, ``n_bays`` fixed to its one value; with a
    net, the net's (the paraboloid net's with ``paraboloid``), ``net_rings`` fixed."""
    stepping = tuple(dataclasses.replace(p, default=STEPPING_DEFAULTS.get(p.name, p.default))
                     for p in SystemBlock.PARAMETERS)
    truss = tuple(_fixed(p, n_bays) if p.name == "n_bays" else p
                  for p in RING_TRUSS_PARAMETERS)
    table = PARABOLOID_NET_PARAMETERS if paraboloid else NET_PARAMETERS
    net = tuple(_fixed(p, net_rings) if p.name == "net_rings" else p
                for p in table) if net_rings else ()
    return stepping + truss + net


class RingTrussBlock(SystemBlock):
    """The deployable ring truss with its diagonal motors and latches as a block (module
    docstring); ``RingTrussBlock.configured({"n_bays": N})`` for N bays."""

    PARAMETERS = _parameters(_DEFAULT_BAYS)
    INPUTS = truss_inputs(_DEFAULT_BAYS)
    OUTPUTS = truss_outputs(_DEFAULT_BAYS)
    DAE_OPTIONS = TRUSS_DAE_OPTIONS
    DEFAULT_STOP_TIME = 2.0
    DEFAULT_STEP_SIZE = 0.02

    #: rings of the cable net (0: none), fixed by :meth:`configured`
    NET_RINGS = 0
    #: whether the net is the reflector's paraboloid net, fixed by :meth:`configured`
    PARABOLOID = False

    @classmethod
    def configured(cls, config: dict, name: str | None = None) -> type["RingTrussBlock"]:
        """A block class for ``config = {"n_bays": N, "net_rings": R, "paraboloid": P}``
        (N even, >= 4; R >= 0 rings of the cable net, 0 (default) without a net; P true
        for the reflector's paraboloid net, which needs R >= 1, false (default) for the
        flat net; ParameterError naming them otherwise)."""
        config = dict(config)
        unknown = sorted(set(config) - {"n_bays", "net_rings", "paraboloid"})
        if unknown:
            raise ParameterError(f"unknown ring truss configuration key(s) {unknown}; "
                                 "accepted: ['n_bays', 'net_rings', 'paraboloid']")
        n_bays = ring_truss_parameters(n_bays=config.get("n_bays", _DEFAULT_BAYS))["n_bays"]
        rings = config.get("net_rings", 0)
        if not (isinstance(rings, int) and not isinstance(rings, bool) and rings >= 0):
            raise ParameterError(f"ring truss configuration 'net_rings' = {rings!r} is "
                                 "invalid: accepted integers >= 0 (0: no cable net)")
        if rings:
            rings = cable_net_parameters(net_rings=rings)["net_rings"]
        paraboloid = config.get("paraboloid", False)
        if paraboloid not in (True, False) or (paraboloid and not rings):
            raise ParameterError(f"ring truss configuration 'paraboloid' = {paraboloid!r} is "
                                 "invalid: accepted true (with 'net_rings' >= 1) or false")
        # before any signal is made: the build it stands for must fit in memory
        check_build_size(n_bays, rings, cable_net_parameters()["cable_elements"])
        shape = "paraboloid" if paraboloid else "cable"
        net = f" and a {shape} net of {rings} ring(s)" if rings else ""
        attrs = {"CONFIG": {"n_bays": n_bays, **({"net_rings": rings} if rings else {}),
                            **({"paraboloid": True} if paraboloid else {})},
                 "CONFIGURED": True, "NET_RINGS": rings, "PARABOLOID": bool(paraboloid),
                 "PARAMETERS": _parameters(n_bays, rings, bool(paraboloid)),
                 "INPUTS": truss_inputs(n_bays),
                 "OUTPUTS": truss_outputs(n_bays) + cable_tension_outputs(n_bays, rings)
                 + ((SURFACE_ERROR_OUTPUT,) if paraboloid else ()),
                 "__doc__": f"The deployable ring truss of {n_bays} bays with its diagonal "
                            f"motors and latches{net} (mbdcore.models.ring_truss_block)."}
        suffix = (f"Paraboloid{rings}" if paraboloid else f"Net{rings}") if rings else ""
        return type(name or f"RingTruss{n_bays}{suffix}Block", (cls,), attrs)

    def build_system(self) -> System:
        """The truss of the block's parameters (checked together: a folded angle the
        diagonal cannot hold raises ParameterError naming ``folded_angle``), with its
        cable net if the class has one."""
        truss_names = [p.name for p in RING_TRUSS_PARAMETERS]
        self.truss: RingTruss = ring_truss(**{n: self.params[n] for n in truss_names})
        if self.NET_RINGS:
            table = PARABOLOID_NET_PARAMETERS if self.PARABOLOID else NET_PARAMETERS
            add_cable_net(self.truss, **{p.name: self.params[p.name] for p in table})
        return self.truss.system

    def refused(self, t: float, q, v) -> str:
        """Beyond the model: a diagonal shorter than one tube (the thin tube through the
        thick tube's hinge) or longer than both (the thin tube out of the thick one)."""
        why = super().refused(t, q, v)
        if why:
            return why
        tube = self.truss.tube_length
        lengths = self.truss.diagonal_lengths(q)
        for k, length in enumerate(lengths):
            if not tube <= length <= 2.0 * tube:
                return (f"bay {k}'s diagonal is {length:.6g} m long, outside the "
                        f"[{tube:.6g}, {2 * tube:.6g}] m its two tubes span")
        return ""

    def outputs(self) -> dict:
        if self._out is None:
            truss, q, v = self.truss, self.q, self.v
            out = {"deployment_ratio": truss.deployment_ratio(q),
                   "aperture_diameter": truss.aperture_diameter(q),
                   "aperture_error": truss.aperture_error(q)}
            out.update((f"bay_angle{k}", a) for k, a in enumerate(truss.bay_angles(q)))
            out.update((f"motor_current{k}", i) for k, i in enumerate(truss.motor_currents(v)))
            out["latched_bays"] = sum(bool(f.discrete_state()["latched"])
                                      for f in truss.system.forces_list if f.kind == "latch")
            if truss.net is not None:
                out.update((f"cable_tension{j}", t) for j, t in enumerate(truss.net.tensions(q)))
                if truss.net.dishes is not None:
                    out["surface_rms_error"] = truss.net.surface_error(q).rms
            self._out = {name: float(value) for name, value in out.items()}
        return self._out
