"""PID, notch filter and computed torque blocks against closed forms; PID tuning to a
bandwidth and phase margin; each block the same in Python, python-control and as an FMU."""
from __future__ import annotations

import math

import control as ct
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from controllers.laws.computed_torque import ComputedTorqueController
from controllers.design import DesignError, SignalNameError, tune_pid
from controllers.design.adapters import block_iosys
from controllers.laws.notch import NotchFilter
from controllers.laws.pid import PIDController, pid_transfer_function
from controllers.laws.trajectory import quintic
from mbdcore.blocks import Block, Parameter, ParameterError, Signal
from mbdcore.models.rigid_arm import RigidTwoLinkArm


class FirstOrderLag(Block):
    """y' = (gain u - y) / tau, exact over a step with u held (zero-order hold)."""

    INPUTS = (Signal("u"),)
    OUTPUTS = (Signal("y"),)
    PARAMETERS = (Parameter("gain", 2.0), Parameter("tau", 0.5, "s", min=0.0, exclusive_min=True))

    def reset(self, t0=0.0):
        super().reset(t0)
        self.y = 0.0

    def outputs(self):
        return {"y": self.y}

    def do_step(self, t, h):
        target = self.params["gain"] * self.inputs["u"]
        self.y = target + (self.y - target) * math.exp(-h / self.params["tau"])
        self.time = t + h

    def _get_internal(self):
        return self.y

    def _set_internal(self, internal):
        self.y = float(internal)


def pid_loop(pid: PIDController, plant: FirstOrderLag, r: float, t_end: float, h: float,
             y_held: bool = False):
    """Sampled loop r -> PID -> plant -> y (the master's semantics: the PID reads y(t_k)
    and its output is held over the step).  ``y_held``: the plant is not stepped (y
    stays 0).  Returns t, y, u, integral."""
    pid.reset()
    plant.reset()
    n = int(round(t_end / h))
    rows = []
    for k in range(n + 1):
        pid.set_inputs({"r": r, "y": plant.y})
        u = pid.outputs()["u"]
        rows.append((k * h, plant.y, u, pid.integral))
        if k < n:
            plant.set_input("u", u)
            pid.do_step(k * h, h)
            if not y_held:
                plant.do_step(k * h, h)
    return np.array(rows).T


# -- PID ---------------------------------------------------------------------------------
def test_pi_step_response_converges_to_the_continuous_closed_form():
    """PI with its zero on the plant pole (ki/kp = 1/tau): L = kp K / (tau s), so the
    continuous loop answers a unit step with y = 1 - exp(-kp K t / tau).  The sampled
    loop (output held over each step) lags by about h/2: the error is first order in h."""
    gain, tau, kp = 2.0, 0.5, 1.0
    rate = kp * gain / tau
    errors = []
    for h in (2e-3, 1e-3):
        t, y, _, _ = pid_loop(PIDController(kp=kp, ki=kp / tau), FirstOrderLag(gain=gain, tau=tau),
                              1.0, 2.0, h)
        err = np.abs(y - (1 - np.exp(-rate * t))).max()
        assert err < rate * h                       # a delay of h/2 or less
        errors.append(err)
    assert errors[0] / errors[1] == pytest.approx(2.0, rel=0.05)


def test_pid_with_filter_and_setpoint_weights_converges_to_the_continuous_loop():
    gain, tau = 2.0, 0.5
    g = dict(kp=3.0, ki=4.0, kd=0.2, tf=0.02, b=0.6, c=0.3)
    s = ct.tf("s")
    # continuous 2-DOF PID: u = kp (b r - y) + ki/s (r - y) + kd s/(tf s + 1) (c r - y)
    d = g["kd"] * s / (g["tf"] * s + 1)
    c_r = g["kp"] * g["b"] + g["ki"] / s + d * g["c"]
    c_y = g["kp"] + g["ki"] / s + d
    P = gain / (tau * s + 1)
    t = np.linspace(0, 2.0, 2001)
    y_ref = ct.step_response(ct.minreal(P * c_r / (1 + P * c_y), verbose=False), t).outputs
    errors = []
    for h in (2e-3, 1e-3):
        tk, y, _, _ = pid_loop(PIDController(**g), FirstOrderLag(gain=gain, tau=tau), 1.0, 2.0, h)
        errors.append(np.abs(y - np.interp(tk, t, y_ref)).max())
    assert errors[1] < 5e-3
    assert errors[0] / errors[1] == pytest.approx(2.0, rel=0.1)


