"""Small blocks with real state and closed-form or known behaviour, shared by the tests.

They import nothing but ``mbdcore.blocks`` and the standard library, so that they can be
built into FMUs (``build_fmu`` embeds this file) and named from system files
(``"block": "support.blocks:Tracking"``, loaded with ``allow_python_blocks=True`` /
``--allow-python-blocks``: not the project's own); none knows it runs under a master.

* :class:`DampedOscillator`: the FMU wrapping of the Block contract;
* :class:`Integrator`, :class:`Gain`, :class:`Sqrt`: loops with exact discrete solutions;
* :class:`SmoothStep`, :class:`Tracking`, :class:`Sleeper`: systems in files, real time.
"""
from __future__ import annotations

import math
import time

import numpy as np

from mbdcore.blocks import Block, Parameter, Signal, StepError


class DampedOscillator(Block):
    """Mass on a spring and damper driven by a force, integrated with fixed-step RK4.

    m x'' + c x' + k x = F.  The acceleration output depends directly on the force
    (feedthrough); position and velocity depend on the state only.
    """

    INPUTS = (
        Signal("force", "N", "External force on the mass", 0.0, min=-1e4, max=1e4),
    )
    OUTPUTS = (
        Signal("position", "m", "Displacement of the mass from the spring's rest length"),
        Signal("velocity", "m/s", "Velocity of the mass"),
        Signal("acceleration", "m/s2", "Acceleration of the mass"),
    )
    PARAMETERS = (
        Parameter("mass", 2.0, "kg", "Moving mass", min=0.0, exclusive_min=True),
        Parameter("stiffness", 50.0, "N/m", "Spring stiffness", min=0.0),
        Parameter("damping", 0.8, "N.s/m", "Viscous damping coefficient", min=0.0),
        Parameter("x0", 0.1, "m", "Initial position"),
        Parameter("position_limit", 10.0, "m", "A step ending beyond it fails",
                  min=0.0, exclusive_min=True),
        Parameter("substeps", 4, "", "RK4 steps per communication step", min=1, max=1000),
        Parameter("method", "rk4", "", "Time integration scheme", choices=("rk4",)),
    )
    FEEDTHROUGH = {"acceleration": ("force",)}
    DEFAULT_STOP_TIME = 5.0
    DEFAULT_STEP_SIZE = 1e-2

    def __init__(self, **params):
        super().__init__(**params)
        self.reset(0.0)

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self._y = np.array([self.params["x0"], 0.0])  # [position m, velocity m/s]

    def _rate(self, y: np.ndarray, force: float) -> np.ndarray:
        m, k, c = self.params["mass"], self.params["stiffness"], self.params["damping"]
        return np.array([y[1], (force - k * y[0] - c * y[1]) / m])

    def outputs(self) -> dict[str, float]:
        x, v = self._y
        return {"position": float(x), "velocity": float(v),
                "acceleration": float(self._rate(self._y, self.inputs["force"])[1])}

    def do_step(self, t: float, h: float) -> None:
        force = self.inputs["force"]
        n = self.params["substeps"]
        dt = h / n
        y = self._y.copy()
        for _ in range(n):
            k1 = self._rate(y, force)
            k2 = self._rate(y + 0.5 * dt * k1, force)
            k3 = self._rate(y + 0.5 * dt * k2, force)
            k4 = self._rate(y + dt * k3, force)
            y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        if not (np.all(np.isfinite(y)) and abs(y[0]) <= self.params["position_limit"]):
            raise StepError(f"position {y[0]!r} m at t = {t + h!r} s is beyond the limit "
                            f"{self.params['position_limit']!r} m")
        self._y = y
        self.time = t + h

    def _get_internal(self):
        return {"y": self._y}

    def _set_internal(self, internal) -> None:
        self._y = np.array(internal["y"], dtype=float)


