"""Explicit Runge-Kutta steppers for first-order systems y' = f(t, y).

They implement :class:`mbdcore.integrators.base.Integrator` (``start(t, y)``,
``step(fun, h)``).  Methods that differ only by coefficients are data (as in
scipy.integrate, whose RK23, RK45 and DOP853 are Butcher tableaux over one step
function): the explicit Runge-Kutta family is a Butcher tableau over one shared stage
loop, and Gill's round-off-compensated scheme is its own four-register algorithm driven
by its coefficient vectors.  Names (in :mod:`mbdcore.dae.methods`):

=============== ===================================================================
``rk4``         classical Runge-Kutta, order 4 (Butcher tableau)
``gill``        Runge-Kutta-Gill, order 4, with Gill's round-off compensation (Gill
                1951; docs/benchmarks.md §8.1); the compensation register ``q`` is
                carried from step to step and is part of the stepper's state
``gill-tableau`` Gill's coefficients as a plain tableau (no compensation), for checks
``treanor``     Treanor's exponentially fitted 4-stage method, order 4 (Treanor 1966;
                docs/benchmarks.md §8.1): per component a decay rate ``p`` is estimated
                from two stages; ``p <= 0`` gives classical RK4, ``p > 0`` integrates
                ``y' = -p y + (smooth part)`` exactly for the linear part, which
                tolerates stiff decaying components (order 2 while ``p h >> 1``)
=============== ===================================================================
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mbdcore.blocks import ParameterError
from mbdcore.integrators.base import DivergenceError, IntegrationError, Integrator
from mbdcore.integrators.piecewise import PiecewiseInput
from mbdcore.native import kernel_library

__all__ = ["ExplicitRungeKutta", "RK4", "GillTableau", "Gill", "Treanor",
           "C_FIXED_STEP_HEADER", "C_FIXED_STEP_SOURCE", "TREANOR_STAGES",
           "fixed_step_library", "c_stepping", "CSteppedKernel", "RUN_STATUS"]

#: RK4, Gill and Treanor in C99 (for models whose equations are C: the kernels' own
#: stepping loop, fs_advance, and the C FMUs); RK4 and Gill summed as the steppers below
#: sum them, Treanor's stage formulas the ones :class:`Treanor` calls.
C_FIXED_STEP_HEADER = Path(__file__).resolve().parent / "native" / "fixed_step.h"
#: Treanor's stage formulas of the header exported to Python (:data:`fixed_step_library`).
C_FIXED_STEP_SOURCE = Path(__file__).resolve().parent / "native" / "fixed_step.c"


class ExplicitRungeKutta(Integrator):
    """Explicit Runge-Kutta method given by its Butcher tableau (class attributes).

    ``A`` (s x s, strictly lower triangular), ``B`` (s), ``C`` (s).
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    first_stage_at_start = True     # C[0] = 0 and no A row before it: k0 = f(t, y)

    def _advance(self, fun, t, y, h, first_stage=None):
        s = len(self.B)
        k = np.empty((s, y.size))
        for i in range(s):
            if i == 0 and first_stage is not None:
                k[0] = first_stage
                continue
            yi = y
            for j in range(i):
                if self.A[i, j] != 0.0:
                    yi = yi + (h * self.A[i, j]) * k[j]
            k[i] = fun(t + self.C[i] * h, yi)
        self.nfev += s - (first_stage is not None)
        self.nsteps += 1
        inc = np.zeros(y.size)          # summed as fixed_step.h sums RK4: bit-equal paths
        for i in range(s):
            inc = inc + self.B[i] * k[i]
        return y + h * inc


class RK4(ExplicitRungeKutta):
    """Classical fourth-order Runge-Kutta."""

    name = "rk4"
    order = 4
    stages = 4
    A = np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]])
    B = np.array([1, 2, 2, 1]) / 6.0
    C = np.array([0, 0.5, 0.5, 1.0])


_R = math.sqrt(0.5)


class GillTableau(ExplicitRungeKutta):
    """Gill's coefficients as a plain tableau (no round-off compensation); for checks."""

    name = "gill-tableau"
    order = 4
    A = np.array([[0, 0, 0, 0],
                  [0.5, 0, 0, 0],
                  [_R - 0.5, 1 - _R, 0, 0],
                  [0, -_R, 1 + _R, 0]])
    B = np.array([1.0, 2 * (1 - _R), 2 * (1 + _R), 1.0]) / 6.0
    C = np.array([0, 0.5, 0.5, 1.0])


