"""Antenna models (docs/benchmarks.md §3, §4): a pointing axis and a deployable boom.

Pointing axis (after W. Gawronski's models of the NASA DSN antenna servos)
---------------------------------------------------------------------------
One rotation axis (azimuth or elevation, planar) of a steerable antenna:

* the rigid part on the axis: a hub of inertia ``hub_inertia`` pinned to the ground;
* flexible parts welded to the hub: the reflector (a :class:`~mbdcore.multibody.flexible.ModalBeam`
  along +x whose tip mass and inertia stand for the dish) and the feed support (a
  modal beam along -x whose tip mass is the feed / subreflector);
* the drive: ``n_motors`` DC motors (:mod:`mbdcore.models.drive`) through gearboxes of ratio
  ``ratio`` with torsional gear-train stiffness, optionally in counter-torque;
* a wind-gust torque on the dish (at the reflector tip).

Outputs: axis angle and rate, motor speeds, the pointing angle (the orientation of the
dish, i.e. of the reflector at its tip) and the pointing error, reference minus
pointing angle = axis error + structural deflection seen at the reflector.

Parameters (:data:`POINTING_AXIS`) are chosen, not copied: a 5-m class antenna whose
lowest locked-rotor mode is 2.0 Hz and whose second is 7.0 Hz with 1 % modal damping, as
docs/benchmarks.md §3 asks, after Gawronski (Modeling and Control of Antennas and
Telescopes, Springer 2008: the DSN 34-m antenna's lowest locked-rotor mode is near
2 Hz); the beam stiffnesses and the gear stiffness were solved for those two
frequencies (:func:`tune_pointing_axis`: reflector EI 6.11e7 N m^2, gear stiffness
1.37e7 N m/rad per motor; with this inertia split a second mode below about 6.5 Hz is
out of reach, so 7 Hz was taken inside the 4..8 Hz band); the motor is the industrial
servo motor of :mod:`mbdcore.models.drive`, two per axis with gear ratio 3000
(docs/benchmarks.md §3: 10^3..10^4), which gives about 9 deg/s and 26 kN m at the axis,
above the 1 deg/s and 0.5 deg/s^2 operating limits.

Speed: the structure rotates slowly (1 deg/s: centrifugal terms 3e-4 rad^2/s^2 against
(2 pi 2 Hz)^2) and carries no gravity in the plane, so its equations linearised about
the undeformed state are exact for any axis angle (rotation is a rigid mode) up to those
terms.  :class:`AntennaStructure` takes the linear model from the engine
(:func:`mbdcore.multibody.modal.linearize` of :func:`pointing_axis_system`), and the blocks use its
modal form (ZOH-exact steps for the structure alone, RK4 with the nonlinear drive).

Deployable boom: see :func:`deployable_boom` and :func:`simulate_deployment`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import scipy.linalg as sl

from mbdcore.blocks import (
    Parameter,
    ParameterError,
    Signal,
    StateVectorBlock,
    with_overrides,
)
from mbdcore.codegen import CModel, table_check
from mbdcore.dae.index1 import assemble
from mbdcore.dae.ode_block import OdeBlock, stepping_parameters
from mbdcore.dae.simulate import simulate
from mbdcore.integrators.runge_kutta import CSteppedKernel
from mbdcore.models.drive import (
    DRIVE_C_HEADERS,
    DRIVE_C_SOURCE,
    GEAR_PARAMETERS,
    MOTOR_PARAMETERS,
    DCMotorBody,
    GearTrain,
    MotorVoltage,
    current_loop_gains,
    drive_given_fields,
    drive_state_names,
    gear_parameters,
    motor_parameters,
    pack_drive,
)
from mbdcore.multibody.constraints import (
    AngleDriver,
    Revolute,
    SynchronousGear,
    Weld,
    constant_rate,
)
from mbdcore.multibody.flexible import ModalBeam
from mbdcore.multibody.forces import Force, JointTorque, angle_element
from mbdcore.multibody.modal import linearize
from mbdcore.multibody.system import StateView, System
from mbdcore.cbuild import table_layouts
from mbdcore.multibody.terms import spring_law
from mbdcore.native import TableLayout, kernel_library, table_layout
from mbdcore.timeseries import TimeSeries
from mbdcore.vibration import residual_vibration

__all__ = ["POINTING_AXIS", "pointing_axis_system", "AntennaStructure", "tune_pointing_axis",
           "STRUCTURE_PARAMETERS", "AntennaStructureBlock", "PointingAxisBlock",
           "DEPLOYABLE_BOOM", "HingeLatch", "hinge_frames", "deployable_boom", "hinge_angles",
           "SepticProfile", "BangBangProfile", "DeploymentResult", "simulate_deployment",
           "AXIS_C_SOURCE", "AXIS_C_SOURCES", "AXIS_OUTPUTS", "axis_library", "axis_table",
           "axis_layout",
           "AxisKernel"]

#: Structure of the pointing axis (SI units; see the module docstring for the choice).
POINTING_AXIS = dict(
    hub_inertia=2.0e4,          # kg m^2, rigid part on the axis (alidade / elevation wheel)
    hub_mass=5.0e3,             # kg
    reflector_length=5.0,       # m
    reflector_rho_a=200.0,      # kg/m
    reflector_ei=6.11e7,        # N m^2 (solved with the gear stiffness: 2.0 and 7.0 Hz)
    dish_mass=3.0e3,            # kg, at the reflector tip
    dish_inertia=5.0e3,         # kg m^2
    feed_length=4.0,            # m
    feed_rho_a=50.0,            # kg/m
    feed_ei=4.0e7,              # N m^2
    feed_mass=400.0,            # kg, feed / subreflector at the feed-support tip
    feed_inertia=50.0,          # kg m^2
    n_modes=3,                  # assumed modes per beam (clamped-mass shapes)
    damping_ratio=0.01,         # modal damping of the flexible modes
)


def _structure_params(**overrides) -> dict:
    p = with_overrides(POINTING_AXIS, overrides, "pointing-axis")
    for k, v in p.items():
        if k == "n_modes":
            if not (isinstance(v, int) and 1 <= v <= 10):
                raise ParameterError(f"n_modes = {v!r} is invalid: accepted 1..10")
        elif not (math.isfinite(float(v)) and float(v) >= 0.0):
            raise ParameterError(f"{k} = {v!r} is invalid: accepted finite numbers >= 0")
    return p


def pointing_axis_system(n_motors: int = 2, locked_rotor: bool = False, structure=None,
                         motor=None, gear=None) -> System:
    """The pointing axis built with the engine.

    Bodies: ``hub`` (pinned to the ground at ``ground.axis``), ``reflector`` and ``feed``
    (modal beams welded to the hub), and, with ``n_motors`` > 0, ``motor1``..
    (:class:`~mbdcore.models.drive.DCMotorBody`) with gear trains ``gear1``.. to the hub and
    voltage inputs ``u1``..  [V].  ``locked_rotor`` clamps the rotors (AngleDrivers
    ``lock1``..).  Inputs also ``wind`` [N m] (torque on the dish, at the reflector
    tip) and ``axis_torque`` [N m] (an external torque on the hub, ground -> hub).
    Structural damping: stiffness-proportional on each beam, ``damping_ratio`` at the
    beam's own first clamped-mass frequency (the blocks apply exact modal damping).

    Parameters
    ----------
    structure, motor, gear : dict, optional
        Overrides of :data:`POINTING_AXIS`, :data:`~mbdcore.models.drive.MOTOR_PARAMETERS`,
        :data:`~mbdcore.models.drive.GEAR_PARAMETERS`.
    """
    p = _structure_params(**(structure or {}))
    mp = motor_parameters(**(motor or {}))
    gp = gear_parameters(**(gear or {}))
    s = System()
    s.ground.add_marker("axis", (0.0, 0.0))
    s.add_body("hub", mass=p["hub_mass"], inertia=p["hub_inertia"], markers={"axis": (0.0, 0.0)})
    for name, angle in (("reflector", 0.0), ("feed", math.pi)):
        beam = ModalBeam(name, p[f"{name}_length"], p[f"{name}_rho_a"], p[f"{name}_ei"],
                         n_modes=p["n_modes"], mode_shapes="clamped-mass",
                         tip_mass=p["dish_mass" if name == "reflector" else "feed_mass"],
                         tip_inertia=p["dish_inertia" if name == "reflector" else "feed_inertia"],
                         angle=angle)
        omega1 = math.sqrt(beam.K[0, 0] / _modal_mass(beam))
        beam.damping = 2.0 * p["damping_ratio"] / omega1
        s.add(beam)
    s.add_joint(Revolute("ground.axis", "hub.axis", name="bearing"))
    s.add_joint(Weld("hub.axis", "reflector.root", name="reflector_clamp"))
    s.add_joint(Weld("hub.axis", "feed.root", name="feed_clamp"))
    s.add_force(JointTorque("ground", "reflector.tip", "wind", name="wind_gust"))
    s.add_force(JointTorque("ground", "hub", "axis_torque", name="external"))
    for k in range(1, n_motors + 1):
        s.add(DCMotorBody(f"motor{k}", **mp))
        s.add_force(MotorVoltage(f"motor{k}", f"u{k}", name=f"amplifier{k}"))
        s.add_force(GearTrain(f"motor{k}", "ground", "hub", name=f"gear{k}", **gp))
        if locked_rotor:
            s.add_joint(AngleDriver("ground", f"motor{k}", constant_rate(0.0, 0.0),
                                    name=f"lock{k}"))
    return s


def _modal_mass(beam: ModalBeam) -> float:
    """Generalised mass of the first assumed mode of a beam clamped at rest."""
    M = beam.mass_matrix(beam.initial_coordinates()[0])
    return float(M[3, 3])


@dataclass
class AntennaStructure:
    """Linear model of the pointing-axis structure (no drive), in modal form.

    ``q = q0 + Phi eta``: eta'' + 2 zeta w eta' + w^2 eta = Phi^T (b_axis T + b_wind W),
    Phi mass-normalised over the engine's independent coordinates; outputs are linear
    in eta: axis (hub) angle ``c_axis``, pointing angle (dish orientation) ``c_point``,
    dish tip deflection ``c_tip`` [m].

    Attributes
    ----------
    omega : (k,) [rad/s]        natural frequencies, the rigid axis rotation first (0)
    zeta : (k,)                 damping ratios (0 for the rigid mode)
    b_axis, b_wind : (k,)       modal input vectors of the axis torque and the wind torque
    c_axis, c_point, c_tip : (k,) output rows
    mass, stiffness : (k, k)    the reduced M and K before the modal transformation
    """

    omega: np.ndarray
    zeta: np.ndarray
    b_axis: np.ndarray
    b_wind: np.ndarray
    c_axis: np.ndarray
    c_point: np.ndarray
    c_tip: np.ndarray
    mass: np.ndarray
    stiffness: np.ndarray

    @classmethod
    def from_engine(cls, **structure) -> "AntennaStructure":
        """Linearise :func:`pointing_axis_system` (no motors) with the engine."""

        p = _structure_params(**structure)
        s = pointing_axis_system(n_motors=0, structure=p)
        q0, _ = assemble(s)
        M, _, K, N = linearize(s, q0)
        Mr, Kr = N.T @ M @ N, N.T @ K @ N
        Mr, Kr = 0.5 * (Mr + Mr.T), 0.5 * (Kr + Kr.T)
        w2, phi = sl.eigh(Kr, Mr)
        w2[0] = 0.0                                     # the rigid rotation about the axis
        omega = np.sqrt(np.maximum(w2, 0.0))
        # input vectors: generalised forces of unit inputs (the forces are linear in them)
        zero = np.zeros(s.n)
        base = s.forces(0.0, q0, zero)

        def unit(name):
            s.set_input(name, 1.0)
            f = s.forces(0.0, q0, zero) - base
            s.set_input(name, 0.0)
            return phi.T @ (N.T @ f)

        def angle_row(frame):
            body, loc = s.frame(frame)
            sl_ = slice(body.index, body.index + body.n_coords)
            J = body.state(q0[sl_], zero[sl_]).angle(loc)[2]
            row = np.zeros(s.n)
            row[sl_] = J
            return row @ N @ phi

        refl = s.body("reflector")
        tip = np.zeros(s.n)
        tip[refl.index + 3:refl.index + refl.n_coords] = 1.0    # sum of modal amplitudes
        zeta = np.full(omega.size, p["damping_ratio"])
        zeta[0] = 0.0
        return cls(omega, zeta, unit("axis_torque"), unit("wind"), angle_row("hub"),
                   angle_row("reflector.tip"), tip @ N @ phi, Mr, Kr)

    @property
    def n_modes(self) -> int:
        return self.omega.size

    @property
    def axis_inertia(self) -> float:
        """Inertia of the whole structure about the axis [kg m^2] (rigid mode)."""
        return float(1.0 / self.b_axis[0] ** 2)

    def state_names(self) -> list[str]:
        """Names of x = (eta, eta'): ``eta<j>`` (modal amplitude, scaled so that the axis
        angle is a sum of them [rad]) and ``eta<j>_rate`` [rad/s]."""
        modes = [f"eta{j + 1}" for j in range(self.n_modes)]
        return modes + [m + "_rate" for m in modes]

    def matrices(self):
        """(A, B, C) of x = (eta, eta'), u = (axis torque, wind), y = (axis angle,
        axis rate, pointing angle, dish tip deflection)."""
        k = self.n_modes
        A = np.zeros((2 * k, 2 * k))
        A[:k, k:] = np.eye(k)
        A[k:, :k] = -np.diag(self.omega ** 2)
        A[k:, k:] = -np.diag(2 * self.zeta * self.omega)
        B = np.zeros((2 * k, 2))
        B[k:, 0], B[k:, 1] = self.b_axis, self.b_wind
        C = np.zeros((4, 2 * k))
        C[0, :k], C[1, k:], C[2, :k], C[3, :k] = self.c_axis, self.c_axis, self.c_point, \
            self.c_tip
        return A, B, C

    def coupled_frequencies(self, n_motors: int, gear_stiffness: float, ratio: float,
                            rotor_inertia: float, locked_rotor: bool) -> np.ndarray:
        """Undamped natural frequencies [Hz] with the gear trains: motors locked (each
        gear a spring from hub to ground) or free (each rotor an inertia J_m N^2 on
        its gear spring), from the modal model."""
        k = self.n_modes
        Kh = n_motors * gear_stiffness
        c = self.c_axis
        if locked_rotor:
            Km = np.diag(self.omega ** 2) + Kh * np.outer(c, c)
            w2 = sl.eigvalsh(Km, np.eye(k))
        else:
            # coordinates (eta, motor angles / N): J_m N^2 on the load side
            m = n_motors
            M = np.eye(k + m)
            M[k:, k:] *= rotor_inertia * ratio ** 2
            K = np.zeros((k + m, k + m))
            K[:k, :k] = np.diag(self.omega ** 2) + Kh * np.outer(c, c)
            for j in range(m):
                K[k + j, k + j] = gear_stiffness
                K[:k, k + j] = K[k + j, :k] = -gear_stiffness * c
            w2 = sl.eigvalsh(K, M)
        return np.sqrt(np.maximum(w2, 0.0)) / (2 * math.pi)


def tune_pointing_axis(f1: float = 2.0, f2: float = 7.0, n_motors: int = 2, **structure):
    """(reflector_ei [N m^2], gear_stiffness [N m/rad]) that put the two lowest
    locked-rotor modes at ``f1`` and ``f2`` [Hz], the rest of the structure as given
    (how the defaults of :data:`POINTING_AXIS` were chosen)."""
    from scipy.optimize import least_squares

    def residual(x):
        ei, kg = np.exp(x)
        s = AntennaStructure.from_engine(**{**structure, "reflector_ei": ei})
        f = s.coupled_frequencies(n_motors, kg, 1.0, 1.0, True)
        return [math.log(f[0] / f1), math.log(f[1] / f2)]

    sol = least_squares(residual, [math.log(5e7), math.log(1.5e7)], xtol=1e-12, ftol=1e-12)
    return tuple(float(v) for v in np.exp(sol.x))


#: The structure parameters as block parameters (defaults: :data:`POINTING_AXIS`).
STRUCTURE_PARAMETERS: tuple[Parameter, ...] = tuple(
    Parameter(k, v, "", f"pointing-axis structure: {k} (see POINTING_AXIS)", min=1, max=10)
    if k == "n_modes" else Parameter(k, float(v), "", f"pointing-axis structure: {k} "
                                     "(see POINTING_AXIS)", min=0.0)
    for k, v in POINTING_AXIS.items())

_STRUCTURE_OUTPUTS = (
    Signal("axis_angle", "rad", "axis (hub) angle, the encoder"),
    Signal("axis_rate", "rad/s", "axis (hub) rate"),
    Signal("pointing_angle", "rad", "dish orientation (reflector at its tip)"),
    Signal("pointing_error", "rad", "reference - pointing angle = axis error + structural "
           "deflection seen at the reflector"),
    Signal("dish_deflection", "m", "transverse deflection of the reflector tip"),
)


def _structure_of(params) -> AntennaStructure:
    return AntennaStructure.from_engine(**{k: params[k] for k in POINTING_AXIS})


class AntennaStructureBlock(StateVectorBlock):
    """The pointing-axis structure alone: drive torque and wind in, angles out.

    Linear modal model of :class:`AntennaStructure` stepped exactly for inputs held
    over the step (zero-order-hold discretisation, cached per step size).
    """

    INPUTS = (
        Signal("axis_torque", "N.m", "drive torque on the axis (from the gear trains)"),
        Signal("wind_torque", "N.m", "wind-gust torque on the dish"),
        Signal("reference_angle", "rad", "commanded pointing angle (for pointing_error)"),
    )
    OUTPUTS = _STRUCTURE_OUTPUTS
    FEEDTHROUGH = {"pointing_error": ("reference_angle",)}
    PARAMETERS = STRUCTURE_PARAMETERS
    DEFAULT_STOP_TIME = 5.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        self.structure = _structure_of(self.params)
        self.A, self.B, self.C = self.structure.matrices()
        self._zoh: dict = {}
        self.reset()

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self.x = np.zeros(self.A.shape[0])

    def state_names(self) -> list[str]:
        """Modal amplitudes ``eta<j>`` and rates ``eta<j>_rate`` of the structure."""
        return self.structure.state_names()

    def _discrete(self, h):
        key = round(h, 15)
        if key not in self._zoh:
            n, m = self.B.shape
            E = np.zeros((n + m, n + m))
            E[:n, :n], E[:n, n:] = self.A * h, self.B * h
            F = sl.expm(E)
            self._zoh[key] = (F[:n, :n], F[:n, n:])
        return self._zoh[key]

    def outputs(self) -> dict:
        y = self.C @ self.x
        return {"axis_angle": y[0], "axis_rate": y[1], "pointing_angle": y[2],
                "pointing_error": self.inputs["reference_angle"] - y[2],
                "dish_deflection": y[3]}

    def _advance(self, x, t, h):
        Ad, Bd = self._discrete(h)
        return Ad @ x + Bd @ np.array([self.inputs["axis_torque"], self.inputs["wind_torque"]])


#: The pointing axis's one implementation, in C (compiled after ``drive.c``).
AXIS_C_SOURCE = Path(__file__).resolve().parent / "native" / "antenna_axis.c"
#: What the axis compiles from, in order.
AXIS_C_SOURCES = (DRIVE_C_SOURCE, AXIS_C_SOURCE)
#: The compiled axis (``native/antenna_axis.c`` over ``drive.c``), typed; cached per process.
axis_library = kernel_library("mbdcore.models._antenna_axis", AXIS_C_SOURCES, DRIVE_C_HEADERS)


@cache
def axis_layout() -> TableLayout:
    """The layout of the axis's structure table, ``AXIS_LAYOUT`` of antenna_axis.c."""
    return table_layout(axis_library, "AXIS_LAYOUT")


