"""Drive motors: a DC servo motor with gearbox, as engine elements and as a block.

Equations (one motor, SI units)
-------------------------------
::

    L di/dt   = u - R i - Ke w                       armature circuit, u = clip(u, +-v_max)
    J_m dw/dt = Kt i - b w - Tc tanh(w / w_c) - T_g / N
    T_g       = k_g dz(phi/N - theta) + c_g (w/N - theta')     gear-train torque on the load

with phi, w the motor angle [rad] and rate [rad/s], theta the angle of the driven load
relative to the motor's stator, N the gearbox ratio (motor turns per load turn).  The
Coulomb friction Tc sign(w) is regularised by ``tanh(w / w_c)``: smooth, so the
implicit integrators' Newton iterations and the finite-difference Jacobians see no
jump; with w_c = 1e-3 rad/s it equals Tc sign(w) to rounding error above 0.02 rad/s,
and below w_c it acts as a steep viscous term Tc / w_c (no stiction: a motor held by a
torque below Tc creeps at about w_c T / Tc).  ``dz`` is the backlash dead zone of half
width ``backlash`` [rad, load side], smoothed by softplus over ``backlash_smoothing``
(:func:`smooth_dead_zone`); with no backlash dz(x) = x exactly.

Closed forms (free shaft, no gear load; :func:`steady_speed`, :func:`stall_torque`,
:func:`electrical_time_constant`)::

    w_ss  = (Kt u - R Tc) / (R b + Kt Ke)     (w_ss >> w_c)
    T_st  = Kt u / R                           (rotor locked)
    tau_e = L / R                              (current rise with the rotor locked)

Engine elements (:mod:`mbdcore.multibody`)
------------------------------------------
:class:`DCMotorBody` is a body with two coordinates, the rotor angle phi [rad] and the
armature *charge* q_e [C] (i = q_e'): with the inductance as the "mass" of the charge
the armature circuit is a second-order equation like any other (the Lagrangian
electromechanical analogy, L q_e'' + R q_e' + Ke phi' = u), so the motor joins the
constrained equations of motion and every integrator of the engine.  The voltage comes
from a system input through :class:`MotorVoltage`; :class:`GearTrain` is the gearbox
with torsional stiffness, damping and backlash between the rotor and the driven frame.

Block
-----
:class:`DCMotorBlock` is one or two motors (with a counter-torque bias against
backlash) with their gear trains to one load axis, driven by voltage or, through an
internal PI current amplifier, by a current command; the load angle and rate are
inputs and the torque on the load an output, so the block sits between a controller
and a structure in a co-simulation (and becomes an FMU with :func:`fmu.fmi.build.build_fmu`).

Default motor: an industrial permanent-magnet servo motor from a manufacturer's table
(310 V dc, 4600 rpm, 2.2 N m continuous, Kt = 0.49 N m/A, Ke = 51 V/krpm
= 0.487 V s/rad, R = 3.07 Ohm, L = 6.57 mH, J_m = 1.8 kg cm^2; quoted at
https://encyclopedia2.thefreedictionary.com/torque+constant).  The friction values,
the 2x peak current and the gear-train values are assumptions of this project, chosen
as described in docs/antenna.md.
"""
from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import numpy as np

from mbdcore.blocks import Parameter, ParameterError, Signal
from mbdcore.cbuild import TABLE_LAYOUT_HEADER, table_layouts
from mbdcore.codegen import CModel
from mbdcore.dae.ode_block import OdeBlock, stepping_parameters
from mbdcore.integrators.runge_kutta import C_FIXED_STEP_HEADER, CSteppedKernel
from mbdcore.multibody.constraints import initial_angle
from mbdcore.multibody.forces import Force, angle_element
from mbdcore.multibody.system import BodyBase, BodyState
from mbdcore.multibody.terms import CompiledForces
from mbdcore.native import TableLayout, kernel_library, table_layout

__all__ = ["MOTOR_PARAMETERS", "GEAR_PARAMETERS", "motor_parameters", "gear_parameters",
           "steady_speed", "stall_torque", "electrical_time_constant", "friction_torque",
           "smooth_dead_zone", "motor_forces", "gear_torque", "current_loop_gains",
           "DCMotorBody", "MotorVoltage", "GearTrain", "pack_drive", "drive_state_names",
           "drive_rhs", "drive_derivatives", "DCMotorBlock", "DRIVE_C_SOURCE", "drive_library",
           "DRIVE_OUTPUTS", "DRIVE_GAINS", "DRIVE_C_HEADERS", "drive_layout",
           "gear_law_layout", "motor_body_layout",
           "drive_given_fields", "DriveKernel", "gear_law", "DRIVE_KERNEL"]

