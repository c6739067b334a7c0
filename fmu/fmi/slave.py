"""Any :class:`mbdcore.blocks.Block` as an FMI 2.0 co-simulation slave (pythonfmu 0.7.0).

A generated FMU script (see :mod:`fmu.fmi.build`) holds nothing but::

    class Oscillator(BlockSlave):
        BLOCK = DampedOscillator

:class:`BlockSlave` maps the block contract onto FMI:

=====================  ===========================================================
Block                  FMI 2.0
=====================  ===========================================================
``PARAMETERS``         causality="parameter", variability="fixed", start = default
``INPUTS``             causality="input", variability="continuous", start, min, max
``OUTPUTS``            causality="output", variability="continuous", initial="calculated"
``FEEDTHROUGH``        ``<ModelStructure>`` dependencies
``get_state``          ``fmi2GetFMUstate`` / ``fmi2SerializeFMUstate`` (whole state)
``InputError``         value rejected, error logged, next ``fmi2DoStep`` → fmi2Discard
``StepError``          state rolled back, error logged, ``fmi2DoStep`` → fmi2Discard
                       (also for an output not finite or outside its range); its
                       ``retry`` → ``fmi2GetBooleanStatus(fmi2Terminated)``
``StateError``         saved state refused field by field, ``fmi2SetFMUstate`` → fmi2Error
``ParameterError``     error logged, ``fmi2ExitInitializationMode`` → fmi2Error
=====================  ===========================================================

Error reporting
---------------
:mod:`fmu.fmi.build` replaces pythonfmu's binary by the wrapper ``fmu/fmi/native/flexcosim_fmi2.c``,
which turns an exception into ``fmi2Error`` with the traceback logged and keeps the
instance usable.  The pythonfmu 0.7.0 binary, still used where the wrapper cannot be
compiled, turns *any* exception into ``fmi2Fatal`` and, before returning, drops its
references to the Python slave object (``PySlaveInstance::handle_py_exception`` →
``cleanPyObject``); later calls on that instance use freed objects (a segmentation
fault was observed after a failing ``do_step``).  It never returns ``fmi2Error``: the
only non-fatal failure it can report is ``fmi2Discard`` from ``fmi2DoStep`` when
``do_step`` returns ``False``.  So that an FMU behaves the same with either binary,
nothing here lets an exception escape:

* every problem is queued with :meth:`Fmi2Slave.log` at status ``fmi2Error``; the
  binary hands the queue to the host's logger callback at the end of the same FMI
  call (pythonfmu's only if the host instantiated with ``loggingOn=fmi2True``, the
  wrapper in any case);
* the call itself returns ``fmi2OK`` (setters, ``fmi2ExitInitializationMode``) and
  the failure surfaces as ``fmi2Discard`` of the next ``fmi2DoStep``, which refuses
  to advance while an input is rejected or the parameters are invalid (the wrapper
  returns ``fmi2Error`` from the setter, getter or ``fmi2ExitInitializationMode`` that
  logged an error);
* a Python warning raised inside a call is logged at ``fmi2Warning`` (it would
  otherwise go to the host process's stderr);
* ``_set_fmu_state`` returns ``False`` for a state it refuses, which the wrapper
  reports as ``fmi2Error`` of ``fmi2SetFMUstate``.

A master should therefore install a logger callback and treat logged messages with
status ``fmi2Error`` as failures of the call that produced them.
"""
from __future__ import annotations

import functools
import json
import math
import re
import sys
import warnings
from typing import Any, Callable, Mapping
from xml.etree.ElementTree import Element, SubElement

import numpy as np
from pythonfmu import (
    Fmi2Causality,
    Fmi2Initial,
    Fmi2Slave,
    Fmi2Variability,
    Integer,
    Real,
    String,
)
from pythonfmu.default_experiment import DefaultExperiment
from pythonfmu.enums import Fmi2Status

from mbdcore.blocks import (
    Block,
    InputError,
    Parameter,
    ParameterError,
    Signal,
    StepError,
)

__all__ = ["BlockSlave", "si_base_exponents", "STATE_OPTIONS"]

#: Capability flags every block FMU has (the whole state is saved and serialized).
STATE_OPTIONS = {"canGetAndSetFMUstate": True, "canSerializeFMUstate": True}

