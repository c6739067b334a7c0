"""Blocks: systems with named inputs, outputs, parameters, state and a step.

A plant, a controller and a trajectory generator are the same kind of thing here (as in
Drake's systems framework, where plants and controllers are systems with named input and
output ports wired into a diagram): something with named inputs and outputs that can be
stepped over a communication interval.  The co-simulation master runs blocks and
FMUs side by side, and ``fmu.fmi.slave`` wraps any block as an FMI 2.0 co-simulation FMU,
so a controller moves from a tuning script into an FMU without being rewritten.

This module knows nothing of FMI.

Contract
--------
* ``INPUTS`` / ``OUTPUTS`` declare the signals (name, SI unit, description, start).
* ``PARAMETERS`` declare the constructor keywords (name, default, unit, range).  A
  value outside its range raises :class:`ParameterError` naming the parameter, its
  value and the accepted range.
* ``FEEDTHROUGH`` maps an output name to the inputs it depends on *directly* (at the
  same time instant).  Outputs not listed depend on the state only.
* ``set_input`` rejects NaN/Inf and out-of-range values with :class:`InputError`; the
  state is not touched.
* ``do_step(t, h)`` advances the state from ``t`` to ``t + h`` with the inputs held
  constant.  On failure it raises :class:`StepError` and leaves the state as it was.
  A step is checked by its *outputs* too, once for every block (``Block.__init_subclass__``
  wraps each class's ``do_step``): an output that is not finite or lies outside its
  declared range (``Signal.min``/``max``) makes the step a failed one (StepError, state
  restored), since a host would otherwise take a NaN torque as a result.
* ``get_state`` / ``set_state`` copy the whole internal state (numbers only), so a
  step can be rolled back and repeated bit for bit.  ``set_state`` checks what it is
  given field by field against the block's own state (same keys, types and array
  shapes, finite numbers, inputs in their ranges, the model's hard limits) and raises
  :class:`StateError` naming the field, the block unchanged: a saved state may come
  from a file or a host.
"""
from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

__all__ = ["BlockError", "ParameterError", "InputError", "StepError", "StateError",
           "ModelRangeWarning",
           "Signal", "Parameter", "with_overrides", "Block", "StateVectorBlock", "VectorState",
           "check_state_like"]


class BlockError(RuntimeError):
    """Base class of the errors a block reports."""


class ParameterError(ValueError):
    """A parameter value is invalid (the message names it and the accepted range)."""


class InputError(ValueError):
    """An input value is invalid: not finite or out of its declared range."""


class StepError(BlockError):
    """A step could not be taken (divergence, solver failure); the state is unchanged.

    ``retry`` says whether the same step cut shorter may succeed: True (the default)
    for a failure of the integration (a non-finite state, an error estimate beyond
    tolerance, a solver that did not converge), False where the model itself cannot go
    on from here with these inputs (a hard limit of the model, an output outside its
    declared range).  An FMU answers
    ``fmi2GetBooleanStatus(fmi2Terminated)`` from it.  ``variable`` names the output
    at fault, if one is.
    """

    def __init__(self, message: str, retry: bool = True, variable: str | None = None):
        super().__init__(message)
        self.retry = bool(retry)
        self.variable = variable


class StateError(ValueError):
    """A state given to ``set_state`` is not one of this block's (the message names the
    field and what was expected); the block is unchanged."""


class ModelRangeWarning(UserWarning):
    """The state has left the range where the model is accurate (issued once per run; an
    FMU logs it with status fmi2Warning)."""


@dataclass(frozen=True)
class Signal:
    """A named input or output.

    Parameters
    ----------
    name : str
        Signal name, a valid identifier.
    unit : str
        SI unit in FMI notation (``"N.m"``, ``"rad/s"``, ``"m"``); ``""`` if dimensionless.
    description : str
        One line of text.
    start : float
        Value before the first step (inputs) or before initialisation (outputs).
    min, max : float or None
        Accepted range of an input, physical range of an output (a step whose output
        leaves it fails); ``None`` means unbounded.
    nominal : float or None
        The input's size in normal use (FMI ``nominal``): what a host scales by, and
        the scale beyond which the model's own validity checks speak.
    """

    name: str
    unit: str = ""
    description: str = ""
    start: float = 0.0
    min: float | None = None
    max: float | None = None
    nominal: float | None = None