#: The pointing axis's outputs as ``AXIS_OUTPUT_LAYOUT`` of ``native/antenna_axis.c``
#: declares them (the order C writes them in), read from the C source as the build
#: reads it.
AXIS_OUTPUTS = tuple(f.name for f in
                     table_layouts(AXIS_C_SOURCE.read_text())["AXIS_OUTPUT_LAYOUT"])


def axis_table(A, B, C) -> np.ndarray:
    """The structure of the axis as ``antenna_axis.c`` reads it: (ns, A, B, C) flattened,
    from :meth:`AntennaStructure.matrices`."""
    A, B, C = (np.asarray(m, dtype=float) for m in (A, B, C))
    ns = A.shape[0]
    if A.shape != (ns, ns) or B.shape != (ns, 2) or C.shape != (4, ns):
        raise ValueError(f"axis matrices of shapes A {A.shape}, B {B.shape}, C {C.shape}: "
                         "expected (ns, ns), (ns, 2), (4, ns)")
    return axis_layout().pack(ns=ns, A=A, B=B, C=C)


class AxisKernel(CSteppedKernel):
    """The compiled pointing axis: ``kernel(x, u, wind) -> x'`` (the drive command and
    the wind torque [N m] held) with its own stepping loop for RK4, Gill and Treanor
    (``advance``: one call per communication step), and the block's outputs."""

    def __init__(self, table, packed, n_motors: int, current_mode: bool):
        self.lib = axis_library()
        self.table = np.ascontiguousarray(table, dtype=float)
        if self.lib.axis_table_length(self.table) != self.table.size:
            raise ValueError("axis table does not match the layout of antenna_axis.c")
        self.packed = np.ascontiguousarray(packed, dtype=float)
        self.n_motors, self.current_mode = int(n_motors), int(bool(current_mode))
        if not 1 <= self.n_motors <= 2:
            raise ValueError(f"n_motors = {n_motors} is invalid: accepted 1 or 2")
        self.size = axis_layout().unpack(self.table)["ns"] + 4 * self.n_motors
        self._tg = np.empty(2)

    def __call__(self, x, u, wind):
        dx = np.empty(self.size)
        self.lib.axis_rhs(self.table, self.packed, np.ascontiguousarray(x, dtype=float),
                          float(u), float(wind), self.n_motors, self.current_mode, dx, self._tg)
        return dx

    def _advance(self, x, register, args, h, n, method, first):
        return self.lib.axis_advance(self.table, self.packed, x, register, float(args[0]),
                                     float(args[1]), self.n_motors, self.current_mode, h, n,
                                     method, first)

    n_inputs = 2      # the drive command, the wind torque [N m]

    def _run(self, inputs, x, register, t0, h, substeps, n_steps, method, record_every,
             record, done):
        return self.lib.axis_run(self.table, self.packed, inputs, x, register, self.n_motors,
                                 self.current_mode, t0, h, substeps, n_steps, method,
                                 record_every, record, done)

    def outputs(self, x, u, wind, reference) -> dict:
        """The block's outputs (:data:`AXIS_OUTPUTS`) at state x and the inputs."""
        out = np.empty(len(AXIS_OUTPUTS))
        self.lib.axis_outputs(self.table, self.packed, np.ascontiguousarray(x, dtype=float),
                              float(u), float(wind), float(reference), self.n_motors,
                              self.current_mode, out)
        return dict(zip(AXIS_OUTPUTS, out.tolist()))


