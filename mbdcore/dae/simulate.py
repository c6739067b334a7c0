"""The fixed-step simulation driver of constrained systems (index-1 with any ODE
integrator, index-3/GGL with the implicit integrators) and its result."""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from mbdcore.dae.index1 import (
    Index1Baumgarte,
    assemble,
    augmented_accelerations,
    problem_names,
)
from mbdcore.dae.index3 import Index3Integrator
from mbdcore.dae.methods import method_info, method_names
from mbdcore.dae.problem import ConstrainedProblem
from mbdcore.integrators.base import RHS, DivergenceError, IntegrationError, Integrator
from mbdcore.integrators.piecewise import PiecewiseInput, piecewise_form
from mbdcore.progress import ProgressReport
from mbdcore.timeseries import TimeSeries, rate_unit

__all__ = ["SimulationResult", "DivergenceError", "simulate", "integrate", "integrate_held", "integrate_index3",
           "reference_solution"]


class SimulationResult(TimeSeries):
    """The time series of :func:`simulate` (a :class:`~mbdcore.timeseries.TimeSeries`).

    Columns: ``"time"`` [s], each coordinate ``"body.x"`` [m or rad], its rate
    ``"d(body.x)"`` [m/s or rad/s], each multiplier ``"lambda(joint.x)"`` (reaction force
    [N] or moment [N.m], G^T lambda sign), ``"violation"`` (max |g| [m, rad]) and
    ``"energy"`` (total mechanical energy [J], nan where undefined).

    Attributes
    ----------
    t : ndarray (N,)          times [s]
    q, v : ndarray (N, n)     coordinates and velocities
    lam : ndarray (N, m)      Lagrange multipliers
    violation, energy : ndarray (N,)
    coordinates, multipliers : names of the columns of q and lam
    stats : dict              integrator statistics
    """

    def __init__(self, t, q, v, lam, violation, energy, coordinates=(), multipliers=(),
                 stats=None, coordinate_units=None, multiplier_units=None):
        self.t, self.q, self.v, self.lam = t, q, v, lam
        self.violation, self.energy = violation, energy
        self.coordinates, self.multipliers = list(coordinates), list(multipliers)
        self.stats = dict(stats or {})
        cu = list(coordinate_units or [""] * len(self.coordinates))
        mu = list(multiplier_units or [""] * len(self.multipliers))
        columns = {"time": t}
        units = {}
        for i, (n, u) in enumerate(zip(self.coordinates, cu)):
            columns[n], units[n] = q[:, i], u
        for i, (n, u) in enumerate(zip(self.coordinates, cu)):
            columns[f"d({n})"], units[f"d({n})"] = v[:, i], rate_unit(u)
        for i, (n, u) in enumerate(zip(self.multipliers, mu)):
            columns[f"lambda({n})"], units[f"lambda({n})"] = lam[:, i], u
        columns["violation"], units["violation"] = violation, "m, rad"
        columns["energy"], units["energy"] = energy, "J"
        ts = TimeSeries.from_columns(columns, units)
        super().__init__(ts.data, ts.units)

    def default_signals(self) -> list[str]:
        """The coordinates."""
        return list(self.coordinates)


