"""What differs between the FMI versions a co-simulation FMU may speak, as the master
uses them through fmpy (:class:`FmiApi`: :data:`FMI2`, :data:`FMI3`): which variable
types are exchanged as numbers, the fmpy call that reads or writes each, how an instance
is initialised and stepped and how its state is saved.  :class:`~fmu.cosim.fmu_component.
FMUComponent` holds one and is otherwise the same for both."""

from __future__ import annotations

import itertools
import math
from ctypes import byref
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["FmiApi", "FMI2", "FMI3", "fmi_api", "FMI2_DISCARD", "array_shape", "element_names"]

#: fmi2Status / fmi3Status fmi2Discard (the same number in both)
FMI2_DISCARD = 2
#: fmi2StatusKind fmi2LastSuccessfulTime, fmi2Terminated
_FMI2_LAST_SUCCESSFUL_TIME, _FMI2_TERMINATED = 2, 3

_FMI3_INTEGERS = tuple(f"{u}Int{n}" for u in ("", "U") for n in (8, 16, 32, 64))


@dataclass(frozen=True)
class FmiApi:
    """One FMI version as the master uses it (through fmpy's FMU2Slave / FMU3Slave)."""

    version: str
    #: variable types exchanged as floats between components
    numeric_types: tuple[str, ...]
    #: the type of a float signal (one call reads a block of them)
    real_type: str
    #: types whose min/max the master checks
    ranged_types: tuple[str, ...]
    #: types whose values are whole numbers
    integer_types: tuple[str, ...]
    #: the type an Enumeration is read and written as
    enumeration_access: str
    #: names of the state calls of fmpy's slave: get, set, free, serialize, deserialize
    state_calls: tuple[str, str, str, str, str]
    #: the raw C call that overwrites a state in place (snapshot without allocation)
    get_state_raw: str
    #: one step, ``do_step(fmu, t, h)``: None, or the time the FMU reached if it asks to
    #: end the simulation with a successful step (FMI 3.0's terminateSimulation; FMI 2.0
    #: says so with fmi2Discard, see :meth:`discard_terminates`) -- a function per
    #: version, no test of the version on the stepping path
    do_step: Callable

    def access_type(self, vtype: str) -> str:
        """The type ``vtype`` is read and written as."""
        return self.enumeration_access if vtype == "Enumeration" else vtype

    def getter(self, access: str) -> str:
        return {"Real": "getReal", "Integer": "getInteger"}.get(access, f"get{access}")

    def setter(self, access: str) -> str:
        return {"Real": "setReal", "Integer": "setInteger"}.get(access, f"set{access}")

    def convert(self, vtype: str, value: Any) -> Any:
        """``value`` as a value of FMI type ``vtype`` (a parameter given by the user)."""
        if vtype in self.integer_types or vtype == "Enumeration":
            if isinstance(value, bool) or not float(value).is_integer():
                raise ValueError(f"{value!r} is not an integer")
            return int(value)
        if vtype == "Boolean":
            return bool(value)
        if vtype == "String":
            return str(value)
        return float(value)

    def connectable(self, v) -> bool:
        """A numeric variable: a scalar, or an FMI 3.0 array whose every element is
        connected as a signal of its own (:func:`element_names`)."""
        return v.type in self.numeric_types

    def declared_range(self, v) -> tuple[float, float] | None:
        """(min, max) of a variable from its declaration or declared type."""
        if v.type not in self.ranged_types:
            return None
        dt = getattr(v, "declaredType", None)
        lo = v.min if v.min is not None else getattr(dt, "min", None)
        hi = v.max if v.max is not None else getattr(dt, "max", None)
        if lo is None and hi is None:
            return None
        return (-math.inf if lo is None else float(lo), math.inf if hi is None else float(hi))

    # -- the calls that differ -----------------------------------------------------------
    def start(self, fmu, t0: float, stop_time: float | None) -> None:
        """From instantiated into initialization mode at ``t0``."""
        if self.version == "2.0":
            fmu.setupExperiment(startTime=t0, stopTime=stop_time)
            fmu.enterInitializationMode()
        else:
            fmu.enterInitializationMode(startTime=t0, stopTime=stop_time)

    def discard_terminates(self, fmu) -> tuple[bool, float | None]:
        """After fmi2Discard: (fmi2Terminated, fmi2LastSuccessfulTime), False where the FMU
        cannot tell.  FMI 3.0 has no such status: a discarded step is a failure."""
        if self.version != "2.0":
            return False, None
        try:
            terminated = bool(fmu.getBooleanStatus(_FMI2_TERMINATED))
        except Exception:
            return False, None
        try:
            reached = float(fmu.getRealStatus(_FMI2_LAST_SUCCESSFUL_TIME))
        except Exception:
            reached = None
        return terminated, reached

    def snapshot(self, fmu, snap):
        """The FMU's state written into ``snap`` (a handle, allocated on first use)."""
        if snap is None:
            if self.version == "2.0":
                from fmpy.fmi2 import fmi2FMUstate as handle
            else:
                from fmpy.fmi3 import fmi3FMUState as handle
            snap = handle()
        getattr(fmu, self.get_state_raw)(fmu.component, byref(snap))
        return snap

    def state_call(self, fmu, which: str) -> Callable:
        index = ("get", "set", "free", "serialize", "deserialize").index(which)
        return getattr(fmu, self.state_calls[index])