#: The drive's one implementation, in C (motor, gear train, amplifier, stepping).
DRIVE_C_SOURCE = Path(__file__).resolve().parent / "native" / "drive.c"
#: The headers it includes: the fixed-step loop and the macros of the table layout.
DRIVE_C_HEADERS = (C_FIXED_STEP_HEADER, TABLE_LAYOUT_HEADER)
#: The compiled drive (``native/drive.c``), typed; built once per machine, cached per process.
drive_library = kernel_library("mbdcore.models._drive", DRIVE_C_SOURCE, DRIVE_C_HEADERS)
#: The drive's kernel as a multibody C model names it (its module, source, API macro).
DRIVE_KERNEL = ("mbdcore.models._drive", DRIVE_C_SOURCE, "DRIVE_API")

#: Parameters of one DC servo motor (defaults: the motor of the module docstring).  The
#: upper bounds are physical: beyond the largest servo motors made (peak torques of a few
#: thousand N m, kilovolt supplies), so that a value past them is a slip of units or a
#: typing error, refused by name.  "Any finite double" let coulomb_friction = 1e300 run,
#: and the motor spun up to 4.6e298 rad/s with fmi2OK (issue 22).
MOTOR_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("resistance", 3.07, "Ohm", "armature resistance R [Ohm]", min=0.0,
              exclusive_min=True, max=1e4),
    Parameter("inductance", 6.57e-3, "H", "armature inductance L [H]", min=0.0,
              exclusive_min=True, max=10.0),
    Parameter("torque_constant", 0.49, "N.m/A", "torque constant Kt", min=0.0,
              exclusive_min=True, max=100.0),
    Parameter("emf_constant", 0.487, "V.s/rad", "back-EMF constant Ke", min=0.0,
              exclusive_min=True, max=100.0),
    Parameter("rotor_inertia", 1.8e-4, "kg.m2", "rotor inertia J_m", min=0.0, exclusive_min=True,
              max=100.0),
    Parameter("viscous_friction", 1.0e-4, "N.m.s/rad", "viscous friction b", min=0.0,
              max=1e3),
    Parameter("coulomb_friction", 0.02, "N.m", "Coulomb friction Tc", min=0.0, max=1e3),
    Parameter("friction_speed", 1.0e-3, "rad/s", "tanh regularisation speed w_c of Tc",
              min=0.0, exclusive_min=True, max=1e3),
    Parameter("current_limit", 9.0, "A", "peak current i_max (current command clipped)",
              min=0.0, exclusive_min=True, max=1e4),
    Parameter("voltage_limit", 310.0, "V", "supply voltage v_max (voltage clipped)",
              min=0.0, exclusive_min=True, max=1e5),
)

#: Parameters of the gearbox between a motor and its load (upper bounds physical, as the
#: motor's: a gear train a hundred times stiffer than a steel shaft 1 m thick and 1 m long
#: is a typing error).
GEAR_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("ratio", 3000.0, "", "gearbox ratio N (motor turns per load turn)", min=0.0,
              exclusive_min=True, max=1e6),
    Parameter("gear_stiffness", 1.37e7, "N.m/rad", "torsional stiffness of one gear train, "
              "load side (0: free shaft)", min=0.0, max=1e12),
    Parameter("gear_damping", 5.0e3, "N.m.s/rad", "torsional damping of one gear train, "
              "load side", min=0.0, max=1e10),
    Parameter("backlash", 0.0, "rad", "half width of the backlash dead zone, load side",
              min=0.0, max=math.pi),
    Parameter("backlash_smoothing", 1.0e-6, "rad", "softplus width of the dead-zone corners",
              min=0.0, exclusive_min=True, max=0.1),
)


def _p(params: dict | None, table) -> dict:
    """Validated parameters of ``table`` (defaults filled in)."""
    declared = {p.name: p for p in table}
    params = dict(params or {})
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ParameterError(f"unknown parameter(s) {unknown}; accepted: {list(declared)}")
    return {n: p.validate(params.get(n, p.default)) for n, p in declared.items()}


def motor_parameters(**params) -> dict:
    """Checked motor parameters (defaults of :data:`MOTOR_PARAMETERS` filled in)."""
    return _p(params, MOTOR_PARAMETERS)


def gear_parameters(**params) -> dict:
    """Checked gear parameters (defaults of :data:`GEAR_PARAMETERS` filled in)."""
    return _p(params, GEAR_PARAMETERS)


