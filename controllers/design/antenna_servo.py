"""Design of the cascaded servo of an antenna pointing axis (after Gawronski 2008;
docs/benchmarks.md §3); the law itself is :mod:`controllers.laws.antenna_servo`.

:func:`design_servo` picks the gains from the rigid-body inertia for chosen crossover
frequencies; :func:`servo_margins` checks them with python-control on the linear
flexible model (:func:`pointing_axis_plant`), including the current loop and the hold
delay of the sampled controller; :func:`servo_cosim_system` connects controller, drive
and structure as blocks or as three FMUs under the co-simulation master.
"""
from __future__ import annotations

import math

import control as ct
import numpy as np

from controllers.design.margins import margins_from_response
from controllers.laws.antenna_servo import (
    AntennaServoController,
    PointingReference,
    ServoGains,
)
from fmu.cosim.components import BlockComponent
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.system import System
from fmu.fmi.build import build_fmu
from mbdcore.blocks import Block
from mbdcore.models.antenna import (
    AntennaStructure,
    AntennaStructureBlock,
    PointingAxisBlock,
)
from mbdcore.models.drive import DCMotorBlock, gear_parameters, motor_parameters

__all__ = ["pointing_axis_plant", "design_servo", "servo_loops", "servo_margins", "FMU_NAMES",
           "servo_cosim_system"]



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