class Integrator(Block):
    """x' = gain * u, integrated exactly over a step with u held: x += gain * h * u."""

    INPUTS = (Signal("u", "", "rate input"),)
    OUTPUTS = (Signal("x", "", "integral"),)
    PARAMETERS = (Parameter("gain", 1.0, "1/s", "rate gain"),
                  Parameter("x0", 0.0, "", "initial value"),
                  Parameter("fail_time", 1e30, "s", "a step starting at or after it fails"))

    def __init__(self, **params):
        super().__init__(**params)
        self.x = self.params["x0"]

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self.x = self.params["x0"]

    def outputs(self) -> dict[str, float]:
        return {"x": self.x}

    def do_step(self, t: float, h: float) -> None:
        if t >= self.params["fail_time"] - 1e-12:
            raise StepError(f"integrator diverged at t = {t:g} s")
        self.x += self.params["gain"] * h * self.inputs["u"]
        self.time = t + h

    def _get_internal(self):
        return self.x

    def _set_internal(self, internal) -> None:
        self.x = float(internal)


class Gain(Block):
    """Static feedback y = -k * u: the output depends directly on the input."""

    INPUTS = (Signal("u", "", "measured signal"),)
    OUTPUTS = (Signal("y", "", "command"),)
    PARAMETERS = (Parameter("k", 1.0, "1/s", "feedback gain"),)
    FEEDTHROUGH = {"y": ("u",)}

    def outputs(self) -> dict[str, float]:
        return {"y": -self.params["k"] * self.inputs["u"]}


class Sqrt(Block):
    """y = sqrt(u) with feedthrough: a negative input gives a NaN output."""

    INPUTS = (Signal("u"),)
    OUTPUTS = (Signal("y"),)
    FEEDTHROUGH = {"y": ("u",)}

    def outputs(self) -> dict[str, float]:
        u = self.inputs["u"]
        return {"y": math.sqrt(u) if u >= 0 else math.nan}


class SmoothStep(Block):
    """Reference r(t) = r0 + (r1 - r0) (1 + tanh((t - t_switch) / tau)) / 2, a source."""

    OUTPUTS = (Signal("r", "", "reference"),)
    PARAMETERS = (Parameter("r0", 0.0), Parameter("r1", 1.0),
                  Parameter("t_switch", 1.0, "s", "time of the transition"),
                  Parameter("tau", 0.02, "s", "duration scale of the transition", min=0.0,
                            exclusive_min=True))

    def outputs(self) -> dict[str, float]:
        p = self.params
        return {"r": p["r0"] + (p["r1"] - p["r0"]) * 0.5
                * (1.0 + math.tanh((self.time - p["t_switch"]) / p["tau"]))}


class Tracking(Block):
    """Proportional tracking controller u = kp (r - x), direct feedthrough from r and x."""

    INPUTS = (Signal("r", "", "reference"), Signal("x", "", "measurement"))
    OUTPUTS = (Signal("u", "", "command"),)
    PARAMETERS = (Parameter("kp", 1.0, "", "proportional gain"),)
    FEEDTHROUGH = {"u": ("r", "x")}

    def outputs(self) -> dict[str, float]:
        return {"u": self.params["kp"] * (self.inputs["r"] - self.inputs["x"])}


class Sleeper(Block):
    """A pass-through y = u that sleeps ``sleep`` s of wall time in the steps starting in
    [t_from, t_to): a controller that overruns its real-time budget."""

    INPUTS = (Signal("u"),)
    OUTPUTS = (Signal("y"),)
    PARAMETERS = (Parameter("sleep", 0.0, "s", "wall time slept per step", min=0.0),
                  Parameter("t_from", 0.0, "s"), Parameter("t_to", 1e30, "s"))
    FEEDTHROUGH = {"y": ("u",)}

    def outputs(self) -> dict[str, float]:
        return {"y": self.inputs["u"]}

    def do_step(self, t: float, h: float) -> None:
        if self.params["t_from"] <= t < self.params["t_to"]:
            time.sleep(self.params["sleep"])
        self.time = t + h
