"""PID control: a sampled PID block with anti-windup, derivative filter, output limits
and setpoint weighting, and its exact linear transfer function.

Law (parallel form, error signals held over each sample of length ``h``)::

    e  = r - y                      (integral)
    ep = b r - y                    (proportional, setpoint weight b)
    ed = c r - y                    (derivative, setpoint weight c)
    v  = kp ep + I + D + u_ff,      u = clip(v, u_min, u_max)
    D  = kd d/dt ed through the filter 1 / (tf s + 1)

Discretisation, per step with the inputs held (the sampled law the co-simulation
master and :func:`~controllers.design.adapters.block_iosys` run):

* integral: ``I += h ki e`` (exact for a held error);
* derivative filter state ``xf`` (a low-pass copy of ``ed``): ``xf <- a xf + (1 - a) ed``
  with ``a = exp(-h / tf)`` (exact zero-order hold), ``D = kd (ed - xf) / tf``; a
  derivative needs ``tf > 0`` (an unfiltered one amplifies noise without bound);
* anti-windup while ``v`` is outside the limits:

  - ``"back-calculation"`` (Astrom & Hagglund): ``I' = ki e + (u - v) / tt``, integrated
    exactly over the step (linear in I, the other terms held);
  - ``"clamping"``: the integral is frozen when the error would drive it further into
    the limit;
  - ``"none"``: the integral winds up (for comparison).

Unsaturated, the block is the linear discrete system :func:`pid_transfer_function`:
``C(z) = kp + ki h / (z - 1) + kd (z - 1) / (tf (z - a))``, which tends to
``kp + ki / s + kd s / (tf s + 1)`` as ``h -> 0``.
"""
from __future__ import annotations

import math

import control as ct
import numpy as np

from mbdcore.blocks import Block, Parameter, ParameterError, Signal, VectorState

__all__ = ["ANTI_WINDUP", "UNBOUNDED", "pid_transfer_function", "PIDController"]

ANTI_WINDUP = ("back-calculation", "clamping", "none")
#: "no limit" for the output limits (a finite number, as FMI parameters must be)
UNBOUNDED = 1e300


def pid_transfer_function(kp: float, ki: float, kd: float, tf: float, dt: float | None = None,
                          b: float = 1.0, c: float = 0.0, name: str = "pid"):
    """The linear PID (no saturation) from the error ``e = r - y`` to ``u``.

    Parameters
    ----------
    kp, ki, kd : float
        Gains (``ki`` [1/s], ``kd`` [s] times the units of ``u`` per unit of ``y``).
    tf : float
        Derivative filter time constant [s], > 0 if ``kd != 0``.
    dt : float, optional
        Sample time [s]: the discrete law of :class:`PIDController`; ``None``: the
        continuous-time PID.

    Returns
    -------
    control.TransferFunction
        ``e -> u`` (the feedback path: ``u = -C y``; with setpoint weights b, c != 1
        the reference enters differently).
    """
    _check_filter(kd, tf)
    if dt is None:
        s = ct.tf("s")
        sys = kp + ki / s + (kd * s / (tf * s + 1.0) if kd else 0)
    else:
        z = ct.tf([1, 0], [1], dt)
        sys = kp + ki * dt / (z - 1) + ((kd / tf) * (z - 1) / (z - math.exp(-dt / tf))
                                        if kd else 0)
    return ct.tf(ct.minreal(sys, verbose=False), inputs="e", outputs="u", name=name)


def _check_filter(kd: float, tf: float) -> None:
    if kd != 0.0 and not tf > 0.0:
        raise ParameterError(f"parameter 'tf' = {tf!r}: a derivative gain (kd = {kd!r}) "
                             "needs a filter time constant tf > 0 [s]")


