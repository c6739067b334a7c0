"""Co-simulation master: Python blocks and FMI 2.0 co-simulation FMUs stepped together.

A plant, a controller and a drive model meet one interface here (the Drake pattern:
components with named ports, wired by name into a diagram and stepped by a simulator): a
*component* has named inputs and outputs, a direct-feedthrough map and a step.
:class:`BlockComponent` wraps a :class:`mbdcore.blocks.Block`, :class:`FMUComponent`
wraps an FMU through fmpy, and a :class:`System` wires components by name
(``"plant.theta" -> "ctrl.theta"``).  :class:`Master` runs a system with a fixed
communication step.

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

Input extrapolation
-------------------
FMI 2.0 inputs are held constant over a step.  With ``extrapolation=0`` an input
holds the value of its source at ``t_k``.  With ``extrapolation=1`` an input whose
source has not stepped yet (all inputs under Jacobi) holds the mean over the step
of the line through the source's last two communication points,
``y_k + (h/2) (y_k - y_{k-1}) / h_{k-1}``: exact in the integral of a linearly
varying signal, so two integrators coupled this way are the Adams–Bashforth-2
scheme.  The first step has no history and holds ``y_0``.  The recorded inputs
are the values of their sources at the communication point, consistent with the
recorded outputs.

Variable step
-------------
With a :class:`StepControl` the master estimates the coupling error of each step
from how far every connected output moved away from the prediction its consumers
used, rejects steps above the tolerance, restores every component (get/set FMU
state) and retries with a smaller step; see :class:`StepControl`.  The accepted
steps are in ``Result.steps``; ``Master.run(steps=...)`` replays them bit for bit.

Real time
---------
``run(realtime=True, speed=s)`` sleeps until each communication point is due on
the wall clock (``t0_wall + (t - t0)/s``).  Steps whose results come too late
(overruns: how many, how late on average and at most) and the wake-up jitter of the
others are reported in ``Result.realtime`` (:class:`RealTimeStats`); a run with
overruns logs a warning at the first and a summary at the end.

Messages and progress
---------------------
The master prints nothing.  What it has to say goes through :mod:`logging`, which the
application configures (the library adds no handler but ``fmu``'s ``NullHandler``):

* every message an FMU logs, as it arrives, on the logger ``fmu.cosim.master.<component
  name>`` (:attr:`Component.logger`) at the level of its FMI status (fmi2OK and
  fmi2Pending: INFO, fmi2Warning and fmi2Discard: WARNING, fmi2Error: ERROR, fmi2Fatal:
  CRITICAL), with ``component``, ``fmi_status`` and ``fmi_category`` on the record; the
  same messages stay in ``Component.log`` and in the errors that quote it;
* the real-time overruns, as warnings on ``fmu.cosim.master``.

``run(progress=callback)`` calls ``callback(t, stop_time)`` [s] at the first
communication point, then at most every ``progress_interval`` seconds of wall clock,
and at the last point; drawing a bar is the application's business
(``flexcosim.console.ProgressPrinter``).

Failures
--------
An exception of a block, an FMI status worse than fmi2Warning, an error message an
FMU logs during a call that returned fmi2OK (pythonfmu-based slaves such as
:mod:`fmu.fmi.slave` report rejected inputs that way), a non-finite output, or an FMU
input or output outside its declared ``min``/``max`` stops the run with
:class:`CosimError`, which names the component, the variable if known and the
time, and carries the rows recorded so far (written to CSV if asked) and the FMU's
log.  FMU archives are unpacked by :func:`safe_extract` (no path traversal).

Termination
-----------
An FMU whose ``fmi2DoStep`` returns fmi2Discard with ``fmi2Terminated`` set, and logs
no error with it, asks to end the simulation (the Modelica Reference FMU ``Stair`` does
at its end): this is not a failure.  The run ends at the communication point the step started from, the results
up to there are returned, and ``Result.termination`` (:class:`Termination`) says which
component asked and when.  fmi2Discard without fmi2Terminated stays a failure (a
variable-step run retries the step shorter).
"""
from __future__ import annotations

import ctypes
import heapq
import logging
import math
import os
import shutil
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from mbdcore.blocks import Block
from mbdcore.native import KernelError, kernel_library
from mbdcore.progress import ProgressReport
from mbdcore.timeseries import TimeSeries

__all__ = [
    "AlgebraicLoopError", "BlockComponent", "Component", "ComponentError", "CosimError",
    "ComponentTerminated", "CosimInterrupted", "FMI_LOG_LEVELS", "FMUComponent", "Master",
    "RealTimeStats", "Result", "StepControl", "System", "Termination", "check_archive",
    "safe_extract",
]

#: The master's own messages (real-time overruns); each component's FMU messages go to
#: its child ``fmu.cosim.master.<name>``.
logger = logging.getLogger(__name__)

#: Logging level of an FMU message by its FMI 2.0 status: fmi2OK, fmi2Warning,
#: fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending.
FMI_LOG_LEVELS = (logging.INFO, logging.WARNING, logging.WARNING, logging.ERROR,
                  logging.CRITICAL, logging.INFO)


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


class ComponentTerminated(Exception):
    """A component asked to end the simulation: not a failure.

    FMI 2.0: ``fmi2DoStep`` returned fmi2Discard, ``fmi2GetBooleanStatus(fmi2Terminated)``
    is true and the FMU logged no error in the call (the Modelica Reference FMU ``Stair``
    does this at its end; pythonfmu slaves answer fmi2Terminated = true after every
    discard, and log an error with a refused step).  The master ends the run at
    the start of that step, keeps the results and reports it in ``Result.termination``.

    Attributes
    ----------
    reached : float or None
        The component's own last successful time [s] (fmi2LastSuccessfulTime), if it
        reports one.
    """

    def __init__(self, message: str, reached: float | None = None):
        super().__init__(message)
        self.reached = reached


@dataclass
class Termination:
    """Why a run ended before its stop time without failing (``Result.termination``).

    Attributes
    ----------
    component : str
        The component that asked to terminate.
    time : float
        The last communication point [s]: the results end there.
    reached : float or None
        The component's own last successful time [s], if it reported one.
    message : str
        One line naming the component and the time.
    """

    component: str
    time: float
    reached: float | None
    message: str

    def __str__(self) -> str:
        return self.message


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


class CosimInterrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C, or SIGTERM where the caller turns it into a
    KeyboardInterrupt, as ``flexcosim cosim`` does): not a failure of a component.

    Attributes
    ----------
    time : float
        Simulation time of the last complete communication point [s].
    result : Result
        Rows recorded up to that point (already in the CSV file if one was given).
    csv : Path or None
        The CSV file, if any.
    signal : int or None
        The signal number if the interruption came from a signal handler that recorded it.
    """

    def __init__(self, message: str, time: float, result: "Result", csv: Path | None = None,
                 signal: int | None = None):
        super().__init__(message)
        self.time = time
        self.result = result
        self.csv = csv
        self.signal = signal


class StepTimeout(BaseException):
    """Raised in the main thread by the step watchdog of ``Master.run(step_timeout=...)``.

    A BaseException, so that a component's ``except Exception`` does not swallow it; the
    master turns it into a :class:`CosimError` naming the component and the time.
    """


class AlgebraicLoopError(ValueError):
    """Outputs depend on themselves through direct feedthrough (an algebraic loop)."""

    def __init__(self, message: str, loop: Sequence[str]):
        super().__init__(message)
        self.loop = list(loop)


# ---------------------------------------------------------------------------------
# archives
# ---------------------------------------------------------------------------------
#: Refuse archives that would unpack to more than this [bytes] (zip bombs).
MAX_UNPACKED_BYTES = 4 << 30


def check_archive(path: str | Path) -> list[str]:
    """Member names of the zip archive ``path`` after checking that each is safe.

    A member is refused when its name is absolute (``/x``, ``C:x``), contains a
    backslash or a ``..`` component, or is a symbolic link, and the archive is refused
    when it unpacks to more than :data:`MAX_UNPACKED_BYTES`.  FMUs and SSP files are
    both zip archives and go through here before anything is written to disk.

    Raises
    ------
    ValueError
        Naming the archive and the offending member.
    """
    import stat
    import zipfile

    path = Path(path)
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path}: not a readable zip archive ({e})") from None
    with zf:
        names, total = [], 0
        for info in zf.infolist():
            name = info.filename
            parts = name.split("/")
            if ("\\" in name or name.startswith("/") or ":" in parts[0] or ".." in parts
                    or "\0" in name):
                raise ValueError(f"{path}: unsafe member name {name!r} in the archive "
                                 "(absolute, with '..' or a backslash): refusing to extract")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise ValueError(f"{path}: member {name!r} is a symbolic link: refusing to extract")
            total += info.file_size
            names.append(name)
        if total > MAX_UNPACKED_BYTES:
            raise ValueError(f"{path}: unpacks to {total} bytes, more than the limit of "
                             f"{MAX_UNPACKED_BYTES} bytes")
    return names


def safe_extract(path: str | Path, dest: str | Path | None = None) -> Path:
    """Extract the zip archive ``path`` into ``dest`` (a new temporary folder if None).

    Every member is checked by :func:`check_archive` first, and each target path is
    verified to lie inside ``dest`` before it is written.
    """
    import tempfile
    import zipfile

    check_archive(path)
    dest = Path(tempfile.mkdtemp(prefix="flexcosim-") if dest is None else dest)
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            target = (root / info.filename).resolve()
            if target != root and root not in target.parents:
                raise ValueError(f"{path}: member {info.filename!r} would be written outside "
                                 f"{root}: refusing to extract")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    return dest


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
    logger : logging.Logger
        ``fmu.cosim.master.<name>``: where those messages are also emitted as they
        arrive (module docstring, *Messages and progress*).
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
        self.logger = logger.getChild(name)

    # -- lifecycle -------------------------------------------------------------------
    def initialize(self, t0: float, stop_time: float | None = None) -> None:
        """Bring the component to its initial state at ``t0`` [s]."""
        raise NotImplementedError

    def do_step(self, t: float, h: float) -> None:
        """Advance from ``t`` to ``t + h`` [s] with the inputs held; ComponentError on failure,
        :class:`ComponentTerminated` when the component asks to end the simulation."""
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

    def snapshot(self) -> Any:
        """The state for a rollback of the master (valid until the next snapshot).

        Unlike :meth:`get_state` it may reuse storage, so only the newest snapshot can
        be restored; the default is :meth:`get_state`.
        """
        return self.get_state()

    def restore(self, snap: Any) -> None:
        """Return to the state of :meth:`snapshot`."""
        self.set_state(snap)

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
            raise ComponentError(f"do_step failed: {type(e).__name__}: {e}",
                                 variable=getattr(e, "variable", None)) from e

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

#: fmi2Status fmi2Discard and the fmi2StatusKind values fmi2LastSuccessfulTime, fmi2Terminated
_FMI2_DISCARD, _FMI2_LAST_SUCCESSFUL_TIME, _FMI2_TERMINATED = 2, 2, 3


#: The per-instance logger proxy (``native/log_proxy.c``).
LOG_PROXY_C_SOURCE = Path(__file__).resolve().parent / "native" / "log_proxy.c"
_TEXT_LOGGER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                ctypes.c_char_p, ctypes.c_char_p)


class _LogRoute(ctypes.Structure):
    _fields_ = [("target", _TEXT_LOGGER), ("env", ctypes.c_void_p)]


_log_proxy_library = kernel_library("fmu.cosim._log_proxy", LOG_PROXY_C_SOURCE)


def _log_proxy_address():
    return _log_proxy_library().ADDRESSES["flexcosim_log_proxy"]


def _log_route(logger) -> "_LogRoute | None":
    """A route to ``logger(env, instance, status, category, text)`` for the proxy, or
    None where the proxy's compiled module is missing or stale (a broken install)."""
    try:
        _log_proxy_address()
    except KernelError:
        return None
    return _LogRoute(_TEXT_LOGGER(logger), None)


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
    String variables are not connectable (a String input can be given a value in
    ``parameters``).  They are left out of :attr:`inputs`, :attr:`outputs` and of the
    feedthrough, also where ``ModelStructure`` lists a String input among an output's
    dependencies (the Modelica Reference FMUs do).
    """

    def __init__(self, name: str, fmu_path: str | Path, parameters: Mapping[str, Any] | None = None,
                 feedthrough: Mapping[str, Sequence[str]] | None = None, logging_on: bool = True):
        super().__init__(name)
        from fmpy import read_model_description

        self.fmu_path = Path(fmu_path)
        check_archive(self.fmu_path)  # before anything is unpacked from it
        try:
            md = read_model_description(str(self.fmu_path))
        except Exception as e:  # malformed XML (lxml), a zip whose sizes lie (BadZipFile), ...
            text = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ValueError(f"FMU {name!r} ({self.fmu_path}): cannot read its "
                             f"modelDescription.xml: {text}") from None
        if md.fmiVersion != "2.0" or md.coSimulation is None:
            raise ValueError(f"{self.fmu_path} is not an FMI 2.0 co-simulation FMU "
                             f"(fmiVersion {md.fmiVersion})")
        self.model_description = md
        self.logging_on = bool(logging_on)
        self._vars = {v.name: v for v in md.modelVariables}
        numeric = [v for v in md.modelVariables if v.type in _NUMERIC_TYPES]
        self.inputs = tuple(v.name for v in numeric if v.causality == "input")
        self.outputs = tuple(v.name for v in numeric if v.causality == "output")
        #: String inputs and outputs (name -> causality): inputs can be set as parameters,
        #: neither is connectable
        self.string_variables = {v.name: v.causality for v in md.modelVariables
                                 if v.type == "String" and v.causality in ("input", "output")}
        self.units = {v.name: _unit(v) for v in numeric}
        self.feedthrough = self._feedthrough_from(md, feedthrough)
        #: the feedthrough given by the user, if any (kept when the system is saved)
        self.feedthrough_override = (None if feedthrough is None else
                                     {o: tuple(i) for o, i in feedthrough.items()})

        self.parameters: dict[str, Any] = {}
        for pname, value in (parameters or {}).items():
            v = self._vars.get(pname)
            if v is None or not _settable(v):
                settable = [v.name for v in md.modelVariables if _settable(v)]
                raise ValueError(f"FMU {name!r} ({self.fmu_path.name}) has no settable variable "
                                 f"{pname!r}; settable: {', '.join(settable)}")
            self.parameters[pname] = _convert(v.type, value)

        self._out_read = self._reader(self.outputs)
        #: declared [min, max] of inputs and outputs (checked by the master, FMI 2.0 says
        #: values outside them are invalid; not every FMU checks what it is given)
        self.ranges = {n: r for n in (*self.inputs, *self.outputs)
                       if (r := _declared_range(self._vars[n])) is not None}
        self._out_ranges = [(p, n, *self.ranges[n]) for p, n in enumerate(self.outputs)
                            if n in self.ranges]
        self._fmu = None
        self._snap = None  # the fmi2FMUstate reused by snapshot()
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
        inputs = set(self.inputs)
        ft = {}
        for o in self.outputs:
            deps = declared.get(o)
            # FMI 2.0: no "dependencies" attribute (or no Unknown) = depends on all inputs.
            if deps is None:
                ft[o] = self.inputs
            else:
                # only the connectable inputs: a String input an output depends on (the
                # Reference FMUs have them) is not among self.inputs
                ft[o] = tuple(d.name for d in deps if d.name in inputs)
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
        known = 0 <= status <= 5
        label = ("OK", "WARNING", "DISCARD", "ERROR", "FATAL", "PENDING")[status] \
            if known else str(status)
        text = message.decode("utf-8", "replace") if message else ""
        cat = category.decode("utf-8", "replace") if category else ""
        line = f"[{label}] {cat + ': ' if cat else ''}{text}"
        self.log.append(line)
        if status >= 3:
            self._errors.append(line)
        level = FMI_LOG_LEVELS[status] if known else logging.ERROR
        if self.logger.isEnabledFor(level):
            # the level says OK/Warning/Error/Fatal; Discard and Pending are said in words.
            # Our Python FMUs already begin their messages with the instance name.
            head = "" if text.startswith(f"{self.name}: ") else f"{self.name}: "
            tag = f"[{label}] " if label in ("DISCARD", "PENDING") or not known else ""
            self.logger.log(level, "%s%s%s", head, tag, text,
                            extra={"component": self.name, "fmi_status": label,
                                   "fmi_category": cat})

    def _check_log(self, what: str, names: Sequence[str] = ()) -> None:
        """Raise if the last call logged an error although it returned fmi2OK.

        Exporters that must not fail a call (pythonfmu slaves turn exceptions into
        fmi2Fatal) reject a value by logging an error; see fmu.fmi.slave.
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
        from fmpy import calloc, free
        from fmpy.fmi2 import (
            FMU2Slave,
            fmi2CallbackAllocateMemoryTYPE,
            fmi2CallbackFreeMemoryTYPE,
            fmi2CallbackFunctions,
            fmi2CallbackLoggerTYPE,
        )

        self.terminate()
        self.log.clear()
        self._errors.clear()
        md = self.model_description
        self._unzipdir = str(safe_extract(self.fmu_path))
        try:
            cb = fmi2CallbackFunctions()
            cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
            cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
            route = _log_route(self._logger)
            if route is None:       # no C compiler: messages arrive unformatted
                cb.logger = fmi2CallbackLoggerTYPE(self._logger)
            else:                   # this instance's own formatting proxy (native/log_proxy.c)
                cb.logger = fmi2CallbackLoggerTYPE(_log_proxy_address())
                cb.componentEnvironment = ctypes.cast(ctypes.pointer(route), ctypes.c_void_p)
            # the FMU keeps pointers into these: keep them alive with the instance
            self._callbacks = (cb, route)
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
            # a discard that comes with an error message is a failure, fmi2Terminated or
            # not: pythonfmu slaves (fmu.fmi.slave) report a refused step that way and
            # answer fmi2Terminated = true after any discard
            if (getattr(e, "status", None) == _FMI2_DISCARD and not self._errors
                    and self._asked_to_terminate()):
                raise ComponentTerminated(
                    "fmi2DoStep returned fmi2Discard with fmi2Terminated set: the FMU asked to "
                    "terminate the simulation", self._last_successful_time()) from None
            raise self._fail("fmi2DoStep", e) from e
        if self._errors:
            self._check_log("fmi2DoStep")

    def _asked_to_terminate(self) -> bool:
        """fmi2GetBooleanStatus(fmi2Terminated), False where the FMU cannot tell."""
        try:
            return bool(self._fmu.getBooleanStatus(_FMI2_TERMINATED))
        except Exception:
            return False

    def _last_successful_time(self) -> float | None:
        try:
            return float(self._fmu.getRealStatus(_FMI2_LAST_SUCCESSFUL_TIME))
        except Exception:
            return None

    def terminate(self) -> None:
        fmu = self._fmu
        if fmu is not None:
            self._fmu = None
            try:
                for handle in self._state_handles + ([self._snap] if self._snap else []):
                    fmu.freeFMUstate(handle)
                if not self._fatal:
                    fmu.terminate()
            except Exception:
                pass  # an FMU in error state may refuse; freeing below is still required
            finally:
                self._state_handles.clear()
                self._snap = None
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
        check = self._input_checker(names)
        if len(groups) == 1 and groups[0][0] == "Real":
            vrs = groups[0][1]

            def set_values(values: Sequence[float]) -> None:
                check(values)
                try:
                    self._fmu.setReal(vrs, values)
                except Exception as e:
                    raise self._fail(f"fmi2SetReal of {', '.join(names)}", e, one) from e
                if self._errors:
                    self._check_log(f"fmi2SetReal of {', '.join(names)}", names)

            return set_values

        def set_mixed(values: Sequence[float]) -> None:
            check(values)
            try:
                for kind, vrs, pos in groups:
                    _set_many(self._fmu, kind, vrs, [values[p] for p in pos])
            except Exception as e:
                raise self._fail(f"setting {', '.join(names)}", e, one) from e
            if self._errors:
                self._check_log(f"setting {', '.join(names)}", names)

        return set_mixed

    def _input_checker(self, names: Sequence[str]) -> Callable[[Sequence[float]], None]:
        """Rejects non-finite values and values outside the declared [min, max]."""
        ranged = [(p, n, *self.ranges[n]) for p, n in enumerate(names) if n in self.ranges]
        isfinite = math.isfinite

        def check(values: Sequence[float]) -> None:
            if not isfinite(sum(values)):  # one test in the common case
                for n, v in zip(names, values):
                    if not isfinite(v):
                        raise ComponentError(f"input {n!r} = {v!r} is not finite", variable=n,
                                             log=self.log)
            for p, n, lo, hi in ranged:
                v = values[p]
                if not lo <= v <= hi:
                    raise ComponentError(f"input {n!r} = {v!r} is outside its declared range "
                                         f"[{lo:g}, {hi:g}] {self.units.get(n, '')}".rstrip(),
                                         variable=n, log=self.log)

        return check

    def get_output_values(self) -> list[float]:
        try:
            values = self._out_read()
        except Exception as e:
            raise self._fail("reading outputs", e) from e
        if self._errors:
            self._check_log("reading outputs", self.outputs)
        for p, n, lo, hi in self._out_ranges:
            v = values[p]
            if not lo <= v <= hi and math.isfinite(v):  # non-finite: named by the master
                raise ComponentError(f"output {n!r} = {v!r} is outside its declared range "
                                     f"[{lo:g}, {hi:g}] {self.units.get(n, '')}".rstrip(),
                                     variable=n, log=self.log)
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

    def snapshot(self) -> Any:
        """The current FMU state in one fmi2FMUstate that is reused by the next call."""
        from ctypes import byref

        from fmpy.fmi2 import fmi2FMUstate

        if not self.model_description.coSimulation.canGetAndSetFMUstate:
            raise NotImplementedError(f"FMU {self.name!r} ({self.fmu_path.name}) cannot get and "
                                      "set its state (canGetAndSetFMUstate is false)")
        if self._snap is None:
            self._snap = fmi2FMUstate()
        try:
            # fmi2GetFMUstate overwrites a non-NULL state in place: no allocation per step
            self._fmu.fmi2GetFMUstate(self._fmu.component, byref(self._snap))
        except Exception as e:
            raise self._fail("fmi2GetFMUstate", e) from e
        return self._snap

    def restore(self, snap: Any) -> None:
        try:
            self._fmu.setFMUstate(snap)
        except Exception as e:
            raise self._fail("fmi2SetFMUstate", e) from e
        self._errors.clear()  # errors of the step that is being undone