class PointingAxisBlock(OdeBlock):
    """The whole pointing axis in one process: drive motors, gear trains and structure.

    The same equations as :class:`~mbdcore.models.drive.DCMotorBlock` coupled to
    :class:`AntennaStructureBlock` continuously (no communication step between them),
    integrated by ``substeps`` steps of ``method`` per communication step
    (:class:`~mbdcore.dae.OdeBlock`): the one-process reference of the co-simulation
    controller -> drive -> structure.
    """

    INPUTS = (
        Signal("voltage", "V", "armature voltage (command='voltage')"),
        Signal("current_ref", "A", "current command (command='current')"),
        Signal("wind_torque", "N.m", "wind-gust torque on the dish"),
        Signal("reference_angle", "rad", "commanded pointing angle (for pointing_error)"),
    )
    OUTPUTS = _STRUCTURE_OUTPUTS + tuple(
        Signal(f"{q}{k}", u, f"motor {k} {d}")
        for k in (1, 2)
        for q, u, d in (("current", "A", "current"), ("speed", "rad/s", "rotor speed"))
    ) + (Signal("axis_torque", "N.m", "total drive torque on the axis"),)
    FEEDTHROUGH = {"pointing_error": ("reference_angle",)}
    PARAMETERS = STRUCTURE_PARAMETERS + MOTOR_PARAMETERS + GEAR_PARAMETERS + (
        Parameter("n_motors", 2, "", "motors on the axis", min=1, max=2),
        Parameter("command", "current", "", "input used", choices=("voltage", "current")),
        Parameter("bias_current", 0.0, "A", "counter-torque bias (two motors)", min=0.0),
        Parameter("current_bandwidth", 2000.0, "rad/s", "current-loop bandwidth", min=0.0,
                  exclusive_min=True),
    ) + stepping_parameters(10)
    DEFAULT_STOP_TIME = 5.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self.structure = _structure_of(p)
        self.A, self.B, self.C = self.structure.matrices()
        self.mp = {q.name: p[q.name] for q in MOTOR_PARAMETERS}
        self.gp = {q.name: p[q.name] for q in GEAR_PARAMETERS}
        kp_i, ki_i = current_loop_gains(p["resistance"], p["inductance"],
                                        p["current_bandwidth"])
        self.packed = pack_drive(self.mp, self.gp, p["bias_current"], kp_i, ki_i)
        self.ns = self.A.shape[0]
        self.kernel = AxisKernel(axis_table(self.A, self.B, self.C), self.packed,
                                 p["n_motors"], p["command"] == "current")
        self.reset()

    def initial_state(self) -> np.ndarray:
        return np.zeros(self.ns + 4 * self.params["n_motors"])

    def state_names(self) -> list[str]:
        """The structure's modal states, then the drive's (:func:`drive_state_names`)."""
        return self.structure.state_names() + drive_state_names(self.params["n_motors"])

    def _args(self):
        u = self.inputs["current_ref" if self.params["command"] == "current" else "voltage"]
        return u, self.inputs["wind_torque"]

    def outputs(self) -> dict:
        return self.kernel.outputs(self.x, *self._args(), self.inputs["reference_angle"])

    def derivatives(self):
        return self.kernel, self._args()

    def c_model(self) -> CModel:
        """The axis in C (``native/antenna_axis.c`` over ``drive.c``, the code this block
        runs) over the structure's table: the structure parameters (they make the modal
        matrices) and ``n_motors`` (the state's size) are built in at export; the motor,
        gear and amplifier parameters, method and substeps stay settable."""
        table = self.kernel.table
        packed = ", ".join(f"PAR_{name}" for name in drive_given_fields())
        outputs = "\n".join(f"    OUT_{name} = y[{i}];" for i, name in enumerate(AXIS_OUTPUTS))
        check = table_check("axis_table_length", "AXIS_TABLE", "AXIS_TABLE_SIZE",
                            "the pointing axis's table")
        glue = f"""
#define AXIS_TABLE_SIZE {table.size}
/* the choices of 'command' in the block's order: voltage, current */
#define AXIS_CURRENT_MODE (PAR_command == 1)
#define AXIS_COMMAND (AXIS_CURRENT_MODE ? IN_current_ref : IN_voltage)

int model_setup(ModelData *d, char *msg, size_t n) {{
    const double given[] = {{{packed}}};
{check}    drive_pack(given, PAR_current_bandwidth, d->w);
    return 0;
}}

void model_initial(ModelData *d) {{
    int i;
    for (i = 0; i < N_X; i++) X(i) = 0.0;
}}

void model_derivatives(const ModelData *d, const double *x, double *dx) {{
    axis_rhs(AXIS_TABLE, d->w, x, AXIS_COMMAND, IN_wind_torque, PAR_n_motors,
             AXIS_CURRENT_MODE, dx, NULL);
}}

void model_update(ModelData *d, double h) {{ (void)d; (void)h; }}

void model_outputs(ModelData *d) {{
    double y[{len(AXIS_OUTPUTS)}] = {{0.0}};
    axis_outputs(AXIS_TABLE, d->w, d->x, AXIS_COMMAND, IN_wind_torque, IN_reference_angle,
                 PAR_n_motors, AXIS_CURRENT_MODE, y);
{outputs}
}}

/* no range to check: the linear structure is exact for any axis angle at the rates of
   the module docstring, the drive's equations for every state */
int model_validity(const ModelData *d, char *msg, size_t n) {{
    (void)d; (void)msg; (void)n;
    return 0;
}}
"""
        return CModel(glue, c_sources=AXIS_C_SOURCES, api=("DRIVE_API", "AXIS_API"),
                      n_states=self.ns + 4 * self.params["n_motors"],
                      tables={"AXIS_TABLE": table},
                      n_work=len(self.packed), state_names=tuple(self.state_names()),
                      fixed_parameters=tuple(POINTING_AXIS) + ("n_motors",))


