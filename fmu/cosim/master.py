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

Compiled loop
-------------
A fixed-step run whose components are all FMI 2.0 FMUs (C-source or pythonfmu alike),
without extrapolation, real-time pacing or a step timeout, runs its loop in C
(:mod:`fmu.cosim.compiled_loop`): the same FMI calls with the same values in the same
order, so the same rows bit for bit, at below 1 µs per FMU per step for the loop itself;
whatever is unusual (a refused value, a failed call, a logged error, a request to
terminate) is handed back to the Python loop at the operation where it happened.
``Result.compiled_steps`` counts its steps; ``Master(compiled=False)`` asks for the
Python loop.

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
at its end): this is not a failure.  If the FMU reached the end of that step (its
``fmi2LastSuccessfulTime``, as Stair at t = 9 s) and the steps are fixed or replayed,
the other components complete the step, the outputs are propagated (not into the
terminated FMU) and the run ends there, recorded -- the row fmpy records; otherwise the
run ends at the communication point the step started from.  The results up to there are
returned, and ``Result.termination`` (:class:`Termination`) says which component asked
and when.  fmi2Discard without fmi2Terminated stays a failure (a
variable-step run retries the step shorter).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from fmu.cosim.compiled_loop import CompiledLoop, why_not_compiled
from fmu.cosim.components import Component
from fmu.cosim.coupling import Coupling
from fmu.cosim.errors import (
    ComponentError,
    ComponentTerminated,
    CosimError,
    CosimInterrupted,
    StepTimeout,
)
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.pacing import Pacer
from fmu.cosim.plan import RunPlan, plan_run
from fmu.cosim.recording import CsvWriter, Result, ResultsFileError
from fmu.cosim.run import Run, RunProgress
from fmu.cosim.system import System
from fmu.cosim.watchdog import Watchdog

__all__ = ["Master", "StepControl"]

