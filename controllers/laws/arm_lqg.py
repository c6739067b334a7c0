"""LQG state feedback for the flexible arm: joint angles, rates and tip deflections
measured, the modal states estimated by a Kalman predictor.

:func:`design_arm_lqg` linearises the arm (:func:`~controllers.design.adapters.linearize_arm`)
and designs the loop (:func:`~controllers.design.lqg`); :class:`ArmLQGController` is the
block that runs it, in Python, in python-control (``block_iosys``) and as an FMU: the
whole design is one JSON text parameter, ``design``.

Law (``xh`` estimates the deviation of the arm state from the linearisation point),
with ``reference="rigid"``::

    x_ref = (theta_ref, 0, omega_ref, 0)                 # rigid reference, links straight
    tau   = sat( tau_ff + K (x_ref - x_lin - xh) )
    xh   <- Ad xh + Bd tau + L (y - y_lin - C xh)       # at the end of each step

``tau_ff`` is the rigid-arm inverse dynamics on the reference (as the joint PD).  That
reference is not a motion of the flexible arm (the feedforward bends the links the
regulator holds straight): the joints overshoot the target by 15-20 % and creep back
over seconds.

``reference="model"`` is a two-degree-of-freedom structure: the feedforward torques
are inputs (``tau1_ff``, ``tau2_ff``, from :class:`FlexibleArmReference`) and the state
reference is the design's own linear model driven by them, so it is a motion of the
flexible arm by construction and the loop corrects only the model error::

    tau   = sat( tau_ff + K (r - xh) )
    r    <- Ad r + Bd tau_ff                           # r(0) = 0: starts at x_lin
    xh   <- Ad xh + Bd tau + L (y - y_lin - C xh)

:class:`FlexibleArmReference` makes ``tau_ff`` a rest-to-rest move of that linear model
(every mode at rest at the end), so the reference leaves no vibration behind.

Integral action (``design_arm_lqg(integrated=INTEGRATED)``, an
:class:`~controllers.design.LQIDesign`): the measured joint angles' error against the
state reference (``x_ref`` or ``r``) is summed, and its integrators are part of the
LQR design::

    tau_u = tau_ff + K (x_ref - x_lin - xh) - Ki z      # (or K (r - xh))
    tau   = sat(tau_u)
    z    <- z + dt (theta - theta_ref)                   # unless it winds up (below)

so a constant disturbance torque or a model error leaves no joint offset at rest.
Anti-windup by conditional integration: ``z`` keeps its value over a step in which a
joint's torque is at its limit and the step's integration would drive ``tau_u``
further past it.  The observer always sees the applied (clipped) torque.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy.linalg as sl

from controllers.laws.joint_pd import TORQUE_LIMIT, JointPDController
from controllers.laws.kernels import (LQG_C_SOURCES, lqg_input_layout, lqg_law, lqg_layout,
                                      lqg_settings_layout)
from controllers.laws.trajectory import QuinticJointTrajectory, quintic
from mbdcore.blocks import (
    Block,
    Parameter,
    ParameterError,
    Signal,
    StepError,
    VectorState,
)
from mbdcore.codegen import CModel
from mbdcore.models.manipulator import JOINT_STATES
from mbdcore.models.rigid_arm import (
    RIGID_ARM_PARAMETERS,
    RIGID_PARAMETER_NAMES,
    RigidTwoLinkArm,
)
from mbdcore.native import TableError

__all__ = ["LQGDesignError", "LQGDesign", "LQIDesign", "integral_state_names", "design_from_json",
           "DEFAULT_DESIGN_FILE", "default_design_json", "TextParameter", "FEEDFORWARD_INPUTS",
           "design_parameter", "ArmLQGController", "rest_to_rest_feedforward",
           "FlexibleArmReference", "lqg_table", "TIP_DEFLECTION_LIMIT"]

#: The design an empty ``design`` parameter means: the default weights on the default
#: arm, as :func:`controllers.design.arm_lqg.design_arm_lqg` computes it, stored as data
#: so that the law (and its FMU) needs no design tools (the tests recompute and compare).
DEFAULT_DESIGN_FILE = Path(__file__).resolve().with_name("arm_lqg_default.json")


@functools.lru_cache(maxsize=1)
def default_design_json() -> str:
    """The default design (:data:`DEFAULT_DESIGN_FILE`) as JSON text."""
    return DEFAULT_DESIGN_FILE.read_text()


class LQGDesignError(ValueError):
    """LQG design data the law cannot run (a JSON text without a field, matrices of the
    wrong shapes, more states than the C law holds), or a feedforward that cannot be
    designed from it (the message says which part and why).  The design tools' own
    error is :class:`controllers.design.errors.DesignError`; the law, a layer below
    them, has this one."""


@dataclass
class LQGDesign:
    """A discrete-time LQG controller for a plant linearised at ``x_lin``.

    Law (predictor form, no direct feedthrough of the measurements)::

        u[k]     = u_ff[k] + K (x_ref[k] - xh[k])
        xh[k+1]  = Ad xh[k] + Bd u[k] + L (y[k] - x_lin_y - C xh[k])

    ``xh`` estimates ``x - x_lin``.  Attributes hold plain lists so the design is JSON.
    """

    dt: float
    Ad: list
    Bd: list
    C: list
    K: list
    L: list
    x_lin: list
    y_lin: list
    states: list
    inputs: list
    measured: list
    info: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        # one line: the matrices are in to_json() and statespace()
        return (f"{type(self).__name__}({len(self.states)} states, inputs "
                f"{', '.join(self.inputs)}, measured {', '.join(self.measured)}"
                f"{self._repr_extra()}, dt = {self.dt:g} s)")

    def _repr_extra(self) -> str:
        return ""

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> "LQGDesign":
        data = json.loads(text)
        need = [f for f in cls.__dataclass_fields__ if f != "info"]
        missing = [f for f in need if f not in data]
        if missing:
            raise LQGDesignError(f"LQG design text lacks {', '.join(missing)}")
        design = cls(**data)
        design.check()
        return design

    def check(self) -> None:
        n, m, p = len(self.states), len(self.inputs), len(self.measured)
        shapes = {"Ad": (n, n), "Bd": (n, m), "C": (p, n), "K": (m, n), "L": (n, p),
                  "x_lin": (n,), "y_lin": (p,)}
        for name, shape in shapes.items():
            got = np.shape(getattr(self, name))
            if got != shape:
                raise LQGDesignError(f"LQG design: {name} has shape {got}, expected {shape} "
                                  f"({n} states, {m} inputs, {p} measured outputs)")

    def controller(self, **parameters) -> "ArmLQGController":
        """The design as a Block: the arm's LQG law
        :class:`ArmLQGController` running this design (``parameters`` add or override
        its others: ``reference``, ``feedforward``, torque limits, the rigid arm of the
        feedforward), as a tuning's ``controller()`` is its PID.  The same block as
        ``ArmLQGController(design=design.to_json(), **parameters)``; its linear form,
        feedforward off and unsaturated, is :meth:`statespace`."""
        return ArmLQGController(design=self.to_json(), **parameters)

    def statespace(self) -> "control.StateSpace":
        """The feedback part ``y -> u`` (``u_ff = x_ref = 0``, measurement deviations
        in) as a discrete StateSpace; u = -K xh, so the loop gain is ``-ctrl * plant``."""
        # imported here, not with the law: see controllers.laws.pid.pid_transfer_function
        import control as ct

        Ad, Bd, C, K, L = (np.asarray(getattr(self, a)) for a in ("Ad", "Bd", "C", "K", "L"))
        return ct.ss(Ad - Bd @ K - L @ C, L, -K, np.zeros((len(K), len(C))), self.dt,
                     inputs=self.measured, outputs=self.inputs, name="lqg")


def integral_state_names(integrated: Sequence[str]) -> list[str]:
    """Names of the integrator states of :func:`lqg_integral`: ``<output>_int``."""
    return [f"{name}_int" for name in integrated]


@dataclass(repr=False)        # LQGDesign's one-line repr, not the dataclass's
class LQIDesign(LQGDesign):
    """An :class:`LQGDesign` with integral action on some measured outputs.

    Law (``e`` the error of the integrated outputs against their reference, ``z`` its
    running sum times ``dt``, in [unit of the output . s])::

        u[k]     = u_ff[k] + K (x_ref[k] - xh[k]) - Ki z[k]
        z[k+1]   = z[k] + dt e[k],     e[k] = y_int[k] - y_int,ref[k]
        xh[k+1]  = Ad xh[k] + Bd u[k] + L (y[k] - y_lin - C xh[k])

    ``integrated`` names the measured outputs integrated (a subset of ``measured``),
    ``Ki`` has shape (inputs, integrated).  A constant input disturbance or a model
    error then leaves no steady-state error on those outputs (the loop's equilibrium
    needs ``e = 0``).
    """

    integrated: list = field(default_factory=list)
    Ki: list = field(default_factory=list)

    def check(self) -> None:
        super().check()
        unknown = [n for n in self.integrated if n not in self.measured]
        if unknown:
            raise LQGDesignError(f"LQG design: integrated output(s) {unknown} are not measured "
                              f"({', '.join(self.measured)})")
        got, shape = np.shape(self.Ki), (len(self.inputs), len(self.integrated))
        if got != shape:
            raise LQGDesignError(f"LQG design: Ki has shape {got}, expected {shape} "
                              f"({len(self.inputs)} inputs, {len(self.integrated)} integrated)")

    def _repr_extra(self) -> str:
        return f", integrated {', '.join(self.integrated)}"

    def integrated_rows(self) -> np.ndarray:
        """The rows of ``C`` (and of the measurement vector) that are integrated."""
        return np.array([self.measured.index(n) for n in self.integrated], dtype=int)

    def statespace(self) -> "control.StateSpace":
        """The feedback part ``y -> u`` (references and ``u_ff`` zero, measurement
        deviations in, no saturation) with its integrators as a discrete StateSpace;
        states ``xh`` then ``z``, feedback sign inside (``u = -K xh - Ki z``)."""
        # imported here, not with the law: see controllers.laws.pid.pid_transfer_function
        import control as ct

        Ad, Bd, C, K, L, Ki = (np.asarray(getattr(self, a), float)
                               for a in ("Ad", "Bd", "C", "K", "L", "Ki"))
        n, ni, p = len(Ad), len(self.integrated), len(C)
        S = np.eye(p)[self.integrated_rows()]
        A = np.block([[Ad - Bd @ K - L @ C, -Bd @ Ki], [np.zeros((ni, n)), np.eye(ni)]])
        B = np.vstack([L, self.dt * S])
        return ct.ss(A, B, np.hstack([-K, -Ki]), np.zeros((len(K), p)), self.dt,
                     inputs=self.measured, outputs=self.inputs, name="lqg_integral",
                     states=[f"xh_{s}" for s in self.states]
                     + integral_state_names(self.integrated))


def design_from_json(text: str) -> LQGDesign:
    """An :class:`LQGDesign` or, if the text holds ``Ki``, an :class:`LQIDesign`."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise LQGDesignError("LQG design text is not a JSON object")
    return (LQIDesign if "Ki" in data else LQGDesign).from_json(text)


