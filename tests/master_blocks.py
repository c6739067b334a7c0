"""Small blocks with closed-form discrete solutions, for the co-simulation master tests.

Kept in their own module (no test imports) so they can also be exported as FMUs.
"""
from __future__ import annotations

import math

from mbdcore.blocks import Block, Parameter, Signal, StepError


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