# -- closed forms and shared laws --------------------------------------------------------
def steady_speed(voltage: float, **motor) -> float:
    """No-load steady speed [rad/s] at constant ``voltage`` [V] (w_ss >> w_c):
    (Kt u - R Tc) / (R b + Kt Ke)."""
    p = motor_parameters(**motor)
    u = float(np.clip(voltage, -p["voltage_limit"], p["voltage_limit"]))
    r, kt, ke, b = p["resistance"], p["torque_constant"], p["emf_constant"], p["viscous_friction"]
    return (kt * u - math.copysign(r * p["coulomb_friction"], u)) / (r * b + kt * ke)


def stall_torque(voltage: float, **motor) -> float:
    """Torque [N m] of the locked rotor at constant ``voltage`` [V]: Kt u / R."""
    p = motor_parameters(**motor)
    u = float(np.clip(voltage, -p["voltage_limit"], p["voltage_limit"]))
    return p["torque_constant"] * u / p["resistance"]


def electrical_time_constant(**motor) -> float:
    """L / R [s]."""
    p = motor_parameters(**motor)
    return p["inductance"] / p["resistance"]


def friction_torque(speed: float, viscous: float, coulomb: float, speed_scale: float) -> float:
    """b w + Tc tanh(w / w_c) [N m] (smooth Coulomb friction, see module docstring;
    computed by ``native/drive.c``)."""
    return drive_library().drive_friction_torque(float(speed), float(viscous), float(coulomb),
                                                 float(speed_scale))


def smooth_dead_zone(x, half_width, smoothing):
    """Backlash dead zone: 0 for |x| < half_width, x -+ half_width outside, its corners
    rounded by softplus over ``smoothing`` (same units as x).  Odd, monotone, smooth;
    equal to x when half_width = 0; within smoothing ln 2 of the sharp dead zone.
    Numbers or arrays (broadcast); computed by ``native/drive.c``."""
    lib = drive_library()
    if np.ndim(x) == 0 and np.ndim(half_width) == 0 and np.ndim(smoothing) == 0:
        return lib.drive_dead_zone(float(x), float(half_width), float(smoothing))
    xs, hs, es = np.broadcast_arrays(np.asarray(x, dtype=float),
                                     np.asarray(half_width, dtype=float),
                                     np.asarray(smoothing, dtype=float))
    flat = [np.ascontiguousarray(a.ravel()) for a in (xs, hs, es)]
    y = np.empty(xs.size)
    lib.drive_dead_zones(*flat, y, y.size)
    return y.reshape(xs.shape)


def motor_forces(speed, current, torque_constant, emf_constant, resistance, viscous,
                 coulomb, speed_scale):
    """The DC motor's own generalised forces: (torque on the rotor Kt i - b w - Tc
    tanh(w/w_c) [N m], armature voltage balance -R i - Ke w [V]); the supply voltage
    and the gear torque come on top.  Written once, in ``native/drive.c``:
    :class:`DCMotorBody` (the engine element, through this function) and the drive's
    right-hand side (the block, in C) both evaluate it."""
    out = np.empty(2)
    drive_library().drive_motor_forces(float(speed), float(current), float(torque_constant),
                                       float(emf_constant), float(resistance), float(viscous),
                                       float(coulomb), float(speed_scale), out)
    return float(out[0]), float(out[1])


def gear_torque(twist, twist_rate, stiffness, damping, backlash, smoothing):
    """Torque of a gear train on its load [N m] from its load-side twist [rad] and twist
    rate [rad/s]: k dz(d) + c d' (:func:`smooth_dead_zone`); written once, in
    ``native/drive.c``, used by :class:`GearTrain` and the drive's right-hand side."""
    return drive_library().drive_gear_torque(float(twist), float(twist_rate), float(stiffness),
                                             float(damping), float(backlash),
                                             float(smoothing))


def current_loop_gains(resistance: float, inductance: float, bandwidth: float):
    """PI gains (kp [V/A], ki [V/(A s)]) of a current loop whose zero cancels the
    armature pole R/L: the closed loop is then first order with ``bandwidth`` [rad/s]
    (back-EMF treated as a disturbance): kp = L w_c, ki = R w_c (``native/drive.c``,
    which the C FMUs use too)."""
    out = np.empty(2)
    drive_library().drive_current_loop_gains(float(resistance), float(inductance),
                                             float(bandwidth), out)
    return float(out[0]), float(out[1])