def test_the_sampled_pid_is_its_transfer_function():
    g = dict(kp=3.0, ki=4.0, kd=0.2, tf=0.02)
    h = 1e-3
    rng = np.random.default_rng(1)
    e = rng.normal(size=200)
    pid = PIDController(**g)
    u = []
    for k, ek in enumerate(e):
        pid.set_inputs({"r": 0.0, "y": -ek})     # e = ep = ed = -y
        u.append(pid.outputs()["u"])
        pid.do_step(k * h, h)
    lin = ct.forced_response(pid_transfer_function(**g, dt=h), h * np.arange(200), e).outputs
    np.testing.assert_allclose(u, lin, rtol=0, atol=1e-10)
    with pytest.raises(ParameterError, match="'tf' = 0.0: a derivative gain"):
        PIDController(kd=0.1)
    with pytest.raises(ParameterError, match="u_min must be below u_max"):
        PIDController(u_min=1.0, u_max=-1.0)


def test_anti_windup_under_saturation():
    """The measurement held at 0, setpoint r: the output saturates at u_max.  Without
    anti-windup the integral grows as ki r t; clamping freezes it at 0; back-calculation
    drives it to I_inf = u_max - kp r + ki r tt with time constant tt (exactly, since the
    block integrates that linear ODE exactly over each step)."""
    kp, ki, u_max, r, tt, h = 2.0, 5.0, 1.0, 1.0, 0.1, 1e-3
    common = dict(kp=kp, ki=ki, u_max=u_max, u_min=-u_max)
    t, _, u, I_none = pid_loop(PIDController(**common, anti_windup="none"), FirstOrderLag(),
                               r, 1.0, h, y_held=True)
    np.testing.assert_allclose(I_none, ki * r * t, atol=1e-12)
    np.testing.assert_array_equal(u, u_max)
    _, _, _, I_clamp = pid_loop(PIDController(**common, anti_windup="clamping"), FirstOrderLag(),
                                r, 1.0, h, y_held=True)
    assert np.all(I_clamp == 0.0)
    _, _, _, I_bc = pid_loop(PIDController(**common, tt=tt), FirstOrderLag(), r, 1.0, h,
                             y_held=True)
    I_inf = u_max - kp * r + ki * r * tt
    np.testing.assert_allclose(I_bc, I_inf * (1 - np.exp(-t / tt)), atol=1e-12)


def test_anti_windup_removes_the_overshoot_of_a_saturated_step():
    """A PI tuned for the unsaturated loop, output limited to 60 % of the steady
    effort a step of 1 needs from its first instants: the wound-up integral of the
    plain PI overshoots; with either anti-windup the overshoot is several times smaller."""
    gain, tau = 2.0, 0.5
    common = dict(kp=5.0, ki=20.0, u_min=-0.8, u_max=0.8)
    overshoot = {}
    for mode in ("none", "clamping", "back-calculation"):
        t, y, u, _ = pid_loop(PIDController(**common, anti_windup=mode),
                              FirstOrderLag(gain=gain, tau=tau), 1.0, 6.0, 1e-3)
        assert u.max() == pytest.approx(0.8) and y[-1] == pytest.approx(1.0, abs=1e-3)
        overshoot[mode] = y.max() - 1.0
    assert overshoot["none"] > 0.1
    assert overshoot["clamping"] < overshoot["none"] / 4
    assert overshoot["back-calculation"] < overshoot["none"] / 4


# -- PID tuning ----------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["pid", "pd"])
def test_tune_pid_meets_bandwidth_and_phase_margin(kind):
    plant = ct.tf([1.0], [1.0, 1.0, 0.0])                  # a motor: 1 / (s (s + 1))
    tuned = tune_pid(plant, bandwidth_hz=1.0, phase_margin_deg=60.0, kind=kind)
    gm, pm, _, _, _, _ = ct.stability_margins(ct.series(plant, tuned.transfer_function))
    _, _, _, wc = ct.margin(ct.series(plant, tuned.transfer_function))
    assert pm == pytest.approx(60.0, abs=0.1)
    assert wc / (2 * np.pi) == pytest.approx(1.0, rel=1e-3)
    assert gm == np.inf or 20 * np.log10(gm) >= 6
    assert tuned.margins["crossover_hz"] == pytest.approx([1.0], rel=1e-3)
    assert tuned.controller().params["kp"] == tuned.params["kp"]   # the gains fit the block


