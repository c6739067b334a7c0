"""Input shaping: impulse sequences that move a lightly damped mode without exciting it.

A shaper is a train of impulses ``A_i delta(t - t_i)`` (``sum A_i = 1``) convolved with a
reference; a rest-to-rest reference convolved with it ends ``t_n`` later and leaves the
mode at (frequency ``f``, damping ``zeta``) at rest (Singer & Seering 1990; Singhose,
Seering & Singer 1994).  With ``K = exp(-zeta pi / sqrt(1 - zeta^2))`` and the damped
period ``T_d = 1 / (f sqrt(1 - zeta^2))``:

* **ZV**:  A = (1, K) / (1 + K),                t = (0, T_d/2);
* **ZVD**: A = (1, 2K, K^2) / (1 + K)^2,         t = (0, T_d/2, T_d);
* **EI**:  A = ((1+V)/4, (1-V)/2, (1+V)/4),      t = (0, T_d/2, T_d), the extra-insensitive
  shaper for a vibration tolerance V, in its undamped closed form (accurate for
  zeta below a few per cent, the case of flexible links).

Several modes: convolve their shapers (:func:`convolve`).
"""
from __future__ import annotations

import math

import numpy as np

from controllers.laws.kernels import JOINT_LAWS_C_SOURCES, joint_laws
from controllers.laws.trajectory import QuinticJointTrajectory
from mbdcore.blocks import Parameter, ParameterError
from mbdcore.codegen import CModel, stateless_functions

__all__ = ["SHAPERS", "shaper", "convolve", "residual_vibration_ratio", "ShapedQuinticTrajectory",
           "SHAPER_PARAMETER_NAMES"]

SHAPERS = ("none", "zv", "zvd", "ei")


def shaper(kind: str, frequency: float, zeta: float = 0.0, vtol: float = 0.05):
    """Impulse amplitudes and times of one shaper.

    Parameters
    ----------
    kind : {"none", "zv", "zvd", "ei"}
        Shaper type (``"none"``: one unit impulse at 0).
    frequency : float
        Undamped natural frequency of the mode [Hz], > 0.
    zeta : float
        Damping ratio of the mode, 0 <= zeta < 1.
    vtol : float
        Vibration tolerance of the EI shaper (fraction, 0 <= vtol < 1).

    Returns
    -------
    amplitudes, times : ndarray, shape (n,)
        Impulse amplitudes (sum 1) and times [s] (ascending, first 0).
    """
    if kind not in SHAPERS:
        raise ValueError(f"unknown shaper {kind!r}; accepted: {', '.join(SHAPERS)}")
    if kind == "none":
        return np.ones(1), np.zeros(1)
    if not (math.isfinite(frequency) and frequency > 0.0):
        raise ValueError(f"shaper frequency = {frequency!r} Hz must be a finite number > 0")
    if not (0.0 <= zeta < 1.0):
        raise ValueError(f"shaper damping ratio zeta = {zeta!r} must be in [0, 1)")
    if not (0.0 <= vtol < 1.0):
        raise ValueError(f"EI vibration tolerance vtol = {vtol!r} must be in [0, 1)")
    root = math.sqrt(1.0 - zeta * zeta)
    k = math.exp(-zeta * math.pi / root)
    half = 0.5 / (frequency * root)
    if kind == "zv":
        return np.array([1.0, k]) / (1.0 + k), np.array([0.0, half])
    if kind == "zvd":
        return np.array([1.0, 2.0 * k, k * k]) / (1.0 + k) ** 2, np.array([0.0, half, 2 * half])
    return (np.array([(1 + vtol) / 4, (1 - vtol) / 2, (1 + vtol) / 4]),
            np.array([0.0, half, 2 * half]))


def convolve(*shapers):
    """The shaper that applies several ``(amplitudes, times)`` shapers in series."""
    amps, times = np.ones(1), np.zeros(1)
    for a, t in shapers:
        amps = np.outer(amps, a).ravel()
        times = np.add.outer(times, t).ravel()
    order = np.argsort(times, kind="stable")
    return amps[order], times[order]


