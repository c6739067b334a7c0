"""The working state of one :meth:`fmu.cosim.master.Master.run` (:class:`Run`): the
coupling vectors, the recorded rows, the input setters, where the run is; and the
run's progress report (:class:`RunProgress`)."""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

from fmu.cosim.components import Component
from fmu.cosim.errors import ComponentError, ComponentTerminated, Termination
from fmu.cosim.pacing import Pacer
from fmu.cosim.recording import CsvWriter, Result
from mbdcore.progress import ProgressReport

__all__ = ["Run", "RunProgress"]


class RunProgress(ProgressReport):
    """The run's progress report: while the callback runs, the run's ``state`` names it,
    so that an exception of the callback is reported as its own, not as the last
    component's."""

    def __init__(self, callback: Callable[[float, float], Any], stop: float, interval: float):
        super().__init__(callback, stop, interval)
        self.state: dict = {}     # the run's, set by Run

    def report(self, t: float) -> None:
        state = self.state
        comp, phase = state.get("comp"), state.get("phase")
        state["comp"], state["phase"] = None, "the progress callback"
        super().report(t)
        state["comp"], state["phase"] = comp, phase


class Run:
    """The working state of one :meth:`Master.run`: the coupling vectors (``y`` every
    connected output, ``u`` every input), the recorded rows, the input setters of the
    schedule, and where the run is (``state``: time, component, phase) for the message
    of a failure."""

    def __init__(self, master: "Master", t0: float, n_steps: int | None, record_every: int,
                 pacer: Pacer | None, progress: RunProgress | None):
        self.master = master
        coupling = self.coupling = master.coupling
        self.comps = coupling.components
        self.record_every = record_every
        self.pacer, self.progress = pacer, progress
        ncol = 1 + coupling.n_out + coupling.n_in
        # grown by doubling in record(): a huge run does not allocate its rows up front
        cap = min(n_steps // record_every + 2, 1 << 16) if n_steps is not None else 1024
        self.rows = np.empty((cap, ncol))
        self.nrec = 0
        self.y = [0.0] * coupling.n_out
        self.u: list[float] = []
        self.y_at_t: list[float] = []            # outputs at t while a Gauss-Seidel step runs
        self.y_prev: list[float] | None = None   # outputs and step of the previous point
        self.h_prev: float | None = None
        self.taken: Any = []
        self.rejected: list[tuple[float, float, float]] = []
        self.forced = 0
        self.t = t0
        self.done = 0  # steps completed (fixed and replayed runs)
        self.compiled_steps = 0  # of which by the compiled loop (fmu.cosim.compiled_loop)
        self.termination: Termination | None = None
        self.terminating_step_from: float | None = None   # a completed terminating step's t
        self.started: list[Component] = []
        self.state = {"t": t0, "comp": None, "phase": "initialize", "since": None}
        if progress is not None:
            progress.state = self.state
        self.csv: CsvWriter | None = None
        self.finished = False
        self.clock = time.perf_counter
        # Setters are built per run: FMU instances only exist after initialize().
        self.src = coupling.src
        self.out_off = coupling.out_off
        self.schedule = coupling.schedule
        self.order_idx = [coupling.index[n] for n in master.order]
        self.gauss_seidel = master.method == "gauss-seidel"
        self.extrapolate = master.extrapolation == 1
        self.coupled = sorted({s for s in self.src if s >= 0})
        # Gauss-Seidel reads every component's outputs right after its step, and no input
        # of it is set after that within the step: the propagation that follows reads
        # again only the outputs of a component whose inputs it has set before (direct
        # feedthrough); the others are those just read (a get changes nothing)
        set_before: set[int] = set()
        self.read_again: list[bool] = []
        for i, need, _ in self.schedule:
            if need:
                set_before.add(i)
            self.read_again.append(not self.gauss_seidel or i in set_before)

    def _setter(self, i: int, gis: list[int]):
        c = self.comps[i]
        return c.input_setter([c.inputs[gi - self.coupling.in_off[i]] for gi in gis])

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
                          for i, gis in self.coupling.final_inputs]
        # Per component in stepping order: inputs set just before it steps.
        # Gauss-Seidel: those fed by components that stepped before it ("fresh"), plus,
        # with extrapolation, the others ("stale", extrapolated).  Jacobi: only the
        # extrapolated ones.
        self.stepping = []
        for i, fresh, stale in self.coupling.step_inputs(self.master.order, self.gauss_seidel):
            stale = stale if self.extrapolate else []
            gis = fresh + stale
            self.stepping.append((i, self.comps[i], [self.src[gi] for gi in fresh],
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
        """The rows recorded so far, with the steps taken and rejected, as a Result."""
        coupling = self.coupling
        names = coupling.columns
        dtype = np.dtype([(n, np.float64) for n in names])
        rows = self.rows[:self.nrec]
        rows = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(names))
        data = (np.zeros(0, dtype) if len(rows) == 0 else
                np.ascontiguousarray(rows).view(dtype).reshape(len(rows)))
        return Result(data.copy(), coupling.out_names, coupling.in_names, coupling.units(),
                      steps=np.asarray(self.taken, dtype=float), rejected=list(self.rejected),
                      forced_steps=self.forced, compiled_steps=self.compiled_steps,
                      realtime=self.pacer.finish() if self.pacer is not None else None,
                      termination=self.termination)

    def terminated(self, e: ComponentTerminated) -> None:
        """A component asked to end the run: in the step from ``self.t``, which ends the
        run at ``self.t`` (recorded if it was not), or, with ``e.completed``, at the end
        of the step it completed, ``self.t`` already; a normal termination."""
        c = self.state["comp"]
        t = self.t
        if self.nrec == 0 or self.rows[self.nrec - 1, 0] != t:
            self.record(t)
        start = self.terminating_step_from if e.completed else t
        reached = (f"; it reached t = {e.reached:.12g} s" if e.reached is not None
                   and e.reached != t else "")
        msg = (f"component {c.name!r} asked to terminate the simulation in the step from "
               f"t = {start:.12g} s ({e}{reached}): the run ended at t = {t:.12g} s, "
               "results kept")
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

    def propagate(self, skip: Component | None = None, stepped: bool = False) -> None:
        """Outputs to inputs at a communication point, in feedthrough order; the inputs
        of ``skip`` (a component that has terminated) are left as they are.  ``stepped``:
        right after the components' steps, whose outputs were read (Gauss-Seidel), only
        the outputs that depend on inputs set here are read again (``read_again``)."""
        y, u, src, state = self.y, self.u, self.src, self.state
        for (i, need, gs), setter, again in zip(self.schedule, self.set_fns, self.read_again):
            if setter is not None and self.comps[i] is not skip:
                vals = [y[src[gi]] for gi in need]
                for gi, v in zip(need, vals):
                    u[gi] = v
                state["comp"], state["phase"] = self.comps[i], "setting inputs"
                setter(vals)
            if stepped and not again:
                continue
            vals = self.read(i)
            off = self.out_off[i]
            for g in gs:
                y[g] = vals[g - off]
        for c, gis, setter in self.final_fns:
            if c is skip:
                continue
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

    def advance(self, t: float, h: float, t_next: float, c_ext: float | None,
                finish_terminating: bool = False) -> None:
        """One communication step t -> t_next = t + h, outputs propagated at t_next.

        ``c_ext``: stale inputs get y + c_ext (y - y_prev), the mean of the linear
        extrapolation over the step; None holds y.

        ``finish_terminating``: a component that asks to terminate having completed the
        step (its last successful time is t_next, as the Reference FMU Stair at its
        end) does not stop the others: they complete the step too, the outputs are
        propagated at t_next (the terminated component's inputs are not set: it takes
        no more values) and the ComponentTerminated is raised afterwards with
        ``completed = True``.  Otherwise the step is abandoned at t.
        """
        state, y = self.state, self.y
        state["t"] = t
        y_prev = self.y_prev
        gauss_seidel = self.gauss_seidel
        try:
            ended = self._step_all(t, h, t_next, c_ext, y_prev,
                                   h if finish_terminating else None)
        except ComponentTerminated:
            if gauss_seidel:  # outputs of the components that stepped before it: back to t
                y[:] = self.y_at_t
            raise
        state["t"] = t_next
        if ended is None:
            self.propagate(stepped=True)
            return
        comp, e = ended
        self.propagate(skip=comp, stepped=True)
        state["comp"] = comp
        e.completed = True
        raise e

    def _step_all(self, t: float, h: float, t_next: float, c_ext: float | None,
                  y_prev, finish_h: float | None = None):
        """Every component steps t -> t_next (Gauss-Seidel: outputs read after each).

        Returns None, or (component, its ComponentTerminated) when ``finish_h`` is given
        and a component asked to terminate having reached t_next (see :meth:`advance`);
        the others have then completed the step."""
        state, y = self.state, self.y
        gauss_seidel = self.gauss_seidel
        ended = None
        if gauss_seidel:
            self.y_at_t = y[:]
        for i, c, fresh, stale, setter in self.stepping:
            if setter is not None:
                vals = [y[s] for s in fresh]
                if stale:
                    vals += ([y[s] + c_ext * (y[s] - y_prev[s]) for s in stale]
                             if c_ext is not None else [y[s] for s in stale])
                state["comp"], state["phase"] = c, "setting inputs"
                setter(vals)
            if gauss_seidel:
                state["comp"], state["phase"], state["since"] = c, "do_step", self.clock()
                try:
                    c.do_step(t, h)
                except ComponentTerminated as e:
                    ended = self.finishing(c, e, t_next, finish_h, ended)
                state["t"] = t_next  # the new outputs belong to the end of the step
                vals = self.read(i)
                state["t"] = t
                off = self.out_off[i]
                y[off:off + len(vals)] = vals
        if not gauss_seidel:
            for i in self.order_idx:
                c = self.comps[i]
                state["comp"], state["phase"], state["since"] = c, "do_step", self.clock()
                try:
                    c.do_step(t, h)
                except ComponentTerminated as e:
                    ended = self.finishing(c, e, t_next, finish_h, ended)
        return ended

    @staticmethod
    def finishing(c: Component, e: ComponentTerminated, t_next: float,
                   finish_h: float | None, ended):
        """``c`` asked to terminate in its step: kept (returned; the first one wins) when
        ``finish_h`` allows finishing the step and ``c`` reached t_next, raised otherwise."""
        reached = e.reached
        # reached the end of the step: to the rounding of t + h, not a partial step
        if (finish_h is None or reached is None
                or abs(reached - t_next) > 1e-9 * finish_h + 4e-16 * abs(t_next)):
            raise e
        return ended if ended is not None else (c, e)

    def fixed_step(self, t: float, h: float, t_next: float, k: int, n_steps: int) -> None:
        """A step of a run whose steps are given: advance, record, pace."""
        extrapolate = self.extrapolate
        y_old = self.y[:] if extrapolate else None
        try:
            self.advance(t, h, t_next, self.extrapolation_factor(h), finish_terminating=True)
        except ComponentTerminated as e:
            if e.completed:   # every component is at t_next: keep that point
                self.terminating_step_from = t
                self.t = t_next
                self.done = k + 1
                self.record(t_next)
            raise
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
