"""Small blocks with real state, used to test the FMU wrapping of the Block contract."""
from __future__ import annotations

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