def simulate(problem: ConstrainedProblem, t_end: float, h: float, method: str = "rk4",
             formulation: str | None = None, alpha: float | None = None,
             beta: float | None = None,
             project: bool = True, q0=None, v0=None, assemble_initial: bool = True,
             inputs=None, feedback=None, record_every: int = 1, t0: float = 0.0,
             breakpoints=None, progress=None, progress_interval: float = 0.1,
             record_steps: bool = False, **method_options) -> SimulationResult:
    """Simulate a constrained system from ``t0`` to ``t0 + t_end`` [s] with fixed steps
    ``h`` [s].

    Parameters
    ----------
    method : str or stepper
        Any name of :data:`mbdcore.dae.methods.METHODS`, or a stepper instance.  An ODE
        method integrates the index-1 form; a DAE method ("generalized-alpha", "hht",
        "newmark", "bathe", "bathe-broyden") the index-3/GGL form.  Its options pass
        through ``method_options`` (e.g. ``rho_inf``, ``constraint_form="ggl" |
        "index3"``, ``iteration="modified" | "newton" | "broyden"``, ``tol``,
        ``sparse=True | False | "auto"``; ``rtol``, ``atol`` for the BDF and scipy
        methods); an option the method does not take is refused, naming the ones it does.
        ``adaptive=True`` (with ``rtol``, ``atol`` [m, rad], ``h_min`` [s]) of
        generalized-alpha, HHT and Newmark: error-controlled steps within each step
        ``h``, which is then the output grid, landed on (docs/step_control.md); the
        result's ``stats`` count accepted and rejected steps.
    formulation : {"index1", "index3"}, optional
        Follows from the method; if given it must agree with it.
    alpha, beta : float, optional
        Baumgarte parameters [1/s] of the index-1 form (default 10).  With a DAE method
        that has an option of that name (``"hht"``'s alpha, ``"newmark"``'s beta) they
        are that option; with another DAE method they are refused.
    project : apply the minimum-norm position and velocity projections after every
        step (index-1 only; docs/benchmarks.md §8).
    inputs : callable or PiecewiseInput, optional
        ``inputs(t) -> dict`` of system inputs [N m / N], sampled at the start of each
        step and held over it; or a :class:`~mbdcore.integrators.PiecewiseInput`, its
        signals the inputs of its names (its knots after the first its breakpoints).
        An ``inputs`` with a ``breakpoints`` attribute (times [s] where it jumps)
        declares them as the ``breakpoints`` argument does.
    breakpoints : iterable of float, optional
        Times [s] where ``inputs`` jumps (a bang-bang torque, a force step).  Each one
        is made a step boundary: a step that would straddle it is split there (the
        recorded times stay ``t0 + k h``; a breakpoint within ``1e-9 h`` of a grid
        point is that grid point, so ``k h`` rounded one ulp short of it is no
        problem); the step that starts at it samples ``inputs`` at the next float
        above it (the value after the jump, whether ``inputs`` switches at ``t < t_b``
        or at ``t <= t_b``); and the integrator is restarted there as at ``start``:
        consistent accelerations and multipliers for the DAE methods, the history of
        the multistep methods voided, Gill's register cleared.  A jump inside a step
        costs every method to O(h); declared, the methods keep their order
        (docs/architecture.md, "Inputs that jump").  Undeclared inputs are sampled and
        held as they are, with no restart (a restart at every step would change the
        methods: generalized-alpha restarted every step is first order).
    feedback : callable, optional
        ``feedback(t, q, v) -> dict`` of system inputs from the state at each grid
        point ``t0 + k h``, held until the next: a controller sampled at the step size
        (applied after ``inputs``; a step split at a breakpoint does not resample it).
    record_every : int
        Keep every k-th step in the result.
    record_steps : bool
        A DAE method's result holds every step the integrator took and kept, at its
        own times: those of ``adaptive=True`` (and of a step halving) between the grid
        points as well as the grid points, which the steps still land on (events of
        ``problem.update`` and the feedback act at the grid points only, so the inputs
        and discrete states are constant between two of them).  ``len(t) - 1`` is then
        the number of steps.  What needs the steps themselves, not the grid --
        the energy balance's trapezoid over the element powers
        (:func:`mbdcore.multibody.energy.energy_balance`, docs/energy.md) -- takes
        it; ``record_every`` must then be 1.  The ODE methods' steps are the grid's:
        they refuse it.
    progress : callable, optional
        ``progress(t, t0 + t_end)`` [s]: told how far the run is at the start, at most
        every ``progress_interval`` seconds of wall clock, and at the end
        (:class:`mbdcore.progress.ProgressReport`); the driver prints nothing.

    Raises
    ------
    DivergenceError
        (an :class:`~mbdcore.integrators.base.IntegrationError`) when the solution
        diverges: a non-finite state, or a part of the model beyond its range
        (:meth:`ConstrainedProblem.range_violation`: a beam whose tip deflection exceeds
        its length), checked after every step, so a diverging solution is reported as
        such before it ends in a singular matrix or a Newton failure.  Its ``time``,
        ``body``, ``quantity``, ``value``, ``limit`` say where; ``result`` holds the
        recorded steps before it.
    ConvergenceError
        (an :class:`~mbdcore.integrators.base.IntegrationError`) when an implicit step's
        Newton iteration fails at h and at every halving of it down to h /
        2**max_halvings (the method retries it first,
        :class:`~mbdcore.integrators.base.StepHalving`; ``max_halvings`` is a method
        option); it names the time, the step tried last and the last residual;
        ``result`` holds the recorded steps before it.
    """
    n_steps = int(round(t_end / h))
    if n_steps < 1 or not np.isfinite(h) or h <= 0:
        raise ValueError(f"t_end = {t_end!r} s and h = {h!r} s must give at least one step")
    report = (ProgressReport(progress, t0 + n_steps * h, progress_interval)
              if progress is not None else None)
    if isinstance(method, str):
        kind = method_info(method).kind
    else:
        kind = "dae" if isinstance(method, Index3Integrator) else "ode"
    implied = "index1" if kind == "ode" else "index3"
    if formulation is not None and formulation != implied:
        if formulation not in ("index1", "index3"):
            raise ValueError(f"formulation {formulation!r}: accepted values are 'index1', "
                             "'index3'")
        raise ValueError(f"method {getattr(method, 'name', method)!r} integrates the "
                         f"{_FORM_TEXT[implied]} form, not formulation={formulation!r}: "
                         f"leave formulation out (it follows from the method) or pass "
                         f"formulation={implied!r}; formulation={formulation!r} takes "
                         f"the {_FORM_METHODS[formulation]}")
    if implied == "index3":
        _baumgarte_to_options(method, method_options, alpha=alpha, beta=beta)
    alpha = 10.0 if alpha is None else alpha
    beta = 10.0 if beta is None else beta
    if assemble_initial:
        q, v = assemble(problem, t0, q0, v0)
    else:
        if q0 is None or v0 is None:
            q0_, v0_ = problem.initial_state()
            q0 = q0_ if q0 is None else q0
            v0 = v0_ if v0 is None else v0
        q = np.array(q0, dtype=float)
        v = np.array(v0, dtype=float)

    if not isinstance(record_steps, bool):
        raise ValueError(f"record_steps = {record_steps!r}: accepted True or False")
    if record_steps and record_every != 1:
        raise ValueError(f"record_steps=True records every step the integrator takes; "
                         f"record_every = {record_every!r} contradicts it: accepted 1")
    if record_steps and implied != "index3":
        raise ValueError(f"record_steps=True records the steps a DAE method takes within "
                         f"the grid; method {getattr(method, 'name', method)!r} steps on "
                         "the grid itself (leave record_steps out)")
    plan = _step_plan(t0, h, n_steps, _declared_breakpoints(inputs, breakpoints))
    run = _Run(problem, t0, h, n_steps, inputs, feedback, record_every, record_steps, report)
    run.start(plan[0], q, v)
    if implied == "index1":
        stats = _index1_steps(run, plan, _stepper(method, method_options, "ode"),
                              Index1Baumgarte(problem, alpha, beta, project=project), q, v)
    else:
        stats = _index3_steps(run, plan, _stepper(method, method_options, "dae"), q, v)
    if report is not None:
        report.done(t0 + n_steps * h)
    return run.result(stats)


