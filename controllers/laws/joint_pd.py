"""Joint PD control with rigid-model feedforward, rate-error filters and torque limits."""
from __future__ import annotations

import math

import numpy as np

from controllers.laws.kernels import JOINT_LAWS_C_SOURCES, joint_laws, pd_layout
from mbdcore.blocks import Block, Parameter, Signal, VectorState
from mbdcore.codegen import CModel
from mbdcore.models.rigid_arm import (
    RIGID_ARM_PARAMETERS,
    RIGID_PARAMETER_NAMES,
    RigidTwoLinkArm,
)

__all__ = ["JointTorqueLaw", "JointPDController", "JOINT_ANGLE_LIMIT", "JOINT_RATE_LIMIT",
           "JOINT_ACCELERATION_LIMIT", "TORQUE_LIMIT", "STIFFNESS_GAIN_LIMIT",
           "DAMPING_GAIN_LIMIT"]

#: Physical bounds of the joint signals a torque law accepts [rad, rad/s, rad/s^2]: far
#: beyond any arm these laws drive (160 turns, 9500 rpm, the acceleration of a quintic
#: move of 1 rad in 3 ms) and far inside what the law's arithmetic survives.  A value
#: beyond them is a fault upstream (a unit slip, a diverged solver), not a motion: it is
#: refused by name as NaN is, where 1e308 used to pass and give tau = NaN (issue 22).
JOINT_ANGLE_LIMIT, JOINT_RATE_LIMIT, JOINT_ACCELERATION_LIMIT = 1e3, 1e3, 1e6
#: The largest torque limit and gains a law accepts [N m, N m/rad, N m s/rad]: beyond the
#: largest industrial joints, and small enough that gain times error stays finite.
TORQUE_LIMIT, STIFFNESS_GAIN_LIMIT, DAMPING_GAIN_LIMIT = 1e4, 1e6, 1e5
_JOINT_LIMITS = {"theta": JOINT_ANGLE_LIMIT, "omega": JOINT_RATE_LIMIT,
                 "alpha": JOINT_ACCELERATION_LIMIT}


class JointTorqueLaw(Block):
    """Static two-joint torque law: reference angles, rates and accelerations and the
    measured angles and rates in, joint torques out (all with direct feedthrough).
    Subclasses implement :meth:`torques`."""

    INPUTS = tuple(
        Signal(f"{kind}{i}_ref", unit, f"joint {i} reference {what}",
               min=-_JOINT_LIMITS[kind], max=_JOINT_LIMITS[kind])
        for i in (1, 2)
        for kind, unit, what in (("theta", "rad", "angle"), ("omega", "rad/s", "rate"),
                                 ("alpha", "rad/s2", "acceleration"))
    ) + tuple(
        Signal(f"{kind}{i}", unit, f"measured joint {i} {what}",
               min=-_JOINT_LIMITS[kind], max=_JOINT_LIMITS[kind])
        for i in (1, 2) for kind, unit, what in (("theta", "rad", "angle"), ("omega", "rad/s", "rate")))
    OUTPUTS = (Signal("tau1", "N.m", "joint 1 torque command"),
               Signal("tau2", "N.m", "joint 2 torque command"))
    FEEDTHROUGH = {"tau1": tuple(s.name for s in INPUTS), "tau2": tuple(s.name for s in INPUTS)}
    DEFAULT_STOP_TIME = 3.0
    DEFAULT_STEP_SIZE = 1e-3

    def torques(self, ref_theta, ref_omega, ref_alpha, theta, omega) -> np.ndarray:
        """Joint torques [N m] from references [rad, rad/s, rad/s^2] and measurements."""
        raise NotImplementedError

    def outputs(self) -> dict:
        u = self.inputs
        tau = self.torques((u["theta1_ref"], u["theta2_ref"]), (u["omega1_ref"], u["omega2_ref"]),
                           (u["alpha1_ref"], u["alpha2_ref"]), (u["theta1"], u["theta2"]),
                           (u["omega1"], u["omega2"]))
        return {"tau1": float(tau[0]), "tau2": float(tau[1])}