class PIDController(Block):
    """Sampled PID with anti-windup, derivative filter, output limits and setpoint
    weights (module docstring).  Signal-agnostic: units follow the loop it is put in.

    State: the integral ``I`` (unit of ``u``) and the derivative-filter state ``xf``
    (unit of ``y``).  The output depends directly on ``r``, ``y`` and ``u_ff``.
    """

    INPUTS = (Signal("r", "", "setpoint"),
              Signal("y", "", "measurement"),
              Signal("u_ff", "", "feedforward, added before the limits"))
    OUTPUTS = (Signal("u", "", "control output, within [u_min, u_max]"),)
    PARAMETERS = (
        Parameter("kp", 1.0, "", "proportional gain"),
        Parameter("ki", 0.0, "1/s", "integral gain"),
        Parameter("kd", 0.0, "s", "derivative gain"),
        Parameter("tf", 0.0, "s", "derivative filter time constant (> 0 if kd != 0)", min=0.0),
        Parameter("b", 1.0, "", "setpoint weight of the proportional term"),
        Parameter("c", 0.0, "", "setpoint weight of the derivative term"),
        Parameter("u_min", -UNBOUNDED, "", "lower output limit"),
        Parameter("u_max", UNBOUNDED, "", "upper output limit"),
        Parameter("anti_windup", "back-calculation", "", "integrator anti-windup",
                  choices=ANTI_WINDUP),
        Parameter("tt", 0.0, "s", "back-calculation tracking time constant "
                  "(0: sqrt(Ti Td), or Ti without D, Ti = kp/ki)", min=0.0),
    )
    FEEDTHROUGH = {"u": ("r", "y", "u_ff")}
    DEFAULT_STOP_TIME = 1.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        if p["u_min"] >= p["u_max"]:
            raise ParameterError(f"parameters 'u_min' = {p['u_min']!r} and 'u_max' = "
                                 f"{p['u_max']!r}: u_min must be below u_max")
        _check_filter(p["kd"], p["tf"])
        self.tt = p["tt"] or self.default_tracking_time(p["kp"], p["ki"], p["kd"])
        self.reset()

    @staticmethod
    def default_tracking_time(kp: float, ki: float, kd: float) -> float:
        """Astrom & Hagglund's rule: ``tt = sqrt(Ti Td)`` with D, ``Ti`` without [s]."""
        if ki == 0.0:
            return 1.0                     # no integral: nothing to track
        ti = abs(kp / ki) if kp else 1.0 / abs(ki)
        return math.sqrt(ti * abs(kd / kp)) if (kd and kp) else ti

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self.integral = 0.0
        self.xf = 0.0

    # -- the law ---------------------------------------------------------------------
    def _terms(self):
        """Integral error e, derivative error ed and unlimited output v now."""
        p, u = self.params, self.inputs
        r, y = u["r"], u["y"]
        e, ed = r - y, p["c"] * r - y
        d = p["kd"] * (ed - self.xf) / p["tf"] if p["kd"] else 0.0
        return e, ed, p["kp"] * (p["b"] * r - y) + self.integral + d + u["u_ff"]

    def outputs(self) -> dict:
        v = self._terms()[2]
        return {"u": min(max(v, self.params["u_min"]), self.params["u_max"])}

    def do_step(self, t: float, h: float) -> None:
        p = self.params
        e, ed, v = self._terms()
        u = min(max(v, p["u_min"]), p["u_max"])
        saturated = u != v
        mode = p["anti_windup"]
        if not saturated or mode == "none":
            self.integral += h * p["ki"] * e
        elif mode == "clamping":
            if p["ki"] * e * (v - u) < 0.0:        # the error pulls back out of the limit
                self.integral += h * p["ki"] * e
        else:
            # I' = ki e + (u - (v - I) - I) / tt, exact over the step with e, u, v - I held
            target = p["ki"] * e * self.tt + u - (v - self.integral)
            self.integral = target + (self.integral - target) * math.exp(-h / self.tt)
        if p["tf"] > 0.0:
            a = math.exp(-h / p["tf"])
            self.xf = a * self.xf + (1.0 - a) * ed
        else:
            self.xf = ed
        self.time = t + h

    # -- linear analysis and python-control ------------------------------------------
    def transfer_function(self, dt: float | None = None):
        """``e -> u`` of this block's gains (:func:`pid_transfer_function`); ``dt``
        defaults to ``DEFAULT_STEP_SIZE``."""
        p = self.params
        return pid_transfer_function(p["kp"], p["ki"], p["kd"], p["tf"],
                                     dt or self.DEFAULT_STEP_SIZE)

    def vector_state(self) -> VectorState:
        def set_x(block, x):
            block.integral, block.xf = float(x[0]), float(x[1])
        return VectorState(["integral", "filter"], lambda b: np.array([b.integral, b.xf]), set_x)

    def _get_internal(self):
        return {"integral": self.integral, "xf": self.xf}

    def _set_internal(self, internal):
        self.integral = float(internal["integral"])
        self.xf = float(internal["xf"])