class _Run:
    """What one :func:`simulate` run keeps besides its integrator: the inputs applied
    per step (the feedback held from one grid point to the next), the recorded rows
    and which steps are recorded, the divergence check and the progress report."""

    def __init__(self, problem, t0, h, n_steps, inputs, feedback, record_every,
                 record_steps, report):
        self.problem, self.t0, self.h, self.n_steps = problem, t0, h, n_steps
        self.inputs, self.feedback, self.report = inputs, feedback, report
        self.record_every, self.record_steps = record_every, record_steps
        self.held_feedback = {}
        self.times, self.qs, self.vs, self.lams = [], [], [], []

    def start(self, first_step, q, v) -> None:
        """The first row (its multipliers added by the loop) and the first inputs."""
        self.times.append(self.t0)
        self.qs.append(q.copy())
        self.vs.append(v.copy())
        self.set_inputs(first_step, q, v)
        if self.report is not None:
            self.report(self.t0)

    def set_inputs(self, step, q, v) -> None:
        """Apply the inputs of ``step``: the schedule at its sampling time, the
        feedback at its grid point (held over the parts of a split step)."""
        values = _input_values(self.inputs, step.sample) if self.inputs is not None else {}
        if self.feedback is not None:
            if step.grid:
                self.held_feedback.clear()
                self.held_feedback.update(self.feedback(step.t, q, v))
            values.update(self.held_feedback)
        for key, val in values.items():
            self.problem.set_input(key, val)

    def recorded(self, step) -> bool:
        if self.record_steps:
            return True
        return step.k_end is not None and (step.k_end % self.record_every == 0
                                           or step.k_end == self.n_steps)

    def row_time(self, step) -> float:
        """The time [s] of the row at the end of ``step``: its grid point's t0 + k h."""
        return step.t_end if step.k_end is None else self.t0 + step.k_end * self.h

    def add(self, t, q, v, lam) -> None:
        self.times.append(t)
        self.qs.append(q)
        self.vs.append(v)
        self.lams.append(lam)

    def stepped(self, step) -> None:
        """Tell the progress report that ``step`` is done."""
        if self.report is not None and step.k_end is not None:
            self.report(self.t0 + step.k_end * self.h)

    def diverged(self, t, q, v, name) -> None:
        """Raise DivergenceError with the results so far if (t, q, v) diverged."""
        err = _divergence(self.problem, t, q, v, name)
        if err is not None:
            err.result = self.result({})
            raise err

    def result(self, stats) -> SimulationResult:
        return _result(self.problem, self.times, self.qs, self.vs, self.lams, stats)