# ---------------------------------------------------------------------------------------
# Deployable boom (docs/benchmarks.md §4)
# ---------------------------------------------------------------------------------------
#: The deployable boom of docs/benchmarks.md §4 (SI units).  The panel damping, the
#: gear-train stiffness/damping and the drive gains are this project's assumptions
#: (docs/antenna.md); the motor is the servo motor of :mod:`mbdcore.models.drive`.
DEPLOYABLE_BOOM = dict(
    n_panels=4,
    panel_length=1.5,            # m
    rho_a=2.0,                   # kg/m
    ei=500.0,                    # N m^2
    fold_angle=math.radians(170.0),   # rad, hinge angle when folded (zig-zag)
    ratio=100.0,                 # gearbox of the root drive motor
    latch_stiffness=1.0e4,       # N m/rad
    latch_damping=10.0,          # N m s/rad
    n_modes=2,                   # assumed modes per panel
    damping_ratio=0.005,         # panel structural damping at its first clamped mode
    gear_stiffness=2.0e4,        # N m/rad, root gear train (load side)
    gear_damping=20.0,           # N m s/rad
)


class HingeLatch(Force):
    """A latch at a hinge: a rotational spring-damper on the hinge angle about
    ``latch_angle`` [rad] that is off until the hinge reaches the end stop and then
    holds it both ways (torque on b = -k (theta - latch) - c theta').

    ``theta = sign (theta_b - theta_a)``; the latch engages when theta first comes
    within ``tolerance`` of ``latch_angle`` from above.  :meth:`update` is called
    between time steps (the engagement is an event, so the force stays smooth within
    a step for the Newton iterations).
    """

    kind = "latch"

    def __init__(self, a: str, b: str, stiffness: float, damping: float,
                 latch_angle: float = 0.0, sign: float = 1.0, tolerance: float = 1e-5,
                 name=None):
        super().__init__(name)
        self.a_name, self.b_name = a, b
        self.k, self.c = float(stiffness), float(damping)
        self.latch_angle, self.sign, self.tolerance = float(latch_angle), float(sign), \
            float(tolerance)
        self._law = None
        self.engaged = False
        self.engaged_at: float | None = None

    @property
    def engaged(self) -> bool:
        """Whether the latch has engaged (its discrete state)."""
        return self._engaged

    @engaged.setter
    def engaged(self, value: bool) -> None:
        self._engaged = bool(value)
        if self._law is not None:
            # the compiled law's k and c: zero while open (no torque either way)
            self._law[1][:2] = (self.k, self.c) if self._engaged else (0.0, 0.0)

    def compiled_element(self):
        """s = sign (theta_b - theta_a) - latch_angle under the linear law, its k and c
        zero until engaged (written with the discrete state: one array shared by every
        compiled form made of this latch); on orientations linear in q or one beam's
        slope.  Its engagement (within ``tolerance`` from above) is not the compiled
        latches' rule, ``compiled_engagement`` None: a C model refuses it."""
        if self._law is None:
            self._law = spring_law(self.k, self.c)
            self.engaged = self._engaged
        return angle_element([(self.b, self.sign), (self.a, -self.sign)], -self.latch_angle,
                             self._law)

    def bind(self, system):
        super().bind(system)
        self.a, self.b = system.frame(self.a_name), system.frame(self.b_name)

    def angle(self, view):
        ta, wa, _, _ = view[self.a[0]].angle(self.a[1])
        tb, wb, _, _ = view[self.b[0]].angle(self.b[1])
        return self.sign * (tb - ta), self.sign * (wb - wa)

    def update(self, t, q, v) -> bool:
        """Engage if the hinge has reached the stop; True when it engages now."""

        if self.engaged:
            return False
        theta, _ = self.angle(StateView(q, v))
        if theta <= self.latch_angle + self.tolerance:
            self.engaged, self.engaged_at = True, float(t)
            return True
        return False

    def discrete_state(self):
        return {"engaged": self.engaged, "engaged_at": self.engaged_at}

    def set_discrete_state(self, state) -> None:
        self.engaged = bool(state["engaged"])
        self.engaged_at = None if state["engaged_at"] is None else float(state["engaged_at"])

    def apply(self, t, view, f, inputs):
        if not self.engaged:
            return
        theta, rate = self.angle(view)
        torque = self.sign * (-self.k * (theta - self.latch_angle) - self.c * rate)
        self._add_torque(f, view, self.b, torque)
        self._add_torque(f, view, self.a, -torque)

    def potential(self, t, view):
        if not self.engaged:
            return 0.0
        return 0.5 * self.k * (self.angle(view)[0] - self.latch_angle) ** 2