@dataclass(frozen=True)
class Parameter:
    """A constructor parameter of a block.

    Parameters
    ----------
    name : str
        Keyword name.
    default : float, int or str
        Default value.
    unit : str
        SI unit in FMI notation, ``""`` if dimensionless.
    description : str
        One line of text.
    min, max : float or None
        Accepted closed range for numbers (``None``: unbounded).
    exclusive_min : bool
        If true the lower bound itself is not accepted (for example a length > 0).
    choices : tuple of str or None
        Accepted values of a string parameter.
    aliases : tuple of (str, value) pairs
        Names accepted for values of a number parameter (``("auto", 0)`` for
        ``substeps``); the parameter holds the value, an FMU's variable too.
    """

    name: str
    default: Any
    unit: str = ""
    description: str = ""
    min: float | None = None
    max: float | None = None
    exclusive_min: bool = False
    choices: tuple | None = None
    aliases: tuple = ()

    @property
    def kind(self) -> type:
        return type(self.default)

    def accepted(self) -> str:
        """Human-readable accepted range."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        lo = "-inf" if self.min is None else repr(self.min)
        hi = "inf" if self.max is None else repr(self.max)
        left = "(" if (self.exclusive_min or self.min is None) else "["
        right = "]" if self.max is not None else ")"
        kind = "integer" if self.kind is int else "number"
        named = "".join(f" or {name!r} (= {value!r})" for name, value in self.aliases)
        return f"a finite {kind} in {left}{lo}, {hi}{right}{named}"

    def validate(self, value: Any) -> Any:
        """Return ``value`` converted to the parameter's type, or raise ParameterError."""
        bad = ParameterError(
            f"parameter {self.name!r} = {value!r} is invalid: accepted values are "
            f"{self.accepted()}"
            + (f" [{self.unit}]" if self.unit else ""))
        if self.choices is not None:
            if value not in self.choices:
                raise bad
            return value
        if isinstance(value, str) and value in dict(self.aliases):
            value = dict(self.aliases)[value]
        if self.kind is int:
            try:
                whole = float(value).is_integer()
            except (TypeError, ValueError, OverflowError):
                raise bad from None
            if isinstance(value, bool) or not whole:
                raise bad
            value = int(value)
        else:
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise bad from None
            if not math.isfinite(value):
                raise bad
        if self.min is not None and (value < self.min or (self.exclusive_min and value == self.min)):
            raise bad
        if self.max is not None and value > self.max:
            raise bad
        return value


def with_overrides(defaults: Mapping[str, Any], overrides: Mapping[str, Any], what: str) -> dict:
    """``defaults`` updated by ``overrides``; an unknown key raises ParameterError naming
    it and the accepted keys (``what`` names the model, e.g. "slider-crank")."""
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise ParameterError(f"unknown {what} parameter(s) {unknown}; accepted: "
                             f"{sorted(defaults)}")
    return {**defaults, **overrides}


def _checked_step(step: Callable) -> Callable:
    """``step`` (a class's own ``do_step``) made into the contract's step: the state is
    restored when it raises, and a step whose outputs are not finite or outside their
    declared ranges is a failed one (StepError, state restored).  A subclass's
    ``do_step`` that calls ``super().do_step`` is checked once, at the outside."""
    @functools.wraps(step)
    def do_step(self: "Block", t: float, h: float) -> None:
        if self.__dict__.get("_in_step"):
            return step(self, t, h)
        # The inputs are held over a step and _get_internal returns a copy: the time and
        # the internal state are all a step changes, taken without get_state's deep copy
        # (which cost 65 % of a joint PD's step and 12 % of the arm's, every step).
        time_before, internal_before = self.time, self._get_internal()
        self._in_step = True
        try:
            step(self, t, h)
            bad = self._bad_output()
        except BaseException:
            self._roll_back(time_before, internal_before)
            raise
        finally:
            self._in_step = False
        if bad:
            self._roll_back(time_before, internal_before)
            raise StepError(f"step [{t:.6g}, {t + h:.6g}] s of {type(self).__name__} failed: "
                            f"{bad[1]}; state kept at t = {self.time:.6g} s", retry=False,
                            variable=bad[0])
    do_step.checks_outputs = True
    return do_step


