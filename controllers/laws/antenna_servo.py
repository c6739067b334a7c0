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

The law is written once, in C (``native/antenna_servo.c``): the blocks call it through
ctypes, and their C-source FMUs (:meth:`AntennaServoController.c_model`,
:meth:`PointingReference.c_model`) compile the same text.

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

from controllers.laws.kernels import (ANTENNA_SERVO_C_SOURCE, antenna_servo_law,
                                      pointing_layout, servo_layout)
from mbdcore.blocks import Block, Parameter, Signal, VectorState
from mbdcore.codegen import CModel, stateless_functions

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
        self._c_params = servo_layout().pack(**self.params)
        self._out = np.empty(2)
        self.reset()

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self._z = np.zeros(2)

    @property
    def z_pos(self) -> float:
        """Position-loop integrator [rad/s]."""
        return float(self._z[0])

    @property
    def z_rate(self) -> float:
        """Rate-loop integrator [A]."""
        return float(self._z[1])

    def _u(self) -> np.ndarray:
        u = self.inputs
        return np.array([u["reference_angle"], u["reference_rate"], u["axis_angle"],
                         u["speed1"], u["speed2"]], dtype=float)

    def outputs(self) -> dict:
        antenna_servo_law().servo_outputs(self._c_params, self._z, self._u(), self._out)
        return {"current_ref": float(self._out[0]), "rate_command": float(self._out[1])}

    def do_step(self, t: float, h: float) -> None:
        antenna_servo_law().servo_update(self._c_params, self._z, self._u(), float(h))
        self.time = t + h

    def _get_internal(self):
        return {"z_pos": self.z_pos, "z_rate": self.z_rate}

    def _set_internal(self, internal):
        self._z = np.array([internal["z_pos"], internal["z_rate"]], dtype=float)

    def vector_state(self) -> VectorState:
        """The two loop integrators: ``z_pos`` [rad/s] and ``z_rate`` [A]."""
        def set_x(block, x):
            block._z = np.array(x[:2], dtype=float)
        return VectorState(["z_pos", "z_rate"], lambda b: b._z.copy(), set_x)

    def c_model(self) -> CModel:
        """The cascade in C (``native/antenna_servo.c``, the code this block runs); every
        parameter stays settable."""
        layout = servo_layout()
        params = layout.c_initializer(**{n: f"(double)PAR_{n}" for n in layout.names})
        glue = f"""
#define SERVO_PARAMS const double p[{len(layout.names)}] = {params}
#define SERVO_INPUTS const double u[5] = {{IN_reference_angle, IN_reference_rate, \\
    IN_axis_angle, IN_speed1, IN_speed2}}

int model_setup(ModelData *d, char *msg, size_t n) {{ (void)d; (void)msg; (void)n; return 0; }}
void model_initial(ModelData *d) {{ Z(0) = 0.0; Z(1) = 0.0; }}
void model_derivatives(const ModelData *d, const double *x, double *dx) {{ (void)d; (void)x; (void)dx; }}
int model_validity(const ModelData *d, char *msg, size_t n) {{ (void)d; (void)msg; (void)n; return 0; }}

void model_update(ModelData *d, double h) {{
    SERVO_PARAMS;
    SERVO_INPUTS;
    servo_update(p, d->z, u, h);
}}

void model_outputs(ModelData *d) {{
    double out[2];
    SERVO_PARAMS;
    SERVO_INPUTS;
    servo_outputs(p, d->z, u, out);
    OUT_current_ref = out[0];
    OUT_rate_command = out[1];
}}
"""
        return CModel(glue, c_sources=(ANTENNA_SERVO_C_SOURCE,), api=("LAWS_API",), n_discrete=2,
                      state_names=("z_pos", "z_rate"))


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
        p, out = self.params, np.empty(2)
        antenna_servo_law().pointing_reference(pointing_layout().pack(**p), float(self.time),
                                               out)
        return {"reference_angle": float(out[0]), "reference_rate": float(out[1])}

    def c_model(self) -> CModel:
        """The reference in C (``native/antenna_servo.c``, the code this block runs);
        every parameter stays settable."""
        layout = pointing_layout()
        params = layout.c_initializer(**{n: f"PAR_{n}" for n in layout.names})
        body = (f"    const double p[{len(layout.names)}] = {params};\n"
                "    double out[2];\n"
                "    pointing_reference(p, d->time, out);\n"
                "    OUT_reference_angle = out[0];\n"
                "    OUT_reference_rate = out[1];")
        return CModel(stateless_functions(body), c_sources=(ANTENNA_SERVO_C_SOURCE,),
                      api=("LAWS_API",))