def _boom_params(**overrides) -> dict:
    return with_overrides(DEPLOYABLE_BOOM, overrides, "boom")


def hinge_frames(k: int) -> tuple[str, str, float]:
    """(inboard frame, outboard frame, sign) of hinge k = 1..N: the hinge angle is
    sign (theta_out - theta_in); the zig-zag alternates the sign so that every hinge
    angle is +fold_angle folded and 0 deployed."""
    inboard = "ground" if k == 1 else f"panel{k - 1}.tip"
    return inboard, f"panel{k}.root", 1.0 if k % 2 else -1.0


def deployable_boom(motor=None, **boom) -> System:
    """The boom of N hinged flexible panels folded in a zig-zag (docs/benchmarks.md §4).

    Panel k (a :class:`~mbdcore.multibody.flexible.ModalBeam`, clamped-free shapes) is hinged to
    the tip of panel k-1 (panel 1 to ``ground.root``); hinge k's angle (see
    :func:`hinge_frames`) starts at ``fold_angle`` and is tied to hinge 1 by a
    :class:`~mbdcore.multibody.constraints.SynchronousGear` ``sync<k>`` of ratio +-1 (the
    zig-zag sign).  The root drive is a :class:`~mbdcore.models.drive.DCMotorBody` ``motor``
    (input ``u`` [V]) through a :class:`~mbdcore.models.drive.GearTrain` of ratio ``ratio``;
    every hinge has a :class:`HingeLatch` ``latch<k>`` at 0.
    """
    p = _boom_params(**boom)
    n, length, th0 = int(p["n_panels"]), p["panel_length"], p["fold_angle"]
    s = System()
    s.ground.add_marker("root", (0.0, 0.0))
    pos = np.zeros(2)
    for k in range(1, n + 1):
        ang = th0 if k % 2 else 0.0
        beam = ModalBeam(f"panel{k}", length, p["rho_a"], p["ei"], n_modes=int(p["n_modes"]),
                         position=tuple(pos), angle=ang)
        omega1 = math.sqrt(beam.K[0, 0] / _modal_mass(beam))
        beam.damping = 2.0 * p["damping_ratio"] / omega1
        s.add(beam)
        pos = pos + length * np.array([math.cos(ang), math.sin(ang)])
    s.add_joint(Revolute("ground.root", "panel1.root", name="hinge1"))
    for k in range(2, n + 1):
        s.add_joint(Revolute(f"panel{k - 1}.tip", f"panel{k}.root", name=f"hinge{k}"))
    for k in range(2, n + 1):
        inb, outb, sign = hinge_frames(k)
        s.add_joint(SynchronousGear(("ground", "panel1.root"), (inb, outb), ratio=sign,
                                    name=f"sync{k}"))
    mp = motor_parameters(**(motor or {}))
    s.add(DCMotorBody("motor", angle=p["ratio"] * th0, **mp))
    s.add_force(MotorVoltage("motor", "u", name="amplifier"))
    s.add_force(GearTrain("motor", "ground", "panel1.root", name="gear", ratio=p["ratio"],
                          gear_stiffness=p["gear_stiffness"], gear_damping=p["gear_damping"]))
    for k in range(1, n + 1):
        inb, outb, sign = hinge_frames(k)
        s.add_force(HingeLatch(inb, outb, p["latch_stiffness"], p["latch_damping"], sign=sign,
                               name=f"latch{k}"))
    return s