#: Format of the FMU state dictionary; bump when its layout changes.
_STATE_FORMAT = 2  # 2: OdeBlock states carry auto_substeps (issue 22)

# -- units ------------------------------------------------------------------------------

#: SI base-unit exponents of the unit symbols a block may use.  FMI 2.0 counts the
#: radian as a base unit so that rad/s and 1/s stay distinguishable.
_SYMBOLS: dict[str, dict[str, int]] = {
    "1": {},
    "kg": {"kg": 1}, "m": {"m": 1}, "s": {"s": 1}, "A": {"A": 1}, "K": {"K": 1},
    "mol": {"mol": 1}, "cd": {"cd": 1}, "rad": {"rad": 1},
    "N": {"kg": 1, "m": 1, "s": -2},
    "J": {"kg": 1, "m": 2, "s": -2},
    "W": {"kg": 1, "m": 2, "s": -3},
    "Pa": {"kg": 1, "m": -1, "s": -2},
    "Hz": {"s": -1},
    "V": {"kg": 1, "m": 2, "s": -3, "A": -1},
    "Ohm": {"kg": 1, "m": 2, "s": -3, "A": -2},
    "H": {"kg": 1, "m": 2, "s": -2, "A": -2},
    "C": {"s": 1, "A": 1},
    "Wb": {"kg": 1, "m": 2, "s": -2, "A": -1},
}
_BASE_ORDER = ("kg", "m", "s", "A", "K", "mol", "cd", "rad")
_FACTOR = re.compile(r"^([A-Za-z]+|1)(-?\d+)?$")


def si_base_exponents(unit: str) -> dict[str, int]:
    """SI base-unit exponents of an FMI unit string.

    Parameters
    ----------
    unit : str
        Unit in FMI notation: factors joined by ``.``, each a symbol with an optional
        integer exponent (``m2``, ``s-1``), a ``/`` before every divisor
        (``"N.m.s/rad"``, ``"rad/s2"``, ``"kg.m2"``).  ``""`` and ``"1"`` mean
        dimensionless.

    Returns
    -------
    dict of str to int
        Non-zero exponents of kg, m, s, A, K, mol, cd, rad, e.g.
        ``{"kg": 1, "m": 2, "s": -1, "rad": -1}`` for ``"N.m.s/rad"``.

    Raises
    ------
    ValueError
        If a factor is malformed or its symbol unknown (prefixes such as ``mm`` are
        not accepted: blocks use plain SI).
    """
    exponents = dict.fromkeys(_BASE_ORDER, 0)
    if unit in ("", "1"):
        return {}
    for position, part in enumerate(unit.split("/")):
        sign = 1 if position == 0 else -1
        for factor in part.split("."):
            match = _FACTOR.match(factor)
            if match is None or match.group(1) not in _SYMBOLS:
                raise ValueError(f"unit {unit!r}: cannot read factor {factor!r}; known symbols "
                                 f"are {', '.join(_SYMBOLS)}")
            power = int(match.group(2) or 1) * sign
            for base, exponent in _SYMBOLS[match.group(1)].items():
                exponents[base] += exponent * power
    return {base: e for base, e in exponents.items() if e != 0}


def _fmi_unit(unit: str) -> str:
    # A Real without a unit would leave a host guessing; "1" states "dimensionless".
    return unit or "1"


# -- FMU state <-> JSON -----------------------------------------------------------------