def test_tune_pid_on_a_sampled_plant_uses_the_sampled_law():
    h = 1e-3
    plant = ct.c2d(ct.ss(ct.tf([1.0], [0.1, 1.0, 0.0])), h)
    tuned = tune_pid(plant, bandwidth_hz=10.0, phase_margin_deg=50.0)
    loop = ct.series(plant, pid_transfer_function(**tuned.params, dt=h))
    gm, pm, _, wg, _, _ = ct.stability_margins(loop, returnall=False)
    assert pm == pytest.approx(50.0, abs=0.1) and 20 * np.log10(gm) >= 6
    assert tuned.margins["phase_margin_deg"] == pytest.approx(50.0, abs=0.1)
    first_order = ct.tf([2.0], [0.5, 1.0])
    pi = tune_pid(first_order, 2.0, 70.0, kind="pi")
    assert pi.params["kd"] == 0 and pi.margins["phase_margin_deg"] == pytest.approx(70.0, abs=0.1)


def test_impossible_tuning_requests_are_named():
    with pytest.raises(DesignError, match="a PI cannot give 60 deg of phase margin at 1 Hz"):
        tune_pid(ct.tf([1.0], [1.0, 0.0, 0.0]), 1.0, 60.0, kind="pi")
    arm_like = ct.ss(np.zeros((2, 2)), np.eye(2), np.eye(2), 0, inputs=["tau1", "tau2"],
                     outputs=["theta1", "theta2"])
    with pytest.raises(DesignError, match="name the channel with input= and output="):
        tune_pid(arm_like, 1.0, 60.0)
    with pytest.raises(SignalNameError, match="'theta3'"):
        tune_pid(arm_like, 1.0, 60.0, input="tau1", output="theta3")
    with pytest.raises(DesignError, match="not below the Nyquist frequency"):
        tune_pid(ct.c2d(ct.tf([1.0], [1.0, 1.0]), 0.01), 60.0, 60.0)


# -- notch ---------------------------------------------------------------------------------
def sine_gain(block: NotchFilter, f: float, t_end: float = 3.0, fit: float = 1.0) -> complex:
    """Complex gain of the block for a sine of f [Hz], from the last ``fit`` seconds."""
    dt = block.params["dt"]
    t = dt * np.arange(int(round(t_end / dt)))
    y = np.empty_like(t)
    for k, tk in enumerate(t):
        block.set_input("u", math.sin(2 * math.pi * f * tk))
        y[k] = block.outputs()["y"]
        block.do_step(tk, dt)
    sel = t >= t_end - fit
    basis = np.column_stack([np.sin(2 * np.pi * f * t[sel]), np.cos(2 * np.pi * f * t[sel])])
    a, b = np.linalg.lstsq(basis, y[sel], rcond=None)[0]
    return complex(a, b)


def test_notch_removes_its_frequency_and_passes_the_rest():
    f0, dt = 5.0, 1e-3
    notch = NotchFilter(frequency=f0, zeta_pole=0.3, dt=dt)
    H = notch.transfer_function()
    for f in (0.1, 1.0, f0, 20.0, 100.0, 400.0):
        g = sine_gain(NotchFilter(frequency=f0, zeta_pole=0.3, dt=dt), f)
        assert g == pytest.approx(complex(H(np.exp(2j * np.pi * f * dt))), abs=1e-6)
    assert abs(H(np.exp(2j * np.pi * f0 * dt))) < 1e-10             # far below -40 dB
    assert abs(sine_gain(NotchFilter(frequency=f0, zeta_pole=0.3, dt=dt), f0)) < 0.01
    for f in (0.05, 250.0):                                          # a decade away
        assert abs(H(np.exp(2j * np.pi * f * dt))) == pytest.approx(1.0, abs=2e-3)
    assert abs(H(1.0)) == pytest.approx(1.0, abs=1e-12) and abs(H(-1.0)) == pytest.approx(1.0, abs=1e-12)
    shallow = NotchFilter(frequency=f0, zeta_zero=0.03, zeta_pole=0.3, dt=dt).transfer_function()
    assert abs(shallow(np.exp(2j * np.pi * f0 * dt))) == pytest.approx(0.1, rel=1e-9)  # -20 dB
    with pytest.raises(ParameterError, match="below the Nyquist frequency"):
        NotchFilter(frequency=600.0, dt=1e-3)