def residual_vibration_ratio(amplitudes, times, frequency: float, zeta: float = 0.0) -> float:
    """Residual vibration of a mode (f [Hz], zeta) after the shaper, as a fraction of
    the vibration a single unit impulse leaves (1 = unshaped, 0 = none left)."""
    w = 2.0 * math.pi * frequency
    wd = w * math.sqrt(1.0 - zeta * zeta)
    a, t = np.asarray(amplitudes, float), np.asarray(times, float)
    decay = np.exp(zeta * w * (t - t[-1]))
    return float(math.hypot(np.sum(a * decay * np.cos(wd * t)), np.sum(a * decay * np.sin(wd * t))))


#: The parameters of the shaper itself (built into a C FMU's impulse tables).
SHAPER_PARAMETER_NAMES = ("shaper", "frequency1", "zeta1", "frequency2", "zeta2", "vtol")


class ShapedQuinticTrajectory(QuinticJointTrajectory):
    """The quintic joint reference convolved with an input shaper (one or two modes).

    Outputs are those of :class:`~controllers.laws.trajectory.QuinticJointTrajectory`:
    ``sum_i A_i r(t - t_i)`` for the angle, rate and acceleration of each joint.
    The move lasts ``move_time`` plus the shaper duration (:attr:`duration`).
    ``frequency2 = 0`` shapes one mode only.
    """

    PARAMETERS = QuinticJointTrajectory.PARAMETERS + (
        Parameter("shaper", "zv", "", "input shaper type", choices=SHAPERS),
        Parameter("frequency1", 0.43, "Hz", "first shaped mode: natural frequency",
                  min=0.0, exclusive_min=True),
        Parameter("zeta1", 0.0, "", "first shaped mode: damping ratio", min=0.0, max=0.99),
        Parameter("frequency2", 0.0, "Hz", "second shaped mode (0: none)", min=0.0),
        Parameter("zeta2", 0.0, "", "second shaped mode: damping ratio", min=0.0, max=0.99),
        Parameter("vtol", 0.05, "", "vibration tolerance of the EI shaper", min=0.0, max=0.99),
    )

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        parts = [shaper(p["shaper"], p["frequency1"], p["zeta1"], p["vtol"])]
        if p["frequency2"] > 0.0:
            parts.append(shaper(p["shaper"], p["frequency2"], p["zeta2"], p["vtol"]))
        elif p["zeta2"] != 0.0:
            raise ParameterError("parameter 'zeta2' is set but 'frequency2' = 0 (no second mode)")
        self.amplitudes, self.times = convolve(*parts)

    @property
    def duration(self) -> float:
        """Time from the start of the move to its end [s]."""
        return self.params["move_time"] + float(self.times[-1])

    def outputs(self) -> dict:
        p = self.params
        t = self.time - p["start_time"]
        out, o = {}, np.empty(3)
        for i in (1, 2):
            joint_laws().shaped_quintic(len(self.amplitudes), self.amplitudes, self.times, t,
                                        p[f"theta{i}_start"], p[f"theta{i}_end"],
                                        p["move_time"], o)
            out[f"theta{i}_ref"], out[f"omega{i}_ref"], out[f"alpha{i}_ref"] = map(float, o)
        return out

    def c_model(self) -> CModel:
        """The shaped reference in C (``native/joint_laws.c``, the code this block runs):
        the impulses are built in at export (the shaper's parameters fixed), the move's
        start, end and timing stay settable."""
        joints = "".join(f"""
    shaped_quintic({len(self.amplitudes)}, SHAPER_AMPLITUDES, SHAPER_TIMES, t,
                   PAR_theta{i}_start, PAR_theta{i}_end, PAR_move_time, o);
    OUT_theta{i}_ref = o[0];
    OUT_omega{i}_ref = o[1];
    OUT_alpha{i}_ref = o[2];""" for i in (1, 2))
        glue = stateless_functions("    double t = d->time - PAR_start_time, o[3];" + joints)
        return CModel(glue, c_sources=JOINT_LAWS_C_SOURCES, api=("RIGID_API", "LAWS_API"),
                      fixed_parameters=SHAPER_PARAMETER_NAMES,
                      tables={"SHAPER_AMPLITUDES": self.amplitudes, "SHAPER_TIMES": self.times})