def _index1_steps(run: _Run, plan, integ, form: Index1Baumgarte, q, v) -> dict:
    """The plan's steps of an ODE method on the index-1 form; returns its stats."""
    problem, n = run.problem, run.problem.n
    x = np.concatenate([q, v])
    run.lams.append(augmented_accelerations(problem, run.t0, q, v, form.alpha, form.beta)[1])
    integ.start(run.t0, x)
    for step in plan:
        run.set_inputs(step, x[:n], x[n:])
        if step.restart:
            integ.start(step.t, x)      # the inputs jumped: the history is void
        try:
            with np.errstate(all="ignore"):
                x = integ.step(form.rhs, step.h)
        except IntegrationError as err:   # a Newton failure: the steps so far are kept
            err.result = run.result({})
            raise
        run.diverged(step.t_end, x[:n], x[n:], integ.name)
        x = form.correct(step.t_end, x)
        integ.correct(x)
        if problem.update(step.t_end, x[:n], x[n:]):
            integ.start(step.t_end, x)  # a force jumped: the history is void
        if run.recorded(step):
            t = run.row_time(step)
            run.add(t, x[:n].copy(), x[n:].copy(),
                    augmented_accelerations(problem, t, x[:n], x[n:], form.alpha,
                                            form.beta)[1])
        run.stepped(step)
    return integ.stats() if isinstance(integ, Integrator) else {}