class Gill(Integrator):
    """Runge-Kutta-Gill with round-off compensation (Gill 1951; docs/benchmarks.md §8.1).

    Four registers per component: ``y`` and the compensation accumulator ``q``.  For
    stage j = 1..4 with ``k = h f(t + c_j h, y)``::

        y_new = y + a_j (k - b_j q);   r = y_new - y;   y <- y_new;   q <- q + 3 r - c_j k

    with a = (1/2, 1 - sqrt(1/2), 1 + sqrt(1/2), 1/6), b = (2, 1, 1, 2),
    c = (1/2, 1 - sqrt(1/2), 1 + sqrt(1/2), 1/2).  In exact arithmetic q returns to
    zero after the fourth stage for constant f; taking r as the increment actually
    stored (after rounding y + a_j(...)) makes q collect three times the rounding error
    and feed it back in the next step, which is why it is carried across steps (it
    starts at zero).
    """

    name = "gill"
    order = 4
    stages = 4
    a = (0.5, 1 - _R, 1 + _R, 1.0 / 6.0)
    b = (2.0, 1.0, 1.0, 2.0)
    c = (0.5, 1 - _R, 1 + _R, 0.5)
    t_frac = (0.0, 0.5, 0.5, 1.0)
    first_stage_at_start = True

    def __init__(self) -> None:
        self.q: np.ndarray | None = None
        super().__init__()

    def _restart(self) -> None:
        self.q = None

    def _advance(self, fun, t, y, h, first_stage=None):
        q = np.zeros_like(y) if self.q is None else self.q
        y = np.array(y, dtype=float)
        for j in range(4):
            if j == 0 and first_stage is not None:
                k = h * first_stage
            else:
                k = h * fun(t + self.t_frac[j] * h, y)
            y_new = y + self.a[j] * (k - self.b[j] * q)
            r = y_new - y          # the increment as actually stored, rounding included
            y = y_new
            q = q + 3.0 * r - self.c[j] * k
        self.q = q
        self.nfev += 4 - (first_stage is not None)
        self.nsteps += 1
        return y

    def get_state(self):
        state = super().get_state()
        state["q"] = None if self.q is None else self.q.copy()
        return state

    def set_state(self, state):
        super().set_state(state)
        q = state.get("q")
        self.q = None if q is None else np.array(q, dtype=float)


#: The rows of Treanor's stage table in ``native/fixed_step.h`` (its FS_T* indices), each of
#: the state's size: the stage points, the right-hand sides there, the fitted decay
#: rates [1/s] and the new state.
TREANOR_STAGES = ("w1", "w2", "w3", "w4", "q1", "q2", "q3", "q4", "p", "y")
_W1, _W2, _W3, _W4, _Q1, _Q2, _Q3, _Q4, _P, _Y = range(len(TREANOR_STAGES))
#: Treanor's stage formulas in C (``native/fixed_step.c`` over ``fixed_step.h``, built with
#: the package), checked once per process.
fixed_step_library = kernel_library("mbdcore.integrators._fixed_step", C_FIXED_STEP_SOURCE,
                                    (C_FIXED_STEP_HEADER,))