class Block:
    """Base class of every block (see the module docstring for the contract)."""

    INPUTS: tuple[Signal, ...] = ()
    OUTPUTS: tuple[Signal, ...] = ()
    PARAMETERS: tuple[Parameter, ...] = ()
    FEEDTHROUGH: Mapping[str, tuple[str, ...]] = {}

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        # One check of every step's outputs, whatever the class's own do_step does.
        step = cls.__dict__.get("do_step")
        if step is not None and not getattr(step, "checks_outputs", False):
            cls.do_step = _checked_step(step)

    def __init__(self, **params: Any):
        declared = {p.name: p for p in self.PARAMETERS}
        unknown = sorted(set(params) - set(declared))
        if unknown:
            raise ParameterError(
                f"unknown parameter(s) {', '.join(map(repr, unknown))} for "
                f"{type(self).__name__}; accepted: {', '.join(declared)}")
        self.params: dict[str, Any] = {
            name: p.validate(params.get(name, p.default)) for name, p in declared.items()}
        self._input_spec = {s.name: s for s in self.INPUTS}
        self.inputs: dict[str, float] = {s.name: float(s.start) for s in self.INPUTS}
        self.time = 0.0

    # -- inputs and outputs ---------------------------------------------------------
    @classmethod
    def input_names(cls) -> list[str]:
        return [s.name for s in cls.INPUTS]

    @classmethod
    def output_names(cls) -> list[str]:
        return [s.name for s in cls.OUTPUTS]

    def set_input(self, name: str, value: float) -> None:
        """Set one input; raises InputError (state untouched) if it is not acceptable."""
        spec = self._input_spec.get(name)
        if spec is None:
            raise InputError(f"{type(self).__name__} has no input {name!r}; "
                             f"inputs: {', '.join(self._input_spec)}")
        value = float(value)
        if not math.isfinite(value):
            raise InputError(f"input {name!r} = {value!r} is not finite")
        if (spec.min is not None and value < spec.min) or (spec.max is not None and value > spec.max):
            raise InputError(f"input {name!r} = {value!r} is outside its range "
                             f"[{spec.min}, {spec.max}] {spec.unit}")
        self.inputs[name] = value

    def set_inputs(self, values: Mapping[str, float]) -> None:
        """Set several inputs at once; all are checked before any is applied."""
        staged = dict(self.inputs)
        saved = self.inputs
        self.inputs = staged
        try:
            for k, v in values.items():
                self.set_input(k, v)
        except Exception:
            self.inputs = saved
            raise

    def output(self, name: str) -> float:
        """Value of one output at the current time."""
        return float(self.outputs()[name])

    def outputs(self) -> dict[str, float]:
        """All outputs at the current time, by name."""
        raise NotImplementedError

    def output_violation(self) -> str:
        """Why the current outputs are not a result ("" if they are): an output that is
        not finite or outside its declared range (``Signal.min``/``max``), named with its
        value and range."""
        bad = self._bad_output()
        return bad[1] if bad else ""

    def _bad_output(self) -> tuple[str, str] | None:
        """(name, why) of the first output that is not a result, or None."""
        values = self.outputs()
        for spec in self.OUTPUTS:
            value = float(values[spec.name])
            if not math.isfinite(value):
                return spec.name, f"output {spec.name!r} = {value!r} is not finite"
            if (spec.min is not None and value < spec.min) or \
                    (spec.max is not None and value > spec.max):
                return spec.name, (f"output {spec.name!r} = {value!r} {spec.unit} is outside "
                                   f"its range [{spec.min}, {spec.max}]")
        return None

    # -- time stepping -----------------------------------------------------------------
    def reset(self, t0: float = 0.0) -> None:
        """Return to the initial state at time ``t0`` (inputs keep their values)."""
        self.time = float(t0)

    @_checked_step
    def do_step(self, t: float, h: float) -> None:
        """Advance from ``t`` to ``t + h`` with the inputs held; StepError on failure."""
        self.time = t + h

    # -- state ----------------------------------------------------------------------
    def get_state(self) -> dict:
        """A deep copy of everything that evolves: time, inputs and internal state."""
        return copy.deepcopy({"time": self.time, "inputs": self.inputs,
                              "internal": self._get_internal()})

    def set_state(self, state: Mapping) -> None:
        """Restore a state returned by :meth:`get_state`, checked field by field against
        this block's own (:class:`StateError` naming the field; the block unchanged)."""
        own = self.get_state()
        check_state_like(own, state, "state")
        state = copy.deepcopy(dict(state))
        for name, value in state["inputs"].items():
            spec = self._input_spec[name]
            if (spec.min is not None and value < spec.min) or \
                    (spec.max is not None and value > spec.max):
                raise StateError(f"state['inputs'][{name!r}] = {value!r} is outside the "
                                 f"input's range [{spec.min}, {spec.max}] {spec.unit}")
        try:
            self._restore(state)
            why = self._internal_violation()
        except Exception as exc:
            self._restore(own)
            raise StateError(f"state refused: {type(exc).__name__}: {exc}") from None
        if why:
            self._restore(own)
            raise StateError(f"state refused: {why}")

    def _restore(self, state: Mapping) -> None:
        """Restore a state known to be well formed (a copy this block made)."""
        state = copy.deepcopy(dict(state))
        self.time = float(state["time"])
        self.inputs = dict(state["inputs"])
        self._set_internal(state["internal"])

    def _internal_violation(self) -> str:
        """Why the internal state just restored is beyond the model's hard limits ("" if
        it is not); blocks with such limits say so."""
        return ""

    def _roll_back(self, time: float, internal: Any) -> None:
        """Back to the time and internal state taken before a step."""
        self.time = time
        self._set_internal(internal)

    def _get_internal(self) -> Any:
        """The internal state (numbers only) as a copy: nothing the block changes later
        may be shared with it, since a step's rollback restores it as it is."""
        return None

    def _set_internal(self, internal: Any) -> None:
        pass

    # -- the state as a named flat vector ------------------------------------------------
    def vector_state(self) -> "VectorState":
        """The block's state as a named flat vector (as MuJoCo's ``mjData`` holds a
        model's state): its names and how to read and write it.  Linearisation and the
        python-control adapters work on it for every block alike.

        A block without internal state has an empty one; a block that keeps internal
        state must say how it maps (:class:`StateVectorBlock` and every block of this
        project do), else TypeError names it.
        """
        if self._get_internal() is None:
            return VectorState([], lambda block: np.zeros(0), lambda block, x: None)
        raise TypeError(f"{type(self).__name__} keeps internal state but declares no "
                        "vector_state()")