def _declared_range(v) -> tuple[float, float] | None:
    """(min, max) of a Real/Integer variable from its declaration or declared type."""
    if v.type not in ("Real", "Integer"):
        return None
    dt = getattr(v, "declaredType", None)
    lo = v.min if v.min is not None else getattr(dt, "min", None)
    hi = v.max if v.max is not None else getattr(dt, "max", None)
    if lo is None and hi is None:
        return None
    return (-math.inf if lo is None else float(lo), math.inf if hi is None else float(hi))


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
    experiment : dict, optional
        Default experiment of the system (from a file): ``start_time``,
        ``stop_time``, ``step`` [s], ``method``, ``extrapolation``; any may be missing.

    Raises
    ------
    ValueError
        Duplicate component names, unknown components or variables, an input used as
        a source or an output as a destination, an input connected twice.
    """

    def __init__(self, components: Sequence[Component],
                 connections: Mapping[str, str | Sequence[str]] | Iterable[tuple[str, str]] = (),
                 experiment: Mapping[str, Any] | None = None):
        self.components: list[Component] = list(components)
        self.experiment: dict[str, Any] = dict(experiment or {})
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
        strings = getattr(c, "string_variables", {})
        if var not in names and var in strings:
            raise ValueError(f"connection {ref!r}: '{comp}.{var}' is a String {strings[var]} of "
                             f"{comp!r}: String variables are not connectable (only Real, "
                             "Integer, Enumeration and Boolean values are exchanged); a String "
                             "input can be given a value as a parameter")
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
class Result(TimeSeries):
    """Time series of a co-simulation run (a :class:`~mbdcore.timeseries.TimeSeries`).

    Attributes
    ----------
    data : numpy.ndarray
        Structured array, field ``"time"`` [s] then ``"comp.var"`` for every output
        and every input of every component; one row per communication point.
    outputs, inputs : list of str
        Field names of the outputs and of the inputs.
    units : dict of str to str
        Field name -> unit.
    steps : numpy.ndarray
        The accepted communication steps [s], in order (``Master.run(steps=...)``
        replays them).
    rejected : list of (float, float, float)
        Rejected attempts of a variable-step run: (start time [s], step [s], error
        estimate; inf when a component failed the step).
    forced_steps : int
        Steps accepted at the minimum step although the error estimate exceeded 1.
    realtime : RealTimeStats or None
        Pacing statistics of a real-time run.
    termination : Termination or None
        Set when a component asked to end the run before the stop time (an FMU's
        fmi2Discard with fmi2Terminated): which component, and the time the results end.
    """

    def __init__(self, data: np.ndarray, outputs: Sequence[str], inputs: Sequence[str],
                 units: Mapping[str, str] | None = None, *, steps: np.ndarray | None = None,
                 rejected: Sequence[tuple[float, float, float]] = (), forced_steps: int = 0,
                 realtime: "RealTimeStats | None" = None,
                 termination: "Termination | None" = None):
        super().__init__(data, units)
        self.outputs = list(outputs)
        self.inputs = list(inputs)
        self.steps = np.asarray(steps if steps is not None else np.diff(data["time"]), float)
        self.rejected = list(rejected)
        self.forced_steps = int(forced_steps)
        self.realtime = realtime
        self.termination = termination

    def __repr__(self) -> str:
        t = self.time
        span = f"t = {t[0]:g} .. {t[-1]:g} s" if len(t) else "empty"
        ended = (f", terminated by {self.termination.component!r}"
                 if self.termination is not None else "")
        return f"Result({len(t)} rows, {span}, {len(self.names) - 1} signals{ended})"

    def default_signals(self) -> list[str]:
        """The outputs."""
        return list(self.outputs)


# ---------------------------------------------------------------------------------
# master
# ---------------------------------------------------------------------------------
@dataclass
class StepControl:
    """Variable communication step with error control and rollback.

    A step ``t -> t + h`` is accepted when every connected output ``y`` stays close
    to the polynomial ``p`` its consumers were given over the step (the value held,
    zero order, or the linear extrapolation, first order)::

        err = max over connected outputs of |y(t+h) - p(t+h)| / (atol + rtol * max(|y(t)|, |y(t+h)|))

    ``err <= 1`` accepts the step; otherwise every component is restored to its
    state at ``t`` (get/set FMU state) and the step is retried shorter.  The next
    step is ``h * clip(safety * err**(-1/(q+1)), max_shrink, max_growth)``, ``q``
    the extrapolation order (the coupling error of an order-``q`` prediction is
    ``O(h**(q+1))``); it does not grow right after a rejection.  A step a component
    fails (a block's StepError, an FMU's fmi2Discard/fmi2Error, a non-finite or
    out-of-range value) is retried at a quarter of its size.  At ``min_step`` the
    step is accepted even if ``err > 1`` (counted in :attr:`Result.forced_steps`);
    a component failure at ``min_step`` stops the run.

    Parameters
    ----------
    rtol : float
        Relative tolerance of the coupling signals per step.
    atol : float
        Absolute tolerance, in the units of each connected output.
    min_step, max_step : float, optional
        Bounds of the communication step [s]; default ``min_step`` is the initial
        step / 1000, ``max_step`` unbounded (the stop time still is).
    safety, max_growth, max_shrink : float
        Step-size controller factors.
    """

    rtol: float = 1e-3
    atol: float = 1e-6
    min_step: float | None = None
    max_step: float | None = None
    safety: float = 0.9
    max_growth: float = 2.0
    max_shrink: float = 0.2

    def __post_init__(self):
        for name in ("rtol", "atol"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0.0):
                raise ValueError(f"StepControl.{name} = {v!r} must be finite and >= 0")
        if self.rtol == 0.0 and self.atol == 0.0:
            raise ValueError("StepControl: rtol and atol cannot both be 0")
        for name in ("min_step", "max_step"):
            v = getattr(self, name)
            if v is not None and not (v > 0.0):
                raise ValueError(f"StepControl.{name} = {v!r} s must be > 0")
        if self.min_step and self.max_step and self.min_step > self.max_step:
            raise ValueError(f"StepControl: min_step {self.min_step} s > max_step {self.max_step} s")
        if not (0 < self.max_shrink < 1 <= self.max_growth and 0 < self.safety <= 1):
            raise ValueError("StepControl: need 0 < max_shrink < 1 <= max_growth and 0 < safety <= 1")


@dataclass
class RealTimeStats:
    """How well a real-time run kept to the wall clock.

    The results of communication point ``t_k`` are due at wall time
    ``t0_wall + (t_k - t0) / speed``.  A step whose results are ready after that is an
    *overrun* and its *lateness* is how late they were (the master does not wait, it
    catches up; a run that is slower than real time falls further behind at every step,
    and its lateness grows).  Otherwise the master sleeps until the due time, and the
    *jitter* is how late it actually resumed: a property of the sleep, measured over the
    steps that were on time only.

    Attributes
    ----------
    speed : float
        Simulated seconds per wall-clock second.
    steps : int
        Communication steps paced.
    overruns : int
        Steps whose results were late.
    worst_lateness : float
        Largest lateness [s] (0 if no overrun): how far behind the wall clock the run
        fell.
    lateness_mean : float
        Mean lateness over the overruns [s] (0 if none).
    min_slack : float
        Smallest margin between a step's results being ready and their due time [s],
        over all steps: how close the run came to an overrun (negative: the worst
        overrun's lateness).
    jitter_mean, jitter_std, jitter_max : float
        Statistics of (resume time - due time) over the steps that were on time [s]
        (0 if none was).
    wall_time : float
        Wall time from the first step to the last [s].
    """

    speed: float
    steps: int = 0
    overruns: int = 0
    worst_lateness: float = 0.0
    lateness_mean: float = 0.0
    min_slack: float = math.inf
    jitter_mean: float = 0.0
    jitter_std: float = 0.0
    jitter_max: float = 0.0
    wall_time: float = 0.0

    @property
    def overrun_fraction(self) -> float:
        """Overruns / steps (0 for a run without steps)."""
        return self.overruns / self.steps if self.steps else 0.0

    def __str__(self) -> str:
        text = f"real time x{self.speed:g}: {self.steps} steps in {self.wall_time:.3f} s"
        if self.overruns:
            text += (f", {self.overruns} overruns ({100 * self.overrun_fraction:.1f} % of the "
                     f"steps): results late by {1e3 * self.lateness_mean:.3f} ms on average, "
                     f"{1e3 * self.worst_lateness:.3f} ms at most")
        else:
            text += f", no overrun, least slack {1e3 * self.min_slack:.3f} ms"
        on_time = self.steps - self.overruns
        if on_time:
            text += (f"; wake-up jitter of the {on_time} steps on time: mean "
                     f"{1e6 * self.jitter_mean:.1f} us, std {1e6 * self.jitter_std:.1f} us, "
                     f"max {1e6 * self.jitter_max:.1f} us")
        return text


class _Pacer:
    """Sleeps until each communication point is due on the wall clock (see RealTimeStats)."""

    #: the last stretch is waited for by polling: time.sleep overshoots by ~0.1 ms
    SPIN = 2e-4

    def __init__(self, t0: float, speed: float):
        self.t0, self.speed = t0, speed
        self.stats = RealTimeStats(speed)
        self._m2 = 0.0
        self._late_sum = 0.0
        self._on_time = 0
        self._finished = False
        self.wall0 = time.perf_counter()  # reset by start(); set here for a run failing before

    def start(self) -> None:
        self.wall0 = time.perf_counter()

    def __call__(self, t_sim: float) -> None:
        due = self.wall0 + (t_sim - self.t0) / self.speed
        now = time.perf_counter()
        st = self.stats
        st.min_slack = min(st.min_slack, due - now)
        st.steps += 1
        if now > due:
            late = now - due
            if st.overruns == 0:
                logger.warning("real-time overrun at t = %.6g s: the step's results were "
                               "%.3f ms late (speed x%g); the count and lateness of all "
                               "overruns follow at the end of the run", t_sim, 1e3 * late,
                               self.speed)
            st.overruns += 1
            self._late_sum += late
            st.worst_lateness = max(st.worst_lateness, late)
            return
        if due - now > self.SPIN:
            time.sleep(due - now - self.SPIN)
        while (now := time.perf_counter()) < due:
            pass
        jitter = now - due
        # Welford over the steps on time: no per-step storage, memory stays flat
        self._on_time += 1
        d = jitter - st.jitter_mean
        st.jitter_mean += d / self._on_time
        self._m2 += d * (jitter - st.jitter_mean)
        st.jitter_max = max(st.jitter_max, jitter)

    def finish(self) -> RealTimeStats:
        """The statistics; the first call (the end of the run) also logs a warning if there
        were overruns."""
        st = self.stats
        if self._finished:
            return st
        self._finished = True
        st.wall_time = time.perf_counter() - self.wall0
        st.jitter_std = math.sqrt(self._m2 / self._on_time) if self._on_time else 0.0
        st.lateness_mean = self._late_sum / st.overruns if st.overruns else 0.0
        if st.overruns:
            logger.warning("real-time run fell behind the wall clock: %d of %d steps late "
                           "(%.1f %%), results late by %.3f ms on average and %.3f ms at most "
                           "(speed x%g)", st.overruns, st.steps, 100 * st.overrun_fraction,
                           1e3 * st.lateness_mean, 1e3 * st.worst_lateness, self.speed)
        return st


class _ProgressReport(ProgressReport):
    """The run's progress report: while the callback runs, the run's ``state`` names it,
    so that an exception of the callback is reported as its own, not as the last
    component's."""

    def __init__(self, callback: Callable[[float, float], Any], stop: float, interval: float):
        super().__init__(callback, stop, interval)
        self.state: dict = {}     # the run's, set by _Run

    def report(self, t: float) -> None:
        state = self.state
        comp, phase = state.get("comp"), state.get("phase")
        state["comp"], state["phase"] = None, "the progress callback"
        super().report(t)
        state["comp"], state["phase"] = comp, phase


def _csv_number(v: float) -> str:
    return "%.17g" % v


class _CsvWriter:
    """The results CSV written as the run goes: the header when the run starts, then
    each recorded row as one complete line (one unbuffered write), so the file is a
    valid CSV up to the last recorded point at any moment -- after a crash, a signal
    or a timeout too.  Same format as :meth:`Result.to_csv` (17 significant digits).

    The file is created when the writer is made, before any component starts: an
    unwritable path fails at once, with a ValueError naming it.
    """

    def __init__(self, path: str | Path, names: Sequence[str]):
        self.path = Path(path)
        try:
            if self.path.is_dir():
                raise IsADirectoryError(21, "is a directory")
            self.fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                                          0o666)
        except OSError as e:
            raise ValueError(f"cannot write the results file {str(self.path)!r}: "
                             f"{e.strerror or e}") from None
        self._write(",".join(names) + "\n")

    def _write(self, text: str) -> None:
        data = text.encode()
        while data:
            data = data[os.write(self.fd, data):]

    def row(self, values) -> None:
        self._write(",".join(map(_csv_number, values)) + "\n")

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _Watchdog:
    """Stops a run whose component does not return from ``do_step`` within ``timeout``
    seconds of wall time: a thread that watches the run's state (the running thread
    stamps each ``do_step`` with the clock) and raises :class:`StepTimeout` in the
    running thread.

    In the main thread the watchdog sends it SIGALRM (its handler, installed for the run
    and restored after, raises StepTimeout), which also wakes a blocking call such as
    ``time.sleep``; in another thread it uses ``PyThreadState_SetAsyncExc``.  Either way
    the exception takes effect at the next Python bytecode: a Python block stuck in a
    loop or a wait is stopped, an FMU stuck inside its C code is not (C code cannot be
    interrupted in-process; the timeout then takes effect when, if ever, the call
    returns).
    """

    def __init__(self, state: dict, timeout: float):
        self.state, self.timeout = state, timeout
        self.fired: tuple | None = None
        self._target = threading.get_ident()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._previous = None
        if threading.current_thread() is threading.main_thread() and \
                hasattr(signal, "pthread_kill") and hasattr(signal, "SIGALRM"):
            self._previous = signal.signal(signal.SIGALRM, self._on_alarm)
        self._thread = threading.Thread(target=self._watch, name="flexcosim-step-watchdog",
                                        daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        poll = min(max(self.timeout / 10.0, 1e-3), 0.5)
        state = self.state
        while not self._stop.wait(poll):
            since = state.get("since")
            if state["phase"] != "do_step" or since is None:
                continue
            late = time.perf_counter() - since
            if late > self.timeout:
                with self._lock:
                    if self._stop.is_set():
                        return
                    self.fired = (state["comp"], state["t"], late)
                    if self._previous is not None:
                        signal.pthread_kill(self._target, signal.SIGALRM)
                    else:
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(
                            ctypes.c_ulong(self._target), ctypes.py_object(StepTimeout))
                return

    @staticmethod
    def _on_alarm(signum, frame):
        raise StepTimeout()

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
        self._thread.join()
        if self._previous is not None:
            signal.signal(signal.SIGALRM, self._previous)
            self._previous = None


class _Run:
    """The working state of one :meth:`Master.run`: the coupling vectors (``y`` every
    connected output, ``u`` every input), the recorded rows, the input setters of the
    schedule, and where the run is (``state``: time, component, phase) for the message
    of a failure."""

    def __init__(self, master: "Master", t0: float, n_steps: int | None, record_every: int,
                 pacer: "_Pacer | None", progress: "_ProgressReport | None"):
        self.master = master
        self.comps = master.system.components
        self.record_every = record_every
        self.pacer, self.progress = pacer, progress
        ncol = 1 + master._n_out + master._n_in
        # grown by doubling in record(): a huge run does not allocate its rows up front
        cap = min(n_steps // record_every + 2, 1 << 16) if n_steps is not None else 1024
        self.rows = np.empty((cap, ncol))
        self.nrec = 0
        self.y = [0.0] * master._n_out
        self.u: list[float] = []
        self.y_at_t: list[float] = []            # outputs at t while a Gauss-Seidel step runs
        self.y_prev: list[float] | None = None   # outputs and step of the previous point
        self.h_prev: float | None = None
        self.taken: Any = []
        self.rejected: list[tuple[float, float, float]] = []
        self.forced = 0
        self.t = t0
        self.done = 0  # steps completed (fixed and replayed runs)
        self.termination: Termination | None = None
        self.started: list[Component] = []
        self.state = {"t": t0, "comp": None, "phase": "initialize", "since": None}
        if progress is not None:
            progress.state = self.state
        self.csv: _CsvWriter | None = None
        self.finished = False
        self.clock = time.perf_counter
        # Setters are built per run: FMU instances only exist after initialize().
        self._in_off = master._in_off
        self.src = master._src
        self.out_off = master._out_off
        self.schedule = master._schedule
        self.order_idx = [master._index[n] for n in master.order]
        self.gauss_seidel = master.method == "gauss-seidel"
        self.extrapolate = master.extrapolation == 1
        self.coupled = sorted({s for s in self.src if s >= 0})

    def _setter(self, i: int, gis: list[int]):
        c = self.comps[i]
        return c.input_setter([c.inputs[gi - self._in_off[i]] for gi in gis])

    def start(self, t0: float, stop: float) -> None:
        """Initialise every component, propagate and record the first point."""
        state = self.state
        for c in self.comps:
            state["comp"] = c
            c.initialize(t0, stop)
            self.started.append(c)
        self.set_fns = [self._setter(i, need) if need else None
                        for i, need, gs in self.schedule]
        self.final_fns = [(self.comps[i], gis, self._setter(i, gis))
                          for i, gis in self.master._final_inputs]
        # Per component in stepping order: inputs set just before it steps.
        # Gauss-Seidel: those fed by components that stepped before it ("fresh"), plus,
        # with extrapolation, the others ("stale", extrapolated).  Jacobi: only the
        # extrapolated ones.
        self.plan = []
        for i, fresh, stale in self.master._step_inputs(self.gauss_seidel):
            stale = stale if self.extrapolate else []
            gis = fresh + stale
            self.plan.append((i, self.comps[i], [self.src[gi] for gi in fresh],
                              [self.src[gi] for gi in stale],
                              self._setter(i, gis) if gis else None))
        self.u = [v for c in self.comps for v in c.get_input_values()]
        self.propagate()
        self.record(t0)
        if self.progress is not None:
            self.progress(t0)
        if self.pacer is not None:
            self.pacer.start()

    def finish(self) -> None:
        """Terminate every started component; the run's outcome (or its error) matters
        more than cleanup noise."""
        if self.finished:
            return
        self.finished = True
        for c in self.started:
            try:
                c.terminate()
            except Exception:
                pass
        self.started.clear()
        if self.csv is not None:
            self.csv.close()

    def result(self) -> Result:
        return self.master._result(self.rows[:self.nrec], self.taken, self.rejected,
                                   self.forced,
                                   self.pacer.finish() if self.pacer is not None else None,
                                   self.termination)

    def terminated(self, e: ComponentTerminated) -> None:
        """A component asked to end the run in the step from ``self.t``: the run ends at
        ``self.t`` (recorded if it was not), as a normal termination."""
        c = self.state["comp"]
        t = self.t
        if self.nrec == 0 or self.rows[self.nrec - 1, 0] != t:
            self.record(t)
        reached = (f"; it reached t = {e.reached:.12g} s" if e.reached is not None
                   and e.reached != t else "")
        msg = (f"component {c.name!r} asked to terminate the simulation in the step from "
               f"t = {t:.12g} s ({e}{reached}): the run ended at t = {t:.12g} s, results kept")
        self.termination = Termination(c.name, t, e.reached, msg)

    # -- the coupling ------------------------------------------------------------------
    def read(self, i: int) -> list[float]:
        c = self.comps[i]
        self.state["comp"], self.state["phase"] = c, "reading outputs"
        vals = c.get_output_values()
        if not math.isfinite(sum(vals)):
            for o, v in zip(c.outputs, vals):
                if not math.isfinite(v):
                    raise ComponentError(f"output {o!r} = {v!r} is not finite", variable=o,
                                         log=c.log)
        return vals

    def propagate(self) -> None:
        """Outputs to inputs at a communication point, in feedthrough order."""
        y, u, src, state = self.y, self.u, self.src, self.state
        for (i, need, gs), setter in zip(self.schedule, self.set_fns):
            if setter is not None:
                vals = [y[src[gi]] for gi in need]
                for gi, v in zip(need, vals):
                    u[gi] = v
                state["comp"], state["phase"] = self.comps[i], "setting inputs"
                setter(vals)
            vals = self.read(i)
            off = self.out_off[i]
            for g in gs:
                y[g] = vals[g - off]
        for c, gis, setter in self.final_fns:
            vals = [y[src[gi]] for gi in gis]
            for gi, v in zip(gis, vals):
                u[gi] = v
            state["comp"], state["phase"] = c, "setting inputs"
            setter(vals)

    def record(self, t: float) -> None:
        rows = self.rows
        if self.nrec == len(rows):
            self.rows = rows = np.concatenate([rows, np.empty_like(rows)])
        row = rows[self.nrec]
        y = self.y
        row[0] = t
        row[1:1 + len(y)] = y
        row[1 + len(y):] = self.u
        self.nrec += 1
        if self.csv is not None:
            self.csv.row(row.tolist())

    def advance(self, t: float, h: float, t_next: float, c_ext: float | None) -> None:
        """One communication step t -> t_next = t + h, outputs propagated at t_next.

        ``c_ext``: stale inputs get y + c_ext (y - y_prev), the mean of the linear
        extrapolation over the step; None holds y.
        """
        state, y = self.state, self.y
        state["t"] = t
        y_prev = self.y_prev
        gauss_seidel = self.gauss_seidel
        try:
            self._step_all(t, h, t_next, c_ext, y_prev)
        except ComponentTerminated:
            if gauss_seidel:  # outputs of the components that stepped before it: back to t
                y[:] = self.y_at_t
            raise
        state["t"] = t_next
        self.propagate()

    def _step_all(self, t: float, h: float, t_next: float, c_ext: float | None,
                  y_prev) -> None:
        """Every component steps t -> t_next (Gauss-Seidel: outputs read after each)."""
        state, y = self.state, self.y
        gauss_seidel = self.gauss_seidel
        if gauss_seidel:
            self.y_at_t = y[:]
        for i, c, fresh, stale, setter in self.plan:
            if setter is not None:
                vals = [y[s] for s in fresh]
                if stale:
                    vals += ([y[s] + c_ext * (y[s] - y_prev[s]) for s in stale]
                             if c_ext is not None else [y[s] for s in stale])
                state["comp"], state["phase"] = c, "setting inputs"
                setter(vals)
            if gauss_seidel:
                state["comp"], state["phase"], state["since"] = c, "do_step", self.clock()
                c.do_step(t, h)
                state["t"] = t_next  # the new outputs belong to the end of the step
                vals = self.read(i)
                state["t"] = t
                off = self.out_off[i]
                y[off:off + len(vals)] = vals
        if not gauss_seidel:
            for i in self.order_idx:
                c = self.comps[i]
                state["comp"], state["phase"], state["since"] = c, "do_step", self.clock()
                c.do_step(t, h)

    def fixed_step(self, t: float, h: float, t_next: float, k: int, n_steps: int) -> None:
        """A step of a run whose steps are given: advance, record, pace."""
        extrapolate = self.extrapolate
        y_old = self.y[:] if extrapolate else None
        self.advance(t, h, t_next, self.extrapolation_factor(h))
        if extrapolate:
            self.y_prev, self.h_prev = y_old, h
        self.t = t_next
        self.done = k + 1
        if (k + 1) % self.record_every == 0 or k + 1 == n_steps:
            self.record(t_next)
        self.tick(t_next)

    def tick(self, t: float) -> None:
        if self.pacer is not None:
            self.pacer(t)
        if self.progress is not None:
            self.progress(t)

    def extrapolation_factor(self, h: float) -> float | None:
        return 0.5 * h / self.h_prev if self.extrapolate and self.y_prev is not None else None

    def coupling_error(self, y_old: list[float], h: float, first_order: bool) -> float:
        """Largest error of the connected outputs against the prediction their consumers
        were given over the step, relative to the tolerances."""
        y, y_prev, h_prev = self.y, self.y_prev, self.h_prev
        ctrl = self.master.step_control
        atol, rtol = ctrl.atol, ctrl.rtol
        worst = 0.0
        for g in self.coupled:
            yn, yo = y[g], y_old[g]
            p = yo + (h / h_prev) * (yo - y_prev[g]) if first_order else yo
            e = abs(yn - p) / (atol + rtol * max(abs(yn), abs(yo)))
            if e > worst:
                worst = e
        return worst


class Master:
    """Co-simulation of a :class:`System`: fixed or variable communication step.

    Parameters
    ----------
    system : System
        Components and connections.
    step : float
        Communication step ``h`` [s], > 0; with ``step_control`` the initial step.
    method : {"gauss-seidel", "jacobi"}
        How components are stepped (see the module docstring).
    order : sequence of str, optional
        Gauss–Seidel stepping order (component names, each once); default
        :meth:`default_order`.
    extrapolation : {0, 1, "zero", "first"}
        Order of the input extrapolation over a step: 0 holds the value of the
        communication point, 1 holds the mean over the step of the linear
        extrapolation through the last two points (see the module docstring).
    step_control : StepControl, optional
        Variable communication step with error control and rollback; every
        component must be able to save and restore its state.

    Raises
    ------
    AlgebraicLoopError
        Outputs that depend on themselves through direct feedthrough.
    """

    METHODS = ("gauss-seidel", "jacobi")
    EXTRAPOLATIONS = {0: 0, 1: 1, "zero": 0, "first": 1}

    def __init__(self, system: System, step: float, method: str = "gauss-seidel",
                 order: Sequence[str] | None = None, extrapolation: int | str = 0,
                 step_control: StepControl | None = None):
        step = float(step)
        if not (math.isfinite(step) and step > 0.0):
            raise ValueError(f"communication step {step!r} s must be finite and > 0")
        if method not in self.METHODS:
            raise ValueError(f"method {method!r}: accepted values are {', '.join(self.METHODS)}")
        if extrapolation not in self.EXTRAPOLATIONS:
            raise ValueError(f"extrapolation {extrapolation!r}: accepted values are 0, 1, "
                             "'zero', 'first'")
        if step_control is not None and not isinstance(step_control, StepControl):
            raise TypeError(f"step_control must be a StepControl, got {type(step_control).__name__}")
        self.system = system
        self.step = step
        self.method = method
        self.extrapolation = self.EXTRAPOLATIONS[extrapolation]
        self.step_control = step_control
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
    def run(self, stop_time: float, start_time: float = 0.0, *, steps: Sequence[float] | None = None,
            realtime: bool = False, speed: float = 1.0,
            progress: Callable[[float, float], Any] | None = None, progress_interval: float = 0.1,
            csv: str | Path | None = None, record_every: int = 1,
            step_timeout: float | None = None) -> Result:
        """Simulate from ``start_time`` to ``stop_time`` [s].

        Without ``step_control`` and ``steps``, ``stop_time - start_time`` must be a
        whole number of steps; communication points are ``t_k = start_time + k*step``
        (no accumulated drift).

        Parameters
        ----------
        stop_time, start_time : float
            Simulated interval [s].
        steps : sequence of float, optional
            Take exactly these communication steps [s] (their sum must reach
            ``stop_time``), for instance ``result.steps`` of a variable-step run: the
            replay is bit-identical to it.
        realtime : bool
            Pace the run to the wall clock (``result.realtime`` reports overruns and
            jitter).
        speed : float
            Simulated seconds per wall-clock second in real-time mode.
        progress : callable, optional
            ``progress(t, stop_time)`` [s]: called at the first communication point, then
            at most every ``progress_interval`` seconds of wall clock, and at the last
            point (``stop_time``, or where a component asked to end the run); never after
            a failure.  The master itself prints nothing
            (``flexcosim.console.ProgressPrinter`` draws a bar).
        progress_interval : float
            Least wall-clock time [s] between two calls of ``progress`` (0: at every
            communication point).
        csv : str or Path, optional
            Write the result to this CSV file as the run goes (created before any
            component starts, so an unwritable path fails at once with ValueError; one
            complete line per recorded point): a valid CSV up to the last recorded
            point at any moment, also when the run fails or is interrupted.
        record_every : int
            Record one communication point in ``record_every`` (the first and the
            last always); memory stays flat on long runs.
        step_timeout : float, optional
            Wall-clock seconds a component may take in one ``do_step``; beyond that the
            run stops with CosimError naming the component and the time (a watchdog
            thread raises :class:`StepTimeout` in the running thread: Python blocks and
            Python FMUs are stopped at their next bytecode; an FMU stuck inside its C
            code cannot be interrupted in-process and is only reported if it returns).

        Returns
        -------
        Result
            One row per recorded communication point, ``start_time`` and
            ``stop_time`` included; ``result.steps`` the accepted step sizes.  When a
            component asked to terminate (an FMU's fmi2Discard with fmi2Terminated), the
            rows end at the start of that step and ``result.termination`` says so.

        Raises
        ------
        CosimError
            A component failed (exception or FMI error status, rejected input, NaN
            or out-of-range value); ``err.result`` holds the rows up to the last
            complete point (also written to ``csv`` if given, ``err.csv``).
        CosimInterrupted
            KeyboardInterrupt during the run (a KeyboardInterrupt subclass): the
            components are terminated, their temporary folders removed, ``err.result``
            holds the rows so far (in ``csv`` too).
        """
        t0, stop = float(start_time), float(stop_time)
        span = stop - t0
        if steps is not None:
            steps = [float(x) for x in steps]
            if not all(math.isfinite(x) and x > 0.0 for x in steps):
                raise ValueError("every step of `steps` must be finite and > 0")
            t_end = t0
            for x in steps:
                t_end += x
            if abs(t_end - stop) > 1e-9 * max(1.0, abs(span)):
                raise ValueError(f"`steps` end at t = {t_end!r} s, not at stop_time = {stop!r} s")
            mode, n_steps = "replay", len(steps)
        elif self.step_control is not None:
            if not span > 0.0:
                raise ValueError(f"stop_time {stop!r} s must be after start_time {t0!r} s")
            mode, n_steps = "variable", None
        else:
            ratio = span / self.step
            if not (math.isfinite(span) and math.isfinite(ratio)) or abs(ratio) > 2.0 ** 53:
                raise ValueError(f"stop_time - start_time = {span!r} s is {ratio:.3g} steps of "
                                 f"{self.step!r} s: accepted: finite times and at most 2**53 "
                                 "steps")
            mode, n_steps = "fixed", int(round(ratio))
            if n_steps < 0 or abs(n_steps * self.step - span) > 1e-9 * max(1.0, abs(span)):
                raise ValueError(f"stop_time - start_time = {span!r} s is not a whole number "
                                 f"of steps of {self.step!r} s")
        record_every = int(record_every)
        if record_every < 1:
            raise ValueError(f"record_every = {record_every} must be >= 1")
        speed = float(speed)
        if realtime and not (math.isfinite(speed) and speed > 0.0):
            raise ValueError(f"speed {speed!r} must be finite and > 0")
        if mode == "variable" or (mode == "replay" and len(set(steps)) > 1):
            self._check_variable_step(rollback=mode == "variable")
        if step_timeout is not None:
            step_timeout = float(step_timeout)
            if not (math.isfinite(step_timeout) and step_timeout > 0.0):
                raise ValueError(f"step_timeout {step_timeout!r} s must be finite and > 0")
        # checked here, before any component starts (TypeError for progress=True: the
        # master drew a bar itself before; flexcosim.console.ProgressPrinter does now)
        report = (_ProgressReport(progress, stop, progress_interval)
                  if progress is not None else None)

        run = _Run(self, t0, n_steps, record_every,
                   _Pacer(t0, speed) if realtime else None, report)
        if csv is not None:  # before any component starts: an unwritable path fails now
            run.csv = _CsvWriter(csv, ["time"] + self._out_names + self._in_names)
        watchdog = None
        try:
            try:
                if step_timeout is not None:
                    watchdog = _Watchdog(run.state, step_timeout)
                run.start(t0, stop)
                if mode == "fixed":
                    self._run_fixed(run, t0, n_steps)
                elif mode == "replay":
                    self._run_replay(run, t0, steps)
                else:
                    self._run_variable(run, t0, stop)
                if run.progress is not None:
                    run.progress.done(run.t)
            finally:
                if watchdog is not None:
                    watchdog.stop()
        except StepTimeout as e:
            raise self._failure(run, e, csv, timeout=(step_timeout, watchdog.fired)) from None
        except KeyboardInterrupt as e:
            raise self._interrupted(run, e, csv) from None
        except ComponentTerminated as e:  # asked for, not a failure: the results so far
            run.terminated(e)
            if run.progress is not None:
                run.progress.done(run.t)
        except Exception as e:
            raise self._failure(run, e, csv) from e
        finally:
            run.finish()
        return run.result()

    # -- one loop per stepping mode -----------------------------------------------------
    def _run_fixed(self, run: "_Run", t0: float, n_steps: int) -> None:
        """Fixed communication step: t_k = t0 + k h, no accumulated drift."""
        h = self.step
        try:
            for k in range(n_steps):
                run.fixed_step(t0 + k * h, h, t0 + (k + 1) * h, k, n_steps)
        finally:
            # a read-only view: no per-step storage, memory stays flat on long runs
            run.taken = np.broadcast_to(h, (run.done,))

    def _run_replay(self, run: "_Run", t0: float, steps: list[float]) -> None:
        """The given steps, in order (a replay of a variable-step run, bit for bit)."""
        t = t0
        n_steps = len(steps)
        try:
            for k, h in enumerate(steps):
                t_next = t + h
                run.fixed_step(t, h, t_next, k, n_steps)
                t = t_next
        finally:
            run.taken = steps[:run.done]

    def _run_variable(self, run: "_Run", t0: float, stop: float) -> None:
        """Variable step: a step is repeated from the saved component states with a
        smaller h while the coupling error estimate exceeds 1 (module docstring)."""
        ctrl = self.step_control
        comps = self.system.components
        min_step = ctrl.min_step if ctrl.min_step is not None else self.step * 1e-3
        max_step = ctrl.max_step if ctrl.max_step is not None else math.inf
        eps_t = 1e-12 * max(1.0, abs(stop))
        state = run.state
        t = t0
        k = 0
        h = min(self.step, max_step)
        while stop - t > eps_t:
            remaining = stop - t
            if h >= remaining * (1.0 - 1e-9):
                h = remaining
            elif remaining - h < min_step:
                h = remaining / 2  # no sliver of a step at the end
            h = max(h, min(min_step, remaining))
            y_old, u_old = run.y[:], run.u[:]
            state["phase"] = "saving state"
            snaps = []
            for c in comps:
                state["comp"] = c
                snaps.append(c.snapshot())
            shrunk = False
            while True:
                t_next = t + h
                c_ext = run.extrapolation_factor(h)
                at_min = h <= min_step * (1.0 + 1e-9)
                try:
                    run.advance(t, h, t_next, c_ext)
                except ComponentError:
                    if at_min:
                        raise
                    err = math.inf
                else:
                    err = run.coupling_error(y_old, h, c_ext is not None)
                if err <= 1.0 or at_min:
                    break
                run.rejected.append((t, h, err))
                state["t"], state["phase"] = t, "restoring state"
                for c, snap in zip(comps, snaps):
                    state["comp"] = c
                    c.restore(snap)
                run.y[:], run.u[:] = y_old, u_old
                q = 1 if c_ext is not None else 0
                fac = ctrl.safety * err ** (-1.0 / (q + 1)) if math.isfinite(err) else 0.25
                h = max(h * min(max(fac, ctrl.max_shrink), 0.9), min_step)
                shrunk = True
            if err > 1.0:
                run.forced += 1
            run.y_prev, run.h_prev = y_old, h
            t = run.t = t_next
            k += 1
            run.taken.append(h)
            if k % run.record_every == 0 or stop - t <= eps_t:
                run.record(t)
            run.tick(t)
            q = 1 if c_ext is not None else 0
            fac = ctrl.max_growth if err == 0.0 else ctrl.safety * err ** (-1.0 / (q + 1))
            fac = min(max(fac, ctrl.max_shrink), 1.0 if shrunk else ctrl.max_growth)
            h = min(h * fac, max_step)

    def _failure(self, run: "_Run", e: BaseException, csv, timeout=None) -> CosimError:
        """The CosimError of a failed run: which component, where, the log, the rows so
        far (already in ``csv`` if given: it is written as the run goes)."""
        c = run.state["comp"]
        t = run.state["t"]
        if timeout is not None and timeout[1] is not None:
            c, t, _ = timeout[1]
        variable = getattr(e, "variable", None)
        log = list(getattr(e, "log", None) or (c.log if c is not None else []))
        where = f" at t = {t:.12g} s"
        var = f", variable {c.name}.{variable}" if (c is not None and variable) else ""
        name = c.name if c is not None else "?"
        if timeout is not None:
            msg = (f"component {name!r} did not return from do_step{where} within the step "
                   f"timeout of {timeout[0]:g} s (wall clock): run stopped")
        elif c is None and run.state["phase"] == "the progress callback":
            msg = f"the progress callback failed{where}: {e}"
        else:
            msg = f"component {name!r} failed in {run.state['phase']}{where}{var}: {e}"
        if log:
            msg += "\nlog of " + repr(name) + ":\n  " + "\n  ".join(log[-20:])
        partial = run.result()
        if csv is not None:
            what = (f"results up to t = {run.t:.12g} s" if len(partial) else
                    "no results (failed before the first point; header only)")
            msg += f"\n{what} written to {csv}"
        err = CosimError(msg, name, variable, t, partial, log)
        err.csv = Path(csv) if csv is not None else None
        return err

    def _interrupted(self, run: "_Run", e: KeyboardInterrupt, csv) -> CosimInterrupted:
        """The run was interrupted: not a component's failure; the rows so far."""
        run.finish()  # terminate the components (temporary folders) before reporting
        partial = run.result()
        msg = f"interrupted by the user at t = {run.t:.12g} s"
        if csv is not None:
            msg += f"; results up to t = {run.t:.12g} s written to {csv}"
        return CosimInterrupted(msg, run.t, partial, Path(csv) if csv is not None else None,
                                getattr(e, "signal", None))

    def _check_variable_step(self, rollback: bool) -> None:
        """Every component must accept varying steps and, for rollback, restore its state."""
        for c in self.system.components:
            if isinstance(c, FMUComponent):
                cs = c.model_description.coSimulation
                if not cs.canHandleVariableCommunicationStepSize:
                    raise ValueError(f"FMU {c.name!r} ({c.fmu_path.name}) cannot handle a variable "
                                     "communication step (canHandleVariableCommunicationStepSize "
                                     "is false)")
                if rollback and not cs.canGetAndSetFMUstate:
                    raise ValueError(f"FMU {c.name!r} ({c.fmu_path.name}) cannot be rolled back: "
                                     "canGetAndSetFMUstate is false; use a fixed step")
            elif rollback and type(c).get_state is Component.get_state and \
                    type(c).snapshot is Component.snapshot:
                raise ValueError(f"component {c.name!r} cannot save its state: no rollback, "
                                 "use a fixed step")

    def _step_inputs(self, gauss_seidel: bool) -> list[tuple[int, list[int], list[int]]]:
        """Per component in stepping order: (index, fresh inputs, stale inputs).

        Fresh: connected inputs whose source stepped before (Gauss-Seidel only); stale:
        the other connected inputs, which hold (or extrapolate) the values of the
        communication point.
        """
        comps = self.system.components
        stepped: set[int] = set()
        out = []
        for name in self.order:
            i = self._index[name]
            fresh, stale = [], []
            for j in range(len(comps[i].inputs)):
                gi = self._in_off[i] + j
                s = self._src[gi]
                if s >= 0:
                    (fresh if self._out_comp[s] in stepped else stale).append(gi)
            out.append((i, fresh, stale))
            if gauss_seidel:
                stepped.add(i)
        return out

    def _result(self, rows: np.ndarray, steps=(), rejected=(), forced: int = 0,
                realtime: RealTimeStats | None = None,
                termination: Termination | None = None) -> Result:
        names = ["time"] + self._out_names + self._in_names
        dtype = np.dtype([(n, np.float64) for n in names])
        rows = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(names))
        data = (np.zeros(0, dtype) if len(rows) == 0 else
                np.ascontiguousarray(rows).view(dtype).reshape(len(rows)))
        units = {}
        for c in self.system.components:
            for v in (*c.outputs, *c.inputs):
                units[f"{c.name}.{v}"] = c.units.get(v, "")
        units["time"] = "s"
        return Result(data.copy(), self._out_names, self._in_names, units,
                      steps=np.asarray(steps, dtype=float), rejected=list(rejected),
                      forced_steps=forced, realtime=realtime, termination=termination)