def hinge_angles(system: System, q) -> np.ndarray:
    """Hinge angles [rad] (each with its zig-zag sign) at coordinates q."""

    view = StateView(np.asarray(q, float), np.zeros(system.n))
    out = []
    names = {b.name for b in system.bodies}
    k = 1
    while f"panel{k}" in names:
        inb, outb, sign = hinge_frames(k)
        a, b = system.frame(inb), system.frame(outb)
        out.append(sign * (view[b[0]].angle(b[1])[0] - view[a[0]].angle(a[1])[0]))
        k += 1
    return np.array(out)


class SepticProfile:
    """Rest-to-rest motion from ``start`` to ``end`` [rad] in ``duration`` [s] along the
    7th-order polynomial with zero rate, acceleration and jerk at both ends."""

    def __init__(self, start: float, end: float, duration: float):
        self.start, self.end, self.duration = float(start), float(end), float(duration)

    def __call__(self, t: float):
        T, d = self.duration, self.end - self.start
        s = min(max(t / T, 0.0), 1.0)
        pos = 35 * s**4 - 84 * s**5 + 70 * s**6 - 20 * s**7
        vel = (140 * s**3 - 420 * s**4 + 420 * s**5 - 140 * s**6) / T
        acc = (420 * s**2 - 1680 * s**3 + 2100 * s**4 - 840 * s**5) / T**2
        if t >= T:
            vel = acc = 0.0
        return self.start + d * pos, d * vel, d * acc