def gear_law(stiffness, damping, backlash, smoothing):
    """(address, parameters) of :func:`gear_torque` as a force law of the engine's
    compiled measure elements (``drive_gear_law`` of ``native/drive.c``, with the
    dead zone's exact slope), for :class:`GearTrain` and the ring truss's screw drives."""
    return (drive_library().ADDRESSES["drive_gear_law"],
            gear_law_layout().pack(stiffness=stiffness, damping=damping, backlash=backlash,
                                   smoothing=smoothing), (DRIVE_KERNEL,))


# -- engine elements ---------------------------------------------------------------------
class DCMotorBody(BodyBase):
    """A DC motor as a body of a :class:`~mbdcore.multibody.System`.

    Coordinates ``(phi, q_e)``: rotor angle [rad] relative to its stator (assumed not to
    turn: mount the motor on the ground or a slowly moving base) and armature charge
    [C], so that the current is ``i = q_e'`` [A].  Mass matrix diag(J_m, L); applied
    forces ``(Kt i - b w - Tc tanh(w/w_c), -R i - Ke w)``; the voltage is added on the
    charge coordinate by :class:`MotorVoltage`, the gear torque on the angle by
    :class:`GearTrain`.  Joints and forces see the rotor angle through ``"name"``
    (frame references without a marker).

    Parameters
    ----------
    name : str
    angle, speed : initial rotor angle [rad] and rate [rad/s].
    current : initial current [A].
    **motor : any of :data:`MOTOR_PARAMETERS`.
    """

    n_coords = 2

    def __init__(self, name: str, angle: float = 0.0, speed: float = 0.0,
                 current: float = 0.0, **motor):
        super().__init__(name)
        self.params = motor_parameters(**motor)
        p = self.params
        self.angle0, self.speed0, self.current0 = float(angle), float(speed), float(current)
        self._m = np.array([p["rotor_inertia"], p["inductance"]])

    def check_location(self, label, location):
        raise ParameterError(f"{label}: a motor has no markers; refer to its rotor angle "
                             f"as {self.name!r}")

    def default_location(self):
        return None

    def initial_coordinates(self):
        return np.array([self.angle0, 0.0]), np.array([self.speed0, self.current0])

    def mass_matrix(self, qb=None):
        return np.diag(self._m)

    def applied_forces(self, t, qb, vb, gravity):
        p = self.params
        return np.array(motor_forces(
            float(vb[0]), float(vb[1]), p["torque_constant"], p["emf_constant"],
            p["resistance"], p["viscous_friction"], p["coulomb_friction"], p["friction_speed"]))

    def force_jacobians(self, t, qb, vb, gravity):
        p = self.params
        w = vb[0]
        dfric = p["viscous_friction"] + p["coulomb_friction"] / p["friction_speed"] \
            / math.cosh(min(abs(w) / p["friction_speed"], 350.0)) ** 2
        kv = np.array([[-dfric, p["torque_constant"]],
                       [-p["emf_constant"], -p["resistance"]]])
        return np.zeros((2, 2)), kv

    def compiled_forces(self, gravity) -> CompiledForces:
        """The motor's forces and their tangents in C (``drive_motor_body_forces``,
        ``drive_motor_body_tangent`` of ``native/drive.c``, over :func:`motor_forces`)."""
        layout = motor_body_layout()
        params = layout.pack(**{name: self.params[name] for name in layout.names})
        lib = drive_library()
        return CompiledForces(np.zeros(2), lib.ADDRESSES["drive_motor_body_forces"],
                              params.ctypes.data, params,
                              lib.ADDRESSES["drive_motor_body_tangent"],
                              kernels=(DRIVE_KERNEL,))

    def angle_form(self, location):
        """The rotor angle, the first coordinate."""
        return ("linear", [0], [1.0], 0.0)

    def potential_energy(self, qb, gravity):
        return 0.0

    def state(self, qb, vb):
        return _MotorState(self, qb, vb)

    def coordinate_names(self):
        return [f"{self.name}.phi", f"{self.name}.charge"]


class _MotorState(BodyState):
    _J = np.array([1.0, 0.0])

    def __init__(self, body, qb, vb):
        self.body, self.index, self.qb, self.vb = body, body.index, qb, vb

    def point(self, location):
        raise ParameterError(f"motor {self.body.name!r} has no points")

    def angle(self, location=None):
        return float(self.qb[0]), float(self.vb[0]), self._J, 0.0