@dataclass(frozen=True)
class TextParameter(Parameter):
    """A free-text (FMI String) parameter holding JSON; ``""`` means "default"."""

    def accepted(self) -> str:
        return "a JSON object, or '' for the default"

    def validate(self, value):
        if not isinstance(value, str):
            raise ParameterError(f"parameter {self.name!r} must be a string "
                                 f"({self.accepted()}), got {type(value).__name__}")
        if value:
            try:
                if not isinstance(json.loads(value), dict):
                    raise ValueError("not an object")
            except ValueError as e:
                raise ParameterError(f"parameter {self.name!r} is not {self.accepted()}: {e}") \
                    from None
            except RecursionError:
                raise ParameterError(f"parameter {self.name!r} is not {self.accepted()}: "
                                     "nested too deeply") from None
        return value


FEEDFORWARD_INPUTS = (Signal("tau1_ff", "N.m", "feedforward torque, joint 1",
                             min=-TORQUE_LIMIT, max=TORQUE_LIMIT),
                      Signal("tau2_ff", "N.m", "feedforward torque, joint 2",
                             min=-TORQUE_LIMIT, max=TORQUE_LIMIT))
#: The largest measured tip deflection accepted [m]: ten metres, beyond any link of the
#: arm (0.6 m), so a larger value is a fault, refused by name (as the joint signals,
#: :data:`~controllers.laws.joint_pd.JOINT_ANGLE_LIMIT`).
TIP_DEFLECTION_LIMIT = 10.0