#: The master's own messages (real-time overruns); each component's FMU messages go to
#: its child ``fmu.cosim.master.<name>`` (:data:`fmu.cosim.components.COMPONENT_LOGGER`).
logger = logging.getLogger(__name__)


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
    compiled : bool
        Run a fixed-step run whose components are all FMI 2.0 FMUs in compiled code
        (:mod:`fmu.cosim.compiled_loop`: the same calls and results as the Python loop,
        several times faster); False: always the Python loop.

    Raises
    ------
    AlgebraicLoopError
        Outputs that depend on themselves through direct feedthrough.
    """

    METHODS = ("gauss-seidel", "jacobi")
    EXTRAPOLATIONS = {0: 0, 1: 1, "zero": 0, "first": 1}

    def __init__(self, system: System, step: float, method: str = "gauss-seidel",
                 order: Sequence[str] | None = None, extrapolation: int | str = 0,
                 step_control: StepControl | None = None, compiled: bool = True):
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
        self.compiled = bool(compiled)
        #: the flat numbering of outputs and inputs, and the propagation schedule
        self.coupling = Coupling(system)
        self.order = self._check_order(order) if order is not None else self.default_order()

    # -- the stepping order ------------------------------------------------------------
    def default_order(self) -> list[str]:
        """Gauss–Seidel order: sources before their consumers, cycles broken at plants
        (:meth:`Coupling.default_order <fmu.cosim.coupling.Coupling.default_order>`)."""
        return self.coupling.default_order()

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
            step_timeout: float | None = None,
            csv_columns: Sequence[str] | Mapping[str, str] | None = None,
            csv_prefix: bool = True) -> Result:
        """Simulate from ``start_time`` to ``stop_time`` [s].

        Without ``step_control`` and ``steps``, ``stop_time - start_time`` must be a
        whole number of steps; communication points are ``t_k = start_time + k*step``
        (no accumulated drift).  The arguments are checked first, all of them, into one
        :class:`~fmu.cosim.plan.RunPlan` that the loop of the stepping mode reads.

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
        csv_columns, csv_prefix : optional
            The columns of ``csv`` and their names, as ``columns`` and ``prefix`` of
            :meth:`Result.to_csv <mbdcore.timeseries.TimeSeries.to_csv>` (names, or
            ``{name: new name}``; ``csv_prefix=False`` drops the component of the
            columns not renamed): the file is then ``result.to_csv(path,
            columns=csv_columns, prefix=csv_prefix)``, byte for byte.  A column that is
            not recorded is refused before the run (ValueError, with the closest names).
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
            rows end at the end of that step if the FMU reached it (fixed and replayed
            steps), else at its start, and ``result.termination`` says so.

        Raises
        ------
        ValueError, TypeError
            An argument is refused (before any component starts): the message names the
            parameter, its value and what is accepted; also a component that cannot take
            varying steps or be rolled back where the run needs it.
        CosimError
            A component failed (exception or FMI error status, rejected input, NaN
            or out-of-range value); ``err.result`` holds the rows up to the last
            complete point (also written to ``csv`` if given, ``err.csv``).
        CosimInterrupted
            KeyboardInterrupt during the run (a KeyboardInterrupt subclass): the
            components are terminated, their temporary folders removed, ``err.result``
            holds the rows so far (in ``csv`` too).
        """
        plan = plan_run(self.step, self.step_control is not None, stop_time, start_time,
                        steps=steps, realtime=realtime, speed=speed, progress=progress,
                        progress_interval=progress_interval, csv=csv,
                        record_every=record_every, step_timeout=step_timeout,
                        recorded=self.coupling.columns, csv_columns=csv_columns,
                        csv_prefix=csv_prefix)
        if plan.varying_steps:
            self._check_variable_step(rollback=plan.rollback)
        return self._execute(plan)

    def _execute(self, plan: RunPlan) -> Result:
        """Run ``plan``: start, the loop of its mode, and what a failure, an interruption
        or a component's request to terminate makes of the run."""
        run = self._new_run(plan)
        watchdog = None
        try:
            try:
                if plan.step_timeout is not None:
                    watchdog = Watchdog(run.state, plan.step_timeout)
                run.start(plan.start_time, plan.stop_time)
                if plan.mode == "fixed":
                    self._run_fixed(run, plan)
                elif plan.mode == "replay":
                    self._run_replay(run, plan)
                else:
                    self._run_variable(run, plan)
                if run.progress is not None:
                    run.progress.done(run.t)
            finally:
                if watchdog is not None:
                    watchdog.stop()
        except StepTimeout as e:
            raise self._failure(run, e, plan.csv,
                                timeout=(plan.step_timeout, watchdog.fired)) from None
        except KeyboardInterrupt as e:
            raise self._interrupted(run, e, plan.csv) from None
        except ComponentTerminated as e:  # asked for, not a failure: the results so far
            run.terminated(e)
            if run.progress is not None:
                run.progress.done(run.t)
        except Exception as e:
            raise self._failure(run, e, plan.csv) from e
        finally:
            run.finish()
        return run.result()

    def _new_run(self, plan: RunPlan) -> Run:
        """The run's state, its progress report, pacer and CSV file: made before any
        component starts, so that an unwritable path fails at once."""
        report = (RunProgress(plan.progress, plan.stop_time, plan.progress_interval)
                  if plan.progress is not None else None)
        pacer = Pacer(plan.start_time, plan.speed, logger) if plan.realtime else None
        run = Run(self, plan.start_time, plan.n_steps, plan.record_every, pacer, report)
        if plan.csv is not None:
            run.csv = CsvWriter(plan.csv, self.coupling.columns, plan.csv_columns)
        return run

    # -- one loop per stepping mode -----------------------------------------------------
    def _run_fixed(self, run: Run, plan: RunPlan) -> None:
        """Fixed communication step: t_k = t0 + k h, no accumulated drift."""
        h, t0, n_steps = plan.step, plan.start_time, plan.n_steps
        try:
            loop = (CompiledLoop.for_run(run, plan) if why_not_compiled(self, plan) is None
                    else None)
            if loop is not None:
                loop.run_fixed()
                return
            for k in range(n_steps):
                run.fixed_step(t0 + k * h, h, t0 + (k + 1) * h, k, n_steps)
        finally:
            # a read-only view: no per-step storage, memory stays flat on long runs
            run.taken = np.broadcast_to(h, (run.done,))

    def _run_replay(self, run: Run, plan: RunPlan) -> None:
        """The given steps, in order (a replay of a variable-step run, bit for bit)."""
        steps = plan.steps
        t = plan.start_time
        n_steps = len(steps)
        try:
            for k, h in enumerate(steps):
                t_next = t + h
                run.fixed_step(t, h, t_next, k, n_steps)
                t = t_next
        finally:
            run.taken = list(steps[:run.done])

    def _run_variable(self, run: Run, plan: RunPlan) -> None:
        """Variable step: a step is repeated from the saved component states with a
        smaller h while the coupling error estimate exceeds 1 (module docstring)."""
        ctrl = self.step_control
        min_step = ctrl.min_step if ctrl.min_step is not None else plan.step * 1e-3
        max_step = ctrl.max_step if ctrl.max_step is not None else math.inf
        stop = plan.stop_time
        eps_t = 1e-12 * max(1.0, abs(stop))
        t = plan.start_time
        k = 0
        h = min(plan.step, max_step)
        while stop - t > eps_t:
            h = self._fit_step(h, stop - t, min_step)
            y_old = run.y[:]
            h, err, q, shrunk = self._variable_step(run, t, h, min_step, y_old)
            if err > 1.0:
                run.forced += 1
            run.y_prev, run.h_prev = y_old, h
            t = run.t = t + h
            k += 1
            run.taken.append(h)
            if k % run.record_every == 0 or stop - t <= eps_t:
                run.record(t)
            run.tick(t)
            fac = ctrl.max_growth if err == 0.0 else ctrl.safety * err ** (-1.0 / (q + 1))
            fac = min(max(fac, ctrl.max_shrink), 1.0 if shrunk else ctrl.max_growth)
            h = min(h * fac, max_step)

    @staticmethod
    def _fit_step(h: float, remaining: float, min_step: float) -> float:
        """The step ``h`` fitted to the ``remaining`` time [s]: ending the run exactly,
        leaving no sliver of a step at the end, and at least ``min_step``."""
        if h >= remaining * (1.0 - 1e-9):
            h = remaining
        elif remaining - h < min_step:
            h = remaining / 2  # no sliver of a step at the end
        return max(h, min(min_step, remaining))

    def _variable_step(self, run: Run, t: float, h: float, min_step: float,
                       y_old: list[float]) -> tuple[float, float, int, bool]:
        """One accepted step from ``t``: the components' states saved, then the step
        taken and, while its error estimate exceeds 1 or a component fails it, undone
        and retried shorter, down to ``min_step``.  Returns the step taken, its error
        estimate, the extrapolation order ``q`` and whether it was shortened; the
        outputs are propagated at its end."""
        ctrl = self.step_control
        comps = self.system.components
        state = run.state
        u_old = run.u[:]
        state["phase"] = "saving state"
        snaps = []
        for c in comps:
            state["comp"] = c
            snaps.append(c.snapshot())
        shrunk = False
        while True:
            c_ext = run.extrapolation_factor(h)
            q = 1 if c_ext is not None else 0
            at_min = h <= min_step * (1.0 + 1e-9)
            try:
                run.advance(t, h, t + h, c_ext)
            except ComponentError:
                if at_min:
                    raise
                err = math.inf
            else:
                err = run.coupling_error(y_old, h, c_ext is not None)
            if err <= 1.0 or at_min:
                return h, err, q, shrunk
            run.rejected.append((t, h, err))
            state["t"], state["phase"] = t, "restoring state"
            for c, snap in zip(comps, snaps):
                state["comp"] = c
                c.restore(snap)
            run.y[:], run.u[:] = y_old, u_old
            fac = ctrl.safety * err ** (-1.0 / (q + 1)) if math.isfinite(err) else 0.25
            h = max(h * min(max(fac, ctrl.max_shrink), 0.9), min_step)
            shrunk = True

    def _failure(self, run: "Run", e: BaseException, csv, timeout=None) -> CosimError:
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
        if isinstance(e, ResultsFileError):   # not the component's doing
            partial = run.result()
            err = CosimError(f"cannot write the results file {str(csv)!r}{where}: "
                             f"{e.strerror}; run stopped, the file holds the rows written "
                             "before", "", None, t, partial, [])
            err.csv = Path(csv)
            return err
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

    def _interrupted(self, run: "Run", e: KeyboardInterrupt, csv) -> CosimInterrupted:
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