class MotorVoltage(Force):
    """Armature voltage of a :class:`DCMotorBody` from the system input ``input`` [V],
    clipped to the motor's voltage limit: the generalised force on the charge."""

    kind = "motor_voltage"
    input_unit = "V"

    def __init__(self, motor: str, input: str, name=None):
        super().__init__(name)
        self.motor_name = motor
        self.input_names = (input,)

    def bind(self, system):
        super().bind(system)
        self.motor = system.body(self.motor_name)
        if not isinstance(self.motor, DCMotorBody):
            raise ParameterError(f"{self.name}: {self.motor_name!r} is not a DCMotorBody")

    def apply(self, t, view, f, inputs):
        vmax = self.motor.params["voltage_limit"]
        st = view[self.motor]
        if st.index is not None:
            f[st.index + 1] += min(max(inputs[self.input_names[0]], -vmax), vmax)

    def jacobians(self, t, q, v, inputs):
        n = len(q)
        return np.zeros((n, n)), np.zeros((n, n))

    def state_independent(self) -> bool:
        """The voltage is the input's, clipped: no state."""
        return True

    def input_limits(self) -> dict:
        """The input's clip [V], which a C model applies to it as this element does."""
        vmax = self.motor.params["voltage_limit"]
        return {self.input_names[0]: (-vmax, vmax)}


class GearTrain(Force):
    """Gearbox between a motor rotor and a driven frame, with torsional stiffness,
    damping and (smoothed) backlash.

    Twist (load side) ``d = phi/N - (theta_b - theta_a) - d0``, with phi the rotor angle
    of ``motor``, theta_a and theta_b the orientations of frames ``a`` (the stator,
    usually "ground") and ``b`` (the load; ``"body.marker"`` for a flexible body).
    Torque on the load ``T = k dz(d) + c d'``; -T on a, -T/N on the rotor.  ``d0``
    defaults to the initial twist (an unloaded gear).

    Parameters
    ----------
    motor : str
        Name of a :class:`DCMotorBody`.
    a, b : str
        Frame references of the stator and the load.
    **gear : any of :data:`GEAR_PARAMETERS`.
    """

    kind = "gear_train"

    def __init__(self, motor: str, a: str, b: str, rest_twist: float | None = None,
                 name=None, **gear):
        super().__init__(name)
        self.motor_name, self.a_name, self.b_name = motor, a, b
        self.params = gear_parameters(**gear)
        self.d0 = rest_twist

    def bind(self, system):

        super().bind(system)
        self.motor = system.body(self.motor_name)
        if not isinstance(self.motor, DCMotorBody):
            raise ParameterError(f"{self.name}: {self.motor_name!r} is not a DCMotorBody")
        self.a, self.b = system.frame(self.a_name), system.frame(self.b_name)
        if self.d0 is None:
            phi0 = self.motor.initial_coordinates()[0][0]
            self.d0 = phi0 / self.params["ratio"] - (initial_angle(self.b)
                                                     - initial_angle(self.a))

    def twist(self, view):
        """(d [rad], d' [rad/s]) of the gear (load side)."""
        n = self.params["ratio"]
        phi, w, _, _ = view[self.motor].angle(None)
        ta, wa, _, _ = view[self.a[0]].angle(self.a[1])
        tb, wb, _, _ = view[self.b[0]].angle(self.b[1])
        return phi / n - (tb - ta) - self.d0, w / n - (wb - wa)

    def torque(self, view) -> float:
        """Torque on the load [N m]."""
        p = self.params
        d, dd = self.twist(view)
        return gear_torque(float(d), float(dd), p["gear_stiffness"], p["gear_damping"],
                           p["backlash"], p["backlash_smoothing"])

    def apply(self, t, view, f, inputs):
        tq = float(self.torque(view))
        self._add_torque(f, view, self.b, tq)
        self._add_torque(f, view, self.a, -tq)
        self._add_torque(f, view, (self.motor, None), -tq / self.params["ratio"])

    def compiled_element(self):
        """The twist d = phi/N - (theta_b - theta_a) - d0 under the gear law, on
        orientations linear in q."""
        p = self.params
        return angle_element([((self.motor, None), 1.0 / p["ratio"]), (self.b, -1.0),
                              (self.a, 1.0)], -self.d0,
                             gear_law(p["gear_stiffness"], p["gear_damping"], p["backlash"],
                                      p["backlash_smoothing"]))

    def potential(self, t, view):
        p = self.params
        d, _ = self.twist(view)
        return 0.5 * p["gear_stiffness"] * float(
            smooth_dead_zone(float(d), p["backlash"], p["backlash_smoothing"])) ** 2