class Treanor(Integrator):
    """Treanor's exponentially fitted Runge-Kutta method (Treanor 1966; docs/benchmarks.md §8.1).

    Per component i, with stages w1 = y, w2 = w1 + h/2 q1, w3 = w1 + h/2 q2 and
    q_k = f(w_k) (q1 at t, q2 and q3 at t + h/2), the fitted decay rate [1/s] is
    ``p = -(q3 - q2)/(w3 - w2)`` where that is positive, else 0, capped by
    ``|q3 - q2| / |w3 - w2|`` (``fs_treanor_rates`` in ``native/fixed_step.h``, which
    says why).  Where ``p = 0`` the step is classical RK4.  Where ``p > 0``, with
    r2 = (1 - e^-z)/z, r3 = (1 - r2)/z, r4 = (1/2 - r3)/z of z = p h,::

        w4 = w1 + h [q2 + 2 r3 (q3 - q2)]
        dy = h { q1 r2 + [-3 Q1 + 2 Q2 + 2 Q3 - Q4] r3 + 4 [Q1 - Q2 - Q3 + Q4] r4 }

    with Q_k = q_k + p w_k (the forcing g = f + p y at the stages).  For y' = -p y + g(t)
    with g quadratic in t the step is exact; as p -> 0 it tends to RK4.

    Order 4 for fitted rates that stay bounded as h -> 0, which the cap ensures
    (measured 4.0 on the rigid crank, the pendulum, the oscillator and a nonlinear
    system).  On a stiff component with p h >> 1 the error is that of the quadratic fit
    of the forcing weighted by e^(-p (h - tau)), about g''' h^2 / (12 p^2): order 2 in
    h there (with the 1/p^2 factor), rising to 4 as p h falls below 1.  Stable on a
    decaying component at any p h (RK4 needs p h < 2.785).
    """

    name = "treanor"
    order = 4
    stages = 4
    first_stage_at_start = True

    def _advance(self, fun, t, y, h, first_stage=None):
        # the right-hand side here, the stage formulas in C: the steps a C kernel's loop
        # takes (fs_treanor_step), over one table of stages
        lib = fixed_step_library()
        m = np.size(y)
        s = np.empty((len(TREANOR_STAGES), m))
        s[_W1] = y
        s[_Q1] = fun(t, s[_W1]) if first_stage is None else first_stage
        s[_W2] = s[_W1] + 0.5 * h * s[_Q1]
        s[_Q2] = fun(t + 0.5 * h, s[_W2])
        s[_W3] = s[_W1] + 0.5 * h * s[_Q2]
        s[_Q3] = fun(t + 0.5 * h, s[_W3])
        lib.fixed_step_treanor_rates(s, m)
        lib.fixed_step_treanor_fourth_point(s, m, h)
        s[_Q4] = fun(t + h, s[_W4])
        lib.fixed_step_treanor_finish(s, m, h)
        self.nfev += 4 - (first_stage is not None)
        self.nsteps += 1
        return s[_Y].copy()


def c_stepping(stepper, size: int):
    """How a C kernel's ``advance`` runs ``stepper`` with the loops of
    :data:`C_FIXED_STEP_HEADER`: (method number, Gill's round-off register) — 0 for RK4,
    1 for Gill (its register copied, zeros at the start), 2 for Treanor — or None for a
    method that has no C loop (the caller then steps in Python)."""
    if isinstance(stepper, Gill):
        return 1, (np.zeros(size) if stepper.q is None else np.array(stepper.q, dtype=float))
    if type(stepper) is RK4:
        return 0, np.zeros(size)
    if type(stepper) is Treanor:
        return 2, np.zeros(size)
    return None


#: Why a C run (``fs_run`` in ``native/fixed_step.h``) stopped, by its status number.
RUN_STATUS = ("done", "non-finite state", "right-hand side failed", "bad inputs")
_RUN_NONFINITE, _RUN_RHS_FAILED = 1, 2