def _index3_steps(run: _Run, plan, integ, q, v) -> dict:
    """The plan's steps of a DAE method on the index-3/GGL form (with
    ``run.record_steps`` every step it takes, from its ``step_log``); returns its
    stats."""
    problem = run.problem
    integ.start(problem, run.t0, q, v)          # consistent accelerations and multipliers
    run.lams.append(np.array(integ.lam, dtype=float).copy())
    owned_log = integ.step_log
    if run.record_steps:
        integ.step_log = []
    try:
        for step in plan:
            run.set_inputs(step, q, v)
            if step.restart:
                # the inputs jumped: accelerations and multipliers after the jump
                integ.start(problem, step.t, q, v)
            try:
                q, v = integ.step(problem, step.t, q, v, step.h)
            except IntegrationError as err:   # a Newton failure: the steps so far are kept
                err.result = run.result(integ.stats())
                raise
            run.diverged(step.t_end, q, v, integ.name)
            if run.record_steps:
                # the steps inside [t, t_end]; the last one, which lands on t_end, is the
                # row below (with the multipliers after a restart there)
                for logged in integ.step_log[:-1]:
                    run.add(*logged)
                integ.step_log.clear()
            if problem.update(step.t_end, q, v):
                integ.start(problem, step.t_end, q, v)  # a force jumped: consistent restart
            if run.recorded(step):
                run.add(run.row_time(step), q.copy(), v.copy(),
                        np.array(integ.lam, dtype=float).copy())
            run.stepped(step)
    finally:
        integ.step_log = owned_log
    return integ.stats()


def _input_values(inputs, t: float) -> dict:
    """The system inputs of the schedule at t [s]: ``inputs(t)``'s dict, or a
    :class:`~mbdcore.integrators.PiecewiseInput`'s values by its signals' names."""
    if isinstance(inputs, PiecewiseInput):
        return dict(zip(inputs.names, inputs(t)))
    return dict(inputs(t))


#: A breakpoint this close to a grid point, relative to h, is that grid point: moving the
#: jump by 1e-9 h is below any discretisation error, and a sliver step would only make
#: the implicit iteration matrices (scale 1/h^2) badly conditioned.
BREAKPOINT_SNAP = 1e-9


class _Step:
    """One integrator step of the plan: from ``t`` by ``h`` to ``t_end`` [s].

    ``sample``: time [s] at which ``inputs`` is sampled for it; ``grid``: it starts at a
    grid point t0 + k h; ``k_end``: the grid index it ends at (None inside a split
    step); ``restart``: it starts at a breakpoint."""

    __slots__ = ("t", "h", "t_end", "sample", "grid", "k_end", "restart")

    def __init__(self, t, h, t_end, sample, grid, k_end, restart):
        self.t, self.h, self.t_end = t, h, t_end
        self.sample, self.grid, self.k_end, self.restart = sample, grid, k_end, restart


def _declared_breakpoints(inputs, breakpoints) -> list[float]:
    """The breakpoints [s] given to :func:`simulate` and those ``inputs`` carries."""
    declared = [] if breakpoints is None else [float(b) for b in breakpoints]
    declared += [float(b) for b in (getattr(inputs, "breakpoints", None) or ())]
    if not all(np.isfinite(declared)):
        raise ValueError(f"breakpoints {declared!r} must be finite times [s]")
    return sorted(set(declared))


def _step_plan(t0: float, h: float, n_steps: int, breakpoints) -> list[_Step]:
    """The steps from t0 to t0 + n_steps h [s]: the grid t0 + k h, each step that
    straddles a breakpoint split there (see :func:`simulate`).  Without breakpoints
    this is exactly the grid (t_k = t0 + k h, step h)."""
    snap = BREAKPOINT_SNAP * h
    on_grid = {}                  # grid index -> breakpoint at it
    inside = {}                   # grid index k -> breakpoints in (t_k, t_k+1)
    for b in breakpoints:
        k = int(round((b - t0) / h))
        if abs(t0 + k * h - b) <= snap:
            if 0 <= k < n_steps:
                on_grid[k] = b
            continue
        k = int(np.floor((b - t0) / h))
        if 0 <= k < n_steps:
            inside.setdefault(k, []).append(b)
    plan = []
    for k in range(n_steps):
        # t + h rather than t0 + (k + 1) h: the times the grid steps have always used
        t = t0 + k * h
        t_next = t + h
        jump = k in on_grid
        # sampled just above the jump (and above t_k, which may sit an ulp short of it)
        sample = float(np.nextafter(max(t, on_grid[k]), np.inf)) if jump else t
        if k not in inside:
            plan.append(_Step(t, h, t_next, sample, True, k + 1, jump))
            continue
        ends = sorted(inside[k]) + [t_next]
        plan.append(_Step(t, ends[0] - t, ends[0], sample, True, None, jump))
        for i, b in enumerate(ends[:-1]):
            last = i == len(ends) - 2
            plan.append(_Step(b, ends[i + 1] - b, ends[i + 1],
                              float(np.nextafter(b, np.inf)), False,
                              k + 1 if last else None, True))
    return plan