# -- computed torque -------------------------------------------------------------------------
def test_computed_torque_on_the_rigid_arm_gives_the_designed_error_dynamics():
    """On the rigid arm it controls, without saturation, e'' + 2 zeta wn e' + wn^2 e = 0
    for each joint: from e(0) = e0, e'(0) = 0 the error is
    e0 exp(-zeta wn t) (cos wd t + zeta wn / wd sin wd t)."""
    wn, zeta = np.array([6.0, 9.0]), np.array([0.7, 0.5])
    ctrl = ComputedTorqueController(wn1=wn[0], zeta1=zeta[0], wn2=wn[1], zeta2=zeta[1],
                                    tau_max1=1e3, tau_max2=1e3)
    arm = RigidTwoLinkArm.from_flexible()
    target, T = (0.2617993877991494, 0.17453292519943295), 2.0

    def ref(t):
        return np.array([quintic(t, 0.0, e, T) for e in target]).T   # rows: theta, omega, alpha

    def rhs(t, x):
        r = ref(t)
        tau = ctrl.torques(r[0], r[1], r[2], x[:2], x[2:])
        return np.r_[x[2:], arm.accelerations(x[:2], x[2:], tau)]

    e0 = np.array([-0.05, 0.03])
    t = np.linspace(0, 3.0, 301)
    sol = solve_ivp(rhs, (0, 3.0), np.r_[-e0, 0.0, 0.0], t_eval=t, rtol=1e-11, atol=1e-12,
                    method="DOP853")
    e = np.array([ref(tk)[0] for tk in t]) - sol.y[:2].T
    wd = wn * np.sqrt(1 - zeta**2)
    closed = e0 * np.exp(-zeta * wn * t[:, None]) * (np.cos(wd * t[:, None])
                                                     + zeta * wn / wd * np.sin(wd * t[:, None]))
    np.testing.assert_allclose(e, closed, rtol=0, atol=1e-8)


# -- the same block in Python, python-control and as an FMU --------------------------------
CASES = [
    (PIDController, dict(kp=3.0, ki=4.0, kd=0.2, tf=0.02, b=0.5, c=0.2, u_min=-1.5, u_max=1.5,
                         anti_windup="back-calculation")),
    (PIDController, dict(kp=3.0, ki=4.0, u_min=-1.0, u_max=1.0, anti_windup="clamping")),
    (NotchFilter, dict(frequency=5.0, zeta_zero=0.05, zeta_pole=0.4)),
    (ComputedTorqueController, dict(wn1=5.0, wn2=7.0)),
]


@pytest.mark.parametrize("cls,params", CASES, ids=["pid-back-calculation", "pi-clamping",
                                                   "notch", "computed-torque"])
def test_same_block_in_python_python_control_and_fmu(cls, params, tmp_path):
    from fmu.fmi.build import build_fmu
    from fmu.cosim.fmu_component import FMUComponent

    h, n = 1e-3, 300
    names = cls.input_names()
    rng = np.random.default_rng(7)
    u = 0.5 * np.cumsum(rng.normal(size=(n, len(names))), axis=0) / np.sqrt(np.arange(1, n + 1))[:, None]
    block = cls(**params)
    direct = []
    for k in range(n):
        block.set_inputs(dict(zip(names, u[k])))
        direct.append([block.outputs()[o] for o in cls.output_names()])
        block.do_step(k * h, h)
    direct = np.array(direct)
    assert np.ptp(direct, axis=0).min() > 0                        # something happened

    sys = block_iosys(cls(**params), h)
    resp = ct.input_output_response(sys, h * np.arange(n), u.T, sys.x0)
    np.testing.assert_allclose(resp.outputs.reshape(len(cls.output_names()), n).T, direct,
                               rtol=0, atol=1e-12)

    fmu = FMUComponent("blk", build_fmu(cls, tmp_path, model_name=f"{cls.__name__}Test"),
                       parameters=params)
    fmu.initialize(0.0)
    try:
        setter = fmu.input_setter(names)
        got = []
        for k in range(n):
            setter(list(u[k]))
            out = fmu.get_outputs()
            got.append([out[o] for o in cls.output_names()])
            fmu.do_step(k * h, h)
    finally:
        fmu.terminate()
    np.testing.assert_allclose(np.array(got), direct, rtol=0, atol=1e-12)


def test_an_lqg_design_reads_in_one_line():
    """A design's repr says its size, signals and sample time; its matrices (12 x 12 and
    more) stay in to_json() and statespace() (issue 26: `print(design)` dumped them)."""
    from controllers.laws.arm_lqg import default_design_json, design_from_json
    design = design_from_json(default_design_json())
    text = repr(design)
    assert "\n" not in text and "[" not in text and len(text) < 200
    assert text.startswith("LQGDesign(12 states") and "dt = 0.001 s" in text
    assert "measured theta1, theta2" in text