class CSteppedKernel:
    """Base of a compiled right-hand side that brings its own C stepping loop over
    :data:`C_FIXED_STEP_HEADER` (the arm, the drive, the antenna axis, the linear plant;
    in C, ``fs_advance``): ``advance``, the hook
    :meth:`~mbdcore.integrators.Integrator.step_autonomous` calls, runs ``n`` steps of
    RK4, Gill or Treanor in one C call.  A subclass implements ``_advance(x, register, args, h,
    n, method) -> int`` (x advanced in place; nonzero: the C loop failed, reported as
    :attr:`failure`).

    A kernel whose inputs are all numbers may also take a whole run in one C call,
    :meth:`run` (``fs_run``: the inputs a :class:`PiecewiseInput` sampled in C at the
    start of every step and held over it), which :func:`mbdcore.dae.integrate_held`
    uses: a subclass sets :attr:`n_inputs` and implements ``_run`` over its C
    function of ``fs_run``."""

    failure = "non-finite state"
    #: What a failure of the right-hand side itself means (:meth:`run` tells it apart
    #: from a non-finite state).
    rhs_failure = "the right-hand side failed"
    #: How many input signals ``run`` takes (None: the kernel has no ``_run``).
    n_inputs: int | None = None

    def _advance(self, x, register, args, h: float, n: int, method: int, first) -> int:
        """x advanced in place by n steps of the method; ``first`` the first stage (a
        C-contiguous array) or None (the C loop evaluates it)."""
        raise NotImplementedError

    def _run(self, inputs, x, register, t0, h, substeps, n_steps, method, record_every,
             record, done) -> int:
        """The kernel's C function of ``fs_run`` (arguments as there); its status."""
        raise NotImplementedError

    def args_from_inputs(self, values) -> tuple:
        """The kernel's held arguments from the values of :attr:`n_inputs` signals (a
        :class:`PiecewiseInput` sampled in Python): one argument per signal, unless the
        kernel takes a vector (the linear plant's u)."""
        return tuple(values)

    def advance(self, stepper, y, args, h, n, first_stage=None):
        """``n`` steps of ``stepper`` in C, or None if it is not RK4, Gill or Treanor;
        ``first_stage`` the right-hand side at ``y`` where the caller has it."""
        chosen = c_stepping(stepper, y.size)
        if chosen is None:
            return None
        method, register = chosen
        x = np.array(y, dtype=float)
        first = None if first_stage is None else np.ascontiguousarray(first_stage, dtype=float)
        if self._advance(x, register, args, float(h), int(n), method, first):
            raise IntegrationError(self.failure)
        if method == 1:
            stepper.q = register          # Gill's round-off register carries on
        return x

    def run(self, stepper, inputs: PiecewiseInput, t0: float, h: float, n_steps: int,
            substeps: int = 1, record_every: int = 1):
        """:func:`mbdcore.dae.integrate_held`'s run in one C call: ``n_steps`` steps of
        ``h`` [s] from the started ``stepper``'s state at ``t0`` [s], each with
        ``inputs`` sampled at its start and held over its ``substeps`` steps of the
        method, the same numbers as the Python loop.  Returns ``(t, y)``, the times [s]
        and states of steps 0, ``record_every``, 2 ``record_every``, ... and the last;
        or None where there is no C run (a method other than RK4, Gill or Treanor, a
        kernel without ``_run``).  The stepper ends where the run ends, as after its own
        steps.

        A step whose state is not finite raises :class:`DivergenceError`, one whose
        right-hand side fails :class:`IntegrationError` (:attr:`rhs_failure`), each with the
        ``time`` at the end of that step and the ``result`` ``(t, y)`` recorded before it.
        """
        chosen = c_stepping(stepper, stepper.y.size)
        if chosen is None or self.n_inputs is None:
            return None
        if inputs.n_signals != self.n_inputs:
            raise ParameterError(f"inputs with {inputs.n_signals} signals {list(inputs.names)}:"
                                 f" this kernel takes {self.n_inputs}")
        method, register = chosen
        x = np.array(stepper.y, dtype=float)
        rows = 1 + n_steps // record_every + (1 if n_steps % record_every else 0)
        record = np.empty((rows, x.size))
        done = np.zeros(1, dtype=np.int32)
        status = self._run(inputs.table, x, register, float(t0), float(h), int(substeps),
                           int(n_steps), method, int(record_every), record, done)
        taken = int(done[0])
        steps = list(range(0, taken + 1, record_every))
        if taken == n_steps and steps[-1] != n_steps:
            steps.append(n_steps)
        t = t0 + h * np.array(steps, dtype=float)
        y = record[:len(steps)]
        stepper.took_steps(taken * substeps, h / substeps, x)
        if method == 1:
            stepper.q = register
        if status == 0:
            return t, y
        t_fail = float(t0 + h * (taken + 1))
        if status == _RUN_NONFINITE:
            err = DivergenceError(f"non-finite state at t = {t_fail:.6g} s ({stepper.name}): "
                                  "the solution diverges", time=t_fail)
        elif status == _RUN_RHS_FAILED:
            err = IntegrationError(f"{self.rhs_failure} in the step to t = {t_fail:.6g} s "
                                   f"({stepper.name})")
            err.time = t_fail
        else:
            raise ValueError(f"the C run refused its arguments ({RUN_STATUS[status]}): "
                             f"inputs table of {inputs.n_signals} signals, substeps = "
                             f"{substeps}, record_every = {record_every}")
        err.result = (t, y)
        raise err
