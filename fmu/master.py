"""Co-simulation master: Python blocks and FMI 2.0 co-simulation FMUs stepped together.

A plant, a controller and a drive model meet one interface here (see
../shared/STYLE.md, "Drake"): a *component* has named inputs and outputs, a
direct-feedthrough map and a step.  :class:`BlockComponent` wraps a
:class:`mbdcore.blocks.Block`, :class:`FMUComponent` wraps an FMU through fmpy, and
a :class:`System` wires components by name (``"plant.theta" -> "ctrl.theta"``).
:class:`Master` runs a system with a fixed communication step.

Communication point
-------------------
At every communication point ``t_k = t0 + k*h`` the outputs are propagated to the
connected inputs in topological order of the direct-feedthrough graph, so a
controller with feedthrough (``tau = -K theta``) sees the plant output of the same
instant, and every recorded row is consistent.  A cycle through feedthrough (an
algebraic loop) cannot be ordered; it is rejected when the master is built.

Stepping
--------
* ``"jacobi"``: every component steps ``t_k -> t_k + h`` from the inputs of ``t_k``.
* ``"gauss-seidel"``: components step one after the other; the new outputs of a
  component are passed on to the components that step after it.  The default
  order puts data sources first and breaks feedback cycles at components without
  feedthrough (typically plants), see :meth:`Master.default_order`.

Failures
--------
An exception of a block, an FMI status worse than fmi2Warning, an error message an
FMU logs during a call that returned fmi2OK (pythonfmu-based slaves such as
:mod:`fmu.slave` report rejected inputs that way) or a non-finite output stops the
run with :class:`CosimError`, which names the component, the variable if known and
the time, and carries the rows recorded so far and the FMU's log.
"""
from __future__ import annotations

import heapq
import math
import shutil
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from mbdcore.blocks import Block

__all__ = [
    "AlgebraicLoopError", "BlockComponent", "Component", "ComponentError", "CosimError",
    "FMUComponent", "Master", "Result", "System",
]


# ---------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------
class ComponentError(RuntimeError):
    """A component call failed.

    Parameters
    ----------
    message : str
        What went wrong.
    variable : str or None
        The variable concerned, if known.
    log : list of str
        Log messages of the component (FMU logger) up to the failure.
    """

    def __init__(self, message: str, variable: str | None = None, log: Sequence[str] = ()):
        super().__init__(message)
        self.variable = variable
        self.log = list(log)


class CosimError(RuntimeError):
    """The co-simulation stopped because a component failed.

    Attributes
    ----------
    component : str
        Name of the failing component.
    variable : str or None
        Variable concerned (an input that was rejected, a NaN output), if known.
    time : float
        Simulation time of the failure [s]: the communication point at which the
        failing call was made (the start of the failed step).
    result : Result
        Rows recorded up to and including the last complete communication point.
    log : list of str
        Log messages of the failing component.
    """

    def __init__(self, message: str, component: str, variable: str | None, time: float,
                 result: "Result", log: Sequence[str] = ()):
        super().__init__(message)
        self.component = component
        self.variable = variable
        self.time = time
        self.result = result
        self.log = list(log)


class AlgebraicLoopError(ValueError):
    """Outputs depend on themselves through direct feedthrough (an algebraic loop)."""

    def __init__(self, message: str, loop: Sequence[str]):
        super().__init__(message)
        self.loop = list(loop)


