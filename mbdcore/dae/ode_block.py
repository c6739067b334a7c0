"""Blocks whose state obeys an ODE x' = f(x, inputs), stepped by a method of the table.

A continuous-time model (the flexible arm in minimal coordinates, the drive motors, the
antenna's pointing axis, a linear plant) is a block with a state vector ``x``, a
compiled right-hand side ``rhs(x, *args)`` (a C kernel,
:class:`~mbdcore.integrators.runge_kutta.CSteppedKernel`) whose ``args`` carry the
inputs, held over each communication step, and two parameters every such block shares:
``method`` (an ODE method of :data:`mbdcore.dae.methods.METHODS`) and ``substeps``
(integrator steps per communication step; 0, "auto", where the block declares it with
``rtol`` and ``atol``: as many as a step-doubling estimate of the error asks for,
:meth:`OdeBlock._controlled_advance`).  The stepping is the stepper's
:meth:`~mbdcore.integrators.Integrator.step_autonomous`: RK4, Gill and Treanor run all
substeps in the kernel's C loop; the others (BDF, Gear, scipy's) step through the
right-hand side from Python; an implicit one (BDF) retries a substep whose Newton
iteration fails with halved steps (:class:`~mbdcore.integrators.base.StepHalving`).  A
step that fails or gives a non-finite state raises :class:`~mbdcore.blocks.StepError`
and leaves the block as it was.

A communication point is a step boundary of the integrator by construction (the
substeps divide the communication step), so a held input that jumps there never falls
inside a step.  Where an input changed from the previous communication step, a stepper
with memory (BDF, improved Gear, Gear: :attr:`~mbdcore.integrators.Integrator.memory`)
is restarted, so no pre-jump history enters the steps after the jump (the one-step
methods need nothing); see docs/architecture.md, "Inputs that jump", for what that costs.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from mbdcore.blocks import Block, Parameter, StepError, VectorState
from mbdcore.dae.methods import ODE_METHODS, method_info
from mbdcore.integrators.base import IntegrationError, Integrator

__all__ = ["OdeBlock", "held_inputs", "ode_stepper", "stepping_parameters", "AUTO_SUBSTEPS",
           "MAX_AUTO_SUBSTEPS"]


def ode_stepper(name: str) -> Integrator:
    """A new stepper of the ODE method ``name`` (a DAE method is refused, naming the
    ODE ones)."""
    info = method_info(name)
    if info.kind != "ode":
        raise ValueError(f"method {name!r} integrates the constrained (index-3/GGL) "
                         f"equations; this model is an ODE: one of {', '.join(ODE_METHODS)}")
    return info.make()


#: ``substeps = 0``: "auto", the number of substeps chosen per communication step by the
#: error estimate (:meth:`OdeBlock._controlled_advance`).
AUTO_SUBSTEPS = 0
#: The most substeps "auto" takes in one communication step (2^12): a step that still
#: misses the tolerance there fails (StepError; a shorter communication step may pass).
MAX_AUTO_SUBSTEPS = 4096


def stepping_parameters(substeps: int, method: str = "rk4",
                        error_control: bool = False) -> tuple[Parameter, ...]:
    """The ``method`` and ``substeps`` parameters of an :class:`OdeBlock` (defaults given);
    with ``error_control`` also ``rtol`` and ``atol``, and ``substeps`` may be 0, "auto"."""
    if not error_control:
        return (
            Parameter("method", method, "", "integration method", choices=ODE_METHODS),
            Parameter("substeps", substeps, "", "integrator steps per communication step",
                      min=1, max=100000),
        )
    return (
        Parameter("method", method, "", "integration method", choices=ODE_METHODS),
        Parameter("substeps", substeps, "", "integrator steps per communication step; 0 "
                  "(\"auto\"): doubled until the step-doubling error estimate meets rtol and "
                  f"atol (at most {MAX_AUTO_SUBSTEPS})", min=0, max=100000,
                  aliases=(("auto", AUTO_SUBSTEPS),)),
        Parameter("rtol", 1e-6, "", "relative tolerance of the error per communication "
                  "step (substeps = 0)", min=1e-14, max=1.0),
        Parameter("atol", 1e-9, "", "absolute tolerance of the error per communication "
                  "step, in each state's SI unit: rad or m for positions, rad/s or m/s for "
                  "rates (substeps = 0)", min=1e-300, max=1.0),
    )


class OdeBlock(Block):
    """Base class of the continuous-time blocks (module docstring).

    Subclasses declare :func:`stepping_parameters` among their PARAMETERS and implement
    ``initial_state()``, ``state_names()``, ``derivatives() -> (rhs, args)`` for the
    current inputs, and ``outputs()``; ``_state_changed()`` is called whenever ``x``
    changes (to refresh cached outputs).
    """

    def __init__(self, **params):
        super().__init__(**params)
        self.integrator = ode_stepper(self.params["method"])

    # -- for subclasses ------------------------------------------------------------------
    def initial_state(self) -> np.ndarray:
        raise NotImplementedError

    def state_names(self) -> list[str]:
        return [f"x{i}" for i in range(len(self.x))]

    def derivatives(self) -> tuple[Callable, tuple]:
        raise NotImplementedError

    def _state_changed(self) -> None:
        pass

    def _refused(self, x) -> str:
        """Why the state ``x`` a step reached must be refused (the model's hard limit of
        validity), or "" to accept it; a refused step keeps the state as it was."""
        return ""

    # -- state ---------------------------------------------------------------------------
    @property
    def x(self) -> np.ndarray:
        """The state vector (named by :meth:`state_names`); setting it restarts the
        integrator there."""
        return self._x

    @x.setter
    def x(self, value) -> None:
        self._x = np.array(value, dtype=float)
        self.integrator.start(self.time, self._x)
        self._state_changed()

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self.integrator.reset()
        self._held = None       # the inputs of the last step (None: no step yet)
        self._auto_substeps = 1  # where "auto" starts its next step
        self.x = self.initial_state()

    def vector_state(self) -> VectorState:
        def set_x(block, x):
            block.x = x
        return VectorState(self.state_names(), lambda block: block.x.copy(), set_x)

    def _get_internal(self):
        return {"x": self._x.copy(), "integrator": self.integrator.get_state(),
                "held": self._held, "auto_substeps": self._auto_substeps}

    def _set_internal(self, internal):
        self._x = np.array(internal["x"], dtype=float)
        self.integrator.set_state(internal["integrator"])
        self._held = internal.get("held")
        self._auto_substeps = int(internal.get("auto_substeps", 1))
        self._state_changed()

    def _internal_violation(self) -> str:
        if not 1 <= self._auto_substeps <= MAX_AUTO_SUBSTEPS:
            return (f"auto_substeps = {self._auto_substeps} is outside [1, "
                    f"{MAX_AUTO_SUBSTEPS}]")
        why = self._refused(self._x)
        return f"the state is beyond the model's limit: {why}" if why else ""

    # -- stepping ------------------------------------------------------------------------
    def do_step(self, t: float, h: float) -> None:
        rhs, args = self.derivatives()
        saved = self.integrator.get_state()
        held = held_inputs(self)
        try:
            if self.integrator.memory and self._held is not None and held != self._held:
                # an input jumped at t: the history before it is void
                self.integrator.start(t, self._x)
            with np.errstate(all="ignore"):
                x, n_auto = self._advance(rhs, args, h)
            if not np.all(np.isfinite(x)):
                raise IntegrationError("non-finite state")
            why = self._refused(x)
            if why:
                raise _HardLimit(why)
        except (IntegrationError, np.linalg.LinAlgError, ZeroDivisionError) as exc:
            self.integrator.set_state(saved)
            held = ", ".join(f"{s.name}={self.inputs[s.name]!r} {s.unit}"
                             for s in self.INPUTS)
            raise StepError(f"step [{t:.6g}, {t + h:.6g}] s of {type(self).__name__} failed "
                            f"({exc}); inputs {held}; state kept at t = {self.time:.6g} s",
                            retry=not isinstance(exc, _HardLimit)) from None
        self._x = x
        self._held = held
        self._auto_substeps = n_auto
        self.time = t + h
        self._state_changed()

    def _advance(self, rhs: Callable, args: tuple, h: float) -> tuple[np.ndarray, int]:
        """The state after a communication step of ``h`` [s], and where "auto" starts the
        next step."""
        n = self.params["substeps"]
        if n != AUTO_SUBSTEPS:
            return self.integrator.step_autonomous(rhs, args, h / n, n), self._auto_substeps
        return self._controlled_advance(rhs, args, h)

    def _controlled_advance(self, rhs: Callable, args: tuple, h: float) -> tuple[np.ndarray, int]:
        """``substeps = 0`` ("auto"): step doubling.  From the same start, n and 2n
        substeps give x_n and x_2n; their difference, scaled by ``atol + rtol |x|`` per
        state, must be at most 1 in every state, else n doubles (up to
        MAX_AUTO_SUBSTEPS; beyond it, IntegrationError).  The result is x_2n.

        The difference estimates the error of x_n, so it bounds that of x_2n by a
        factor 2^p - 1 (15 for RK4) once the substeps are small enough for the method's
        order p to show; Richardson's sharper estimate (the difference over 2^p - 1) was
        tried and let steps through with 90 times the tolerance at 100 times the arm's
        design torque, where n and 2n agreed before that regime (bench/auto_substeps.py).
        The next step starts at n, or at n/2 where the difference was below half the
        tolerance over 2^p (it grows by about 2^p when the substeps double).

        Every try starts at x0, so where the method's first stage is f(x0) (the explicit
        Runge-Kutta family, Gill, Treanor: ``first_stage_at_start``) it is evaluated once
        and handed to every try: one right-hand side less per try, the same numbers
        (``fs_advance_auto`` in C does the same).  The stepper's ``nfev`` counts the
        evaluations of all tries."""
        rtol, atol = self.params["rtol"], self.params["atol"]
        order = method_info(self.params["method"]).order
        integrator = self.integrator
        start = integrator.get_state()
        x0 = self._x
        n = self._auto_substeps
        first = rhs(x0, *args) if integrator.first_stage_at_start else None
        spent = 0 if first is None else 1

        def attempt(substeps: int) -> np.ndarray:
            nonlocal spent
            integrator.set_state(start)
            x = integrator.step_autonomous(rhs, args, h / substeps, substeps, first)
            spent += integrator.nfev - start["nfev"]
            return x

        coarse = attempt(n)
        while True:
            fine = attempt(2 * n)
            scale = atol + rtol * np.maximum(np.abs(fine), np.abs(x0))
            error = float(np.max(np.abs(fine - coarse) / scale))
            if error <= 1.0:        # NaN (a diverged trial) is not
                break
            if 2 * n >= MAX_AUTO_SUBSTEPS:
                raise IntegrationError(
                    f"error estimate {error:.3g} times the tolerance (rtol = {rtol!r}, atol = "
                    f"{atol!r}) with {2 * n} substeps, the most substeps = 0 takes; shorten "
                    f"the communication step or loosen rtol/atol")
            coarse, n = fine, 2 * n
        integrator.nfev = start["nfev"] + spent
        return fine, (max(1, n // 2) if error <= 0.5 / 2.0 ** order else n)


class _HardLimit(IntegrationError):
    """A step reached a state beyond the model's hard limit (no shorter step helps)."""


def held_inputs(block: Block) -> tuple:
    """The block's input values, in the order of its INPUTS (compared from one
    communication step to the next to find where an input jumped)."""
    return tuple(block.inputs[s.name] for s in block.INPUTS)
