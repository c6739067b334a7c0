"""Cascaded servo of an antenna pointing axis (after Gawronski 2008; docs/benchmarks.md §3).

Loops, innermost first:

* current loop (PI) — in the drive amplifier (:class:`mbdcore.models.drive.DCMotorBlock`,
  ``command="current"``): its zero cancels the armature pole R/L, gains from
  :func:`mbdcore.models.drive.current_loop_gains` at the bandwidth set here;
* rate loop (PI) — on the axis rate measured by the motor tachometers (mean rotor
  speed / N), output the current command, clipped to the peak current;
* position loop (PI with setpoint weight beta on the proportional part) — on the axis
  encoder, output the rate command, plus the feedforward of the reference rate, clipped
  to the rate limit.

Coulomb friction compensation: the current command gets ``friction_current
tanh(w_cmd / friction_rate)``, the motors' Coulomb friction Tc/Kt in the direction of the
rate command (model-based friction feedforward, Armstrong-Helouvry, Dupont and Canudas de
Wit, Automatica 30(7), 1994).  Without it the two integrators of the cascade and the
sticking motors hunt in a friction limit cycle around the target (±16 urad for the
1 mrad step); with it what hunts is only the friction left uncompensated, so the
residual error scales with the error of the friction estimate (docs/antenna.md).  It is
a feedforward of a friction the linear design model leaves out, so it does not enter
:func:`servo_margins`.

Anti-windup: conditional integration — an integrator stops while its loop's output is
saturated in the direction the integrator would push it.  The controller is a discrete
block: its output at t_k uses the measurements of t_k (feedthrough) and is held over the
step; the integrators advance by forward Euler over the step.

:func:`controllers.design.antenna_servo.design_servo` picks the gains from the rigid-body
inertia for chosen crossover frequencies and
:func:`~controllers.design.antenna_servo.servo_margins` checks them with python-control on the linear
flexible model (:func:`pointing_axis_plant`), including the current loop and the hold
delay of the sampled controller.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mbdcore.blocks import Block, Parameter, Signal, VectorState

__all__ = ["ServoGains", "AntennaServoController", "PointingReference"]

@dataclass
class ServoGains:
    """Gains and limits of the cascade (SI units).

    kp_rate [A/(rad/s)], ki_rate [A/rad]: rate PI on the axis rate;
    kp_pos [1/s], ki_pos [1/s^2]: position PI (output: axis rate command);
    beta: setpoint weight of the position loop's proportional part (0..1);
    feedforward: weight of the reference rate added to the rate command (0..1);
    rate_limit [rad/s], current_limit [A]; ratio: gearbox ratio N; n_motors;
    friction_current [A]: Coulomb friction compensation (estimate of Tc/Kt per motor);
    friction_rate [rad/s]: axis rate command over which it changes sign (tanh width).
    """

    kp_rate: float
    ki_rate: float
    kp_pos: float
    ki_pos: float
    beta: float = 1.0
    feedforward: float = 1.0
    rate_limit: float = math.radians(1.0)
    current_limit: float = 9.0
    ratio: float = 3000.0
    n_motors: int = 2
    friction_current: float = 0.0
    friction_rate: float = 1e-5


class AntennaServoController(Block):
    """Position and rate loops of the pointing axis (see the module docstring).

    Inputs: reference angle and rate, measured axis angle (encoder) and motor speeds
    (tachometers); output: the current command of the drive amplifier.  Gains as
    parameters (defaults: :func:`design_servo` with its defaults).
    """

    INPUTS = (
        Signal("reference_angle", "rad", "commanded axis angle"),
        Signal("reference_rate", "rad/s", "commanded axis rate (feedforward)"),
        Signal("axis_angle", "rad", "measured axis angle (encoder)"),
        Signal("speed1", "rad/s", "motor 1 speed (tachometer)"),
        Signal("speed2", "rad/s", "motor 2 speed (tachometer)"),
    )
    OUTPUTS = (Signal("current_ref", "A", "current command to the drive amplifier"),
               Signal("rate_command", "rad/s", "axis rate command of the position loop"))
    FEEDTHROUGH = {"current_ref": tuple(s.name for s in INPUTS),
                   "rate_command": ("reference_angle", "reference_rate", "axis_angle")}
    PARAMETERS = (
        Parameter("kp_rate", 254.5, "A.s/rad", "rate loop proportional gain", min=0.0),
        Parameter("ki_rate", 479.7, "A/rad", "rate loop integral gain", min=0.0),
        Parameter("kp_pos", 2.5133, "1/s", "position loop proportional gain", min=0.0),
        Parameter("ki_pos", 1.8950, "1/s2", "position loop integral gain", min=0.0),
        Parameter("beta", 0.5, "", "setpoint weight of the position proportional part",
                  min=0.0, max=1.0),
        Parameter("feedforward", 1.0, "", "weight of the reference-rate feedforward",
                  min=0.0, max=1.0),
        Parameter("rate_limit", math.radians(1.0), "rad/s", "axis rate limit", min=0.0,
                  exclusive_min=True),
        Parameter("current_limit", 9.0, "A", "current command limit", min=0.0,
                  exclusive_min=True),
        Parameter("ratio", 3000.0, "", "gearbox ratio N", min=0.0, exclusive_min=True),
        Parameter("n_motors", 2, "", "motors whose speeds are averaged", min=1, max=2),
        Parameter("friction_current", 0.02 / 0.49, "A", "Coulomb friction compensation "
                  "(estimate of Tc/Kt per motor; 0: off)", min=0.0),
        Parameter("friction_rate", 1e-5, "rad/s", "rate command over which the friction "
                  "compensation changes sign (tanh width)", min=0.0, exclusive_min=True),
    )
    DEFAULT_STOP_TIME = 10.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        self.reset()

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self.z_pos = 0.0
        self.z_rate = 0.0

    def _law(self):
        p, u = self.params, self.inputs
        e_pos = u["reference_angle"] - u["axis_angle"]
        w_raw = (p["feedforward"] * u["reference_rate"]
                 + p["kp_pos"] * (p["beta"] * u["reference_angle"] - u["axis_angle"])
                 + self.z_pos)
        w_cmd = min(max(w_raw, -p["rate_limit"]), p["rate_limit"])
        speeds = [u["speed1"], u["speed2"]][:p["n_motors"]]
        w_meas = sum(speeds) / len(speeds) / p["ratio"]
        e_rate = w_cmd - w_meas
        i_raw = (p["kp_rate"] * e_rate + self.z_rate
                 + p["friction_current"] * math.tanh(w_cmd / p["friction_rate"]))
        i_cmd = min(max(i_raw, -p["current_limit"]), p["current_limit"])
        return e_pos, w_raw, w_cmd, e_rate, i_raw, i_cmd

    def outputs(self) -> dict:
        _, _, w_cmd, _, _, i_cmd = self._law()
        return {"current_ref": i_cmd, "rate_command": w_cmd}

    def do_step(self, t: float, h: float) -> None:
        p = self.params
        e_pos, w_raw, w_cmd, e_rate, i_raw, i_cmd = self._law()
        dz = h * p["ki_pos"] * e_pos
        if not (w_raw != w_cmd and dz * w_raw > 0.0):
            self.z_pos += dz
        dz = h * p["ki_rate"] * e_rate
        if not (i_raw != i_cmd and dz * i_raw > 0.0):
            self.z_rate += dz
        self.time = t + h

    def _get_internal(self):
        return {"z_pos": self.z_pos, "z_rate": self.z_rate}

    def _set_internal(self, internal):
        self.z_pos = float(internal["z_pos"])
        self.z_rate = float(internal["z_rate"])

    def vector_state(self) -> VectorState:
        """The two loop integrators: ``z_pos`` [rad/s] and ``z_rate`` [A]."""
        def set_x(block, x):
            block.z_pos, block.z_rate = float(x[0]), float(x[1])
        return VectorState(["z_pos", "z_rate"], lambda b: np.array([b.z_pos, b.z_rate]), set_x)


class PointingReference(Block):
    """Reference of the pointing axis: a step of ``step`` [rad] at ``step_time`` plus a
    ramp of ``rate`` [rad/s] from ``ramp_time``; outputs angle and rate."""

    OUTPUTS = (Signal("reference_angle", "rad", "commanded axis angle"),
               Signal("reference_rate", "rad/s", "commanded axis rate"))
    PARAMETERS = (
        Parameter("step", 1e-3, "rad", "step amplitude"),
        Parameter("step_time", 0.0, "s", "time of the step", min=0.0),
        Parameter("rate", 0.0, "rad/s", "ramp rate"),
        Parameter("ramp_time", 0.0, "s", "start of the ramp", min=0.0),
    )
    DEFAULT_STOP_TIME = 10.0
    DEFAULT_STEP_SIZE = 1e-3

    def outputs(self) -> dict:
        p, t = self.params, self.time
        ramp = max(t - p["ramp_time"], 0.0)
        return {"reference_angle": (p["step"] if t >= p["step_time"] else 0.0) + p["rate"] * ramp,
                "reference_rate": p["rate"] if t >= p["ramp_time"] else 0.0}