def _divergence(problem, t: float, q, v, name: str) -> DivergenceError | None:
    """A DivergenceError if the state at ``t`` [s] is not finite or a part of the model
    is beyond its range (``problem.range_violation``), else None."""
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
        return DivergenceError(f"non-finite state at t = {t:.6g} s ({name}): the solution "
                               "diverges", time=t)
    check = getattr(problem, "range_violation", None)
    hit = check(q) if check is not None else None
    if hit is None:
        return None
    return DivergenceError(f"{hit['text']} at t = {t:.6g} s ({name}): the solution "
                           f"diverges{hit.get('hint', '')}", time=t, body=hit["body"],
                           quantity=hit["quantity"], value=hit["value"], limit=hit["limit"])


def _result(problem, times, qs, vs, lams, stats) -> SimulationResult:
    """The SimulationResult of the recorded steps (those with a multiplier row)."""
    k = min(len(times), len(lams))
    t_arr = np.array(times[:k])
    q_arr = np.array(qs[:k]).reshape(k, problem.n)
    v_arr = np.array(vs[:k]).reshape(k, problem.n)
    lam_arr = np.array(lams[:k]).reshape(k, problem.m)
    viol = np.array([np.abs(problem.constraints(ti, qi)).max() if problem.m else 0.0
                     for ti, qi in zip(t_arr, q_arr)])
    energy = np.array([problem.energy(ti, qi, vi) for ti, qi, vi in zip(t_arr, q_arr, v_arr)])
    return SimulationResult(t_arr, q_arr, v_arr, lam_arr, viol, energy,
                            problem_names(problem, "coordinate", problem.n),
                            problem_names(problem, "multiplier", problem.m), stats,
                            _units(problem, "coordinate", problem.n),
                            _units(problem, "multiplier", problem.m))


def _units(problem, kind: str, count: int) -> list[str]:
    getter = getattr(problem, f"{kind}_units", None)
    return list(getter()) if getter else [""] * count


def reference_solution(problem: ConstrainedProblem, t_end: float, rtol: float = 1e-11,
                       atol: float = 1e-12, t0: float = 0.0) -> np.ndarray:
    """Tight-tolerance reference state (q, q') at ``t0 + t_end`` [s]: the index-1 ODE
    without Baumgarte terms or projections, integrated by scipy's DOP853 (an
    independent check of the fixed-step methods; its drift is of order rtol)."""
    form = Index1Baumgarte(problem, alpha=0.0, beta=0.0, project=False)
    q, v = assemble(problem, t0)
    sol = solve_ivp(form.rhs, (t0, t0 + t_end), np.concatenate([q, v]), method="DOP853",
                    rtol=rtol, atol=atol)
    if not sol.success:
        raise IntegrationError(f"reference solution failed: {sol.message}")
    return sol.y[:, -1]


_FORM_TEXT = {"index1": "index-1 (ODE)", "index3": "index-3/GGL (DAE)"}
_FORM_METHODS = {"index1": f"ODE methods ({', '.join(method_names('ode')[:4])}, ...)",
                 "index3": f"DAE methods ({', '.join(method_names('dae'))})"}


