"""An FMI 2.0 or 3.0 co-simulation FMU as a component (:class:`FMUComponent`, through
fmpy; what differs between the versions is :mod:`fmu.cosim.fmi_api`): its model
description read, its values converted to and from the FMI types and checked against
their declared ranges, its state saved and restored, and its messages routed to its own
logger (FMI 2.0: ``native/log_proxy.c``, which formats them) at the level of their FMI
status (:data:`FMI_LOG_LEVELS`)."""

from __future__ import annotations

import ctypes
import logging
import math
import shutil
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from fmu.cosim.archive import check_archive, safe_extract
from fmu.cosim.components import Component
from fmu.cosim.errors import ComponentError, ComponentTerminated
from fmu.cosim.fmi_api import FMI2_DISCARD, FmiApi, array_shape, element_names, fmi_api
from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.native import KernelError, TableLayout, kernel_library, table_layout

__all__ = ["FMI_LOG_LEVELS", "FMUComponent", "ValueCall", "LOG_PROXY_C_SOURCE", "log_route_layout"]

#: Logging level of an FMU message by its FMI status: OK, Warning, Discard, Error,
#: Fatal, Pending (FMI 2.0; FMI 3.0 has the first five, numbered alike).
FMI_LOG_LEVELS = (logging.INFO, logging.WARNING, logging.WARNING, logging.ERROR,
                  logging.CRITICAL, logging.INFO)


#: The per-instance logger proxy (``native/log_proxy.c``).
LOG_PROXY_C_SOURCE = Path(__file__).resolve().parent / "native" / "log_proxy.c"
_TEXT_LOGGER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                ctypes.c_char_p, ctypes.c_char_p)


_log_proxy_library = kernel_library("fmu.cosim._log_proxy", LOG_PROXY_C_SOURCE,
                                    (TABLE_LAYOUT_HEADER,))


def _log_proxy_address():
    return _log_proxy_library().ADDRESSES["flexcosim_log_proxy"]


def log_route_layout() -> TableLayout:
    """The layout of the proxy's route, ``LOG_ROUTE_LAYOUT`` of log_proxy.c."""
    return table_layout(_log_proxy_library, "LOG_ROUTE_LAYOUT")


def _log_route(logger) -> "ctypes.Structure | None":
    """A route to ``logger(env, instance, status, category, text)`` for the proxy
    (``LogRoute``, declared once as ``LOG_ROUTE_LAYOUT`` in log_proxy.c; it holds the
    callback), or None where the proxy's compiled module is missing or stale (a broken
    install)."""
    try:
        _log_proxy_address()
    except KernelError:
        return None
    callback = _TEXT_LOGGER(logger)
    route = log_route_layout().structure(
        target=ctypes.cast(callback, ctypes.c_void_p).value, env=None, errors=0)
    route.callback = callback       # alive as long as the route
    return route