class BangBangProfile:
    """Rest-to-rest motion with bang-bang acceleration (+a for half the time, -a after):
    the time-optimal profile for an acceleration limit, with jumps of acceleration at
    the start, the middle and the end."""

    def __init__(self, start: float, end: float, duration: float):
        self.start, self.end, self.duration = float(start), float(end), float(duration)

    def __call__(self, t: float):
        T, d = self.duration, self.end - self.start
        a = 4.0 * d / T**2
        t = min(max(t, 0.0), T)
        if t < T / 2:
            return self.start + 0.5 * a * t * t, a * t, a
        r = T - t
        return self.end - 0.5 * a * r * r, a * r, (-a if t < T else 0.0)


class DeploymentResult(TimeSeries):
    """Time series of a deployment (a :class:`~mbdcore.timeseries.TimeSeries`, SI units).

    Columns ``hinge<k>`` [rad] (hinge angles), ``reference`` [rad] (the profile),
    ``voltage`` [V], ``current`` [A] (motor), ``tip_x``, ``tip_y`` [m] (tip of the last
    panel), ``violation`` (max |g|).  Array views: t (N,); hinge (N, n_panels);
    reference, voltage, current, violation (N,); tip (N, 2); latch_time [s] (None if
    the latch did not engage).
    """

    def __init__(self, t, hinge, reference, voltage, current, tip, violation,
                 latch_time: float | None):
        columns = {"time": t, **{f"hinge{k + 1}": hinge[:, k] for k in range(hinge.shape[1])},
                   "reference": reference, "voltage": voltage, "current": current,
                   "tip_x": tip[:, 0], "tip_y": tip[:, 1], "violation": violation}
        units = {**{f"hinge{k + 1}": "rad" for k in range(hinge.shape[1])},
                 "reference": "rad", "voltage": "V", "current": "A", "tip_x": "m",
                 "tip_y": "m", "violation": "m, rad"}
        ts = TimeSeries.from_columns(columns, units)
        super().__init__(ts.data, ts.units)
        self.t, self.hinge, self.reference = self.time, np.asarray(hinge), self["reference"]
        self.voltage, self.current, self.violation = (self["voltage"], self["current"],
                                                      self["violation"])
        self.tip = np.asarray(tip)
        self.latch_time = latch_time

    def default_signals(self) -> list[str]:
        return ["hinge1", "reference", "current", "tip_y"]

    def residual_vibration(self, window: float = 5.0) -> float:
        """Peak-to-peak transverse tip motion ``tip_y`` [m] over the last ``window``
        seconds (:func:`mbdcore.vibration.residual_vibration`)."""
        return residual_vibration(self.t, self.tip[:, 1], window=window)


