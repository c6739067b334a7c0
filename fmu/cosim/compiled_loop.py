"""The master's fixed-step loop in compiled code (:class:`CompiledLoop`), the fast path of
:meth:`fmu.cosim.master.Master.run` when every component is an FMI 2.0 co-simulation FMU.

Python sets the run up as always (:class:`~fmu.cosim.run.Run`: the FMUs instantiated,
the first point propagated and recorded); then one communication step of the Python
loop -- the components' steps (Gauss–Seidel: inputs set, step, outputs read, component
after component; Jacobi: every step), then the outputs propagated to the inputs in
feedthrough order (:class:`~fmu.cosim.coupling.Coupling`'s schedule) -- is written as a
program of operations, each the FMI calls of one input setter (SET), one ``fmi2DoStep``
(STEP) or one reading of a component's outputs (READ), with the value references,
types, sources and declared ranges the Python loop uses; ``native/cosim_loop.c`` runs
that program step after step, calling the FMUs through the function pointers fmpy
resolved (``FMUComponent.instance``), and writes the recorded rows into the run's rows.
Same calls, same order, same values: the results are the Python loop's bit for bit.

The loop runs in chunks of steps of about :data:`CHUNK_SECONDS` of wall clock, so that
between them the progress callback is called, the results file written, Ctrl-C answered
(:class:`~fmu.cosim.errors.CosimInterrupted` with the rows of the chunks done) and the
GIL released.

Python stays the reference for everything unusual: where the Python loop would refuse a
value (an input not finite or outside its declared range, or too large for an
fmi2Integer; an output not finite or outside its range), where a call returns more than
fmi2Warning, or where an FMU logs an fmi2Error message during a call (``log_proxy.c``
counts them per instance), the C loop stops at that operation and this module does what
the Python loop does there (the component's own checks, ``FMUComponent.step_refused``
for a step it refused: a failure, or a request to terminate the run, after which the
other components finish the step), then resumes the C loop at the next operation.  A
SET refused for its values is stopped before any call, so Python makes it as its loop
does; a set or get whose call failed is made again by Python (a get or a refused set
leaves the FMU as it was; its message is then logged twice); a step is never made again.

Not compiled (the Python loop runs): a component that is a Python block or an FMI 3.0
FMU (or of a subclass of FMUComponent that changes how it steps, sets or reads),
``extrapolation=1``, variable or replayed steps, real-time pacing, a step timeout
(the watchdog stamps each ``do_step``), an fmpy call logger, a broken install without
the compiled modules; ``Master(compiled=False)`` asks for the Python loop.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fmu.cosim.errors import ComponentTerminated
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.plan import RunPlan
from fmu.cosim.run import Run
from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.native import KernelError, kernel_library, table_layout

__all__ = ["CHUNK_SECONDS", "COSIM_LOOP_C_SOURCE", "CompiledLoop", "why_not_compiled"]

#: The loop (``native/cosim_loop.c``).
COSIM_LOOP_C_SOURCE = Path(__file__).resolve().parent / "native" / "cosim_loop.c"
#: Wall-clock time [s] of one chunk of steps in C, between two returns to Python.
CHUNK_SECONDS = 0.02

_library = kernel_library("fmu.cosim._cosim_loop", COSIM_LOOP_C_SOURCE, (TABLE_LAYOUT_HEADER,))

# operations, value kinds and why the loop stopped: the enums of cosim_loop.c
_SET, _STEP, _READ = 1, 2, 3
_KINDS = {"Real": 0, "Integer": 1, "Boolean": 2}
_DONE, _VALUE, _STATUS, _LOGGED = 0, 1, 2, 3
#: FMUComponent's methods whose calls the C loop makes itself: a subclass that
#: overrides one runs in the Python loop
_BYPASSED = ("do_step", "input_setter", "get_output_values", "step_taken", "step_refused")
_FMI2_CALLS = {"fmi2DoStep": "do_step", "fmi2SetReal": "set_real",
               "fmi2SetInteger": "set_integer", "fmi2SetBoolean": "set_boolean",
               "fmi2GetReal": "get_real", "fmi2GetInteger": "get_integer",
               "fmi2GetBoolean": "get_boolean"}


def why_not_compiled(master, plan: RunPlan) -> str | None:
    """Why ``master`` runs ``plan`` in the Python loop, or None when the compiled loop
    can take it (the module docstring lists the conditions; the instances are checked
    again when the run has started them)."""
    if not master.compiled:
        return "Master(compiled=False)"
    if plan.mode != "fixed":
        return f"{plan.mode} steps"
    if master.extrapolation != 0:
        return "input extrapolation"
    if plan.realtime:
        return "real-time pacing"
    if plan.step_timeout is not None:
        return "a step timeout"
    for c in master.system.components:
        if not isinstance(c, FMUComponent):
            return f"component {c.name!r} is no FMU"
        if c.api.version != "2.0":
            return f"FMU {c.name!r} is FMI {c.api.version}"
        overridden = [m for m in _BYPASSED if getattr(type(c), m) is not getattr(FMUComponent, m)]
        if overridden:   # the C loop would not call them
            return f"component {c.name!r} overrides {', '.join(overridden)}"
    try:
        _library()
    except KernelError as e:
        return f"the compiled loop is not available ({e})"
    return None


@dataclass(frozen=True)
class _Op:
    """One operation of the program as the Python loop makes it: what (SET, STEP, READ),
    of which component; a SET's sources in y, its inputs (written to u where it
    propagates) and the run's setter of them; a READ's writes into y."""

    kind: int
    comp: int
    sources: tuple = ()
    inputs: tuple = ()
    propagating: bool = False
    setter: object = None
    writes: tuple = ()          # (position among the outputs, global output)


class CompiledLoop:
    """The fixed-step loop of one started run, in C (module docstring).

    Parameters
    ----------
    run : Run
        The started run (its components instantiated, the first point recorded).
    plan : RunPlan
        Its plan, fixed steps.
    """

    def __init__(self, run: Run, plan: RunPlan):
        self.run, self.plan = run, plan
        coupling = run.coupling
        self.ops = self._operations(run)
        self.n_step_ops = len(self.ops) - self.n_propagation_ops
        code: list[int] = []
        starts: list[int] = []
        self._ranges: list[tuple[float, float]] = []
        for op in self.ops:
            starts.append(len(code))
            code += self._encode(op)
        widest = max([len(c.outputs) for c in coupling.components]
                     + [len(op.inputs) for op in self.ops] + [1])
        self.values = np.zeros(2 * widest)
        self.ints = np.zeros(widest, dtype=np.intc)
        fmu_layout = table_layout(_library, "LOOP_FMU_LAYOUT")
        fmus = [fmu_layout.structure(**self._functions(c)) for c in coupling.components]
        self._fmus = (type(fmus[0]) * len(fmus))(*fmus)
        # a one-sided range: its open side the largest double (the values are finite)
        lo = np.maximum([r[0] for r in self._ranges] or [0.0], -np.finfo(float).max)
        hi = np.minimum([r[1] for r in self._ranges] or [0.0], np.finfo(float).max)
        self.plan_struct = table_layout(_library, "LOOP_PLAN_LAYOUT").structure(
            n_fmus=len(fmus), fmus=ctypes.addressof(self._fmus),
            n_out=coupling.n_out, n_in=coupling.n_in, gauss_seidel=int(run.gauss_seidel),
            t0=plan.start_time, h=plan.step, n_steps=float(plan.n_steps),
            n_ops=len(self.ops), n_step_ops=self.n_step_ops,
            ops=np.array(starts, dtype=np.intc), n_code=len(code),
            code=np.array(code, dtype=np.int64).astype(np.uint32).view(np.intc),
            n_ranges=len(lo), lo=lo, hi=hi)
        self.y = np.array(run.y, dtype=float)
        self.u = np.array(run.u, dtype=float)
        self.y_at_t = self.y.copy()
        self.report = np.zeros(5)

    @classmethod
    def for_run(cls, run: Run, plan: RunPlan) -> "CompiledLoop | None":
        """The compiled loop of a started run, or None where its instances cannot be
        driven from C (an fmpy call logger, no log route: a broken install)."""
        for c in run.comps:
            fmu = c.instance
            if fmu is None or c.log_route is None or getattr(fmu, "fmiCallLogger", None):
                return None
        return cls(run, plan)

    # -- the program ---------------------------------------------------------------------
    def _operations(self, run: Run) -> list[_Op]:
        """One communication step of the Python loop (Run._step_all, Run.propagate)."""
        coupling, master = run.coupling, run.master
        ops: list[_Op] = []
        if run.gauss_seidel:
            steps = coupling.step_inputs(master.order, True)
            for (i, fresh, stale), entry in zip(steps, run.stepping):
                setter = entry[4]
                if setter is not None:   # no extrapolation: the stale inputs are not set
                    ops.append(_Op(_SET, i, tuple(coupling.src[g] for g in fresh),
                                   tuple(fresh), False, setter))
                ops.append(_Op(_STEP, i))
                off = coupling.out_off[i]
                ops.append(_Op(_READ, i, writes=tuple(
                    (p, off + p) for p in range(len(coupling.components[i].outputs)))))
        else:
            ops += [_Op(_STEP, i) for i in run.order_idx]
        propagation: list[_Op] = []
        for (i, need, gs), setter, again in zip(coupling.schedule, run.set_fns,
                                                run.read_again):
            if setter is not None:
                propagation.append(_Op(_SET, i, tuple(coupling.src[g] for g in need),
                                       tuple(need), True, setter))
            if not again:     # read right after its step (Run.propagate)
                continue
            off = coupling.out_off[i]
            propagation.append(_Op(_READ, i, writes=tuple((g - off, g) for g in gs)))
        for (i, gis), (_, _, setter) in zip(coupling.final_inputs, run.final_fns):
            propagation.append(_Op(_SET, i, tuple(coupling.src[g] for g in gis),
                                   tuple(gis), True, setter))
        self.n_propagation_ops = len(propagation)
        return ops + propagation

    def _range(self, c: FMUComponent, name: str) -> int:
        r = c.ranges.get(name)
        if r is None:
            return -1
        self._ranges.append(r)
        return len(self._ranges) - 1

    @staticmethod
    def _groups(c: FMUComponent, names) -> list[tuple[int, list[int], list[int]]]:
        """The names by the type they are read or written as: the calls of the
        component's own setters and readers (``FMUComponent.calls``), a value
        reference per name (FMI 2.0 has no arrays: the value at index i is value
        reference i's; two alias names read their one reference twice)."""
        return [(_KINDS[call.kind], [call.vrs[i] for _, i in call.picks],
                 [p for p, _ in call.picks]) for call in c.calls(names)]

    def _encode(self, op: _Op) -> list[int]:
        coupling = self.run.coupling
        c = coupling.components[op.comp]
        if op.kind == _STEP:
            return [_STEP, op.comp]
        if op.kind == _SET:
            names = [c.inputs[g - coupling.in_off[op.comp]] for g in op.inputs]
            groups = self._groups(c, names)
            code = [_SET, op.comp, int(op.propagating), len(groups)]
            for kind, vrs, pos in groups:
                code += [kind, len(vrs), *vrs, *(op.sources[p] for p in pos),
                         *((op.inputs[p] if op.propagating else -1) for p in pos),
                         *(self._range(c, names[p]) for p in pos)]
            return code
        groups = self._groups(c, c.outputs)
        code = [_READ, op.comp, len(c.outputs), len(groups)]
        for kind, vrs, pos in groups:
            code += [kind, len(vrs), *vrs, *pos, *(self._range(c, c.outputs[p]) for p in pos)]
        code.append(len(op.writes))
        for p, g in op.writes:
            code += [p, g]
        return code

    @staticmethod
    def _functions(c: FMUComponent) -> dict:
        fmu = c.instance
        route = c.log_route
        fields = {field: ctypes.cast(getattr(fmu.dll, call), ctypes.c_void_p).value
                  for call, field in _FMI2_CALLS.items()}
        fields["instance"] = fmu.component
        fields["log_errors"] = ctypes.addressof(route) + type(route).errors.offset
        return fields

    # -- running -------------------------------------------------------------------------
    def _call(self, k0: int, k_end: int, op0: int, skip: int, record_every: int) -> bool:
        run = self.run
        rows = run.rows[run.nrec:]
        stopped = _library().cosim_loop_run(
            self.plan_struct, self.y, self.u, self.y_at_t, rows, self.values, self.ints,
            float(k0), float(k_end), op0, skip, record_every, self.report)
        first = run.nrec
        for r in range(first, first + int(self.report[4])):
            run.nrec = r + 1      # as Run.record: counted, then written
            if run.csv is not None:
                run.csv.row(run.rows[r].tolist())
        return bool(stopped)

    def _room(self, n_rows: int) -> None:
        run = self.run
        while len(run.rows) - run.nrec < n_rows:
            run.rows = np.concatenate([run.rows, np.empty_like(run.rows)])

    def _to_python(self) -> None:
        run = self.run
        run.y[:] = self.y.tolist()
        run.u[:] = self.u.tolist()
        run.y_at_t = self.y_at_t.tolist()

    def _from_python(self) -> None:
        run = self.run
        self.y[:] = run.y
        self.u[:] = run.u

    def run_fixed(self) -> None:
        """Every step of the plan: chunks in C, Python between them and at anything
        unusual; raises as the Python loop does."""
        run, plan = self.run, self.plan
        h, t0, n_steps, every = plan.step, plan.start_time, plan.n_steps, plan.record_every
        fine = run.progress is not None and run.progress.interval == 0.0
        chunk = 1      # then grown (at most x4 per chunk) to about CHUNK_SECONDS
        k = run.done
        try:
            while k < n_steps:
                k_end = min(n_steps, k + chunk)
                self._room((k_end - k) // every + 2)
                began = time.perf_counter()
                stopped = self._call(k, k_end, 0, -1, every)
                done = int(self.report[0])
                run.compiled_steps += done - k
                run.t, run.done = t0 + done * h, done
                if stopped:
                    self._finish_step(done, int(self.report[1]), int(self.report[2]),
                                      int(self.report[3]))
                    k = done + 1
                else:
                    k = k_end
                    run.tick(run.t)
                    if not fine:
                        spent = time.perf_counter() - began
                        chunk = max(1, min(4 * chunk, int(chunk * CHUNK_SECONDS /
                                                          max(spent, 1e-6))))
        finally:
            self._to_python()

    def _finish_step(self, k: int, j: int, why: int, status: int) -> None:
        """Step ``k``, stopped at operation ``j``: that operation made by Python, the rest
        of the step in C again, until it is done; then what Run.fixed_step does."""
        run, plan = self.run, self.plan
        t = plan.start_time + k * plan.step
        t_next = plan.start_time + (k + 1) * plan.step
        ended = None
        while True:
            self._to_python()
            try:
                ended = self._python_op(j, t, t_next, why, status, ended)
            except ComponentTerminated:
                if run.gauss_seidel:   # as Run.advance: outputs back to t
                    run.y[:] = run.y_at_t
                raise
            self._from_python()
            skip = -1 if ended is None else run.comps.index(ended[0])
            if not self._call(k, k + 1, j + 1, skip, 0):
                break
            j, why, status = int(self.report[1]), int(self.report[2]), int(self.report[3])
        self._to_python()
        run.state["t"] = t_next
        if ended is not None:       # Run.advance, then Run.fixed_step, on a termination
            comp, e = ended
            run.state["comp"] = comp
            e.completed = True
            run.terminating_step_from = t
            run.t, run.done = t_next, k + 1
            run.record(t_next)
            raise e
        run.t, run.done = t_next, k + 1
        if (k + 1) % plan.record_every == 0 or k + 1 == plan.n_steps:
            run.record(t_next)
        run.tick(t_next)

    def _python_op(self, j: int, t: float, t_next: float, why: int, status: int, ended):
        """Operation ``j`` as the Python loop makes it (Run._step_all, Run.propagate),
        after the C loop stopped there for reason ``why`` with the call's ``status``:
        raises what the Python loop raises, or returns the termination kept so far."""
        run = self.run
        state = run.state
        op = self.ops[j]
        propagating = j >= self.n_step_ops
        c = run.comps[op.comp]
        if op.kind == _STEP:
            state["t"] = t
            state["comp"], state["phase"], state["since"] = c, "do_step", run.clock()
            try:
                if why == _STATUS:
                    from fmpy.fmi1 import FMICallException   # fmpy's error of the call
                    raise c.step_refused(FMICallException("fmi2DoStep", status))
                c.step_taken()
            except ComponentTerminated as e:
                return run.finishing(c, e, t_next, self.plan.step, ended)
            return ended
        if op.kind == _READ:
            state["t"] = t_next
            vals = run.read(op.comp)
            for p, g in op.writes:
                run.y[g] = vals[p]
            state["t"] = t_next if propagating else t
            return ended
        state["t"] = t_next if propagating else t
        vals = [run.y[s] for s in op.sources]
        if op.propagating:
            for g, v in zip(op.inputs, vals):
                run.u[g] = v
        state["comp"], state["phase"] = c, "setting inputs"
        op.setter(vals)
        return ended