class StateVectorBlock(Block):
    """A block whose whole internal state is one vector ``x``.

    Subclasses implement ``_advance(x, t, h) -> x_new`` (inputs held); a non-finite
    result raises StepError and keeps the state."""

    x: np.ndarray

    def _advance(self, x: np.ndarray, t: float, h: float) -> np.ndarray:
        raise NotImplementedError

    def do_step(self, t: float, h: float) -> None:
        with np.errstate(all="ignore"):
            x = self._advance(self.x, t, h)
        if not np.all(np.isfinite(x)):
            raise StepError(f"step [{t:.6g}, {t + h:.6g}] s of {type(self).__name__} gave a "
                            f"non-finite state; state kept at t = {self.time:.6g} s")
        self.x = x
        self.time = t + h

    def _get_internal(self):
        return {"x": self.x.copy()}

    def _set_internal(self, internal):
        self.x = np.array(internal["x"], dtype=float)

    def state_names(self) -> list[str]:
        """Names of the entries of ``x`` (subclasses name them by their physics)."""
        return [f"x{i}" for i in range(len(self.x))]

    def vector_state(self) -> "VectorState":
        def set_x(block, x):
            block._set_internal({"x": x})
        return VectorState(self.state_names(), lambda block: block.x.copy(), set_x)