def _to_plain(obj: Any) -> Any:
    """Turn a block state into JSON data that converts back to the same types and bits.

    numpy arrays and tuples are tagged so that :func:`_from_plain` rebuilds them; Python
    floats are written with ``repr``, which round-trips every double exactly.
    """
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biuf":
            raise TypeError(f"cannot save an array of dtype {obj.dtype} in an FMU state")
        return {"__ndarray__": obj.tolist(), "dtype": obj.dtype.str, "shape": list(obj.shape)}
    if isinstance(obj, Mapping):
        if all(isinstance(k, str) and not k.startswith("__") for k in obj):
            return {k: _to_plain(v) for k, v in obj.items()}
        return {"__items__": [[_to_plain(k), _to_plain(v)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"__tuple__": [_to_plain(v) for v in obj]}
    if isinstance(obj, list):
        return [_to_plain(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    if obj is None or isinstance(obj, str):
        return obj
    raise TypeError(f"cannot save a {type(obj).__name__} in an FMU state")


def _from_plain(obj: Any) -> Any:
    """Inverse of :func:`_to_plain`."""
    if isinstance(obj, dict):
        if "__ndarray__" in obj:
            return np.array(obj["__ndarray__"], dtype=np.dtype(obj["dtype"])).reshape(obj["shape"])
        if "__tuple__" in obj:
            return tuple(_from_plain(v) for v in obj["__tuple__"])
        if "__items__" in obj:
            return {_from_plain(k): _from_plain(v) for k, v in obj["__items__"]}
        return {k: _from_plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_from_plain(v) for v in obj]
    return obj


# -- the slave --------------------------------------------------------------------------

#: Module namespaces of FMU scripts, see BlockSlave.__init_subclass__.
_NAMESPACES_KEPT_ALIVE: list[dict] = []

_FMI_TYPE = {float: "Real", int: "Integer", str: "String"}
_VARIABLE_CLASS = {"Real": Real, "Integer": Integer, "String": String}


def _never_raises(fallback: Callable[..., Any]):
    """Decorate an FMI callback so that an unexpected exception is logged, not raised.

    See the module docstring: an exception reaching the pythonfmu 0.7.0 binary is
    fatal for the instance.  ``fallback(self, *args)`` gives the value to return.
    """
    def decorate(method):
        @functools.wraps(method)
        def guarded(self, *args):
            # A warning (numpy's overflow, a model leaving its range) goes to the host's
            # logger as fmi2Warning, not to the host process's stderr.
            with warnings.catch_warnings(record=True) as caught:
                try:
                    return method(self, *args)
                except Exception as exc:  # noqa: BLE001 - nothing may reach the binary
                    self._error(f"{method.__name__} failed: {type(exc).__name__}: {exc}")
                    return fallback(self, *args)
                finally:
                    for w in caught:
                        self.log(f"{self.instance_name}: {w.category.__name__}: {w.message}",
                                 Fmi2Status.warning)
        return guarded
    return decorate


class _Variable:
    """What the slave knows about one value reference."""

    __slots__ = ("name", "fmi_type", "causality", "spec")

    def __init__(self, name: str, fmi_type: str, causality: str, spec: Signal | Parameter):
        self.name = name
        self.fmi_type = fmi_type
        self.causality = causality
        self.spec = spec


class BlockSlave(Fmi2Slave):
    """FMI 2.0 co-simulation slave around the block class ``BLOCK``.

    Subclasses set ``BLOCK`` (a :class:`~mbdcore.blocks.Block` subclass) and may set the
    pythonfmu class attributes ``description``, ``author``, ``version``,
    ``default_experiment``.  Without ``default_experiment`` the experiment runs from
    0 s to ``BLOCK.DEFAULT_STOP_TIME`` (default 1 s) with communication step
    ``BLOCK.DEFAULT_STEP_SIZE`` (default 1e-3 s).

    The block is built with its default parameters when the slave is instantiated
    and rebuilt from the parameter values set by the host when they changed
    (in ``fmi2ExitInitializationMode``, or when an output is read during
    initialisation), carrying over the inputs already set.
    """

    BLOCK: type[Block] = Block

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        # pythonfmu 0.7.0's fmi2Instantiate (findClass) executes the FMU script again in
        # the module's namespace and then Py_DECREFs that namespace, a borrowed
        # reference: one reference too few per instantiation, so the module dict is
        # freed under the interpreter (segfault on the second instance or at the next
        # garbage collection).  That re-execution creates this class again, so holding
        # one reference per class creation makes up for exactly what it takes (with
        # the native wrapper of fmu.fmi.build it only holds a namespace that lives anyway).
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__") != cls.__module__:
            frame = frame.f_back  # skip ABCMeta.__new__ and the like
        if frame is not None:
            _NAMESPACES_KEPT_ALIVE.append(frame.f_globals)

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        block_class = self.BLOCK
        if not (isinstance(block_class, type) and issubclass(block_class, Block)) \
                or block_class is Block:
            raise TypeError(f"{type(self).__name__}.BLOCK must be a Block subclass, "
                            f"not {block_class!r}")
        if self.description is None and block_class.__doc__:
            self.description = block_class.__doc__.strip().splitlines()[0]
        self.default_experiment = DefaultExperiment(
            start_time=0.0,
            stop_time=float(getattr(block_class, "DEFAULT_STOP_TIME", 1.0)),
            step_size=float(getattr(block_class, "DEFAULT_STEP_SIZE", 1e-3)))

        # Raw values set by the host, validated when the block is (re)built.
        self._params: dict[str, Any] = {p.name: p.default for p in block_class.PARAMETERS}
        self._params_dirty = False
        self._start_time = 0.0
        self._initialized = False
        self._init_error: str | None = None
        self._rejected: dict[str, str] = {}      # input name -> why its last value was refused
        self._block: Block = block_class()       # defaults are valid by the block's contract
        self._version = 0                        # bumped whenever outputs may change
        self._cached: tuple[int, dict[str, float]] | None = None
        self._failure: tuple | None = None       # the last refused step, see _failed

        self._variables: dict[int, _Variable] = {}
        self._named: dict[str, _Variable] = {}      # the same, by name (every get and set)
        for p in block_class.PARAMETERS:
            self._register(p.name, self._parameter_type(p), "parameter", p)
        for s in block_class.INPUTS:
            self._register(s.name, "Real", "input", s)
        for s in block_class.OUTPUTS:
            self._register(s.name, "Real", "output", s)

    # -- registration ---------------------------------------------------------------
    @staticmethod
    def _parameter_type(p: Parameter) -> str:
        fmi_type = _FMI_TYPE.get(p.kind)
        if fmi_type is None:
            raise TypeError(f"parameter {p.name!r}: default of type {p.kind.__name__} has no "
                            "FMI type here (use float, int or str)")
        return fmi_type

    def _register(self, name: str, fmi_type: str, causality: str, spec) -> None:
        if name in self._named:
            raise ValueError(f"{self.BLOCK.__name__}: the name {name!r} is used twice among "
                             "parameters, inputs and outputs")
        kwargs: dict[str, Any] = dict(
            causality=getattr(Fmi2Causality, causality),
            description=self._description(spec) or None,
            getter=lambda: self._get_value(name),
            setter=lambda value: self._set_value(name, value))
        if causality == "parameter":
            kwargs["variability"] = Fmi2Variability.fixed
        elif causality == "input":
            kwargs["variability"] = Fmi2Variability.continuous
        else:
            kwargs["variability"] = Fmi2Variability.continuous
            kwargs["initial"] = Fmi2Initial.calculated
        var = _VARIABLE_CLASS[fmi_type](name, **kwargs)
        self.register_variable(var, nested=False)
        self._variables[var.value_reference] = _Variable(name, fmi_type, causality, spec)
        self._named[name] = self._variables[var.value_reference]

    @staticmethod
    def _description(spec: Signal | Parameter) -> str:
        text = spec.description
        # min/max in the XML cannot say "one of" or "strictly greater than".
        if isinstance(spec, Parameter) and (spec.choices is not None or spec.exclusive_min):
            text = f"{text} ({spec.accepted()})".strip()
        return text

    # -- logging ----------------------------------------------------------------------
    def _error(self, message: str) -> None:
        self.log(f"{self.instance_name}: {message}", Fmi2Status.error)

    # -- values -----------------------------------------------------------------------
    def _outputs(self) -> dict[str, float]:
        # Outputs change only through inputs, steps, state restores and rebuilds, all of
        # which bump _version; reading n outputs then costs one block.outputs() call.
        if self._cached is None or self._cached[0] != self._version:
            if not self._initialized and self._params_dirty:
                self._rebuild()
            self._cached = (self._version, {k: float(v) for k, v in self._block.outputs().items()})
        return self._cached[1]

    def _get_value(self, name: str) -> Any:
        var = self._by_name(name)
        if var.causality == "parameter":
            return self._params[name]
        if var.causality == "input":
            return self._block.inputs[name]
        return self._outputs()[name]

    def _set_value(self, name: str, value: Any) -> None:
        var = self._by_name(name)
        if var.causality == "output":
            self._error(f"output {name!r} cannot be set; value {value!r} ignored")
        elif var.causality == "parameter":
            self._set_parameter(var, value)
        else:
            self._set_input(name, value)

    def _by_name(self, name: str) -> _Variable:
        return self._named[name]

    def _set_parameter(self, var: _Variable, value: Any) -> None:
        if self._initialized:
            # variability="fixed": the value is frozen once initialisation is over.
            self._error(f"parameter {var.name!r} is fixed after initialization; "
                        f"value {value!r} ignored (it stays {self._params[var.name]!r})")
            return
        try:
            var.spec.validate(value)
        except ParameterError as exc:
            # Kept anyway: fmi2ExitInitializationMode reports it again and refuses to run.
            self._error(str(exc))
        self._params[var.name] = value
        self._params_dirty = True
        self._version += 1

    def _set_input(self, name: str, value: float) -> None:
        old = self._block.inputs[name]
        try:
            self._block.set_input(name, value)
        except InputError as exc:
            self._rejected[name] = str(exc)
            self._error(f"{exc}; input {name!r} keeps {old!r} and fmi2DoStep is refused "
                        f"until a valid value is set")
            return
        self._rejected.pop(name, None)
        self._version += 1

    def _changed_parameters(self) -> str:
        """The parameters the host set away from their defaults, as ``name = value``."""
        changed = [f"{p.name} = {self._params[p.name]!r}" for p in self.BLOCK.PARAMETERS
                   if self._params[p.name] != p.default]
        return ", ".join(changed) or "all parameters at their defaults"

    def _rebuild(self) -> bool:
        """Build the block from the host's parameter values; False (logged) if invalid.

        Besides a :class:`ParameterError` (which names the parameter), a block that
        cannot be built from values each in its range (an exception, or non-finite
        initial outputs: e.g. a length of 1e308) is refused with the parameters the host
        changed, since no single one of them is at fault.
        """
        why = None
        try:
            block = self.BLOCK(**self._params)
            if block.time != self._start_time:
                block.reset(self._start_time)
            block.set_inputs(self._block.inputs)
            bad = sorted(k for k, v in block.outputs().items() if not math.isfinite(float(v)))
            if bad:
                why = (f"its initial outputs {', '.join(map(repr, bad))} are not finite with the "
                       f"parameters {self._changed_parameters()}; choose values that give a "
                       f"finite initial state")
        except ParameterError as exc:
            why = str(exc)
        except Exception as exc:  # noqa: BLE001 - reported as a parameter problem
            why = (f"{type(exc).__name__}: {exc} (with the parameters "
                   f"{self._changed_parameters()})")
        if why is not None:
            self._init_error = why
            self._error(f"{self.BLOCK.__name__} cannot be built: {why}")
            return False
        self._block = block
        self._params_dirty = False
        self._init_error = None
        self._version += 1
        return True

    # -- FMI callbacks ------------------------------------------------------------------
    @_never_raises(lambda self, *args: None)
    def setup_experiment(self, start_time: float, stop_time=None, tolerance=None):
        self._start_time = float(start_time)
        if self._block.time != self._start_time:
            self._block.reset(self._start_time)
            self._version += 1

    @_never_raises(lambda self, *args: None)
    def exit_initialization_mode(self):
        # The block is built here from the final parameter values, so that a problem is
        # reported (logged at fmi2Error, which the wrapper returns) by this call.
        self._rebuild()
        self._initialized = self._init_error is None

    @_never_raises(lambda self, *args: False)
    def do_step(self, current_time: float, step_size: float) -> bool:
        refused = self._step_refused(current_time, step_size)
        if refused:
            self._error(refused)
            self._failed(current_time, step_size, refused, retry=False)
            return False
        # The block restores its state on any failure (the Block contract, kept by
        # Block.__init_subclass__), a non-finite or out-of-range output included.
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self._block.do_step(current_time, step_size)
            for w in caught:        # a model leaving its range: logged, the step stands
                self.log(f"{self.instance_name}: t = {current_time + step_size!r} s: "
                         f"{w.message}", Fmi2Status.warning)
        except Exception as exc:  # noqa: BLE001 - see module docstring
            cause = str(exc) if isinstance(exc, StepError) else f"{type(exc).__name__}: {exc}"
            self._error(f"step from t = {current_time!r} s by h = {step_size!r} s failed, "
                        f"state kept: {cause}")
            self._failed(current_time, step_size, cause,
                         retry=isinstance(exc, StepError) and exc.retry)
            return False
        finally:
            self._version += 1
        self._failure = None
        return True

    def _step_refused(self, current_time: float, step_size: float) -> str:
        """Why a step cannot even be tried ("" if it can)."""
        if self._init_error is not None:
            return f"step refused at t = {current_time!r} s: {self._init_error}"
        if not self._initialized:
            return "step refused: fmi2ExitInitializationMode has not succeeded"
        if self._rejected:
            why = "; ".join(self._rejected.values())
            return f"step refused at t = {current_time!r} s: {why}"
        if not (step_size > 0.0 and math.isfinite(step_size)):
            return f"step refused: step size {step_size!r} s is not a positive number"
        return ""

    def _failed(self, current_time: float, step_size: float, why: str, retry: bool) -> None:
        """Record a refused step for :meth:`_terminated`: the model cannot go on if the
        step cannot pass at any size, or if this very step (same time, size, inputs,
        parameters) was refused already, since the same step fails the same way again."""
        attempt = (current_time, step_size, tuple(sorted(self._block.inputs.items())),
                   tuple(sorted(map(str, self._params.items()))))
        repeated = self._failure is not None and self._failure[0] == attempt
        terminated = not retry or repeated
        if repeated and retry:
            why = f"the same step was refused twice unchanged: {why}"
        self._failure = (attempt, terminated, why)

    @_never_raises(lambda self, *args: True)
    def _terminated(self) -> bool:
        """fmi2GetBooleanStatus(fmi2Terminated): True when the last step was refused and
        the model cannot go on (a hard limit; the step refused again unchanged), False
        when a shorter step may pass or no step was refused (logged either way)."""
        if self._failure is None:
            return False
        _, terminated, why = self._failure
        if terminated:
            self.log(f"{self.instance_name}: fmi2Terminated = true: the model cannot go on "
                     f"from t = {self._block.time!r} s ({why})", Fmi2Status.error)
        else:
            self.log(f"{self.instance_name}: fmi2Terminated = false: the refused step may pass "
                     f"with a shorter communication step", Fmi2Status.ok)
        return terminated

    @_never_raises(lambda self, *args: math.nan)
    def _fmu_time(self) -> float:
        """The time the slave is at: where the next fmi2DoStep must start."""
        return float(self._block.time)

    def _nan_list(self, vrs, *args):
        return [math.nan] * len(vrs)

    @_never_raises(_nan_list)
    def get_real(self, vrs):
        return [float(self._get_checked(vr, "Real", math.nan)) for vr in vrs]

    @_never_raises(lambda self, vrs, *args: [0] * len(vrs))
    def get_integer(self, vrs):
        return [int(self._get_checked(vr, "Integer", 0)) for vr in vrs]

    @_never_raises(lambda self, vrs, *args: [False] * len(vrs))
    def get_boolean(self, vrs):
        return [bool(self._get_checked(vr, "Boolean", False)) for vr in vrs]

    @_never_raises(lambda self, vrs, *args: [""] * len(vrs))
    def get_string(self, vrs):
        return [str(self._get_checked(vr, "String", "")) for vr in vrs]

    def _get_checked(self, vr: int, fmi_type: str, missing: Any) -> Any:
        var = self._variables.get(vr)
        if var is None or var.fmi_type != fmi_type:
            self._error(f"no {fmi_type} variable has value reference {vr}")
            return missing
        try:
            value = self._get_value(var.name)
        except Exception as exc:  # noqa: BLE001 - one bad output must not hide the others
            self._error(f"{var.causality} {var.name!r} cannot be computed: "
                        f"{type(exc).__name__}: {exc}")
            return missing
        # A non-finite output of a static law's inputs (omega1_ref = 1e308) is returned as
        # it is, not as fmi2Error: fmpy reads the outputs once more after a step it was
        # told ends the run, and an error there would turn a clean stop into an exception.
        # No step with such inputs passes (Block.output_violation).
        return value

    @_never_raises(lambda self, *args: None)
    def set_real(self, vrs, values):
        self._set_checked(vrs, values, "Real")

    @_never_raises(lambda self, *args: None)
    def set_integer(self, vrs, values):
        self._set_checked(vrs, values, "Integer")

    @_never_raises(lambda self, *args: None)
    def set_boolean(self, vrs, values):
        self._set_checked(vrs, values, "Boolean")

    @_never_raises(lambda self, *args: None)
    def set_string(self, vrs, values):
        self._set_checked(vrs, values, "String")

    def _set_checked(self, vrs, values, fmi_type: str) -> None:
        for vr, value in zip(vrs, values):
            var = self._variables.get(vr)
            if var is None or var.fmi_type != fmi_type:
                self._error(f"no {fmi_type} variable has value reference {vr}; "
                            f"value {value!r} ignored")
                continue
            self._set_value(var.name, value)

    # -- FMU state --------------------------------------------------------------------
    @_never_raises(lambda self, *args: None)
    def _get_fmu_state(self) -> dict:
        """Whole slave state as JSON-ready data (the binary keeps this object)."""
        return {
            "format": _STATE_FORMAT,
            "block_class": f"{self.BLOCK.__module__}.{self.BLOCK.__qualname__}",
            "params": _to_plain(self._params),
            "params_dirty": self._params_dirty,
            "block_params": _to_plain(self._block.params),
            "start_time": self._start_time,
            "initialized": self._initialized,
            "init_error": self._init_error,
            "rejected": dict(self._rejected),
            "block_state": _to_plain(self._block.get_state()),
        }

    @_never_raises(lambda self, *args: False)
    def _set_fmu_state(self, state: dict) -> bool:
        """Restore a state from :meth:`_get_fmu_state`; False (logged) if it is not one."""
        expected = f"{self.BLOCK.__module__}.{self.BLOCK.__qualname__}"
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT \
                or state.get("block_class") != expected:
            self._error(f"FMU state not restored: it was not saved by a {expected} FMU "
                        f"(state format {_STATE_FORMAT})")
            return False
        # Everything is read and checked before the slave changes: a refused state leaves
        # the instance as it was (it could otherwise be left half restored and unusable).
        try:
            block_params, params, fields = self._read_slave_fields(state)
            block_state = _from_plain(state["block_state"])
        except (KeyError, TypeError, ValueError) as exc:
            self._error(f"FMU state not restored: it is incomplete or malformed "
                        f"({type(exc).__name__}: {exc}); the instance is unchanged")
            return False
        block = self._block
        fresh = block_params != block.params
        saved = None if fresh else block.get_state()
        try:
            if fresh:
                block = self.BLOCK(**block_params)
            # field by field: types, shapes, finite numbers, ranges, finite outputs
            block.set_state(block_state)
        except Exception as exc:  # noqa: BLE001 - any failure refuses the state
            if saved is not None:
                block.set_state(saved)
            self._error(f"FMU state not restored: {type(exc).__name__}: {exc}; the instance "
                        f"is unchanged (t = {self._block.time!r} s)")
            return False
        # Only now, with everything read, does the slave change.
        self._block = block
        self._params = params
        (self._params_dirty, self._start_time, self._initialized, self._init_error,
         self._rejected) = fields
        self._failure = None
        self._version += 1
        return True

    def _read_slave_fields(self, state: dict) -> tuple[dict, dict, tuple]:
        """The slave's own fields of a saved state, each checked (ValueError or
        TypeError naming the field): the parameters, as set by the host and as the block
        was built with, are the declared ones with accepted values; the flags are
        booleans; the start time is finite; the refused inputs are inputs."""
        declared = {p.name: p for p in self.BLOCK.PARAMETERS}
        block_params = _from_plain(state["block_params"])
        params = _from_plain(state["params"])
        for what, values in (("block_params", block_params), ("params", params)):
            if not isinstance(values, dict) or set(values) != set(declared):
                raise ValueError(f"{what} must hold the parameters {sorted(declared)}")
        block_params = {k: declared[k].validate(v) for k, v in block_params.items()}
        flags = {k: state[k] for k in ("params_dirty", "initialized")}
        for name, flag in flags.items():
            if not isinstance(flag, bool):
                raise TypeError(f"{name} = {flag!r} is not a boolean")
        start_time = state["start_time"]
        if isinstance(start_time, bool) or not isinstance(start_time, (int, float)) \
                or not math.isfinite(start_time):
            raise ValueError(f"start_time = {start_time!r} is not a finite number")
        init_error, rejected = state["init_error"], state["rejected"]
        if init_error is not None and not isinstance(init_error, str):
            raise TypeError(f"init_error = {init_error!r} is not a message")
        if not isinstance(rejected, dict) or not set(rejected) <= set(self.BLOCK.input_names()) \
                or not all(isinstance(v, str) for v in rejected.values()):
            raise ValueError(f"rejected = {rejected!r} does not map inputs to messages")
        fields = (flags["params_dirty"], float(start_time), flags["initialized"], init_error,
                  dict(rejected))
        return block_params, params, fields

    @staticmethod
    def _fmu_state_to_bytes(state: dict) -> bytes:
        # allow_nan: a NaN input rejected earlier may sit in a message, and a block may
        # hold inf legitimately (a limit); Python's json reads these back.
        return json.dumps(state, allow_nan=True).encode("utf-8")

    @staticmethod
    def _fmu_state_from_bytes(state: bytes) -> dict | None:
        try:
            return json.loads(state.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None  # _set_fmu_state logs that this is not a state

    # -- model description ------------------------------------------------------------
    def to_xml(self, model_options: Mapping[str, Any] | None = None) -> Element:
        """pythonfmu's model description completed to pass ``fmpy.validation``.

        Adds units (and ``<UnitDefinitions>``), ranges and exact start values to the
        Real variables and replaces ``<ModelStructure>`` with one that states the
        block's direct feedthrough.
        """
        inputs = set(self.BLOCK.input_names())
        for output, sources in self.BLOCK.FEEDTHROUGH.items():
            if output not in self.BLOCK.output_names() or not set(sources) <= inputs:
                raise ValueError(f"{self.BLOCK.__name__}.FEEDTHROUGH[{output!r}] = {sources!r} "
                                 "must map an output to inputs")
        root = super().to_xml(dict(STATE_OPTIONS, **(model_options or {})))
        variables = root.find("ModelVariables")
        index = {sv.get("name"): i + 1 for i, sv in enumerate(variables)}
        by_name = {v.name: v for v in self._variables.values()}

        units: list[str] = []
        for sv in variables:
            var = by_name[sv.get("name")]
            spec = var.spec
            typed = sv[0]
            if var.fmi_type == "Real":
                unit = _fmi_unit(spec.unit)
                if unit not in units:
                    units.append(unit)
                typed.set("unit", unit)
            # an output's range is physical: a step that leaves it is refused
            if var.fmi_type in ("Real", "Integer"):
                number = float if var.fmi_type == "Real" else int
                if spec.min is not None:
                    typed.set("min", repr(number(spec.min)))
                if spec.max is not None:
                    typed.set("max", repr(number(spec.max)))
            if var.fmi_type == "Real" and getattr(spec, "nominal", None) is not None:
                typed.set("nominal", repr(float(spec.nominal)))
            # pythonfmu writes 16 significant digits; repr is the shortest exact form.
            if var.causality == "parameter" and var.fmi_type == "Real":
                typed.set("start", repr(float(spec.default)))
            elif var.causality == "input":
                typed.set("start", repr(float(spec.start)))

        definitions = Element("UnitDefinitions")
        for unit in units:
            SubElement(SubElement(definitions, "Unit", name=unit), "BaseUnit",
                       {base: str(e) for base, e in si_base_exponents(unit).items()})
        # Schema order: CoSimulation, UnitDefinitions, TypeDefinitions, LogCategories, ...
        root.insert(list(root).index(root.find("CoSimulation")) + 1, definitions)

        root.remove(root.find("ModelStructure"))
        structure = SubElement(root, "ModelStructure")
        outputs = [v for v in self._variables.values() if v.causality == "output"]
        parameters = [index[v.name] for v in self._variables.values() if v.causality == "parameter"]
        if outputs:
            outputs_node = SubElement(structure, "Outputs")
            initial_node = Element("InitialUnknowns")
            for var in sorted(outputs, key=lambda v: index[v.name]):
                direct = sorted(index[name] for name in self.BLOCK.FEEDTHROUGH.get(var.name, ()))
                SubElement(outputs_node, "Unknown", index=str(index[var.name]),
                           dependencies=" ".join(map(str, direct)))
                # At initialisation the knowns are the inputs and the initial="exact"
                # parameters; the initial state may depend on any parameter.
                initial = sorted(set(direct) | set(parameters))
                SubElement(initial_node, "Unknown", index=str(index[var.name]),
                           dependencies=" ".join(map(str, initial)))
            structure.append(initial_node)
        return root