# -- block -------------------------------------------------------------------------------
#: The fields of the drive's parameter table that are no block parameter: the current
#: loop's PI gains, computed from the motor and the bandwidth (``drive_pack`` in C).
DRIVE_GAINS = ("kp_i", "ki_i")


@cache
def drive_layout() -> TableLayout:
    """The layout of the drive's parameter table, ``DRIVE_LAYOUT`` of drive.c (its one
    declaration): the motor and gear parameters by their names, the bias current, the
    gains."""
    return table_layout(drive_library, "DRIVE_LAYOUT")


@cache
def gear_law_layout() -> TableLayout:
    """The gear law's parameters as a compiled force law, ``GEAR_LAW_LAYOUT`` of drive.c."""
    return table_layout(drive_library, "GEAR_LAW_LAYOUT")


@cache
def motor_body_layout() -> TableLayout:
    """A motor body's parameters of its compiled forces, ``MOTOR_BODY_LAYOUT`` of drive.c."""
    return table_layout(drive_library, "MOTOR_BODY_LAYOUT")


def drive_given_fields() -> tuple:
    """The fields a C FMU's setup gives ``drive_pack`` in order (the table's fields but
    the gains, which drive.c computes into the last places)."""
    names = drive_layout().names
    if names[-len(DRIVE_GAINS):] != DRIVE_GAINS:
        raise ValueError(f"DRIVE_LAYOUT must end with the gains {DRIVE_GAINS}: drive_pack "
                         f"fills them in; it ends with {names[-len(DRIVE_GAINS):]}")
    return names[:-len(DRIVE_GAINS)]


def pack_drive(motor: dict, gear: dict, bias: float, kp_i: float, ki_i: float) -> np.ndarray:
    """Parameters of :func:`drive_rhs` as one table (``DRIVE_LAYOUT``, by name): the
    motor and gear dicts, the counter-torque bias [A] and the current-loop gains."""
    both = {**motor, **gear, "bias_current": bias}
    return drive_layout().pack(**{name: both[name] for name in drive_given_fields()},
                               kp_i=kp_i, ki_i=ki_i)


def drive_state_names(n_motors: int) -> list[str]:
    """Names of the drive state [phi_k, w_k, i_k, z_k] of :func:`drive_rhs`."""
    return [f"{q}{k}" for k in range(1, n_motors + 1) for q in ("phi", "speed", "current", "z")]


def _flags(n_motors, current_mode, locked):
    return int(n_motors), int(bool(current_mode)), int(bool(locked))


def drive_rhs(x, u_cmd, theta, omega_l, pk, n_motors, current_mode, locked):
    """Derivatives of the drive state x = [phi_k, w_k, i_k, z_k] (k = motors), the
    gear torques on the load [N m] (per motor) and the armature voltages [V];
    ``pk`` from :func:`pack_drive` (``native/drive.c``: ``drive_rhs``).

    Voltage mode: u_cmd is the voltage [V].  Current mode: u_cmd is the current
    command [A] of the PI amplifier (motor k: +-bias added, clipped to the current
    limit), whose voltage is clipped to the supply with conditional integration (the
    integrator z stops while the voltage saturates in the direction of its growth).
    """
    n, cm, lk = _flags(n_motors, current_mode, locked)
    x = np.ascontiguousarray(x, dtype=float)
    if x.size != 4 * n:
        raise ValueError(f"drive state has {x.size} entries, expected {4 * n} for "
                         f"n_motors = {n}")
    dx, tg, volts = np.empty(4 * n), np.empty(n), np.empty(n)
    if drive_library().drive_rhs(np.ascontiguousarray(pk, dtype=float), x, float(u_cmd),
                                 float(theta), float(omega_l), n, cm, lk, dx, tg, volts):
        raise ValueError(f"n_motors = {n} is invalid: accepted 1 or 2")
    return dx, tg, volts


def drive_derivatives(x, u_cmd, theta, omega_l, pk, n_motors, current_mode, locked):
    """The derivatives alone of :func:`drive_rhs`."""
    return drive_rhs(x, u_cmd, theta, omega_l, pk, n_motors, current_mode, locked)[0]


#: The drive block's outputs as ``DRIVE_OUTPUT_LAYOUT`` of ``native/drive.c``
#: declares them (the order C writes them in), read from the C source as the build
#: reads it.
DRIVE_OUTPUTS = tuple(f.name for f in
                      table_layouts(DRIVE_C_SOURCE.read_text())["DRIVE_OUTPUT_LAYOUT"])