def _baumgarte_to_options(method, options: dict, **given) -> None:
    """For a DAE method: ``alpha``/``beta`` given to :func:`simulate` are the method's
    own options where it has them (HHT's alpha, Newmark's beta), else refused (the
    Baumgarte parameters belong to the index-1 form)."""
    name = getattr(method, "name", method)
    takes = method_info(method).options if isinstance(method, str) else ()
    for key, value in given.items():
        if value is None:
            continue
        if key in takes:
            if key in options:
                raise ValueError(f"{key} given twice for method {name!r}")
            options[key] = value
        else:
            raise ValueError(f"{key} = {value!r}: the Baumgarte parameters alpha, beta [1/s] "
                             f"apply to the index-1 form (ODE methods); method {name!r} "
                             f"integrates the index-3/GGL form and takes no {key}")


_KIND_TEXT = {"ode": "an ODE y' = f(t, y)", "dae": "the constrained (index-3/GGL) equations"}


def _stepper(method, options, kind: str):
    """A stepper of ``kind`` ("ode" or "dae"): a new one for a name of the method table
    (``options`` go to it), or the instance given."""
    if not isinstance(method, str):
        if options:
            raise ValueError(f"options {sorted(options)} apply to a method given by name")
        return method
    info = method_info(method)
    if info.kind != kind:
        raise ValueError(f"method {method!r} integrates {_KIND_TEXT[info.kind]}, not "
                         f"{_KIND_TEXT[kind]}")
    return info.make(**options)


def integrate(fun: RHS, y0, t0: float, h: float, n_steps: int,
              method: str | Integrator = "rk4", check_finite: bool = True, **options):
    """Integrate ``n_steps`` steps of size ``h`` [s] of ``y' = fun(t, y)`` from ``(t0, y0)``
    with an ODE method of :data:`~mbdcore.dae.methods.METHODS` (``options`` go to it) or
    a stepper instance (which is started at ``(t0, y0)``).

    Returns
    -------
    t : ndarray, shape (n_steps + 1,)
        Times t0 + k h [s] (computed from k, not accumulated).
    y : ndarray, shape (n_steps + 1, len(y0))
        Solution at those times.
    """
    integ = _stepper(method, options, "ode")
    return _fixed_steps(integ, y0, t0, h, n_steps, lambda t: integ.step(fun, h), check_finite)


def integrate_held(rhs, held_args, y0, t0: float, h: float, n_steps: int,
                   method: str | Integrator = "rk4", substeps: int = 1, record_every: int = 1,
                   **options):
    """Integrate ``y' = rhs(y, *args)`` with its inputs sampled and held: ``args =
    held_args(t_k)`` at the start of each step ``[t_k, t_k + h]``, divided into
    ``substeps`` steps of the method (a sampled-data loop: a zero-order hold in front of
    a continuous model).  ``rhs`` is a compiled kernel; one with its own C loop
    (:class:`~mbdcore.integrators.runge_kutta.CSteppedKernel`) takes the substeps of RK4,
    Gill and Treanor in one C call (:meth:`~mbdcore.integrators.Integrator.step_autonomous`).

    Where ``held_args`` has an exact piecewise form (a
    :class:`~mbdcore.integrators.PiecewiseInput`, or a function declaring one as its
    ``piecewise`` attribute; :func:`~mbdcore.integrators.piecewise_form`) and the kernel
    can run with it (:meth:`~mbdcore.integrators.runge_kutta.CSteppedKernel.run`), the
    whole run is one C call that samples the inputs itself, with the same numbers; any
    other schedule, method or right-hand side takes the Python loop, the reference.

    Returns ``(t, y)`` as :func:`integrate`, the rows of steps 0, ``record_every``,
    2 ``record_every``, ... and the last.  A non-finite state raises
    :class:`DivergenceError`, a failed right-hand side
    :class:`~mbdcore.integrators.IntegrationError`, each with the ``time`` [s] at the end
    of the failed step and the ``result`` ``(t, y)`` recorded before it.
    """
    n_steps, substeps, record_every = (_count(name, value) for name, value in (
        ("n_steps", n_steps), ("substeps", substeps), ("record_every", record_every)))
    integ = _stepper(method, options, "ode")
    hs = h / substeps
    schedule = piecewise_form(held_args)
    run = getattr(rhs, "run", None)
    if schedule is not None and run is not None:
        integ.start(t0, y0)
        with np.errstate(all="ignore"):
            ran = run(integ, schedule, t0, h, n_steps, substeps, record_every)
        if ran is not None:
            return ran

    if isinstance(held_args, PiecewiseInput):     # its values as the kernel's arguments
        as_args = getattr(rhs, "args_from_inputs", tuple)
    else:
        as_args = tuple

    def advance(t):
        with np.errstate(all="ignore"):
            return integ.step_autonomous(rhs, as_args(held_args(t)), hs, substeps)
    return _fixed_steps(integ, y0, t0, h, n_steps, advance, True, record_every)


