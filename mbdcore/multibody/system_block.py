"""Any multibody System as a Block (and so, through fmu.fmi.build, as an FMU).

A model (the dict of a model file, see :mod:`mbdcore.multibody.model_file`) is turned into a
block class by :meth:`SystemBlock.configured`, which fixes the signals:

inputs
    the system's inputs (applied joint torques [N m] and forces [N]); default all.
outputs
    names chosen among
    * generalised coordinates, as :meth:`System.coordinate_names` gives them
      (``"crank.phi"`` [rad], ``"slider.x"`` [m], ``"beam.delta1"`` [m], ...);
    * their rates, ``"der(crank.phi)"``;
    * reactions, ``"reaction.<joint>.<equation>"`` (``"reaction.pivot.x"`` [N],
      ``"reaction.drive.torque"`` [N m]) with the sign of G^T lambda;
    * marker positions ``"position.<body>.<marker>.x"`` / ``.y`` (``.z`` in a spatial
      system) [m]; in a planar system the orientations ``"orientation.<body>.<marker>"``
      [rad]; in a spatial one, where a body's orientation is a rotation matrix and no
      single angle, the hinge angle ``"angle.<joint>"`` [rad] of every joint that
      defines one (a spatial revolute joint with a frame on both sides: the rotation of
      its body b relative to a about the axis, zero at the initial configuration);
    * the tip deflection ``"tip_deflection.<body>"`` [m] of every flexible body: a
      planar beam's, signed (positive to the left of the root's direction), a spatial
      cable's or beam's the length of its transverse tip displacement;
    * ``"energy"`` [J] and ``"violation"`` (max |g|).
    Default: all coordinates, or the model file's ``outputs``.

The block integrates the index-1 formulation (Baumgarte + projections) with any
ODE method of :mod:`mbdcore.dae.methods`, or the index-3/GGL formulation with
a DAE method of that table, over ``substeps`` steps per
communication step, inputs held.  A substep whose Newton iteration fails is first
retried with halved steps by the integrator itself (down to 1/64 of the substep,
:class:`~mbdcore.integrators.base.StepHalving`, as in :func:`mbdcore.dae.simulate`).
A failed step raises StepError and keeps the state;
so does a step that reaches a non-finite state or one beyond the model's range
(:meth:`System.range_violation`, and what a subclass adds in :meth:`SystemBlock.refused`).

The system comes from the configuration's model dict through :attr:`SystemBlock.MODEL_FORMAT`
(the planar files here; :class:`mbdcore.spatial.system_block.SpatialSystemBlock` reads
both dimensions), or from a subclass's :meth:`SystemBlock.build_system` (a ready-made
model with its own parameters, such as the ring truss block).

The communication points are step boundaries by construction (the substeps divide the
communication step), so a held input that jumps there never falls inside a step.
Where an input changed value from the previous communication step, a DAE method is
restarted there (consistent accelerations and multipliers after the jump, the
generalized-alpha acceleration-like variable reset to them: ``Index3Integrator.start``),
as is an ODE method with memory (BDF, Gear: ``Integrator.memory``), so no pre-jump
information enters the steps after the jump: the block then steps as
:func:`mbdcore.dae.simulate` with that jump declared as a breakpoint.  What that costs
(measured): docs/architecture.md, "Inputs that jump".
"""
from __future__ import annotations

import copy
import dataclasses
import re

import numpy as np

from mbdcore.blocks import (
    Block,
    Parameter,
    ParameterError,
    Signal,
    StepError,
    VectorState,
)
from mbdcore.dae.index1 import (
    AssemblyError,
    Index1Baumgarte,
    SingularConfigurationError,
    assemble,
    augmented_accelerations,
)
from mbdcore.dae.methods import METHODS as METHOD_TABLE
from mbdcore.dae.methods import method_info
from mbdcore.dae.ode_block import held_inputs
from mbdcore.integrators.base import IntegrationError
from mbdcore.multibody.compiled_model import system_c_model
from mbdcore.multibody.model_file import PLANAR_FORMAT
from mbdcore.multibody.system import System, coordinate_unit, reaction_unit
from mbdcore.timeseries import rate_unit