def design_parameter(text: str) -> LQGDesign:
    """The LQG design held by a ``design`` parameter ('' : the default design)."""
    try:
        return design_from_json(text or default_design_json())
    except (LQGDesignError, TypeError, ValueError) as e:
        raise ParameterError(f"parameter 'design' is not a valid LQG design: {e}") from None




class ArmLQGController(Block):
    """LQG state feedback + feedforward for the two-link flexible arm (module doc).

    Discrete time: the block must be stepped with the design's sample time.  With
    ``reference="model"`` the move must start at the design's linearisation point.
    A design with integrators (:class:`~controllers.design.LQIDesign`) switches on the
    integral action and its anti-windup (module doc).
    """

    INPUTS = JointPDController.INPUTS + (
        Signal("w1", "m", "measured tip deflection of link 1", min=-TIP_DEFLECTION_LIMIT,
               max=TIP_DEFLECTION_LIMIT),
        Signal("w2", "m", "measured tip deflection of link 2", min=-TIP_DEFLECTION_LIMIT,
               max=TIP_DEFLECTION_LIMIT),
    ) + FEEDFORWARD_INPUTS
    OUTPUTS = JointPDController.OUTPUTS
    PARAMETERS = (
        TextParameter("design", "", "", "LQG design as JSON (LQGDesign.to_json())"),
        Parameter("tau_max1", 2.0, "N.m", "torque limit, joint 1", min=0.0, exclusive_min=True,
                  max=TORQUE_LIMIT),
        Parameter("tau_max2", 1.0, "N.m", "torque limit, joint 2", min=0.0, exclusive_min=True,
                  max=TORQUE_LIMIT),
        Parameter("feedforward", 1, "", "reference 'rigid': 1 rigid-model feedforward on, 0 off",
                  min=0, max=1),
        Parameter("reference", "rigid", "", "state reference: 'rigid' (theta_ref, straight "
                  "links) or 'model' (the design's model driven by tau1_ff, tau2_ff)",
                  choices=("rigid", "model")),
    ) + RIGID_ARM_PARAMETERS
    # the estimate is updated at the end of a step: tau depends on the measurements only
    # through the state, on the reference and the feedforward directly
    FEEDTHROUGH = {o: tuple(s.name for s in JointPDController.INPUTS[:6] + FEEDFORWARD_INPUTS)
                   for o in ("tau1", "tau2")}
    DEFAULT_STOP_TIME = 3.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self.design = d = design_parameter(p["design"])
        if d.inputs != ["tau1", "tau2"]:
            raise ParameterError(f"parameter 'design': inputs {d.inputs}, expected ['tau1', 'tau2']")
        bad = [m for m in d.measured if m not in self._input_spec]
        if bad:
            raise ParameterError(f"parameter 'design' measures {bad}, which are not inputs of "
                                 f"{type(self).__name__}: {', '.join(self._input_spec)}")
        self._table = lqg_table(d)
        self.rigid = RigidTwoLinkArm.from_flexible(**p)
        self._rigid_c = self.rigid.c_parameters
        self.tau_max = np.array([p["tau_max1"], p["tau_max2"]])
        self._gains = lqg_settings_layout().pack(
            tau_max1=p["tau_max1"], tau_max2=p["tau_max2"], feedforward=p["feedforward"],
            reference=int(p["reference"] == "model"))
        self._n = len(d.states)
        self._ni = len(d.integrated) if isinstance(d, LQIDesign) else 0
        self.reset()

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        # estimate, model reference and integrators in one array: the C law's state
        self._s = np.zeros(2 * self._n + self._ni)

    # views of the C law's state (in-place changes reach it)
    @property
    def xh(self) -> np.ndarray:
        """The estimate of the deviation from the linearisation point."""
        return self._s[:self._n]

    @xh.setter
    def xh(self, value):
        self._s[:self._n] = value

    @property
    def r(self) -> np.ndarray:
        """The design model's state reference (``reference="model"``)."""
        return self._s[self._n:2 * self._n]

    @r.setter
    def r(self, value):
        self._s[self._n:2 * self._n] = value

    @property
    def z(self) -> np.ndarray:
        """The integrators (an LQI design) [unit of the integrated output . s]."""
        return self._s[2 * self._n:]

    @z.setter
    def z(self, value):
        self._s[2 * self._n:] = value

    def _u(self) -> np.ndarray:
        u = self.inputs
        return np.array([u[name] for name in lqg_input_layout().names], dtype=float)

    def _torques(self) -> np.ndarray:
        tau_u, tau = np.empty(2), np.empty(2)
        lqg_law().lqg_torques(self._table, self._gains, self._rigid_c, self._s,
                              self._u(), tau_u, tau)
        return tau

    def outputs(self) -> dict:
        tau = self._torques()
        return {"tau1": float(tau[0]), "tau2": float(tau[1])}

    def do_step(self, t: float, h: float) -> None:
        if abs(h - self.design.dt) > 1e-9 * self.design.dt:
            raise StepError(f"{type(self).__name__} is designed for steps of "
                            f"{self.design.dt!r} s; got a step of {h!r} s at t = {t!r} s")
        lqg_law().lqg_update(self._table, self._gains, self._rigid_c, self._s,
                             self._u())
        self.time = t + h

    def vector_state(self) -> VectorState:
        def set_x(block, x):
            block._s[:] = np.asarray(x, dtype=float)
        integrators = (integral_state_names(self.design.integrated)
                       if isinstance(self.design, LQIDesign) else [])
        return VectorState([f"xh_{s}" for s in self.design.states]
                           + [f"ref_{s}" for s in self.design.states] + integrators,
                           lambda block: block._s.copy(), set_x)

    def _get_internal(self):
        return {"xh": self.xh.copy(), "r": self.r.copy(), "z": self.z.copy()}

    def _set_internal(self, internal):
        self.xh = np.asarray(internal["xh"], dtype=float)
        self.r = np.asarray(internal["r"], dtype=float)
        self.z = np.asarray(internal.get("z", ()), dtype=float)

    def c_model(self) -> CModel:
        """The law in C (``native/lqg.c``, the code this block runs): the design and the
        rigid arm of the feedforward are built in at export (tables); the torque limits,
        the feedforward switch and the reference stay settable.  The FMU refuses steps
        other than the design's sample time."""
        settings, inputs = lqg_settings_layout(), lqg_input_layout()
        gains = settings.c_initializer(tau_max1="PAR_tau_max1", tau_max2="PAR_tau_max2",
                                       feedforward="(double)PAR_feedforward",
                                       reference="(double)PAR_reference")
        glue = f"""
#define LQG_GAINS const double g[{len(settings.names)}] = {gains}
#define LQG_INPUTS_NOW const double u[{len(inputs.names)}] = {inputs.c_initializer(
            **{name: f"IN_{name}" for name in inputs.names})}

int model_setup(ModelData *d, char *msg, size_t n) {{ (void)d; (void)msg; (void)n; return 0; }}
void model_initial(ModelData *d) {{
    int k;
    for (k = 0; k < {len(self._s)}; k++) Z(k) = 0.0;
}}
void model_derivatives(const ModelData *d, const double *x, double *dx) {{ (void)d; (void)x; (void)dx; }}
int model_validity(const ModelData *d, char *msg, size_t n) {{ (void)d; (void)msg; (void)n; return 0; }}

void model_update(ModelData *d, double h) {{
    LQG_GAINS;
    LQG_INPUTS_NOW;
    (void)h;
    lqg_update(LQG_TABLE, g, RIGID, d->z, u);
}}

void model_outputs(ModelData *d) {{
    LQG_GAINS;
    LQG_INPUTS_NOW;
    double tau_u[2], tau[2];
    lqg_torques(LQG_TABLE, g, RIGID, d->z, u, tau_u, tau);
    OUT_tau1 = tau[0];
    OUT_tau2 = tau[1];
}}
"""
        # the design step is the table's field dt (lqg_table): the source holds no number
        dt_at = lqg_layout().offsets(self._table)["dt"][0]
        return CModel(glue, c_sources=LQG_C_SOURCES, api=("RIGID_API", "LAWS_API"),
                      n_discrete=len(self._s), state_names=tuple(self.vector_state().names),
                      fixed_parameters=("design",) + RIGID_PARAMETER_NAMES,
                      sample_time=f"LQG_TABLE[{dt_at}]",
                      tables={"LQG_TABLE": self._table, "RIGID": self._rigid_c})