def _count(name: str, value) -> int:
    """A count of :func:`integrate_held` checked: an integer, at least 1 (n_steps 0)."""
    least = 0 if name == "n_steps" else 1
    if isinstance(value, bool) or int(value) != value or value < least:
        raise ValueError(f"{name} = {value!r}: accepted an integer >= {least}")
    return int(value)


def _fixed_steps(integ, y0, t0, h, n_steps, advance, check_finite, record_every=1):
    """The loop of :func:`integrate` and :func:`integrate_held`: ``advance(t_k)`` takes
    the stepper from t_k to t_k + h; rows kept as :func:`integrate_held` says."""
    y = np.array(y0, dtype=float)
    t = t0 + h * np.arange(n_steps + 1)
    kept = [k for k in range(n_steps + 1) if k % record_every == 0 or k == n_steps]
    out = np.empty((len(kept), y.size))
    out[0] = y
    row = 1
    integ.start(t0, y)
    for k in range(n_steps):
        try:
            y = advance(t[k])
        except IntegrationError as err:
            if err.time is None:    # where it failed, and what came before
                err.time = float(t[k + 1])
                err.result = (t[kept[:row]], out[:row].copy())
                err.args = (f"{err} in the step to t = {t[k + 1]:.6g} s ({integ.name})",)
            raise
        if check_finite and not np.all(np.isfinite(y)):
            raise DivergenceError(f"non-finite state at t = {t[k + 1]:.6g} s ({integ.name}): "
                                  "the solution diverges", time=float(t[k + 1]),
                                  result=(t[kept[:row]], out[:row].copy()))
        if row < len(kept) and kept[row] == k + 1:
            out[row] = y
            row += 1
    return t[kept], out


def integrate_index3(problem: ConstrainedProblem, q0, v0, t0: float, h: float,
                     n_steps: int, method: str | Index3Integrator = "generalized-alpha",
                     **params) -> SimulationResult:
    """Integrate ``n_steps`` fixed steps of size ``h`` [s] of the index-3/GGL DAE from a
    given consistent state: :func:`simulate` with a DAE method and no assembly.

    Parameters
    ----------
    problem : ConstrainedProblem
    q0, v0 : array_like, shape (n,)
        Consistent initial positions [m, rad] and velocities [m/s, rad/s] (no assembly
        is done here).
    t0, h : float
        Start time and step size [s].
    n_steps : int
    method : str or Index3Integrator
        A DAE method of :data:`~mbdcore.dae.methods.METHODS` (``params`` go to it) or an
        instance.

    Returns
    -------
    SimulationResult
        ``t``, ``q``, ``v``, ``lam`` (``lam[0]`` and the initial accelerations from
        :func:`~mbdcore.dae.index1.consistent_accelerations`), ``stats``.
    """
    integ = _stepper(method, params, "dae")
    return simulate(problem, n_steps * h, h, integ, q0=q0, v0=v0, assemble_initial=False,
                    t0=t0)