__all__ = ["SystemBlock", "system_block", "stiff_parts", "default_method", "IMPLICIT_DEFAULT",
           "EXPLICIT_DEFAULT"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: the method (with its substeps) of a model with flexible bodies or stiff force
#: elements: implicit, whose numerical damping takes the stiff modes it cannot follow
IMPLICIT_DEFAULT = {"name": "generalized-alpha", "substeps": 1}
#: the method of a rigid model: explicit, cheap per step, accurate at 10 substeps
EXPLICIT_DEFAULT = {"name": "rk4", "substeps": 10}


def stiff_parts(system) -> list[str]:
    """The names of the parts that make a model stiff: flexible bodies (those with a
    ``tip_deflection``: axial and bending modes far faster than the motion) and force
    elements that declare themselves ``stiff`` (penalty stops)."""
    return ([b.name for b in system.bodies if getattr(b, "tip_deflection", None) is not None]
            + [f.name for f in system.forces_list if getattr(f, "stiff", False)])


def default_method(system) -> dict:
    """The method a block of ``system`` uses when nothing says otherwise:
    :data:`IMPLICIT_DEFAULT` for a stiff model (:func:`stiff_parts`), else
    :data:`EXPLICIT_DEFAULT`."""
    return dict(IMPLICIT_DEFAULT if stiff_parts(system) else EXPLICIT_DEFAULT)


class SystemBlock(Block):
    """A multibody System as a block (configure it with :meth:`configured`)."""

    CONFIG: dict | None = None
    #: the model files it reads and writes (:class:`~mbdcore.multibody.model_file.ModelFormat`:
    #: the planar ones here, this layer knows nothing of the spatial engine, whose block
    #: subclasses this one with the format extended)
    MODEL_FORMAT = PLANAR_FORMAT
    #: options given to a DAE method that takes them (``iteration``, ``sparse``,
    #: ``geometric_stiffness``, ...), set by subclasses for their model
    DAE_OPTIONS: dict = {}
    #: options of the method from the model file (beyond the parameters), given to any
    #: method that takes them
    METHOD_OPTIONS: dict = {}
    PARAMETERS = (
        Parameter("method", "rk4", "", "integration method (ODE methods: index-1 form; "
                  "DAE methods: index-3/GGL form)", choices=tuple(METHOD_TABLE)),
        Parameter("substeps", 10, "", "integrator steps per communication step", min=1,
                  max=100000),
        Parameter("baumgarte", 10.0, "1/s", "Baumgarte alpha = beta (index-1 methods)",
                  min=0.0, max=1e4),
        Parameter("rho_inf", 0.8, "", "spectral radius at infinity (generalized-alpha)",
                  min=0.0, max=1.0),
    )
    DEFAULT_STOP_TIME = 1.0
    DEFAULT_STEP_SIZE = 1e-3

    @classmethod
    def for_model(cls, model, inputs=None, outputs=None,
                  name: str | None = None) -> type["SystemBlock"]:
        """Block class of a model given as a path (read by :attr:`MODEL_FORMAT`), a
        model dict or a System (written by it), configured by
        :meth:`configured` with the ``inputs`` and ``outputs`` named (None: all)."""
        if isinstance(model, System):
            model = cls.MODEL_FORMAT.to_dict(model)
        elif not isinstance(model, dict):
            model = cls.MODEL_FORMAT.to_dict(cls.MODEL_FORMAT.load(model))
        return cls.configured({"model": model, "inputs": inputs, "outputs": outputs}, name)

    @classmethod
    def configured(cls, config: dict, name: str | None = None) -> type["SystemBlock"]:
        """A block class for ``config = {"model": <model dict>, "inputs": [...],
        "outputs": [...]}`` (lists optional).  Unknown signal names raise
        ParameterError listing the accepted ones.

        What the configuration does not name, the model file does: its ``outputs``, its
        inputs' start values and its ``method`` (the defaults of the parameters
        ``method``, ``substeps``, ``rho_inf``, ``baumgarte``, and the method's other
        options); without a ``method``, :func:`default_method` chooses from the model."""

        config = copy.deepcopy(dict(config))
        system = cls.MODEL_FORMAT.from_dict(config["model"])
        settings = system.block_settings
        inputs = list(config.get("inputs") or system.inputs)
        unknown = [u for u in inputs if u not in system.inputs]
        if unknown:
            raise ParameterError(f"unknown input(s) {unknown}; the model's inputs: "
                                 f"{', '.join(system.inputs) or '(none)'}")
        outputs = list(config.get("outputs") or settings.get("outputs")
                       or system.coordinate_names())
        available = _available_outputs(system)
        unknown = [o for o in outputs if o not in available]
        if unknown:
            raise ParameterError(f"unknown output(s) {unknown}; accepted: "
                                 f"{', '.join(sorted(available))}")
        config["inputs"], config["outputs"] = inputs, outputs
        method = dict(settings.get("method") or default_method(system))
        defaults = {"method": method.pop("name")}
        defaults.update({k: method.pop(k) for k in ("substeps", "baumgarte", "rho_inf")
                         if k in method})
        attrs = {
            "CONFIG": config,
            "CONFIGURED": True,
            "INPUTS": tuple(Signal(u, _input_unit(system, u), f"system input {u}",
                                   start=float(system.inputs[u])) for u in inputs),
            "OUTPUTS": tuple(Signal(o, available[o][0], available[o][1]) for o in outputs),
            "PARAMETERS": tuple(dataclasses.replace(p, default=defaults[p.name])
                                if p.name in defaults else p for p in cls.PARAMETERS),
            # the method's other options (hht's alpha, a BDF's rtol, ...), given to it
            # when the method in use takes them
            "METHOD_OPTIONS": {**cls.METHOD_OPTIONS, **method},
            "__doc__": config["model"].get("description") or cls.__doc__,
        }
        return type(name or "ConfiguredSystemBlock", (cls,), attrs)

    def __init__(self, **params):
        super().__init__(**params)
        self.system = self.build_system()
        info = method_info(self.params["method"])
        self.implicit = info.kind == "dae"
        given = {**self.DAE_OPTIONS, **self.METHOD_OPTIONS} if self.implicit else \
            self.METHOD_OPTIONS
        opts = {k: v for k, v in given.items() if k in info.options}
        if "rho_inf" in info.options:
            opts["rho_inf"] = self.params["rho_inf"]
        self.integrator = info.make(**opts)
        if not self.implicit:
            a = self.params["baumgarte"]
            self.form = Index1Baumgarte(self.system, a, a, project=True)
        self._discrete0 = copy.deepcopy(self.system.discrete_state())
        self._index = {n: i for i, n in enumerate(self.system.coordinate_names())}
        self._mult = {n: i for i, n in enumerate(self.system.multiplier_names())}
        self._joints = {j.name: j for j in self.system.joints}
        self.reset()

    def build_system(self) -> System:
        """The system this block integrates (from the configuration's model dict; a
        subclass builds its own from its parameters)."""
        if self.CONFIG is None:
            raise ParameterError("SystemBlock needs a model: use SystemBlock.configured(config)")
        return self.MODEL_FORMAT.from_dict(self.CONFIG["model"])

    def refused(self, t: float, q, v) -> str:
        """Why the state (q, v) a substep reached at ``t`` [s] must be refused (beyond the
        model's range: a beam's tip deflection beyond its length), or "" to accept it; a
        refused step raises StepError and keeps the state as it was."""
        hit = self.system.range_violation(q)
        return hit["text"] if hit is not None else ""

    def what_to_change(self, substep: float) -> str:
        """After a failed step of ``substep`` [s]: the change that fits the model, as the
        end of the message.  A flexible body's axial and bending modes are stiff (periods
        far below a millisecond): an explicit method (the index-1 form) follows them only
        with tiny substeps, where an implicit one (generalized-alpha) damps them."""
        if self.implicit:
            return ""
        stiff = stiff_parts(self.system)
        if not stiff:
            return ""
        names = ", ".join(repr(n) for n in stiff[:3]) + (", ..." if len(stiff) > 3 else "")
        return (f"; the model has flexible bodies or stiff elements ({names}) whose stiff "
                f"modes the explicit method {self.params['method']!r} cannot follow at "
                f"{substep:.3g} s substeps: set method = '{IMPLICIT_DEFAULT['name']}' "
                "(implicit, for flexible and stiff models; the default of such a model), "
                "or many more substeps")

    # -- state ------------------------------------------------------------------------
    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        try:
            self.q, self.v = assemble(self.system, t0)
        except (AssemblyError, SingularConfigurationError) as exc:
            raise ParameterError(f"the model cannot be assembled: {exc}") from None
        self.system.set_discrete_state(copy.deepcopy(self._discrete0))
        self.integrator.reset()
        self._held = None       # the inputs of the last step (None: no step yet)
        if not self.implicit:
            self.integrator.start(t0, np.concatenate([self.q, self.v]))
        self._out = None

    def _get_internal(self):
        return {"q": self.q.copy(), "v": self.v.copy(), "integrator": self.integrator.get_state(),
                "discrete": copy.deepcopy(self.system.discrete_state()), "held": self._held}

    def _set_internal(self, internal):
        self.q = np.array(internal["q"], dtype=float)
        self.v = np.array(internal["v"], dtype=float)
        self.integrator.set_state(internal["integrator"])
        self.system.set_discrete_state(copy.deepcopy(internal.get("discrete", {})))
        self._held = internal.get("held")
        self._out = None

    def vector_state(self) -> VectorState:
        """(q, v): the coordinates by name, then ``der(<coordinate>)``; writing it
        restarts the integrator there."""
        names = self.system.coordinate_names()
        n = len(names)

        def set_x(block, x):
            x = np.array(x, dtype=float)
            block.q, block.v = x[:n].copy(), x[n:].copy()
            if block.implicit:
                # accelerations and multipliers consistent with the new state, not the
                # old state's (generalized-alpha carries them from step to step)
                block.integrator.start(block.system, block.time, block.q, block.v)
            else:
                block.integrator.start(block.time, x)
            block._out = None
        return VectorState(names + [f"der({c})" for c in names],
                           lambda block: np.concatenate([block.q, block.v]), set_x)

    # -- stepping ---------------------------------------------------------------------
    def do_step(self, t: float, h: float) -> None:
        sys_ = self.system
        for name in self.INPUTS:
            sys_.set_input(name.name, self.inputs[name.name])
        saved = self.integrator.get_state()
        saved_discrete = copy.deepcopy(sys_.discrete_state())
        n_sub = self.params["substeps"]
        hs = h / n_sub
        q, v = self.q, self.v
        held = held_inputs(self)
        jumped = self._held is not None and held != self._held
        try:
            if jumped and self.implicit and self.integrator.qdd is not None:
                # an input jumped at t: accelerations and multipliers after the jump
                self.integrator.start(sys_, t, q, v)
            elif jumped and not self.implicit and self.integrator.memory:
                self.integrator.start(t, np.concatenate([q, v]))   # the history is void
            with np.errstate(all="ignore"):
                for k in range(n_sub):
                    ts = t + k * hs
                    if self.implicit:
                        q, v = self.integrator.step(sys_, ts, q, v, hs)
                    else:
                        x = self.integrator.step(self.form.rhs, hs)
                        if not np.all(np.isfinite(x)):
                            raise IntegrationError("non-finite state")
                        x = self.form.correct(ts + hs, x)
                        self.integrator.correct(x)
                        q, v = x[:sys_.n], x[sys_.n:]
                    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
                        raise IntegrationError("non-finite state")
                    why = self.refused(ts + hs, q, v)
                    if why:
                        raise IntegrationError(f"{why}: the solution diverges")
                    if sys_.update(ts + hs, q, v):      # a force jumped (a latch engaged)
                        if self.implicit:
                            self.integrator.start(sys_, ts + hs, q, v)
                        else:
                            self.integrator.start(ts + hs, np.concatenate([q, v]))
        except Exception as exc:  # noqa: BLE001 - every failure keeps the last good state
            self.integrator.set_state(saved)
            sys_.set_discrete_state(saved_discrete)
            raise StepError(f"step [{t:.6g}, {t + h:.6g}] s failed ({type(exc).__name__}: "
                            f"{exc}); state kept at t = {self.time:.6g} s"
                            f"{self.what_to_change(hs)}") from None
        self.q, self.v = q, v
        self._held = held
        self.time = t + h
        self._out = None

    def c_model(self):
        """The block as C with its own implicit step, for a C-source FMU
        (:func:`mbdcore.multibody.compiled_model.system_c_model`); CModelError naming
        every part without a compiled form."""
        return system_c_model(self)

    # -- outputs ----------------------------------------------------------------------
    def outputs(self) -> dict:
        if self._out is None:
            self._out = {s.name: float(self._signal(s.name)) for s in self.OUTPUTS}
        return self._out

    def _signal(self, name: str) -> float:
        sys_, q, v = self.system, self.q, self.v
        if name in self._index:
            return q[self._index[name]]
        if name.startswith("der(") and name[4:-1] in self._index:
            return v[self._index[name[4:-1]]]
        if name == "energy":
            return sys_.energy(self.time, q, v)
        if name == "violation":
            return float(np.abs(sys_.constraints(self.time, q)).max()) if sys_.m else 0.0
        if name.startswith("reaction."):
            lam = augmented_accelerations(sys_, self.time, q, v)[1]
            return lam[self._mult[name[len("reaction."):]]]
        kind, rest = name.split(".", 1)
        if kind == "position":
            ref, comp = rest.rsplit(".", 1)
            body, loc = sys_.marker(ref)
            return sys_.view(q, v)[body].point(loc)[0]["xyz".index(comp)]
        if kind == "orientation":
            body, loc = sys_.marker(rest)
            return sys_.view(q, v)[body].angle(loc)[0]
        if kind == "angle":
            return self._joints[rest].angle_value(q, v)
        if kind == "tip_deflection":
            body = sys_.body(rest)
            deflection = body.tip_deflection(q[body.index:body.index + body.n_coords])
            return float(np.linalg.norm(deflection)) if np.ndim(deflection) else deflection
        raise KeyError(name)


def _input_unit(system, name: str) -> str:
    for force in system.forces_list:
        if name in force.input_names:
            return force.input_unit
    return ""


def _available_outputs(system) -> dict[str, tuple[str, str]]:
    """Output name -> (unit, description)."""
    out: dict[str, tuple[str, str]] = {}
    for n in system.coordinate_names():
        unit = coordinate_unit(n)
        out[n] = (unit, f"coordinate {n}")
        out[f"der({n})"] = (rate_unit(unit), f"rate of {n}")
    for j in system.joints:
        for eq in j.equation_names():
            unit = reaction_unit(eq)
            out[f"reaction.{j.name}.{eq}"] = (unit, f"reaction {eq} of {j.name} (G^T lambda sign)")
    planar = system.dim == 2
    for body in [system.ground] + system.bodies:
        for m in body.markers:
            if _IDENT.match(m):
                for c in "xyz"[:system.dim]:
                    out[f"position.{body.name}.{m}.{c}"] = ("m", f"{c} of marker {body.name}.{m}")
                if planar and not body.is_ground:
                    out[f"orientation.{body.name}.{m}"] = ("rad", f"orientation at {body.name}.{m}")
    if not planar:
        q0, v0 = system.initial_state()
        for j in system.joints:
            if _has_angle(j, q0, v0):
                out[f"angle.{j.name}"] = ("rad", f"angle of joint {j.name} (b relative to a "
                                                 "about its axis, 0 at the start)")
    for body in system.bodies:
        if getattr(body, "tip_deflection", None) is not None and _IDENT.match(body.name):
            out[f"tip_deflection.{body.name}"] = ("m", f"tip deflection of {body.name} "
                                                       "(transverse to its root's direction)")
    out["energy"] = ("J", "total mechanical energy")
    out["violation"] = ("", "largest constraint violation |g|")
    return out


def _has_angle(joint, q, v) -> bool:
    """Whether the joint defines an angle (``angle_value``: a spatial revolute joint with
    a frame on both sides; one with a bar on a side has no reference across the axis)."""
    if not callable(getattr(joint, "angle_value", None)):
        return False
    try:
        joint.angle_value(q, v)
    except ParameterError:
        return False
    return True


def system_block(model, inputs=None, outputs=None, name: str | None = None):
    """Block class of a model given as a path, a model dict or a System (see
    :meth:`SystemBlock.for_model`)."""
    return SystemBlock.for_model(model, inputs, outputs, name)