# ---------------------------------------------------------------------------------
# components
# ---------------------------------------------------------------------------------
class Component:
    """Interface of everything the master can step.

    Subclasses set ``name``, ``inputs``, ``outputs``, ``feedthrough`` and ``units``
    and implement the methods below.  The master uses the positional fast paths
    (:meth:`input_setter`, :meth:`get_output_values`); the name-based
    :meth:`set_inputs` / :meth:`get_outputs` are for users.

    Attributes
    ----------
    name : str
        Instance name, unique in a :class:`System`; no ``"."``.
    inputs, outputs : tuple of str
        Variable names.
    feedthrough : dict of str to tuple of str
        Output name -> input names it depends on directly (at the same instant).
    units : dict of str to str
        Variable name -> unit (FMI notation, ``""`` if dimensionless).
    log : collections.deque of str
        Log messages (FMU logger callback), newest last.
    """

    name: str
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    feedthrough: dict[str, tuple[str, ...]] = {}
    units: dict[str, str] = {}

    def __init__(self, name: str):
        if not isinstance(name, str) or not name or "." in name:
            raise ValueError(f"component name {name!r} must be a non-empty string without '.'")
        self.name = name
        self.log: deque[str] = deque(maxlen=1000)

    # -- lifecycle -------------------------------------------------------------------
    def initialize(self, t0: float, stop_time: float | None = None) -> None:
        """Bring the component to its initial state at ``t0`` [s]."""
        raise NotImplementedError

    def do_step(self, t: float, h: float) -> None:
        """Advance from ``t`` to ``t + h`` [s] with the inputs held; ComponentError on failure."""
        raise NotImplementedError

    def terminate(self) -> None:
        """Release what :meth:`initialize` acquired; safe to call more than once."""

    # -- values ----------------------------------------------------------------------
    def input_setter(self, names: Sequence[str]) -> Callable[[Sequence[float]], None]:
        """A function setting the inputs ``names`` (in this order) from a sequence of values.

        Built once by the master so that per-step calls do no name look-ups.
        """
        raise NotImplementedError

    def get_output_values(self) -> list[float]:
        """All outputs at the current time, in the order of :attr:`outputs`."""
        raise NotImplementedError

    def get_input_values(self) -> list[float]:
        """Current input values, in the order of :attr:`inputs`."""
        raise NotImplementedError

    def set_inputs(self, values: Mapping[str, float]) -> None:
        """Set inputs by name."""
        unknown = [n for n in values if n not in self.inputs]
        if unknown:
            raise ComponentError(f"{self.name!r} has no input(s) {', '.join(map(repr, unknown))}; "
                                 f"inputs: {', '.join(self.inputs)}", variable=unknown[0])
        names = list(values)
        self.input_setter(names)([values[n] for n in names])

    def get_outputs(self) -> dict[str, float]:
        """All outputs at the current time, by name."""
        return dict(zip(self.outputs, self.get_output_values()))

    # -- state -----------------------------------------------------------------------
    def get_state(self) -> Any:
        """An opaque copy of the component state (for rollback)."""
        raise NotImplementedError(f"{type(self).__name__} cannot save its state")

    def set_state(self, state: Any) -> None:
        """Restore a state returned by :meth:`get_state`."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore its state")

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.name!r}, inputs={list(self.inputs)}, "
                f"outputs={list(self.outputs)})")


class BlockComponent(Component):
    """A Python :class:`~mbdcore.blocks.Block` as a co-simulation component.

    Parameters
    ----------
    name : str
        Instance name.
    block : Block
        The block; it is stepped in place.
    """

    def __init__(self, name: str, block: Block):
        super().__init__(name)
        if not isinstance(block, Block):
            raise TypeError(f"component {name!r}: expected a Block, got {type(block).__name__}")
        self.block = block
        self.inputs = tuple(block.input_names())
        self.outputs = tuple(block.output_names())
        self.units = {s.name: s.unit for s in (*block.INPUTS, *block.OUTPUTS)}
        bad = {o: tuple(ins) for o, ins in block.FEEDTHROUGH.items()
               if o not in self.outputs or any(i not in self.inputs for i in ins)}
        if bad:
            raise ValueError(f"{type(block).__name__}.FEEDTHROUGH names unknown variables: {bad}")
        self.feedthrough = {o: tuple(block.FEEDTHROUGH.get(o, ())) for o in self.outputs}

    def initialize(self, t0: float, stop_time: float | None = None) -> None:
        try:
            self.block.reset(t0)
        except Exception as e:
            raise ComponentError(f"reset failed: {type(e).__name__}: {e}") from e

    def do_step(self, t: float, h: float) -> None:
        try:
            self.block.do_step(t, h)
        except Exception as e:
            raise ComponentError(f"do_step failed: {type(e).__name__}: {e}") from e

    def input_setter(self, names: Sequence[str]) -> Callable[[Sequence[float]], None]:
        names = tuple(names)
        for n in names:
            if n not in self.inputs:
                raise ComponentError(f"{self.name!r} has no input {n!r}", variable=n)
        block = self.block

        def set_values(values: Sequence[float]) -> None:
            # All or nothing, as Block.set_inputs, but knowing which input failed.
            saved = block.inputs
            block.inputs = dict(saved)
            for n, v in zip(names, values):
                try:
                    block.set_input(n, v)
                except Exception as e:
                    block.inputs = saved
                    raise ComponentError(f"input {n!r} rejected: {e}", variable=n) from e

        return set_values

    def get_output_values(self) -> list[float]:
        try:
            out = self.block.outputs()
            return [float(out[n]) for n in self.outputs]
        except Exception as e:
            raise ComponentError(f"outputs() failed: {type(e).__name__}: {e}") from e

    def get_input_values(self) -> list[float]:
        return [float(self.block.inputs[n]) for n in self.inputs]

    def get_state(self) -> Any:
        return self.block.get_state()

    def set_state(self, state: Any) -> None:
        self.block.set_state(state)


#: FMI 2.0 types that are exchanged as floats between components.
_NUMERIC_TYPES = ("Real", "Integer", "Enumeration", "Boolean")


class FMUComponent(Component):
    """An FMI 2.0 co-simulation FMU as a component (through fmpy).

    The model description is read when the component is created; the FMU is
    extracted to a temporary directory and instantiated by :meth:`initialize`, and
    freed (directory removed) by :meth:`terminate`, so one component can be run
    several times.

    Parameters
    ----------
    name : str
        Instance name (also passed to ``fmi2Instantiate``).
    fmu_path : str or Path
        The ``.fmu`` file.
    parameters : dict, optional
        Start values by variable name, set in initialization mode.  Each value is
        converted to the variable's type (Real, Integer, Boolean, String).
    feedthrough : dict of str to sequence of str, optional
        Overrides the direct feedthrough read from ``ModelStructure/Outputs`` (for
        FMUs whose model description omits ``dependencies``, which FMI says means
        "depends on every input").
    logging_on : bool
        Passed to ``fmi2Instantiate``; some exporters (pythonfmu) only report the
        cause of an error when it is on.

    Notes
    -----
    Real, Integer, Enumeration and Boolean inputs/outputs are exchanged as floats;
    String variables are not connectable.
    """

    def __init__(self, name: str, fmu_path: str | Path, parameters: Mapping[str, Any] | None = None,
                 feedthrough: Mapping[str, Sequence[str]] | None = None, logging_on: bool = True):
        super().__init__(name)
        from fmpy import read_model_description

        self.fmu_path = Path(fmu_path)
        md = read_model_description(str(self.fmu_path))
        if md.fmiVersion != "2.0" or md.coSimulation is None:
            raise ValueError(f"{self.fmu_path} is not an FMI 2.0 co-simulation FMU "
                             f"(fmiVersion {md.fmiVersion})")
        self.model_description = md
        self.logging_on = bool(logging_on)
        self._vars = {v.name: v for v in md.modelVariables}
        numeric = [v for v in md.modelVariables if v.type in _NUMERIC_TYPES]
        self.inputs = tuple(v.name for v in numeric if v.causality == "input")
        self.outputs = tuple(v.name for v in numeric if v.causality == "output")
        self.units = {v.name: _unit(v) for v in numeric}
        self.feedthrough = self._feedthrough_from(md, feedthrough)

        self.parameters: dict[str, Any] = {}
        for pname, value in (parameters or {}).items():
            v = self._vars.get(pname)
            if v is None or not _settable(v):
                settable = [v.name for v in md.modelVariables if _settable(v)]
                raise ValueError(f"FMU {name!r} ({self.fmu_path.name}) has no settable variable "
                                 f"{pname!r}; settable: {', '.join(settable)}")
            self.parameters[pname] = _convert(v.type, value)

        self._out_read = self._reader(self.outputs)
        self._fmu = None
        self._unzipdir: str | None = None
        self._callbacks = None
        self._fatal = False
        self._errors: list[str] = []  # messages logged with status fmi2Error or worse
        self._state_handles: list = []

    # -- model description -----------------------------------------------------------
    def _feedthrough_from(self, md, override) -> dict[str, tuple[str, ...]]:
        if override is not None:
            ft = {o: tuple(override.get(o, ())) for o in self.outputs}
            for o, ins in override.items():
                if o not in self.outputs or any(i not in self.inputs for i in ins):
                    raise ValueError(f"feedthrough override of {self.name!r} names unknown "
                                     f"variables: {o!r}: {list(ins)}")
            return ft
        declared = {u.variable.name: u.dependencies for u in md.outputs}
        ft = {}
        for o in self.outputs:
            deps = declared.get(o)
            # FMI 2.0: no "dependencies" attribute (or no Unknown) = depends on all inputs.
            if deps is None:
                ft[o] = self.inputs
            else:
                ft[o] = tuple(d.name for d in deps if d.causality == "input")
        return ft

    def _reader(self, names: Sequence[str]) -> Callable[[], list[float]]:
        """A function reading ``names`` with one get call per FMI type."""
        groups = self._groups(names)
        n = len(names)
        if len(groups) == 1 and groups[0][0] == "Real":
            vrs = groups[0][1]
            return lambda: self._fmu.getReal(vrs)

        def read() -> list[float]:
            values = [0.0] * n
            for kind, vrs, pos in groups:
                got = getattr(self._fmu, _GETTERS[kind])(vrs)
                for p, v in zip(pos, got):
                    values[p] = float(v)
            return values

        return read

    def _groups(self, names: Sequence[str]) -> list[tuple[str, list[int], list[int]]]:
        by_kind: dict[str, tuple[list[int], list[int]]] = {}
        for p, n in enumerate(names):
            v = self._vars[n]
            kind = "Integer" if v.type == "Enumeration" else v.type
            vrs, pos = by_kind.setdefault(kind, ([], []))
            vrs.append(v.valueReference)
            pos.append(p)
        return [(k, vrs, pos) for k, (vrs, pos) in by_kind.items()]

    # -- lifecycle -------------------------------------------------------------------
    def _logger(self, env, instance_name, status, category, message) -> None:
        label = ("OK", "WARNING", "DISCARD", "ERROR", "FATAL", "PENDING")[status] \
            if 0 <= status <= 5 else str(status)
        text = message.decode("utf-8", "replace") if message else ""
        cat = category.decode("utf-8", "replace") if category else ""
        line = f"[{label}] {cat + ': ' if cat else ''}{text}"
        self.log.append(line)
        if status >= 3:
            self._errors.append(line)

    def _check_log(self, what: str, names: Sequence[str] = ()) -> None:
        """Raise if the last call logged an error although it returned fmi2OK.

        Exporters that must not fail a call (pythonfmu slaves turn exceptions into
        fmi2Fatal) reject a value by logging an error; see fmu.slave.
        """
        if self._errors:
            errors, self._errors = self._errors, []
            variable = names[0] if len(names) == 1 else next(
                (n for n in names if any(f"'{n}'" in e for e in errors)), None)
            raise ComponentError(f"{what} logged an error: {errors[-1]}", variable=variable,
                                 log=self.log)

    def _fail(self, what: str, e: Exception, variable: str | None = None) -> ComponentError:
        self._errors.clear()  # they are in the log that goes with the error
        status = getattr(e, "status", None)
        if status is not None and status >= 4:  # fmi2Fatal: only fmi2FreeInstance is allowed now
            self._fatal = True
        text, fn = str(e), getattr(e, "function", None)
        # fmpy's FMICallException already reads "fmi2DoStep failed with status 3 (error)."
        msg = what + text[len(fn):] if fn and what.startswith(fn) and text.startswith(fn) \
            else f"{what} failed: {text}"
        return ComponentError(msg, variable=variable, log=self.log)

    def initialize(self, t0: float, stop_time: float | None = None) -> None:
        from ctypes import byref

        from fmpy import calloc, extract, free
        from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE,
                               fmi2CallbackFreeMemoryTYPE, fmi2CallbackFunctions,
                               fmi2CallbackLoggerTYPE)

        self.terminate()
        self.log.clear()
        self._errors.clear()
        md = self.model_description
        self._unzipdir = extract(str(self.fmu_path))
        try:
            cb = fmi2CallbackFunctions()
            cb.logger = fmi2CallbackLoggerTYPE(self._logger)
            cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
            cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
            try:
                # formats the printf-style varargs of the FMU's log calls
                from fmpy.logging import addLoggerProxy
                addLoggerProxy(byref(cb))
            except Exception:  # pragma: no cover - messages then arrive unformatted
                pass
            self._callbacks = cb  # the FMU keeps pointers into it: keep it alive
            fmu = FMU2Slave(guid=md.guid, unzipDirectory=self._unzipdir,
                            modelIdentifier=md.coSimulation.modelIdentifier,
                            instanceName=self.name)
            fmu.instantiate(callbacks=cb, loggingOn=self.logging_on)
            self._fmu = fmu
            self._fatal = False
        except Exception as e:
            self._cleanup()
            raise ComponentError(f"instantiation failed: {e}", log=self.log) from e
        try:
            fmu.setupExperiment(startTime=t0, stopTime=stop_time)
            fmu.enterInitializationMode()
            for pname, value in self.parameters.items():
                v = self._vars[pname]
                try:
                    _set_typed(fmu, v.type, v.valueReference, value)
                except Exception as e:
                    raise self._fail(f"setting parameter {pname!r} = {value!r}", e, pname) from e
            fmu.exitInitializationMode()
            self._check_log("initialization", list(self.parameters))
        except ComponentError:
            self.terminate()
            raise
        except Exception as e:
            err = self._fail("initialization", e)
            self.terminate()
            raise err from e

    def do_step(self, t: float, h: float) -> None:
        try:
            self._fmu.doStep(currentCommunicationPoint=t, communicationStepSize=h)
        except Exception as e:
            raise self._fail("fmi2DoStep", e) from e
        if self._errors:
            self._check_log("fmi2DoStep")

    def terminate(self) -> None:
        fmu = self._fmu
        if fmu is not None:
            self._fmu = None
            try:
                for handle in self._state_handles:
                    fmu.freeFMUstate(handle)
                if not self._fatal:
                    fmu.terminate()
            except Exception:
                pass  # an FMU in error state may refuse; freeing below is still required
            finally:
                self._state_handles.clear()
                fmu.freeInstance()
        self._cleanup()

    def _cleanup(self) -> None:
        if self._unzipdir is not None:
            shutil.rmtree(self._unzipdir, ignore_errors=True)
            self._unzipdir = None
        self._callbacks = None

    # -- values ----------------------------------------------------------------------
    def input_setter(self, names: Sequence[str]) -> Callable[[Sequence[float]], None]:
        names = tuple(names)
        for n in names:
            if n not in self.inputs:
                raise ComponentError(f"{self.name!r} has no input {n!r}", variable=n)
        groups = self._groups(names)
        one = names[0] if len(names) == 1 else None
        if len(groups) == 1 and groups[0][0] == "Real":
            vrs = groups[0][1]

            def set_values(values: Sequence[float]) -> None:
                try:
                    self._fmu.setReal(vrs, values)
                except Exception as e:
                    raise self._fail(f"fmi2SetReal of {', '.join(names)}", e, one) from e
                if self._errors:
                    self._check_log(f"fmi2SetReal of {', '.join(names)}", names)

            return set_values

        def set_mixed(values: Sequence[float]) -> None:
            try:
                for kind, vrs, pos in groups:
                    _set_many(self._fmu, kind, vrs, [values[p] for p in pos])
            except Exception as e:
                raise self._fail(f"setting {', '.join(names)}", e, one) from e
            if self._errors:
                self._check_log(f"setting {', '.join(names)}", names)

        return set_mixed

    def get_output_values(self) -> list[float]:
        try:
            values = self._out_read()
        except Exception as e:
            raise self._fail("reading outputs", e) from e
        if self._errors:
            self._check_log("reading outputs", self.outputs)
        return values

    def get_input_values(self) -> list[float]:
        if self._fmu is not None:
            try:
                return self._reader(self.inputs)()
            except Exception:
                pass  # some FMUs do not allow reading inputs: fall back to start values
        return [_start(self._vars[n]) for n in self.inputs]

    # -- state -----------------------------------------------------------------------
    def get_state(self) -> Any:
        """The FMU state: serialized bytes if the FMU can, otherwise an fmi2FMUstate handle.

        Handles are freed by :meth:`terminate`.
        """
        cs = self.model_description.coSimulation
        if not cs.canGetAndSetFMUstate:
            raise NotImplementedError(f"FMU {self.name!r} cannot get and set its state")
        handle = self._fmu.getFMUstate()
        if cs.canSerializeFMUstate:
            try:
                return bytes(self._fmu.serializeFMUstate(handle))
            finally:
                self._fmu.freeFMUstate(handle)
        self._state_handles.append(handle)
        return handle

    def set_state(self, state: Any) -> None:
        cs = self.model_description.coSimulation
        if not cs.canGetAndSetFMUstate:
            raise NotImplementedError(f"FMU {self.name!r} cannot get and set its state")
        if isinstance(state, (bytes, bytearray)):
            handle = self._fmu.deSerializeFMUstate(state)
            try:
                self._fmu.setFMUstate(handle)
            finally:
                self._fmu.freeFMUstate(handle)
        else:
            self._fmu.setFMUstate(state)


_GETTERS = {"Real": "getReal", "Integer": "getInteger", "Boolean": "getBoolean",
            "String": "getString"}
_SETTERS = {"Real": "setReal", "Integer": "setInteger", "Boolean": "setBoolean",
            "String": "setString"}


def _settable(v) -> bool:
    return v.causality in ("parameter", "input") and v.variability != "constant"


def _unit(v) -> str:
    if getattr(v, "unit", None):
        return v.unit
    dt = getattr(v, "declaredType", None)
    return (getattr(dt, "unit", None) or "") if dt is not None else ""


def _convert(kind: str, value: Any) -> Any:
    if kind == "Real":
        return float(value)
    if kind in ("Integer", "Enumeration"):
        if isinstance(value, bool) or not float(value).is_integer():
            raise ValueError(f"{value!r} is not an integer")
        return int(value)
    if kind == "Boolean":
        return bool(value)
    return str(value)


def _set_typed(fmu, kind: str, vr: int, value: Any) -> None:
    _set_many(fmu, kind, [vr], [value])


def _set_many(fmu, kind: str, vrs: list[int], values: Sequence[Any]) -> None:
    kind = "Integer" if kind == "Enumeration" else kind
    if kind in ("Integer", "Boolean"):
        values = [int(round(v)) for v in values]
    getattr(fmu, _SETTERS[kind])(vrs, values)


def _start(v) -> float:
    if v.start is None:
        return 0.0
    if v.type == "Boolean":
        return float(str(v.start).lower() in ("true", "1"))
    try:
        return float(v.start)
    except (TypeError, ValueError):
        return 0.0


# ---------------------------------------------------------------------------------
# system
# ---------------------------------------------------------------------------------
def _split(ref: str) -> tuple[str, str]:
    comp, dot, var = str(ref).partition(".")
    if not dot or not comp or not var:
        raise ValueError(f"connection end {ref!r} must be written 'component.variable'")
    return comp, var


class System:
    """Components wired by name.

    Parameters
    ----------
    components : sequence of Component
        The components; names must be unique.  Their order is the default tie-break
        of every ordering the master makes.
    connections : dict or sequence of (str, str)
        ``"src.output" -> "dst.input"``.  As a dict the value may also be a list of
        inputs (one output feeding several inputs).  Every input has at most one
        source; unconnected inputs keep their current (start) value.

    Raises
    ------
    ValueError
        Duplicate component names, unknown components or variables, an input used as
        a source or an output as a destination, an input connected twice.
    """

    def __init__(self, components: Sequence[Component],
                 connections: Mapping[str, str | Sequence[str]] | Iterable[tuple[str, str]] = ()):
        self.components: list[Component] = list(components)
        self.by_name: dict[str, Component] = {}
        for c in self.components:
            if not isinstance(c, Component):
                raise TypeError(f"expected a Component, got {type(c).__name__} "
                                "(wrap blocks in BlockComponent, FMUs in FMUComponent)")
            if c.name in self.by_name:
                raise ValueError(f"two components are named {c.name!r}")
            self.by_name[c.name] = c

        pairs: list[tuple[str, str]] = []
        if isinstance(connections, Mapping):
            for src, dst in connections.items():
                for d in ([dst] if isinstance(dst, str) else dst):
                    pairs.append((src, d))
        else:
            pairs = [tuple(p) for p in connections]

        #: destination "comp.input" -> source "comp.output"
        self.connections: dict[str, str] = {}
        for src, dst in pairs:
            sc, sv = self._end(src, "output")
            dc, dv = self._end(dst, "input")
            key = f"{dc}.{dv}"
            if key in self.connections:
                raise ValueError(f"input {key!r} is connected twice: from "
                                 f"{self.connections[key]!r} and from {sc}.{sv!s}")
            self.connections[key] = f"{sc}.{sv}"

    def _end(self, ref: str, kind: str) -> tuple[str, str]:
        comp, var = _split(ref)
        c = self.by_name.get(comp)
        if c is None:
            raise ValueError(f"connection {ref!r}: unknown component {comp!r}; "
                             f"components: {', '.join(self.by_name)}")
        names = c.outputs if kind == "output" else c.inputs
        if var not in names:
            raise ValueError(f"connection {ref!r}: {var!r} is not an {kind} of {comp!r}; "
                             f"{kind}s: {', '.join(names) or '(none)'}")
        return comp, var

    def __repr__(self) -> str:
        return (f"System({[c.name for c in self.components]}, "
                f"{ {v: k for k, v in self.connections.items()} })")


# ---------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------
class Result:
    """Time series of a co-simulation run.

    Attributes
    ----------
    data : numpy.ndarray
        Structured array, field ``"time"`` [s] then ``"comp.var"`` for every output
        and every input of every component; one row per communication point.
    outputs, inputs : list of str
        Field names of the outputs and of the inputs.
    units : dict of str to str
        Field name -> unit.
    """

    def __init__(self, data: np.ndarray, outputs: Sequence[str], inputs: Sequence[str],
                 units: Mapping[str, str] | None = None):
        self.data = data
        self.outputs = list(outputs)
        self.inputs = list(inputs)
        self.units = dict(units or {})

    @property
    def names(self) -> list[str]:
        return list(self.data.dtype.names)

    @property
    def time(self) -> np.ndarray:
        return self.data["time"]

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.data.dtype.names:
            raise KeyError(f"no signal {name!r}; signals: {', '.join(self.data.dtype.names)}")
        return self.data[name]

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        t = self.time
        span = f"t = {t[0]:g} .. {t[-1]:g} s" if len(t) else "empty"
        return f"Result({len(t)} rows, {span}, {len(self.names) - 1} signals)"

    def to_csv(self, path: str | Path) -> Path:
        """Write a CSV file: one header line with the field names, then the rows.

        Values are written with 17 significant digits so they read back bit for bit.
        """
        path = Path(path)
        np.savetxt(path, self.data.view(np.float64).reshape(len(self.data), -1),
                   delimiter=",", header=",".join(self.names), comments="", fmt="%.17g")
        return path

    def plot(self, path: str | Path, signals: Sequence[str] | None = None) -> Path:
        """Plot signals against time into a PNG file (matplotlib Agg, no display needed).

        Parameters
        ----------
        path : str or Path
            PNG file to write.
        signals : sequence of str, optional
            Field names, one subplot each; default: all outputs.
        """
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        signals = list(self.outputs if signals is None else signals)
        for s in signals:
            self[s]  # KeyError naming the bad signal before drawing anything
        n = max(len(signals), 1)
        fig = Figure(figsize=(8, 1.8 * n + 0.8))
        FigureCanvasAgg(fig)  # the Agg canvas, without touching pyplot's global backend
        axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
        for ax, s in zip(axes, signals):
            ax.plot(self.time, self[s])
            unit = self.units.get(s, "")
            ax.set_ylabel(f"{s} [{unit}]" if unit else s)
            ax.grid(True)
        axes[-1].set_xlabel("time [s]")
        fig.tight_layout()
        path = Path(path)
        fig.savefig(path, format="png")
        return path


# ---------------------------------------------------------------------------------
# master
# ---------------------------------------------------------------------------------
class Master:
    """Fixed-step co-simulation of a :class:`System`.

    Parameters
    ----------
    system : System
        Components and connections.
    step : float
        Communication step ``h`` [s], > 0.
    method : {"gauss-seidel", "jacobi"}
        How components are stepped (see the module docstring).
    order : sequence of str, optional
        Gauss–Seidel stepping order (component names, each once); default
        :meth:`default_order`.

    Raises
    ------
    AlgebraicLoopError
        Outputs that depend on themselves through direct feedthrough.
    """

    METHODS = ("gauss-seidel", "jacobi")

    def __init__(self, system: System, step: float, method: str = "gauss-seidel",
                 order: Sequence[str] | None = None):
        step = float(step)
        if not (math.isfinite(step) and step > 0.0):
            raise ValueError(f"communication step {step!r} s must be finite and > 0")
        if method not in self.METHODS:
            raise ValueError(f"method {method!r}: accepted values are {', '.join(self.METHODS)}")
        self.system = system
        self.step = step
        self.method = method
        comps = system.components
        self._index = {c.name: i for i, c in enumerate(comps)}

        # Flat numbering: global output g = out_off[i] + j, global input likewise.
        self._out_off, self._in_off = [], []
        no = ni = 0
        for c in comps:
            self._out_off.append(no)
            self._in_off.append(ni)
            no += len(c.outputs)
            ni += len(c.inputs)
        self._n_out, self._n_in = no, ni
        self._out_names = [f"{c.name}.{o}" for c in comps for o in c.outputs]
        self._in_names = [f"{c.name}.{i}" for c in comps for i in c.inputs]
        self._out_comp = [i for i, c in enumerate(comps) for _ in c.outputs]
        out_index = {n: g for g, n in enumerate(self._out_names)}
        in_index = {n: g for g, n in enumerate(self._in_names)}
        #: global input -> global output feeding it, -1 if unconnected
        self._src = [-1] * ni
        for dst, src in system.connections.items():
            self._src[in_index[dst]] = out_index[src]

        self._topo = self._output_order()
        self._schedule = self._build_schedule()
        self.order = self._check_order(order) if order is not None else self.default_order()

    # -- static analysis ---------------------------------------------------------------
    def _output_preds(self) -> list[list[tuple[int, int]]]:
        """For each global output: (global output, global input) pairs it depends on directly."""
        preds: list[list[tuple[int, int]]] = []
        for i, c in enumerate(self.system.components):
            for o in c.outputs:
                p = []
                for inp in c.feedthrough.get(o, ()):
                    gi = self._in_off[i] + c.inputs.index(inp)
                    if self._src[gi] >= 0:
                        p.append((self._src[gi], gi))
                preds.append(p)
        return preds

    def _output_order(self) -> list[int]:
        """Global outputs in an order where every output follows those it depends on."""
        preds = self._output_preds()
        succ: list[list[int]] = [[] for _ in preds]
        indeg = [0] * len(preds)
        for g, p in enumerate(preds):
            for s, _ in p:
                succ[s].append(g)
                indeg[g] += 1
        # Lowest global index first: keeps the outputs of one component together.
        ready = [g for g, d in enumerate(indeg) if d == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            g = heapq.heappop(ready)
            order.append(g)
            for s in succ[g]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    heapq.heappush(ready, s)
        if len(order) < len(preds):
            raise self._loop_error(preds, [g for g, d in enumerate(indeg) if d > 0])
        return order

    def _loop_error(self, preds, stuck: list[int]) -> AlgebraicLoopError:
        # Walk backwards along dependencies inside the stuck set until a node repeats.
        stuck_set = set(stuck)
        path, seen = [stuck[0]], {stuck[0]: 0}
        via: list[int] = []
        while True:
            g = path[-1]
            s, gi = next((s, gi) for s, gi in preds[g] if s in stuck_set)
            if s in seen:
                start = seen[s]
                outs = path[start:] + [s]
                ins = via[start:] + [gi]
                break
            seen[s] = len(path)
            path.append(s)
            via.append(gi)
        # path follows dependencies backwards; print it in signal-flow direction
        outs, ins = outs[::-1], ins[::-1]
        chain = [self._out_names[outs[0]]]
        for g_in, g_out in zip(ins, outs[1:]):
            chain += [self._in_names[g_in], self._out_names[g_out]]
        comps = list(dict.fromkeys(n.partition(".")[0] for n in chain))
        return AlgebraicLoopError(
            f"algebraic loop through direct feedthrough between components "
            f"{', '.join(map(repr, comps))}: {' -> '.join(chain)}; break it with a component "
            "whose output does not depend directly on its input (a delay or a plant)", chain)

    def _build_schedule(self):
        """Propagation at a communication point: [(component, input setter data, outputs)].

        Consecutive outputs of one component in topological order form one group:
        first the feedthrough inputs of the group are set (their sources are final),
        then the component's outputs are read.  The remaining connected inputs are
        set at the end.
        """
        comps = self.system.components
        groups: list[tuple[int, list[int]]] = []
        for g in self._topo:
            i = self._out_comp[g]
            if groups and groups[-1][0] == i:
                groups[-1][1].append(g)
            else:
                groups.append((i, [g]))
        done: set[int] = set()
        schedule = []
        for i, gs in groups:
            c = comps[i]
            need = []
            for g in gs:
                o = c.outputs[g - self._out_off[i]]
                for inp in c.feedthrough.get(o, ()):
                    gi = self._in_off[i] + c.inputs.index(inp)
                    if self._src[gi] >= 0 and gi not in done:
                        done.add(gi)
                        need.append(gi)
            schedule.append((i, need, gs))
        rest: dict[int, list[int]] = {}
        for gi, s in enumerate(self._src):
            if s >= 0 and gi not in done:
                rest.setdefault(self._in_comp(gi), []).append(gi)
        self._final_inputs = sorted(rest.items())
        return schedule

    def _in_comp(self, gi: int) -> int:
        return next(i for i in range(len(self._in_off) - 1, -1, -1) if self._in_off[i] <= gi)

    def default_order(self) -> list[str]:
        """Gauss–Seidel order: sources before their consumers, cycles broken at plants.

        Kahn's algorithm on the component graph of all connections.  When only
        cycles remain, the first remaining component (in system order) whose outputs
        have no direct feedthrough steps next: its new outputs do not need fresh
        inputs, so the components it feeds can use them.
        """
        comps = self.system.components
        n = len(comps)
        preds = [set() for _ in range(n)]
        for gi, s in enumerate(self._src):
            if s >= 0:
                a, b = self._out_comp[s], self._in_comp(gi)
                if a != b:
                    preds[b].add(a)
        left = list(range(n))
        order: list[int] = []
        while left:
            placed = set(order)
            ready = [i for i in left if preds[i] <= placed]
            if not ready:
                ready = [i for i in left if not any(comps[i].feedthrough.values())] or left
            order.append(ready[0])
            left.remove(ready[0])
        return [comps[i].name for i in order]

    def _check_order(self, order: Sequence[str]) -> list[str]:
        order = list(order)
        names = [c.name for c in self.system.components]
        if sorted(order) != sorted(names):
            raise ValueError(f"order {order} must name every component once: {names}")
        return order

    # -- running -----------------------------------------------------------------------
    def run(self, stop_time: float, start_time: float = 0.0) -> Result:
        """Simulate from ``start_time`` to ``stop_time`` [s].

        ``stop_time - start_time`` must be a whole number of steps; communication
        points are ``t_k = start_time + k*step`` (no accumulated drift).

        Returns
        -------
        Result
            One row per communication point, ``start_time`` and ``stop_time`` included.

        Raises
        ------
        CosimError
            A component failed (exception or FMI error status, rejected input, NaN
            output); ``err.result`` holds the rows up to the last complete point.
        """
        t0, h = float(start_time), self.step
        span = float(stop_time) - t0
        n_steps = int(round(span / h))
        if n_steps < 0 or abs(n_steps * h - span) > 1e-9 * max(1.0, abs(span)):
            raise ValueError(f"stop_time - start_time = {span!r} s is not a whole number "
                             f"of steps of {h!r} s")
        comps = self.system.components
        ncol = 1 + self._n_out + self._n_in
        rows = np.empty((n_steps + 1, ncol))
        rec = [0]  # rows recorded so far (a list so helpers can update it)
        y = [0.0] * self._n_out
        u: list[float] = []

        # Setters are built per run: FMU instances only exist after initialize().
        set_fns = []
        for i, need, gs in self._schedule:
            c = comps[i]
            names = [c.inputs[gi - self._in_off[i]] for gi in need]
            set_fns.append(c.input_setter(names) if need else None)
        final_fns = [(comps[i], gis,
                      comps[i].input_setter([comps[i].inputs[gi - self._in_off[i]] for gi in gis]))
                     for i, gis in self._final_inputs]
        gs_fns = self._gauss_seidel_setters() if self.method == "gauss-seidel" else []
        src = self._src
        out_off = self._out_off
        schedule = self._schedule
        order_idx = [self._index[n] for n in self.order]

        state = {"t": t0, "comp": None, "phase": "initialize"}

        def read(i: int) -> list[float]:
            c = comps[i]
            state["comp"], state["phase"] = c, "reading outputs"
            vals = c.get_output_values()
            if not math.isfinite(sum(vals)):
                for o, v in zip(c.outputs, vals):
                    if not math.isfinite(v):
                        raise ComponentError(f"output {o!r} = {v!r} is not finite", variable=o,
                                             log=c.log)
            return vals

        def propagate() -> None:
            for (i, need, gs), setter in zip(schedule, set_fns):
                if setter is not None:
                    vals = [y[src[gi]] for gi in need]
                    for gi, v in zip(need, vals):
                        u[gi] = v
                    state["comp"], state["phase"] = comps[i], "setting inputs"
                    setter(vals)
                vals = read(i)
                off = out_off[i]
                for g in gs:
                    y[g] = vals[g - off]
            for c, gis, setter in final_fns:
                vals = [y[src[gi]] for gi in gis]
                for gi, v in zip(gis, vals):
                    u[gi] = v
                state["comp"], state["phase"] = c, "setting inputs"
                setter(vals)

        def record(k: int, t: float) -> None:
            row = rows[k]
            row[0] = t
            row[1:1 + len(y)] = y
            row[1 + len(y):] = u
            rec[0] = k + 1

        started = []
        try:
            for c in comps:
                state["comp"] = c
                c.initialize(t0, float(stop_time))
                started.append(c)
            u = [v for c in comps for v in c.get_input_values()]
            propagate()
            record(0, t0)
            for k in range(n_steps):
                t, t_next = t0 + k * h, t0 + (k + 1) * h
                state["t"] = t
                if gs_fns:
                    for i, setter in zip(order_idx, gs_fns):
                        c = comps[i]
                        if setter is not None:
                            gis, fn = setter
                            vals = [y[src[gi]] for gi in gis]
                            state["comp"], state["phase"] = c, "setting inputs"
                            fn(vals)
                        state["comp"], state["phase"] = c, "do_step"
                        c.do_step(t, h)
                        state["t"] = t_next  # the new outputs belong to the end of the step
                        vals = read(i)
                        state["t"] = t
                        y[out_off[i]:out_off[i] + len(vals)] = vals
                else:
                    for i in order_idx:
                        c = comps[i]
                        state["comp"], state["phase"] = c, "do_step"
                        c.do_step(t, h)
                state["t"] = t_next
                propagate()
                record(k + 1, t_next)
        except Exception as e:
            c = state["comp"]
            variable = getattr(e, "variable", None)
            log = list(getattr(e, "log", None) or (c.log if c is not None else []))
            where = f" at t = {state['t']:.12g} s"
            var = f", variable {c.name}.{variable}" if (c is not None and variable) else ""
            name = c.name if c is not None else "?"
            msg = f"component {name!r} failed in {state['phase']}{where}{var}: {e}"
            if log:
                msg += "\nlog of " + repr(name) + ":\n  " + "\n  ".join(log[-20:])
            raise CosimError(msg, name, variable, state["t"], self._result(rows[:rec[0]]),
                             log) from e
        finally:
            for c in started:
                try:
                    c.terminate()
                except Exception:
                    pass  # the run's outcome (or its error) matters more than cleanup noise
        return self._result(rows)

    def _gauss_seidel_setters(self):
        """Per component in stepping order: inputs fed by components that stepped before it."""
        comps = self.system.components
        stepped: set[int] = set()
        out = []
        for name in self.order:
            i = self._index[name]
            c = comps[i]
            gis = [self._in_off[i] + j for j in range(len(c.inputs))
                   if self._src[self._in_off[i] + j] >= 0
                   and self._out_comp[self._src[self._in_off[i] + j]] in stepped]
            out.append((gis, c.input_setter([c.inputs[gi - self._in_off[i]] for gi in gis]))
                       if gis else None)
            stepped.add(i)
        return out

    def _result(self, rows: np.ndarray) -> Result:
        names = ["time"] + self._out_names + self._in_names
        dtype = np.dtype([(n, np.float64) for n in names])
        data = np.ascontiguousarray(rows).view(dtype).reshape(len(rows))
        units = {}
        for c in self.system.components:
            for v in (*c.outputs, *c.inputs):
                units[f"{c.name}.{v}"] = c.units.get(v, "")
        units["time"] = "s"
        return Result(data.copy(), self._out_names, self._in_names, units)