def simulate_deployment(duration: float = 60.0, settle: float = 10.0, h: float = 0.01,
                        profile: str = "smooth", kp: float = 5.0, kd: float = 0.0,
                        rho_inf: float = 0.8, boom=None, motor=None,
                        progress=None) -> DeploymentResult:
    """Deploy the boom from ``fold_angle`` to 0 along a ``"smooth"``
    (:class:`SepticProfile`) or ``"bang-bang"`` (:class:`BangBangProfile`) reference in
    ``duration`` [s], then hold for ``settle`` [s].

    The drive controller (sampled every step h) commands the motor voltage
    ``u = Ke N theta_ref' + kp (N theta_ref - phi) + kd (N theta_ref' - phi')``
    [V]: back-EMF feedforward plus PD on the motor encoder; the latches engage at the
    end stop.  Integrated by generalized-alpha (GGL form, ``rho_inf``) at step h, by
    :func:`mbdcore.dae.simulate` with the controller as its sampled ``feedback``.
    The motor's Coulomb friction is regularised over ``friction_speed`` = 0.3 rad/s
    (motor side, 3 mrad/s at the hinge; default unless ``motor`` says otherwise): with
    the 1e-3 rad/s of the servo drive, Newton fails at h = 0.01 s where the rotor
    stops.  The controller is a sampled PD at h without derivative action by default
    (kd): the back-EMF damps the motor, and a derivative term sampled at 100 Hz
    excites the 17 Hz rotor-on-gear mode.  ``progress(t, stop)`` [s]: told how far the
    run is (``mbdcore.dae.simulate``'s ``progress``).
    """

    p = _boom_params(**(boom or {}))
    motor = {"friction_speed": 0.3, **(motor or {})}
    s = deployable_boom(motor=motor, **(boom or {}))
    mp = s.body("motor").params
    n_ratio = p["ratio"]
    ref = (SepticProfile if profile == "smooth" else BangBangProfile)(p["fold_angle"], 0.0,
                                                                        duration)
    im = s.body("motor").index

    def voltage(t, q, v):
        th, thd, _ = ref(t)
        return (mp["emf_constant"] * n_ratio * thd + kp * (n_ratio * th - q[im])
                + kd * (n_ratio * thd - v[im]))

    res = simulate(s, duration + settle, h, "generalized-alpha", rho_inf=rho_inf,
                   feedback=lambda t, q, v: {"u": voltage(t, q, v)}, progress=progress)
    last = s.body(f"panel{int(p['n_panels'])}")
    cut = slice(last.index, last.index + last.n_coords)
    tip = np.array([last.state(q[cut], v[cut]).point(last.markers["tip"])[0]
                    for q, v in zip(res.q, res.v)])
    times = [f.engaged_at for f in s.forces_list
             if isinstance(f, HingeLatch) and f.engaged_at is not None]
    return DeploymentResult(res.t, np.array([hinge_angles(s, q) for q in res.q]),
                            np.array([ref(t)[0] for t in res.t]),
                            np.array([voltage(t, q, v) for t, q, v in zip(res.t, res.q, res.v)]),
                            res.v[:, im + 1], tip, res.violation, min(times) if times else None)
