"""Notch filter: a discrete biquad that removes one frequency (a structural mode) from a
signal and passes the rest.

The continuous prototype

    H(s) = (s^2 + 2 zeta_zero w0 s + w0^2) / (s^2 + 2 zeta_pole w0 s + w0^2)

has gain ``zeta_zero / zeta_pole`` at ``w0`` (0 for ``zeta_zero = 0``) and 1 at DC and at
high frequency; ``zeta_pole`` sets the width (the -3 dB band of the full notch is
``2 zeta_pole w0`` wide).  It is discretised with the bilinear transform prewarped at
``w0``, ``s = (w0 / tan(w0 dt / 2)) (z - 1) / (z + 1)``, which maps the notch to exactly
``frequency`` and keeps the gain 1 at DC and at the Nyquist frequency.
"""
from __future__ import annotations

import math

import control as ct
import numpy as np

from mbdcore.blocks import (
    Block,
    Parameter,
    ParameterError,
    Signal,
    StepError,
    VectorState,
)

__all__ = ["notch_coefficients", "NotchFilter"]


def notch_coefficients(frequency: float, dt: float, zeta_zero: float = 0.0,
                       zeta_pole: float = 0.3):
    """Biquad coefficients ``(b0, b1, b2), (1, a1, a2)`` of the notch (module docstring).

    Parameters
    ----------
    frequency : float
        Notch frequency [Hz], below the Nyquist frequency ``1 / (2 dt)``.
    dt : float
        Sample time [s].
    zeta_zero, zeta_pole : float
        Damping ratios of the zeros (depth) and of the poles (width), 0 <= zeta_zero,
        0 < zeta_pole.
    """
    if not (0.0 < frequency < 0.5 / dt):
        raise ParameterError(f"notch frequency = {frequency!r} Hz must lie in (0, "
                             f"{0.5 / dt:g}) Hz, below the Nyquist frequency of dt = {dt!r} s")
    w0 = 2.0 * math.pi * frequency
    k = w0 / math.tan(w0 * dt / 2.0)            # prewarped bilinear constant
    def quadratic(zeta):                        # k^2 (z-1)^2 + 2 zeta w0 k (z^2-1) + w0^2 (z+1)^2
        return np.array([k * k + 2 * zeta * w0 * k + w0 * w0, 2 * (w0 * w0 - k * k),
                         k * k - 2 * zeta * w0 * k + w0 * w0])
    num, den = quadratic(zeta_zero), quadratic(zeta_pole)
    return num / den[0], den / den[0]


class NotchFilter(Block):
    """Discrete notch filter u -> y (module docstring), one biquad in transposed direct
    form II.  Must be stepped with its sample time ``dt``; the output depends directly
    on the input (``y[k] = b0 u[k] + s1[k]``).
    """

    INPUTS = (Signal("u", "", "signal in"),)
    OUTPUTS = (Signal("y", "", "filtered signal"),)
    PARAMETERS = (
        Parameter("frequency", 0.43, "Hz", "notch frequency", min=0.0, exclusive_min=True),
        Parameter("zeta_zero", 0.0, "", "damping ratio of the zeros (depth: 0 removes the "
                  "frequency entirely)", min=0.0),
        Parameter("zeta_pole", 0.3, "", "damping ratio of the poles (width)", min=0.0,
                  exclusive_min=True),
        Parameter("dt", 1e-3, "s", "sample time", min=0.0, exclusive_min=True),
    )
    FEEDTHROUGH = {"y": ("u",)}
    DEFAULT_STOP_TIME = 1.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self.num, self.den = notch_coefficients(p["frequency"], p["dt"], p["zeta_zero"],
                                                p["zeta_pole"])
        self.reset()

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self.s = np.zeros(2)

    def outputs(self) -> dict:
        return {"y": float(self.num[0] * self.inputs["u"] + self.s[0])}

    def do_step(self, t: float, h: float) -> None:
        dt = self.params["dt"]
        if abs(h - dt) > 1e-9 * dt:
            raise StepError(f"{type(self).__name__} is designed for steps of {dt!r} s; got "
                            f"a step of {h!r} s at t = {t!r} s")
        (b0, b1, b2), (_, a1, a2) = self.num, self.den
        u = self.inputs["u"]
        y = b0 * u + self.s[0]
        self.s = np.array([b1 * u - a1 * y + self.s[1], b2 * u - a2 * y])
        self.time = t + h

    def transfer_function(self, name: str = "notch"):
        """The filter as a discrete ``control.TransferFunction`` u -> y."""
        return ct.tf(self.num, self.den, self.params["dt"], inputs="u", outputs="y", name=name)

    def vector_state(self) -> VectorState:
        def set_s(block, x):
            block.s = np.array(x, dtype=float)
        return VectorState(["s1", "s2"], lambda b: b.s.copy(), set_s)

    def _get_internal(self):
        return {"s": self.s.copy()}

    def _set_internal(self, internal):
        self.s = np.array(internal["s"], dtype=float)