class DriveKernel(CSteppedKernel):
    """The compiled drive (``native/drive.c``) with its packed parameters and switches:
    ``kernel(x, u, theta, omega) -> x'`` (inputs held: the command, the load angle [rad]
    and rate [rad/s]) with its own stepping loop for RK4, Gill and Treanor (``advance``,
    used by :meth:`~mbdcore.integrators.Integrator.step_autonomous`: one call per
    communication step), and the block's outputs (``outputs``)."""

    def __init__(self, packed, n_motors: int, current_mode: bool, locked: bool):
        self.lib = drive_library()
        self.packed = np.ascontiguousarray(packed, dtype=float)
        drive_layout().offsets(self.packed)     # TableError (a ValueError) if mis-sized
        self.flags = _flags(n_motors, current_mode, locked)
        if not 1 <= self.flags[0] <= 2:
            raise ValueError(f"n_motors = {n_motors} is invalid: accepted 1 or 2")
        self.size = 4 * self.flags[0]
        self._tg, self._volts = np.empty(2), np.empty(2)

    def __call__(self, x, u, theta, omega):
        x = np.ascontiguousarray(x, dtype=float)
        dx = np.empty(self.size)
        self.lib.drive_rhs(self.packed, x, float(u), float(theta), float(omega), *self.flags,
                           dx, self._tg, self._volts)
        return dx

    def _advance(self, x, register, args, h, n, method, first):
        u, theta, omega = args
        return self.lib.drive_advance(self.packed, x, register, float(u), float(theta),
                                      float(omega), *self.flags, h, n, method, first)

    n_inputs = 3      # the command, the load angle [rad] and rate [rad/s]

    def _run(self, inputs, x, register, t0, h, substeps, n_steps, method, record_every,
             record, done):
        return self.lib.drive_run(self.packed, inputs, x, register, *self.flags, t0, h,
                                  substeps, n_steps, method, record_every, record, done)

    def outputs(self, x, u, theta, omega) -> dict:
        """The block's outputs (:data:`DRIVE_OUTPUTS`) at state x and the inputs."""
        out = np.empty(len(DRIVE_OUTPUTS))
        self.lib.drive_outputs(self.packed, np.ascontiguousarray(x, dtype=float), float(u),
                               float(theta), float(omega), *self.flags, out)
        return dict(zip(DRIVE_OUTPUTS, out.tolist()))