class FMUComponent(Component):
    """An FMI 2.0 or 3.0 co-simulation FMU as a component (through fmpy).

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
    Real, Integer, Enumeration and Boolean inputs/outputs (FMI 3.0: the Float, Int and
    UInt types, Enumeration and Boolean) are exchanged as floats; an FMI 3.0 array is a
    signal per element, ``theta[1]``, ``theta[2]`` (row-major, from 1), read and written
    whole (the elements not set keep their last values); String variables are not connectable (a String input can be given a value in
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
        api = fmi_api(str(md.fmiVersion))
        if api is None or md.coSimulation is None:
            raise ValueError(f"{self.fmu_path} is not an FMI 2.0 or 3.0 co-simulation FMU "
                             f"(fmiVersion {md.fmiVersion})")
        self.model_description = md
        #: what its FMI version makes different (fmu.cosim.fmi_api)
        self.api: FmiApi = api
        self.logging_on = bool(logging_on)
        self._vars = {v.name: v for v in md.modelVariables}
        numeric = [v for v in md.modelVariables if api.connectable(v)]
        #: signal -> (its variable, its place in an array variable or None)
        self._signals: dict[str, tuple[Any, int | None]] = {}
        for v in numeric:
            try:
                shape = array_shape(v)
            except ValueError as e:
                raise ValueError(f"FMU {name!r} ({self.fmu_path.name}): {e}") from None
            self._signals.update({v.name: (v, None)} if shape is None else
                                 {n: (v, k) for k, n in enumerate(element_names(v.name, shape))})
        self.inputs = tuple(n for n, (v, _) in self._signals.items() if v.causality == "input")
        self.outputs = tuple(n for n, (v, _) in self._signals.items() if v.causality == "output")
        #: String inputs and outputs (name -> causality): inputs can be set as parameters,
        #: neither is connectable
        self.string_variables = {v.name: v.causality for v in md.modelVariables
                                 if v.type == "String" and v.causality in ("input", "output")}
        self.units = {n: _unit(v) for n, (v, _) in self._signals.items()}
        self.feedthrough = self._feedthrough_from(md, feedthrough)
        #: the feedthrough given by the user, if any (kept when the system is saved)
        self.feedthrough_override = (None if feedthrough is None else
                                     {o: tuple(i) for o, i in feedthrough.items()})

        self.parameters: dict[str, Any] = {}
        for pname, value in (parameters or {}).items():
            v, _ = self._signals.get(pname, (self._vars.get(pname), None))
            if v is None or not _settable(v):
                settable = [v.name for v in md.modelVariables if _settable(v)]
                raise ValueError(f"FMU {name!r} ({self.fmu_path.name}) has no settable variable "
                                 f"{pname!r}; settable: {', '.join(settable)}")
            if pname in self._vars and array_shape(v) is not None:
                # a whole array given as a sequence: one value per element
                elements = [n for n, (w, _) in self._signals.items() if w is v]
                if isinstance(value, (str, bytes)) or len(value) != len(elements):
                    raise ValueError(f"FMU {name!r}: parameter {pname!r} is an array of "
                                     f"{len(elements)} values; got {value!r}")
                self.parameters.update((n, api.convert(v.type, x))
                                       for n, x in zip(elements, value))
            else:
                self.parameters[pname] = api.convert(v.type, value)

        self._out_read = self._reader(self.outputs)
        #: declared [min, max] of inputs and outputs (checked by the master, FMI 2.0 says
        #: values outside them are invalid; not every FMU checks what it is given)
        self.ranges = {n: r for n in (*self.inputs, *self.outputs)
                       if (r := api.declared_range(self._signals[n][0])) is not None}
        self._out_ranges = [(p, n, *self.ranges[n]) for p, n in enumerate(self.outputs)
                            if n in self.ranges]
        self._fmu = None
        self._snap = None  # the FMU state handle reused by snapshot()
        self._unzipdir: str | None = None
        self._callbacks = None
        self._fatal = False
        self._errors: list[str] = []  # messages logged with status fmi2Error or worse
        self._state_handles: list = []
        #: an array input's last values (value reference -> list), what a call that sets
        #: some of its elements writes for the others
        self._array_values: dict[int, list] = {}

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
        signals_of: dict[str, list[str]] = {}        # a variable's signals (its elements)
        for n, (v, _) in self._signals.items():
            signals_of.setdefault(v.name, []).append(n)
        inputs = set(self.inputs)
        ft = {}
        for o in self.outputs:
            deps = declared.get(self._signals[o][0].name)
            # FMI 2.0: no "dependencies" attribute (or no Unknown) = depends on all inputs.
            if deps is None:
                ft[o] = self.inputs
            else:
                # only the connectable inputs: a String input an output depends on (the
                # Reference FMUs have them) is not among self.inputs; an array output
                # depends on every element of the arrays its variable depends on
                ft[o] = tuple(n for d in deps for n in signals_of.get(d.name, ())
                              if n in inputs)
        return ft

    def _reader(self, names: Sequence[str]) -> Callable[[], list[float]]:
        """A function reading ``names`` with one get call per FMI type."""
        calls = self.calls(names)
        n = len(names)
        if len(calls) == 1 and calls[0].kind == self.api.real_type and calls[0].whole(n):
            get, vrs, size = self.api.getter(calls[0].kind), calls[0].vrs, calls[0].size
            if size == len(vrs):
                return lambda: getattr(self._fmu, get)(vrs)
            return lambda: getattr(self._fmu, get)(vrs, size)

        def read() -> list[float]:
            values = [0.0] * n
            for call in calls:
                got = self._get(call)
                for p, i in call.picks:
                    values[p] = float(got[i])
            return values

        return read

    def calls(self, names: Sequence[str]) -> list["ValueCall"]:
        """The get or set calls, one per FMI type in the order of the names' first
        appearance, that cover ``names`` (signals, an array's elements among them, or
        variables): what this component's readers and setters call, and what the
        compiled loop calls for them (fmu.cosim.compiled_loop)."""
        by_kind: dict[str, ValueCall] = {}
        for p, n in enumerate(names):
            v, k = self._signals.get(n, (self._vars.get(n), None))
            call = by_kind.setdefault(self.api.access_type(v.type),
                                      ValueCall(self.api.access_type(v.type)))
            call.add(p, v, k)
        return list(by_kind.values())

    def _get(self, call: "ValueCall") -> list:
        get = getattr(self._fmu, self.api.getter(call.kind))
        return get(call.vrs) if call.size == len(call.vrs) else get(call.vrs, call.size)

    def _write(self, call: "ValueCall", values: Sequence[Any]) -> None:
        """Set ``values`` (by position in the names of ``call``); an array is written
        whole, its elements not among the names with their last values."""
        flat: list = [0.0] * call.size
        for vr, offset, size, v in call.arrays:
            if vr not in self._array_values:
                self._array_values[vr] = _starts(v, size)
            flat[offset:offset + size] = self._array_values[vr]
        for p, i in call.picks:
            flat[i] = values[p]
        self._set_many(call.kind, call.vrs, flat)
        for vr, offset, size, _ in call.arrays:
            self._array_values[vr] = flat[offset:offset + size]

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
        self.terminate()
        self.log.clear()
        self._errors.clear()
        self._array_values.clear()
        self._unzipdir = str(safe_extract(self.fmu_path))
        try:
            fmu = (self._instantiate_fmi2() if self.api.version == "2.0"
                   else self._instantiate_fmi3())
            self._fmu = fmu
            self._fatal = False
        except Exception as e:
            self._cleanup()
            raise ComponentError(f"instantiation failed: {e}", log=self.log) from e
        try:
            self.api.start(fmu, t0, stop_time)
            for pname, value in self.parameters.items():
                try:
                    self._write(self.calls([pname])[0], [value])
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

    def _instantiate_fmi2(self):
        from fmpy import calloc, free
        from fmpy.fmi2 import (
            FMU2Slave,
            fmi2CallbackAllocateMemoryTYPE,
            fmi2CallbackFreeMemoryTYPE,
            fmi2CallbackFunctions,
            fmi2CallbackLoggerTYPE,
        )

        md = self.model_description
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
        return fmu

    def _instantiate_fmi3(self):
        from fmpy.fmi3 import FMU3Slave

        md = self.model_description
        name = self.name.encode()

        def log_message(env, status, category, message):
            # FMI 3.0 messages are plain text (no format), for this instance alone
            self._logger(env, name, status, category, message)

        fmu = FMU3Slave(guid=md.guid, unzipDirectory=self._unzipdir,
                        modelIdentifier=md.coSimulation.modelIdentifier,
                        instanceName=self.name)
        fmu.instantiate(loggingOn=self.logging_on, logMessage=log_message)
        self._callbacks = (log_message, fmu.logMessage)   # kept alive with the instance
        return fmu

    def do_step(self, t: float, h: float) -> None:
        try:
            reached = self.api.do_step(self._fmu, t, h)
        except Exception as e:
            raise self.step_refused(e) from e
        self.step_taken(reached)

    def step_refused(self, e: Exception) -> Exception:
        """What a step the FMU refused (``e``, fmpy's exception of the call, with its
        ``status``) means: ComponentTerminated or ComponentError; also for a step the
        compiled loop (:mod:`fmu.cosim.compiled_loop`) made."""
        # a discard that comes with an error message is a failure, fmi2Terminated or
        # not: pythonfmu slaves (fmu.fmi.slave) report a refused step that way and
        # answer fmi2Terminated = true after any discard
        if getattr(e, "status", None) == FMI2_DISCARD and not self._errors:
            terminated, reached = self.api.discard_terminates(self._fmu)
            if terminated:
                return ComponentTerminated(
                    "fmi2DoStep returned fmi2Discard with fmi2Terminated set: the FMU asked "
                    "to terminate the simulation", reached)
        return self._fail(f"fmi{self.api.version[0]}DoStep", e)

    def step_taken(self, reached: float | None = None) -> None:
        """After a step the FMU took: an error it logged fails it; ``reached`` (FMI 3.0's
        terminateSimulation) ends the run (also for a step of the compiled loop)."""
        if self._errors:
            self._check_log(f"fmi{self.api.version[0]}DoStep")
        if reached is not None:
            raise ComponentTerminated("fmi3DoStep set terminateSimulation: the FMU asked to "
                                      "terminate the simulation", reached)

    @property
    def instance(self):
        """fmpy's slave of the instantiated FMU (``FMU2Slave``/``FMU3Slave``: its
        ``component`` pointer and its library's functions), None before
        :meth:`initialize` and after :meth:`terminate`."""
        return self._fmu

    @property
    def log_route(self) -> "ctypes.Structure | None":
        """The route of this instance's messages (``LogRoute`` of log_proxy.c, its
        ``errors`` the count of fmi2Error messages), None where there is none (FMI 3.0,
        no compiled proxy, not instantiated)."""
        return self._callbacks[1] if self._callbacks and self.api.version == "2.0" else None

    def terminate(self) -> None:
        fmu = self._fmu
        if fmu is not None:
            self._fmu = None
            try:
                free = self.api.state_call(fmu, "free")
                for handle in self._state_handles + ([self._snap] if self._snap else []):
                    free(handle)
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
        calls = self.calls(names)
        one = names[0] if len(names) == 1 else None
        check = self._input_checker(names)
        api = self.api
        if len(calls) == 1 and calls[0].kind == api.real_type and not calls[0].arrays:
            vrs = calls[0].vrs
            setter = api.setter(api.real_type)
            call = f"fmi{api.version[0]}{setter[0].upper()}{setter[1:]}"

            def set_values(values: Sequence[float]) -> None:
                check(values)
                try:
                    getattr(self._fmu, setter)(vrs, values)
                except Exception as e:
                    raise self._fail(f"{call} of {', '.join(names)}", e, one) from e
                if self._errors:
                    self._check_log(f"{call} of {', '.join(names)}", names)

            return set_values

        def set_mixed(values: Sequence[float]) -> None:
            check(values)
            try:
                for c in calls:
                    self._write(c, values)
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
        return [_starts(v, 1 + (k or 0))[k or 0] for v, k in map(self._signals.get, self.inputs)]

    # -- state -----------------------------------------------------------------------
    def get_state(self) -> Any:
        """The FMU state: serialized bytes if the FMU can, otherwise a state handle.

        Handles are freed by :meth:`terminate`.
        """
        cs = self.model_description.coSimulation
        if not cs.canGetAndSetFMUstate:
            raise NotImplementedError(f"FMU {self.name!r} cannot get and set its state")
        handle = self.api.state_call(self._fmu, "get")()
        if cs.canSerializeFMUstate:
            try:
                return bytes(self.api.state_call(self._fmu, "serialize")(handle))
            finally:
                self.api.state_call(self._fmu, "free")(handle)
        self._state_handles.append(handle)
        return handle

    def set_state(self, state: Any) -> None:
        cs = self.model_description.coSimulation
        if not cs.canGetAndSetFMUstate:
            raise NotImplementedError(f"FMU {self.name!r} cannot get and set its state")
        if isinstance(state, (bytes, bytearray)):
            handle = self.api.state_call(self._fmu, "deserialize")(state)
            try:
                self.api.state_call(self._fmu, "set")(handle)
            finally:
                self.api.state_call(self._fmu, "free")(handle)
        else:
            self.api.state_call(self._fmu, "set")(state)

    def snapshot(self) -> Any:
        """The current FMU state in one state handle that is reused by the next call."""
        if not self.model_description.coSimulation.canGetAndSetFMUstate:
            raise NotImplementedError(f"FMU {self.name!r} ({self.fmu_path.name}) cannot get and "
                                      "set its state (canGetAndSetFMUstate is false)")
        try:
            # the raw get overwrites a non-NULL state in place: no allocation per step
            self._snap = self.api.snapshot(self._fmu, self._snap)
        except Exception as e:
            raise self._fail(f"fmi{self.api.version[0]}GetFMUstate", e) from e
        return self._snap

    def restore(self, snap: Any) -> None:
        try:
            self.api.state_call(self._fmu, "set")(snap)
        except Exception as e:
            raise self._fail(f"fmi{self.api.version[0]}SetFMUstate", e) from e
        self._errors.clear()  # errors of the step that is being undone

    def _set_many(self, kind: str, vrs: list[int], values: Sequence[Any]) -> None:
        """Write ``values`` of access type ``kind`` (whole numbers rounded)."""
        if kind in self.api.integer_types or kind == "Boolean":
            values = [int(round(v)) for v in values]
        if kind == "Boolean" and self.api.version != "2.0":
            values = [bool(v) for v in values]
        getattr(self._fmu, self.api.setter(kind))(vrs, values)


def _settable(v) -> bool:
    return v.causality in ("parameter", "input") and v.variability != "constant"


def _unit(v) -> str:
    if getattr(v, "unit", None):
        return v.unit
    dt = getattr(v, "declaredType", None)
    return (getattr(dt, "unit", None) or "") if dt is not None else ""


def _starts(v, size: int) -> list[float]:
    """The first ``size`` start values of a variable (an FMI 3.0 array lists one per
    element, or one for all), 0 where none is declared."""
    words = str(v.start).split() if v.start is not None else []
    if v.type == "Boolean":
        values = [float(w.lower() in ("true", "1")) for w in words]
    else:
        try:
            values = [float(w) for w in words]
        except ValueError:
            values = []
    if len(values) == 1:
        values = values * size
    return (values + [0.0] * size)[:size]


class ValueCall:
    """One get or set call of an FMI type over some signals: the value references, the
    number of values they hold (an array holds its size), where each signal's value is
    (``picks``: position among the signals, index among the values) and the arrays'
    value reference, first index, size and variable."""

    def __init__(self, kind: str):
        self.kind = kind
        self.vrs: list[int] = []
        self.size = 0
        self.picks: list[tuple[int, int]] = []
        self.arrays: list[tuple[int, int, int, Any]] = []
        self._offset: dict[int, int] = {}

    def add(self, position: int, v, element: int | None) -> None:
        vr = v.valueReference
        if vr not in self._offset:
            size = 1 if element is None else math.prod(array_shape(v))
            self._offset[vr] = self.size
            self.vrs.append(vr)
            if element is not None:
                self.arrays.append((vr, self.size, size, v))
            self.size += size
        self.picks.append((position, self._offset[vr] + (element or 0)))

    def whole(self, n: int) -> bool:
        """Whether the values read are the ``n`` signals themselves, in order."""
        return self.size == n and all(p == i for p, i in self.picks)
