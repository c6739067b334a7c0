"""Cascaded servo of an antenna pointing axis (after Gawronski, BENCHMARKS.md §3).

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

:func:`design_servo` picks the gains from the rigid-body inertia for chosen crossover
frequencies and :func:`servo_margins` checks them with python-control on the linear
flexible model (:func:`pointing_axis_plant`), including the current loop and the hold
delay of the sampled controller.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import control as ct
import numpy as np

from mbdcore.models.antenna import AntennaStructure
from mbdcore.blocks import Block, Parameter, Signal
from mbdcore.models.drive import gear_parameters, motor_parameters

from controllers.design import margins_from_response
from fmu.cosim.master import BlockComponent, FMUComponent, System
from mbdcore.models.antenna import AntennaStructureBlock, PointingAxisBlock
from mbdcore.models.drive import DCMotorBlock
from fmu.fmi.build import build_fmu

__all__ = ["ServoGains", "pointing_axis_plant", "design_servo", "servo_margins",
           "servo_loops", "AntennaServoController"]


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


def pointing_axis_plant(structure: AntennaStructure | None = None, n_motors: int = 2,
                        current_bandwidth: float = 2000.0, motor=None, gear=None,
                        name: str = "axis") -> ct.StateSpace:
    """Linear model of the axis from the current command to the measurements.

    States: the structure's modal coordinates and rates, the common rotor angle and
    speed of the motors (driven alike; the counter-torque bias cancels in the linear
    model) and the current (the current loop as a first-order lag at
    ``current_bandwidth`` [rad/s]).  Coulomb friction and backlash are left out (the
    bias keeps the gears loaded).  Inputs ``current_ref`` [A], ``wind_torque`` [N m];
    outputs ``axis_angle`` [rad], ``rate_measured`` (rotor speed / N) [rad/s],
    ``pointing_angle`` [rad], ``axis_rate`` [rad/s].
    """
    s = structure or AntennaStructure.from_engine()
    mp = motor_parameters(**(motor or {}))
    gp = gear_parameters(**(gear or {}))
    A_s, B_s, C_s = s.matrices()
    ns = A_s.shape[0]
    k = s.n_modes
    n, kg, cg = gp["ratio"], n_motors * gp["gear_stiffness"], n_motors * gp["gear_damping"]
    jm = n_motors * mp["rotor_inertia"]
    nx = ns + 3                                         # + rotor angle, speed, current
    A = np.zeros((nx, nx))
    A[:ns, :ns] = A_s
    c = s.c_axis
    ia, iw, ii = ns, ns + 1, ns + 2
    # gear torque on the axis T = kg (phi/N - c eta) + cg (w/N - c eta')
    T_row = np.zeros(nx)
    T_row[:k], T_row[k:ns] = -kg * c, -cg * c
    T_row[ia], T_row[iw] = kg / n, cg / n
    A[k:ns] += np.outer(B_s[k:, 0], T_row)
    A[ia, iw] = 1.0
    A[iw] = -T_row / (n * jm)
    A[iw, iw] -= n_motors * mp["viscous_friction"] / jm
    A[iw, ii] += n_motors * mp["torque_constant"] / jm
    A[ii, ii] = -current_bandwidth
    B = np.zeros((nx, 2))
    B[ii, 0] = current_bandwidth
    B[:ns, 1] = B_s[:, 1]
    C = np.zeros((4, nx))
    C[0, :ns], C[2, :ns], C[3, :ns] = C_s[0], C_s[2], C_s[1]
    C[1, iw] = 1.0 / n
    states = [f"eta{j}" for j in range(k)] + [f"eta{j}_rate" for j in range(k)] + \
        ["rotor_angle", "rotor_speed", "current"]
    return ct.ss(A, B, C, np.zeros((4, 2)), name=name, states=states,
                 inputs=["current_ref", "wind_torque"],
                 outputs=["axis_angle", "rate_measured", "pointing_angle", "axis_rate"])


def design_servo(structure: AntennaStructure | None = None, rate_crossover_hz: float = 1.0,
                 position_crossover_hz: float = 0.4, integral_ratio: float = 0.3,
                 beta: float = 0.5, n_motors: int = 2, motor=None, gear=None,
                 rate_limit: float = math.radians(1.0),
                 friction_compensation: float = 1.0) -> ServoGains:
    """Gains of the cascade from the rigid-body model (then checked on the flexible one
    by :func:`servo_margins`).

    The rigid axis has inertia J = J_structure + n J_m N^2 and gain
    b = n N Kt / J [rad/s^2 per A].  Rate PI: crossover w_r = 2 pi rate_crossover_hz,
    kp = w_r / b, integral zero at integral_ratio w_r.  Position PI: crossover
    w_p = 2 pi position_crossover_hz (the closed rate loop is ~1 there), kp = w_p,
    zero at integral_ratio w_p.  Friction compensation: ``friction_compensation`` times
    the motor's Tc/Kt (1: the nominal friction; 0: none).
    """
    s = structure or AntennaStructure.from_engine()
    mp = motor_parameters(**(motor or {}))
    gp = gear_parameters(**(gear or {}))
    n = gp["ratio"]
    J = s.axis_inertia + n_motors * mp["rotor_inertia"] * n ** 2
    b = n_motors * n * mp["torque_constant"] / J
    wr, wp = 2 * math.pi * rate_crossover_hz, 2 * math.pi * position_crossover_hz
    kpr = wr / b
    return ServoGains(kp_rate=kpr, ki_rate=kpr * integral_ratio * wr, kp_pos=wp,
                      ki_pos=wp * integral_ratio * wp, beta=beta, rate_limit=rate_limit,
                      current_limit=mp["current_limit"], ratio=n, n_motors=n_motors,
                      friction_current=friction_compensation * mp["coulomb_friction"]
                      / mp["torque_constant"])


def _pi(kp, ki, name, inp, out):
    return ct.tf([kp, ki], [1, 0], name=name, inputs=inp, outputs=out)


def servo_loops(gains: ServoGains, plant: ct.StateSpace, sample_time: float = 1e-3) -> dict:
    """Loop transfer functions (broken at the loop's controller output) of the rate
    loop and of the position loop (rate loop closed), with the hold delay of the
    sampled controller (half a step, second-order Pade) — python-control objects."""
    delay = ct.tf(*ct.pade(sample_time / 2, 2))
    p_rate = plant[1, 0]                               # current_ref -> rate_measured
    c_rate = ct.tf([gains.kp_rate, gains.ki_rate], [1, 0])
    L_rate = ct.minreal(c_rate * delay * p_rate, verbose=False)
    # position loop: rate command -> axis angle with the rate loop closed
    p_ang = plant[0, 0]
    inner = c_rate * delay
    T_ang = ct.minreal(inner * p_ang / (1 + inner * p_rate), verbose=False)
    c_pos = ct.tf([gains.kp_pos, gains.ki_pos], [1, 0])
    L_pos = ct.minreal(c_pos * T_ang, verbose=False)
    return {"rate": L_rate, "position": L_pos}


def servo_margins(gains: ServoGains, plant: ct.StateSpace, sample_time: float = 1e-3) -> dict:
    """Upward gain margin [dB], phase margin [deg] (smallest over the crossovers) and
    highest gain crossover [Hz] of each loop of :func:`servo_loops`, from the frequency
    response (the rule of :func:`controllers.design.loop_margins`)."""
    w = np.logspace(-3, 4, 40000)
    out = {}
    for name, L in servo_loops(gains, plant, sample_time).items():
        resp = np.squeeze(ct.frequency_response(L, w).complex)
        gm, _, pm, wgc = margins_from_response(w, resp)
        out[name] = {"gain_margin_db": float(gm), "phase_margin_deg": float(pm),
                     "crossover_hz": float(max(wgc) / (2 * math.pi)) if wgc else 0.0}
    return out


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

    @classmethod
    def from_gains(cls, gains: ServoGains) -> "AntennaServoController":
        return cls(**asdict(gains))

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


#: FMU model names of the three components of :func:`servo_cosim_system`.
FMU_NAMES = {"ctrl": "AntennaServo", "drive": "AntennaDrive", "structure": "AntennaStructure"}


def servo_cosim_system(fmu_dir=None, monolithic: bool = False, reference=None,
                       drive=None, controller=None, structure=None, wind: Block | None = None):
    """The servo loop as a co-simulation system: ``ref`` (Python block) -> ``ctrl``
    (:class:`AntennaServoController`) -> ``drive`` (two-motor
    :class:`~mbdcore.models.drive.DCMotorBlock`, current command) -> ``structure``
    (:class:`~mbdcore.models.antenna.AntennaStructureBlock`), with the axis angle and rate fed
    back to the drive's gears and the motor speeds to the controller.

    With ``fmu_dir`` the three are FMUs built there (when missing); with
    ``monolithic=True`` drive and structure are one in-process
    :class:`~mbdcore.models.antenna.PointingAxisBlock` named ``structure`` (the one-process
    reference: no communication step between drive and structure).  Parameters:
    dicts for each block (``drive`` applies to the monolithic block too).  ``wind``: a
    block with an output ``wind_torque`` [N m], connected to the structure.
    """
    from pathlib import Path


    drive = {"n_motors": 2, "command": "current", "substeps": 10, **(drive or {})}
    controller, structure = dict(controller or {}), dict(structure or {})
    ref = BlockComponent("ref", PointingReference(**(reference or {})))
    if monolithic:
        comps = [ref, BlockComponent("ctrl", AntennaServoController(**controller)),
                 BlockComponent("structure", PointingAxisBlock(**structure, **drive))]
        conn = {"ref.reference_angle": ["ctrl.reference_angle", "structure.reference_angle"],
                "ref.reference_rate": "ctrl.reference_rate",
                "structure.axis_angle": "ctrl.axis_angle",
                "structure.speed1": "ctrl.speed1", "structure.speed2": "ctrl.speed2",
                "ctrl.current_ref": "structure.current_ref"}
        return _with_wind(System, comps, conn, wind)
    blocks = {"ctrl": (AntennaServoController, controller), "drive": (DCMotorBlock, drive),
              "structure": (AntennaStructureBlock, structure)}
    comps = [ref]
    for name, (cls, params) in blocks.items():
        if fmu_dir is None:
            comps.append(BlockComponent(name, cls(**params)))
        else:

            path = Path(fmu_dir) / f"{FMU_NAMES[name]}.fmu"
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                build_fmu(cls, path, model_name=FMU_NAMES[name])
            comps.append(FMUComponent(name, path, parameters=params))
    conn = {"ref.reference_angle": ["ctrl.reference_angle", "structure.reference_angle"],
            "ref.reference_rate": "ctrl.reference_rate",
            "structure.axis_angle": ["ctrl.axis_angle", "drive.axis_angle"],
            "structure.axis_rate": "drive.axis_rate",
            "drive.speed1": "ctrl.speed1", "drive.speed2": "ctrl.speed2",
            "ctrl.current_ref": "drive.current_ref",
            "drive.axis_torque": "structure.axis_torque"}
    return _with_wind(System, comps, conn, wind)


def _with_wind(system_class, comps, conn, wind):
    if wind is not None:

        comps = comps + [BlockComponent("wind", wind)]
        conn = {**conn, "wind.wind_torque": "structure.wind_torque"}
    return system_class(comps, conn)