class DCMotorBlock(OdeBlock):
    """One or two DC motors with gearboxes driving one load axis.

    Inputs: ``voltage`` [V] (``command="voltage"``) or ``current_ref`` [A]
    (``command="current"``: a PI current amplifier per motor, gains from
    :func:`current_loop_gains` at ``current_bandwidth``; with two motors, motor 1 gets
    ``current_ref + bias_current`` and motor 2 ``current_ref - bias_current``, the
    counter-torque that keeps both gear trains loaded on opposite flanks), and the load
    ``axis_angle`` [rad] and ``axis_rate`` [rad/s] (zero: a clamped load).
    Outputs: per motor the current [A], speed [rad/s], electromagnetic torque Kt i
    [N m] and the gear-train torque on the load; ``axis_torque`` [N m] is their sum.
    ``gear_stiffness = 0`` gives free shafts, ``locked_rotor = 1`` clamps the rotors
    (stall test).  Integrated by ``substeps`` steps of ``method`` per communication
    step (:class:`~mbdcore.dae.OdeBlock`).
    """

    INPUTS = (
        # physical bounds, as the motor parameters': a command beyond the largest supply
        # or amplifier, an axis of 1600 turns or 10^5 rpm is a fault upstream
        Signal("voltage", "V", "armature voltage (command='voltage')", min=-1e5, max=1e5),
        Signal("current_ref", "A", "current command (command='current')", min=-1e4, max=1e4),
        Signal("axis_angle", "rad", "angle of the driven axis", min=-1e4, max=1e4),
        Signal("axis_rate", "rad/s", "rate of the driven axis", min=-1e4, max=1e4),
    )
    OUTPUTS = tuple(
        Signal(f"{q}{k}", u, f"motor {k} {d}")
        for k in (1, 2)
        for q, u, d in (("current", "A", "current"), ("speed", "rad/s", "rotor speed"),
                        ("torque", "N.m", "electromagnetic torque Kt i"),
                        ("angle", "rad", "rotor angle"),
                        ("gear_torque", "N.m", "gear-train torque on the axis"))
    ) + (Signal("axis_torque", "N.m", "total drive torque on the axis"),)
    FEEDTHROUGH = {f"gear_torque{k}": ("axis_angle", "axis_rate") for k in (1, 2)}
    FEEDTHROUGH["axis_torque"] = ("axis_angle", "axis_rate")
    PARAMETERS = MOTOR_PARAMETERS + GEAR_PARAMETERS + (
        Parameter("n_motors", 1, "", "motors on the axis (2: counter-torque pair)", min=1, max=2),
        Parameter("command", "voltage", "", "input used", choices=("voltage", "current")),
        Parameter("bias_current", 0.0, "A", "counter-torque bias (two motors)", min=0.0,
                  max=1e4),
        Parameter("current_bandwidth", 2000.0, "rad/s", "current-loop bandwidth", min=0.0,
                  exclusive_min=True, max=1e7),
        Parameter("locked_rotor", 0, "", "1: rotors clamped (stall test)", min=0, max=1),
    ) + stepping_parameters(20)
    DEFAULT_STOP_TIME = 1.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self.mp = {q.name: p[q.name] for q in MOTOR_PARAMETERS}
        self.gp = {q.name: p[q.name] for q in GEAR_PARAMETERS}
        kp_i, ki_i = current_loop_gains(p["resistance"], p["inductance"],
                                        p["current_bandwidth"])
        self.packed = pack_drive(self.mp, self.gp, p["bias_current"], kp_i, ki_i)
        self.kernel = DriveKernel(self.packed, p["n_motors"], p["command"] == "current",
                                  bool(p["locked_rotor"]))
        self.reset()

    def initial_state(self) -> np.ndarray:
        return np.zeros(4 * self.params["n_motors"])

    def state_names(self) -> list[str]:
        """Per motor k: rotor angle ``phi<k>`` [rad], speed ``speed<k>`` [rad/s],
        armature current ``current<k>`` [A], current-loop integrator ``z<k>`` [V s]."""
        return drive_state_names(self.params["n_motors"])

    def _args(self):
        u = self.inputs["current_ref" if self.params["command"] == "current" else "voltage"]
        return u, self.inputs["axis_angle"], self.inputs["axis_rate"]

    def derivatives(self):
        return self.kernel, self._args()

    def outputs(self) -> dict:
        # the gear torques follow the axis inputs at once (feedthrough)
        return self.kernel.outputs(self.x, *self._args())

    def c_model(self) -> CModel:
        """The drive in C (``native/drive.c``, the code this block runs).  ``n_motors``
        (the state's size) is fixed at export; every other parameter stays settable (the
        packed parameters and the current-loop gains are computed at initialisation)."""
        packed = ", ".join(f"PAR_{name}" for name in drive_given_fields())
        outputs = "\n".join(f"    OUT_{name} = y[{i}];" for i, name in enumerate(DRIVE_OUTPUTS))
        glue = f"""
/* the choices of 'command' in the block's order: voltage, current */
#define DRIVE_CURRENT_MODE (PAR_command == 1)
#define DRIVE_COMMAND (DRIVE_CURRENT_MODE ? IN_current_ref : IN_voltage)

int model_setup(ModelData *d, char *msg, size_t n) {{
    const double given[] = {{{packed}}};
    (void)msg; (void)n;
    drive_pack(given, PAR_current_bandwidth, d->w);
    return 0;
}}

void model_initial(ModelData *d) {{
    int i;
    for (i = 0; i < N_X; i++) X(i) = 0.0;
}}

void model_derivatives(const ModelData *d, const double *x, double *dx) {{
    drive_rhs(d->w, x, DRIVE_COMMAND, IN_axis_angle, IN_axis_rate, PAR_n_motors,
              DRIVE_CURRENT_MODE, PAR_locked_rotor, dx, NULL, NULL);
}}

void model_update(ModelData *d, double h) {{ (void)d; (void)h; }}

void model_outputs(ModelData *d) {{
    double y[{len(DRIVE_OUTPUTS)}] = {{0.0}};
    drive_outputs(d->w, d->x, DRIVE_COMMAND, IN_axis_angle, IN_axis_rate, PAR_n_motors,
                  DRIVE_CURRENT_MODE, PAR_locked_rotor, y);
{outputs}
}}

/* no range to check: the drive's equations hold for every state */
int model_validity(const ModelData *d, char *msg, size_t n) {{
    (void)d; (void)msg; (void)n;
    return 0;
}}
"""
        return CModel(glue, c_sources=(DRIVE_C_SOURCE,), api=("DRIVE_API",),
                      n_states=4 * self.params["n_motors"], n_work=len(self.packed),
                      state_names=tuple(self.state_names()), fixed_parameters=("n_motors",))