def _do_step_fmi2(fmu, t: float, h: float) -> None:
    fmu.doStep(currentCommunicationPoint=t, communicationStepSize=h)


def _do_step_fmi3(fmu, t: float, h: float) -> float | None:
    _, terminate, _, reached = fmu.doStep(currentCommunicationPoint=t, communicationStepSize=h)
    return float(reached) if terminate else None


FMI2 = FmiApi(
    version="2.0", numeric_types=("Real", "Integer", "Enumeration", "Boolean"),
    real_type="Real", ranged_types=("Real", "Integer"), integer_types=("Integer",),
    enumeration_access="Integer",
    state_calls=("getFMUstate", "setFMUstate", "freeFMUstate", "serializeFMUstate",
                 "deSerializeFMUstate"),
    get_state_raw="fmi2GetFMUstate", do_step=_do_step_fmi2)

FMI3 = FmiApi(
    version="3.0",
    numeric_types=("Float64", "Float32", *_FMI3_INTEGERS, "Enumeration", "Boolean"),
    real_type="Float64", ranged_types=("Float64", "Float32", *_FMI3_INTEGERS),
    integer_types=_FMI3_INTEGERS, enumeration_access="Int64",
    state_calls=("getFMUState", "setFMUState", "freeFMUState", "serializeFMUState",
                 "deserializeFMUState"),
    get_state_raw="fmi3GetFMUState", do_step=_do_step_fmi3)


def array_shape(v) -> tuple[int, ...] | None:
    """The shape of an FMI 3.0 array variable (each dimension a fixed ``start`` or a
    structural parameter's start value), or None for a scalar."""
    dims = getattr(v, "dimensions", None)
    if not dims:
        return None
    shape = []
    for d in dims:
        size = d.start if d.start is not None else getattr(d.variable, "start", None)
        try:
            shape.append(int(size))
        except (TypeError, ValueError):
            raise ValueError(f"array variable {v.name!r}: a dimension of unknown size "
                             f"({size!r})") from None
    return tuple(shape)


def element_names(name: str, shape: tuple[int, ...]) -> list[str]:
    """The signals of an array variable's elements, in FMI 3.0's serialization order
    (row-major), indexed from 1 as FMI's structured names are: ``theta[1]``,
    ``theta[2]``; ``A[1,1]``, ``A[1,2]``, ..."""
    return [f"{name}[{','.join(map(str, index))}]"
            for index in itertools.product(*(range(1, n + 1) for n in shape))]


def fmi_api(fmi_version: str) -> FmiApi | None:
    """The API of an FMU's ``fmiVersion`` ("2.0", "3.0", "3.0-beta..." read as 3.0), or
    None."""
    if fmi_version == "2.0":
        return FMI2
    if fmi_version.startswith("3."):
        return FMI3
    return None
