"""Blocks for the co-simulation master tests (importable by name, e.g. from an SSP file).

Each has a closed form or a known behaviour; none knows it runs under a master.
"""
from __future__ import annotations

import math
import time

from mbdcore.blocks import Block, Parameter, Signal


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