class JointPDController(JointTorqueLaw):
    """tau = sat( tau_ff + Kp (theta_ref - theta) + Kd F(omega_ref - omega) ).

    ``F`` is a first-order low-pass of time constant ``tf<i>`` [s] on joint i's rate
    error, ``F(s) = 1 / (tf s + 1)`` (``tf<i> = 0``, the default: none, ``F = 1``), so
    that with the rate the derivative of the angle the law from the angle error is
    ``kp + kd s / (tf s + 1)``, the filtered PD that
    :func:`~controllers.design.tune_pid` tunes (``kind="pd"``).  The filter's state
    ``rate_error<i>_filtered`` [rad/s] starts at 0 and is advanced exactly for the rate
    error held over each step, ``xf <- a xf + (1 - a) e``, ``a = exp(-h / tf)``; its
    continuous form (:func:`~controllers.design.as_iosystem`) is
    ``xf' = (e - xf) / tf`` (:meth:`derivatives`).  A joint without a filter has no state.

    The feedforward is the inverse dynamics of the rigid two-link arm with the
    inertias of the flexible arm (parameters with the arm's names, SI units),
    evaluated on the reference: tau_ff = M(theta_ref) alpha_ref + c(theta_ref, omega_ref).
    Each torque is clipped to [-tau_max_i, tau_max_i].  The law is static: the outputs
    depend directly on the inputs at the same instant (declared in FEEDTHROUGH).

    Default gains: stiff enough that the joints of the docs/benchmarks.md §1 arm stay within
    2 % of the 15 deg / 10 deg move from 1.75 s on (the joints are collocated with the
    motors, so joint PD cannot damp the link vibration: the end effector keeps swinging
    by about 20-30 cm peak to peak, the job of the better controllers).  The rates are
    measured, so the D term needs no filter; the gains are chosen for the margins of the
    loops on the linear model sampled at 1 ms (:meth:`feedback_system`, checked in
    tests/test_controllers/design/test_control_arm.py): joint 1 at least 45 deg where its loop gain dips
    through 0 dB around the 0.43 Hz antiresonance (the locked-joint link mode), which
    needs ``kd1 * 2 pi 0.43 Hz >= kp1``, and joint 2 at least 45 deg at the crossover
    ``kd2 / J ~ 140 Hz`` (J: the joint-2 rotor against the stator inertia at the tip of
    link 1), where the 1 ms hold lags by ``pi f dt``; no phase crossover (infinite
    gain margins).  The demo's earlier gains (kd1 = 40, kd2 = 15) had 39 and 36 deg.
    """

    PARAMETERS = (
        Parameter("kp1", 200.0, "N.m/rad", "proportional gain, joint 1", min=0.0,
                  max=STIFFNESS_GAIN_LIMIT),
        Parameter("kd1", 100.0, "N.m.s/rad", "derivative gain, joint 1", min=0.0,
                  max=DAMPING_GAIN_LIMIT),
        Parameter("kp2", 80.0, "N.m/rad", "proportional gain, joint 2", min=0.0,
                  max=STIFFNESS_GAIN_LIMIT),
        Parameter("kd2", 8.0, "N.m.s/rad", "derivative gain, joint 2", min=0.0,
                  max=DAMPING_GAIN_LIMIT),
        Parameter("tau_max1", 2.0, "N.m", "torque limit, joint 1", min=0.0, exclusive_min=True,
                  max=TORQUE_LIMIT),
        Parameter("tau_max2", 1.0, "N.m", "torque limit, joint 2", min=0.0, exclusive_min=True,
                  max=TORQUE_LIMIT),
        Parameter("feedforward", 1, "", "1: rigid-model feedforward on, 0: off", min=0, max=1),
        Parameter("tf1", 0.0, "s", "time constant of the low-pass on joint 1's rate error "
                  "(0: none)", min=0.0, max=1e3),
        Parameter("tf2", 0.0, "s", "time constant of the low-pass on joint 2's rate error "
                  "(0: none)", min=0.0, max=1e3),
    ) + RIGID_ARM_PARAMETERS

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self.rigid = RigidTwoLinkArm.from_flexible(**p)
        self.kp = np.array([p["kp1"], p["kp2"]])
        self.kd = np.array([p["kd1"], p["kd2"]])
        self.tau_max = np.array([p["tau_max1"], p["tau_max2"]])
        self._c_gains = pd_layout().pack(**{n: p[n] for n in pd_layout().names})
        self._c_rigid = self.rigid.c_parameters
        self.tf = np.array([p["tf1"], p["tf2"]])
        #: the joints with a rate filter (their filters are the block's state)
        self.filtered = [i for i in (0, 1) if self.tf[i] > 0.0]
        self.reset()

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self.xf = np.zeros(2)         # the filtered rate errors [rad/s]

    def rate_errors(self) -> np.ndarray:
        """omega_ref - omega [rad/s] of both joints, from the current inputs."""
        u = self.inputs
        return np.array([u["omega1_ref"] - u["omega1"], u["omega2_ref"] - u["omega2"]])

    def outputs(self) -> dict:
        if not self.filtered:
            return super().outputs()
        u = dict(self.inputs)
        for i in self.filtered:       # the law sees the filtered rate error
            u[f"omega{i + 1}"] = u[f"omega{i + 1}_ref"] - self.xf[i]
        tau = self.torques((u["theta1_ref"], u["theta2_ref"]), (u["omega1_ref"], u["omega2_ref"]),
                           (u["alpha1_ref"], u["alpha2_ref"]), (u["theta1"], u["theta2"]),
                           (u["omega1"], u["omega2"]))
        return {"tau1": float(tau[0]), "tau2": float(tau[1])}

    def do_step(self, t: float, h: float) -> None:
        e = self.rate_errors()
        for i in self.filtered:       # exact for the rate error held over the step
            a = math.exp(-h / self.tf[i])
            self.xf[i] = a * self.xf[i] + (1.0 - a) * e[i]
        self.time = t + h

    def derivatives(self):
        """(rhs, args): the filters' continuous form ``xf' = (e - xf) / tf`` over the
        filtered joints' states, ``rhs(x, e)`` with the rate errors ``e`` held."""
        tf = self.tf[self.filtered]
        return (lambda x, e: (e - x) / tf), (self.rate_errors()[self.filtered],)

    def vector_state(self) -> VectorState:
        idx = self.filtered

        def set_x(block, x):
            block.xf[idx] = np.asarray(x, float)
        return VectorState([f"rate_error{i + 1}_filtered" for i in idx],
                           lambda block: block.xf[idx].copy(), set_x)

    def _get_internal(self):
        return {"xf": self.xf.copy()}

    def _set_internal(self, internal):
        self.xf = np.array(internal["xf"], dtype=float).reshape(2)

    def feedback_system(self):
        """The feedback part ``(theta1, theta2, omega1, omega2) -> (tau1, tau2)``
        (reference and feedforward zero, no saturation) as a ``StateSpace`` with the
        feedback sign inside (``tau = -Kp theta - Kd F(omega)``), for
        :func:`~controllers.design.loop_margins`: static without rate filters,
        continuous time with them (their states ``rate_error<i>_filtered``)."""
        # imported here, not with the law: see controllers.laws.pid.pid_transfer_function
        import control as ct

        idx = self.filtered
        A, B = np.zeros((len(idx), len(idx))), np.zeros((len(idx), 4))
        C, D = np.zeros((2, len(idx))), np.zeros((2, 4))
        D[[0, 1], [0, 1]] = -self.kp
        for i in (0, 1):
            if i in idx:
                k = idx.index(i)
                A[k, k], B[k, 2 + i], C[i, k] = -1.0 / self.tf[i], -1.0 / self.tf[i], self.kd[i]
            else:
                D[i, 2 + i] = -self.kd[i]
        return ct.ss(A, B, C, D, inputs=["theta1", "theta2", "omega1", "omega2"],
                     outputs=["tau1", "tau2"], name="joint_pd",
                     states=[f"rate_error{i + 1}_filtered" for i in idx] or 0)

    def torques(self, ref_theta, ref_omega, ref_alpha, theta, omega) -> np.ndarray:
        """The control law on arrays (rad, rad/s, rad/s^2 in; N m out), evaluated by the
        C law (``native/joint_laws.c``, the one its C FMU runs)."""
        ref = np.array([*ref_theta, *ref_omega, *ref_alpha], dtype=float)
        meas = np.array([*theta, *omega], dtype=float)
        tau = np.empty(2)
        joint_laws().joint_pd_torques(self._c_gains, self._c_rigid, ref, meas, tau)
        return tau

    def c_model(self) -> CModel:
        """The law in C (``native/joint_laws.c``, the code this block runs; the rate
        filters in the glue, with the same arithmetic as :meth:`do_step`): the gains,
        limits, filter time constants and feedforward switch stay settable; the rigid arm
        of the feedforward is built in at export."""
        layout = pd_layout()
        gains = layout.c_initializer(**{**{n: f"PAR_{n}" for n in layout.names},
                                        "feedforward": "(double)PAR_feedforward"})
        # the rate filters: Z(i) the filtered rate error of joint i+1 [rad/s], advanced
        # exactly for the held error as the block's do_step; the law reads
        # omega_ref - Z(i) as the measured rate of a filtered joint
        rates = "".join(f"""
    meas[{2 + i}] = PAR_tf{i + 1} > 0.0 ? IN_omega{i + 1}_ref - Z({i}) : IN_omega{i + 1};"""
                        for i in (0, 1))
        updates = "".join(f"""
    if (PAR_tf{i + 1} > 0.0) {{
        const double a = exp(-h / PAR_tf{i + 1});
        Z({i}) = a * Z({i}) + (1.0 - a) * (IN_omega{i + 1}_ref - IN_omega{i + 1});
    }}""" for i in (0, 1))
        glue = f"""
int model_setup(ModelData *d, char *msg, size_t n) {{ (void)d; (void)msg; (void)n; return 0; }}
void model_initial(ModelData *d) {{ Z(0) = 0.0; Z(1) = 0.0; }}
void model_derivatives(const ModelData *d, const double *x, double *dx) {{ (void)d; (void)x; (void)dx; }}
int model_validity(const ModelData *d, char *msg, size_t n) {{ (void)d; (void)msg; (void)n; return 0; }}

void model_update(ModelData *d, double h) {{{updates}
}}

void model_outputs(ModelData *d) {{
    const double g[{len(layout.names)}] = {gains};
    const double ref[6] = {{IN_theta1_ref, IN_theta2_ref, IN_omega1_ref, IN_omega2_ref,
                           IN_alpha1_ref, IN_alpha2_ref}};
    double meas[4] = {{IN_theta1, IN_theta2, IN_omega1, IN_omega2}};
    double tau[2];{rates}
    joint_pd_torques(g, RIGID, ref, meas, tau);
    OUT_tau1 = tau[0];
    OUT_tau2 = tau[1];
}}
"""
        return CModel(glue, c_sources=JOINT_LAWS_C_SOURCES, api=("RIGID_API", "LAWS_API"),
                      fixed_parameters=RIGID_PARAMETER_NAMES, tables={"RIGID": self._c_rigid},
                      n_discrete=2, state_names=("rate_error1_filtered",
                                                 "rate_error2_filtered"))