def check_state_like(own: Any, given: Any, path: str) -> None:
    """Check ``given`` field by field against ``own`` (a state of the same block):
    the same keys, the same types, arrays of the same shape, finite numbers; a field
    that is ``None`` on one side (a history not yet begun) is checked for finite
    numbers only, and a list of another length (a history of another depth) element by
    element against the first of ``own``.  StateError names the first bad field."""
    def bad(what: str) -> StateError:
        return StateError(f"{path} {what}")
    if own is None or given is None:
        if given is not None:
            _check_finite(given, path)
        return
    if isinstance(own, Mapping):
        if not isinstance(given, Mapping):
            raise bad(f"is a {type(given).__name__}, expected a mapping")
        if set(own) != set(given):
            missing, extra = sorted(map(str, set(own) - set(given))), \
                sorted(map(str, set(given) - set(own)))
            raise bad(f"has the wrong fields (missing {missing}, unexpected {extra})")
        for key in own:
            check_state_like(own[key], given[key], f"{path}[{key!r}]")
        return
    if isinstance(own, np.ndarray):
        if not isinstance(given, np.ndarray):
            raise bad(f"is a {type(given).__name__}, expected an array")
        if given.shape != own.shape:
            raise bad(f"has shape {given.shape}, expected {own.shape}")
        if given.dtype.kind not in "biuf" or (own.dtype.kind == "f") != (given.dtype.kind == "f"):
            raise bad(f"has dtype {given.dtype}, expected {own.dtype}")
        _check_finite(given, path)
        return
    if isinstance(own, (list, tuple)):
        if type(given) is not type(own):
            raise bad(f"is a {type(given).__name__}, expected a {type(own).__name__}")
        if len(given) == len(own):
            for i, (o, g) in enumerate(zip(own, given)):
                check_state_like(o, g, f"{path}[{i}]")
        elif own:
            for i, g in enumerate(given):
                check_state_like(own[0], g, f"{path}[{i}]")
        else:
            _check_finite(given, path)
        return
    if isinstance(own, (bool, np.bool_)):
        if not isinstance(given, (bool, np.bool_)):
            raise bad(f"= {given!r} is not a boolean")
        return
    if isinstance(own, (int, np.integer)):
        if isinstance(given, (bool, np.bool_)) or not isinstance(given, (int, np.integer)):
            raise bad(f"= {given!r} is not an integer")
        return
    if isinstance(own, (float, np.floating)):
        if isinstance(given, (bool, np.bool_)) or not isinstance(given, (float, int, np.number)):
            raise bad(f"= {given!r} is not a number")
        _check_finite(given, path)
        return
    if type(given) is not type(own):
        raise bad(f"is a {type(given).__name__}, expected a {type(own).__name__}")


def _check_finite(value: Any, path: str) -> None:
    """StateError if any number in ``value`` (nested containers included) is not finite."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _check_finite(v, f"{path}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite(v, f"{path}[{i}]")
    elif isinstance(value, np.ndarray):
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise StateError(f"{path} holds non-finite values")
        if value.dtype.kind not in "biuf":
            raise StateError(f"{path} has dtype {value.dtype}, expected numbers")
    elif isinstance(value, (float, np.floating)) and not math.isfinite(value):
        raise StateError(f"{path} = {value!r} is not finite")


class VectorState:
    """How a block's internal state maps to a flat vector (python-control adapters,
    linearisation).

    Parameters
    ----------
    names : sequence of str
        State names.
    get : callable(block) -> array
    set : callable(block, array) -> None
    """

    def __init__(self, names: Sequence[str], get: Callable, set: Callable):
        self.names = list(names)
        self.get = get
        self.set = set