def lqg_table(design: LQGDesign, input_names: Sequence[str] | None = None) -> np.ndarray:
    """The design as the table of ``native/lqg.c`` (its header comment): sizes, matrices
    and the index of each measured output among ``input_names`` (the C law's inputs,
    ``LQG_INPUT_LAYOUT``, if None)."""
    input_names = lqg_input_layout().names if input_names is None else input_names
    n, p = len(design.states), len(design.measured)
    lqi = isinstance(design, LQIDesign)
    Ki = np.asarray(design.Ki, float) if lqi else np.zeros((2, 0))
    rows = design.integrated_rows() if lqi else np.zeros(0)
    try:
        table = lqg_layout().pack(
            n=n, m=2, p=p, ni=Ki.shape[1], dt=design.dt,
            **{a: getattr(design, a) for a in ("Ad", "Bd", "C", "K", "L", "x_lin", "y_lin")},
            Ki=Ki, int_rows=rows, measured=[list(input_names).index(m) for m in design.measured],
            joint=[design.states.index(name) for name in JOINT_STATES])
    except TableError as exc:
        raise LQGDesignError(f"LQG design of {n} states and {p} measured outputs: {exc}") from None
    if lqg_law().lqg_table_length(table) != table.size:
        raise LQGDesignError(f"LQG design of {n} states and {p} measured outputs does not fit "
                          "the C law (at most 64 of each)")
    return table


def rest_to_rest_feedforward(design: LQGDesign, theta_start, theta_end, duration: float,
                             rigid: RigidTwoLinkArm | None = None, n_basis: int = 10,
                             deflection_weight: float = 100.0):
    """Feedforward torques that move the design's linear arm model rest to rest.

    The torque is the rigid-arm inverse dynamics of the quintic from ``theta_start`` to
    ``theta_end`` [rad] in ``duration`` [s], plus for each joint a correction
    ``sum_j c_j s^2 (1 - s)^2 P_j(s)`` (``s = t / duration``, ``P_j`` Legendre
    polynomials, ``j < n_basis``) that vanishes with its slope at both ends.  The
    coefficients satisfy exactly the linear conditions "the sampled model
    ``x[k+1] = Ad x[k] + Bd tau_ff[k]`` ends at the target joint angles with every other
    state (modes, rates) zero" and, among those solutions, minimise

        sum_k |theta[k] - theta_quintic[k]|^2 + deflection_weight (w1[k]^2 + w2[k]^2)

    (joint angles [rad], tip deflections ``w_i = sum_j delta<i>_j`` [m]): the joints
    stay near the quintic and the links bend little.  Without that cost the least-norm
    coefficients swing the joints far past the target and bend link 1 by 20 % of its
    length in a 2 s move.

    Parameters
    ----------
    design : LQGDesign
        Gives the model (``Ad``, ``Bd`` at ``dt``, state names) and its linearisation
        point, which must be the start of the move.
    rigid : RigidTwoLinkArm, optional
        For the rigid part (default: the arm of docs/benchmarks.md §1).
    n_basis : int
        Correction functions per joint; ``2 n_basis`` must exceed the number of states.
    deflection_weight : float
        Weight of the tip deflections [rad^2/m^2] against the joint deviation.

    Returns
    -------
    tau_ff : ndarray, shape (N, 2)
        Torques [N m] held over the steps ``k dt``, ``N = round(duration / dt)``.
    x_ref : ndarray, shape (N + 1, n)
        The model's state (absolute: ``x_lin`` added), at rest at the target at ``N``.

    Raises
    ------
    LQGDesignError
        The start is not the linearisation point, or the model cannot reach the
        target at rest with these basis functions.
    """
    dt = design.dt
    Ad, Bd = np.asarray(design.Ad), np.asarray(design.Bd)
    n = len(Ad)
    x_lin = np.asarray(design.x_lin)
    th = [design.states.index(name) for name in ("theta1", "theta2")]
    theta_start, theta_end = np.asarray(theta_start, float), np.asarray(theta_end, float)
    if not np.allclose(theta_start, x_lin[th], atol=1e-12):
        raise LQGDesignError(f"the move starts at theta = {theta_start.tolist()} rad, not at the "
                          f"design's linearisation point {x_lin[th].tolist()} rad")
    if 2 * n_basis <= n:
        raise LQGDesignError(f"n_basis = {n_basis}: 2 n_basis must exceed the {n} states of the "
                          "model (the end conditions)")
    rigid = rigid or RigidTwoLinkArm.from_flexible()
    N = int(round(duration / dt))
    t = dt * np.arange(N + 1)
    q = np.array([[quintic(tk, a, b, duration) for a, b in zip(theta_start, theta_end)]
                  for tk in t])                                     # (N + 1, joint, order)
    s = t[:N] / duration
    basis = np.array([s**2 * (1 - s)**2 * np.polynomial.legendre.Legendre.basis(
        j, domain=[0, 1])(s) for j in range(n_basis)]).T            # (N, n_basis)
    # columns: the rigid torque, then each basis function on each joint
    U = np.zeros((N, 2, 1 + 2 * n_basis))
    U[:, :, 0] = [rigid.inverse_dynamics(*q[k].T) for k in range(N)]
    U[:, 0, 1:1 + n_basis] = basis
    U[:, 1, 1 + n_basis:] = basis
    X = np.zeros((N + 1, n, U.shape[2]))                            # state response per column
    for k in range(N):
        X[k + 1] = Ad @ X[k] + Bd @ U[k]
    target = np.zeros(n)
    target[th] = theta_end - theta_start
    G, miss = X[-1, :, 1:], target - X[-1, :, 0]
    # end conditions G c = miss exactly: c = c0 + Z z over the null space of G
    c0, *_ = np.linalg.lstsq(G, miss, rcond=None)
    err = np.abs(G @ c0 - miss).max()
    if err > 1e-9 * max(1.0, np.abs(target).max()):
        raise LQGDesignError(f"the feedforward cannot bring the model to rest at the target in "
                          f"{duration:g} s with {n_basis} basis functions per joint "
                          f"(state error {err:.3g})")
    Z = sl.null_space(G)
    rows = [(X[:, th[i]], q[:, i, 0] - theta_start[i], 1.0) for i in (0, 1)]
    for link in (1, 2):
        modes = [i for i, name in enumerate(design.states) if name.startswith(f"delta{link}_")
                 and not name.endswith("_rate")]
        rows.append((X[:, modes].sum(axis=1), 0.0, deflection_weight))
    A = np.vstack([np.sqrt(w) * resp[:, 1:] for resp, _, w in rows])
    b = np.concatenate([np.sqrt(w) * (ref - resp[:, 0]) for resp, ref, w in rows])
    z, *_ = np.linalg.lstsq(A @ Z, b - A @ c0, rcond=None)
    c = c0 + Z @ z
    tau = U[:, :, 0] + np.column_stack([basis @ c[:n_basis], basis @ c[n_basis:]])
    x = X[:, :, 0] + X[:, :, 1:] @ c
    return tau, x + x_lin


class FlexibleArmReference(QuinticJointTrajectory):
    """Rest-to-rest move of the linear flexible arm: feedforward torques and the joint
    reference they produce (:func:`rest_to_rest_feedforward`), for
    :class:`ArmLQGController` with ``reference="model"`` (same ``design``).

    Outputs the joint reference angle, rate and acceleration of the model (the
    acceleration as the rate difference over a step) and ``tau1_ff``, ``tau2_ff``
    [N m]; before ``start_time`` the start at rest, after the move the target at rest
    with zero torque.  Must be stepped with the design's sample time.
    """

    OUTPUTS = QuinticJointTrajectory.OUTPUTS + tuple(
        Signal(s.name, s.unit, s.description) for s in FEEDFORWARD_INPUTS)
    PARAMETERS = QuinticJointTrajectory.PARAMETERS + (
        TextParameter("design", "", "", "LQG design as JSON (LQGDesign.to_json())"),
        Parameter("n_basis", 10, "", "correction functions per joint", min=1, max=40),
        Parameter("deflection_weight", 100.0, "rad2/m2", "weight of the tip deflections "
                  "against the joint deviation from the quintic", min=0.0),
    ) + RIGID_ARM_PARAMETERS

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self.design = d = design_parameter(p["design"])
        rigid = RigidTwoLinkArm.from_flexible(**p)
        try:
            self.tau_ff, self.x_ref = rest_to_rest_feedforward(
                d, (p["theta1_start"], p["theta2_start"]), (p["theta1_end"], p["theta2_end"]),
                p["move_time"], rigid, p["n_basis"], p["deflection_weight"])
        except LQGDesignError as e:
            raise ParameterError(f"FlexibleArmReference: {e}") from None
        idx = [d.states.index(n) for n in JOINT_STATES]
        self._joint = self.x_ref[:, idx]
        self._alpha = np.vstack([np.diff(self._joint[:, 2:], axis=0) / d.dt, np.zeros((1, 2))])

    def outputs(self) -> dict:
        k = int(round((self.time - self.params["start_time"]) / self.design.dt))
        k = min(max(k, 0), len(self.tau_ff))
        th1, th2, om1, om2 = self._joint[k]
        tau = self.tau_ff[k] if k < len(self.tau_ff) else (0.0, 0.0)
        return {"theta1_ref": th1, "theta2_ref": th2, "omega1_ref": om1, "omega2_ref": om2,
                "alpha1_ref": self._alpha[k, 0], "alpha2_ref": self._alpha[k, 1],
                "tau1_ff": float(tau[0]), "tau2_ff": float(tau[1])}
