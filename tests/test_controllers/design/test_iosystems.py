"""Blocks as python-control systems (issue 26, item 2): every block through
``as_iosystem`` in ``control.interconnect``, ``input_output_response`` and
``linearize``; a tuning result as the Block it tuned; one "not settled" value."""
from __future__ import annotations

import warnings

import control as ct
import numpy as np
import pytest

from controllers.design import (
    NOT_SETTLED,
    DesignError,
    DesignWarning,
    as_iosystem,
    closed_loop_move,
    joint_pd_controller,
    linearize_arm,
    move_report,
    settled_move,
    tune_pid,
)
from controllers.laws import (
    ArmLQGController,
    JointPDController,
    NotchFilter,
    PIDController,
    QuinticJointTrajectory,
    default_design_json,
    design_from_json,
)
from mbdcore.models.manipulator import ARM_OUTPUTS, FlexibleManipulatorBlock

H = 1e-3            # the master's communication step [s]
STOP = 0.2          # the first 0.2 s of the default 2 s quintic move [s]
RECORDED = [f"arm.{n}" for n in ARM_OUTPUTS] + ["ctrl.tau1", "ctrl.tau2"]


def pd_loop(dt=None):
    """Reference, joint PD and arm as python-control systems connected by their signal
    names (the reference's ``theta1_ref``..., the arm's ``theta1``..., the PD's
    ``tau1``, ``tau2``); no external input."""
    arm = as_iosystem(FlexibleManipulatorBlock(), dt, name="arm")
    systems = [as_iosystem(QuinticJointTrajectory(), dt, name="ref"),
               as_iosystem(JointPDController(), dt, name="ctrl"), arm]
    return ct.interconnect(systems, inplist=[], outlist=RECORDED), arm.x0


@pytest.fixture(scope="module")
def master():
    return closed_loop_move(JointPDController(), QuinticJointTrajectory(), stop_time=STOP,
                            step=H)


def test_interconnect_of_the_sampled_blocks_is_the_masters_move(master):
    """The acceptance line: ``control.interconnect`` of the arm, the joint PD and the
    reference, run by ``control.input_output_response``, gives the master's move.

    Why to rounding: the sampled form (``as_iosystem(block, dt)``) is the map the
    master's Jacobi step computes, ``x[k+1]`` = one ``do_step(t_k, dt)`` of the arm with
    the torque held (the arm's own integrator, its "auto" substeps included) and the
    torque the PD's output from the samples at ``t_k``: the same operations on the same
    numbers, so the two runs differ by the order of a few additions at most (1e-15 N m
    measured), far inside the 1e-9 asked.  The continuous forms are no such pair: the
    master holds the torque over a step, the ODE does not (next test)."""
    loop, x0 = pd_loop(H)
    t = H * np.arange(int(round(STOP / H)) + 1)
    resp = ct.input_output_response(loop, t, 0, x0)
    np.testing.assert_allclose(master["time"], t, rtol=0, atol=1e-15)
    for k, name in enumerate(RECORDED):
        np.testing.assert_allclose(resp.outputs[k], master[name], rtol=0, atol=1e-12,
                                   err_msg=name)
    assert np.abs(master["arm.w1"]).max() > 1e-3     # the link bends: something happened


def test_the_continuous_closed_loop_is_the_masters_as_the_step_shrinks(master):
    """The continuous forms (the arm's ODE, the PD and the reference static) closed by
    ``interconnect`` and integrated by ``input_output_response`` (RK45 at rtol 1e-9):
    the master holds the torque over each step, an error of first order in the step,
    so halving the step halves the distance (ratio 1.92 measured from 0.5 to 0.25 ms;
    2 in the limit) and the move at 0.25 ms lies within 5e-8 rad of the continuous one
    (4.1e-8 measured for theta1)."""
    loop, x0 = pd_loop()
    assert loop.dt == 0 and loop.nstates == len(x0)
    t = H * np.arange(int(round(STOP / H)) + 1)
    resp = ct.input_output_response(loop, t, 0, x0, solve_ivp_kwargs={"rtol": 1e-9,
                                                                       "atol": 1e-12})
    dist = {}
    for h in (5e-4, 2.5e-4):
        run = closed_loop_move(JointPDController(), QuinticJointTrajectory(), stop_time=STOP,
                               step=h)
        every = int(round(H / h))
        dist[h] = [np.abs(run[n][::every] - resp.outputs[k]).max()
                   for k, n in enumerate(RECORDED[:2])]        # theta1, theta2
    for coarse, fine in zip(dist[5e-4], dist[2.5e-4]):
        assert 1.8 < coarse / fine < 2.2
    assert max(dist[2.5e-4]) < 5e-8


def test_linearize_of_the_arm_block_is_the_arms_linear_model():
    """``control.linearize`` of the arm block's continuous form (forward differences of
    its right-hand side) equals the analytic Jacobians of ``linearize_arm``: A and B
    to the differencing error (5e-8 of |A|), C as python-control differences the
    model's own outputs (``jacobian="fd"``; the tip's foreshortening is quadratic in
    the modal amplitudes, so a forward difference carries eps times its curvature)."""
    arm = as_iosystem(FlexibleManipulatorBlock(), name="arm")
    lin = ct.linearize(arm, arm.x0, [0.0, 0.0], copy_names=True)
    exact, fd = linearize_arm(), linearize_arm(jacobian="fd")
    assert lin.input_labels == ["tau1", "tau2"] and lin.output_labels == list(ARM_OUTPUTS)
    assert lin.state_labels == exact.state_labels
    np.testing.assert_allclose(lin.A, exact.A, rtol=0, atol=5e-8 * np.abs(exact.A).max())
    np.testing.assert_allclose(lin.B, exact.B, rtol=0, atol=5e-8 * np.abs(exact.B).max())
    np.testing.assert_allclose(lin.C, fd.C, rtol=0, atol=1e-9)


def test_the_tuned_controller_block_linearises_to_the_tuned_transfer_function():
    """A PID tuned on a sampled plant (a motor 1/(s (0.1 s + 1)) at 1 ms): its Block,
    ``tuning.controller()``, sampled at the plant's step and linearised by
    python-control, is the tuned ``C(z)`` from the error (the block's y -> u with the
    sign of feedback, u = -C y): the same law, its filter and integral exact for a
    held input, compared at frequencies up to near Nyquist to the rounding a forward
    difference of a linear map carries (1e-8 relative)."""
    plant = ct.c2d(ct.ss(ct.tf([1.0], [0.1, 1.0, 0.0])), H)
    tuning = tune_pid(plant, bandwidth_hz=10.0, phase_margin_deg=50.0)
    assert set(tuning.params) == {"kp", "ki", "kd", "tf"} and tuning.params["tf"] > 0
    block = tuning.controller()
    assert isinstance(block, PIDController)
    assert {k: block.params[k] for k in tuning.params} == tuning.params
    lin = ct.linearize(as_iosystem(block, H, inputs=["y"]), np.zeros(2), [0.0],
                       copy_names=True)
    assert lin.dt == H and lin.state_labels == ["integral", "filter"]
    w = 2 * np.pi * np.array([0.1, 1.0, 10.0, 100.0, 400.0])
    got = -np.squeeze(ct.frequency_response(lin, w).complex)
    tuned = np.squeeze(ct.frequency_response(tuning.transfer_function, w).complex)
    np.testing.assert_allclose(got, tuned, rtol=1e-8)
    text = repr(tuning)
    assert text.count("\n") == 0 and len(text) < 200 and "kp=" in text and "deg" in text
    assert tuning.margins["phase_margin_deg"] == pytest.approx(50.0, abs=0.1)


def test_the_joint_pd_built_from_two_tunings_is_the_tuned_filtered_pd():
    """Each joint of the arm tuned as a PD (``kind="pd"``: ``kp + kd s / (tf s + 1)``
    on the angle error) on its channel of the linear arm; the joint PD built from the
    two (its rate filters ``tf<i>``), linearised by python-control in its continuous
    form, has from joint i's angle error the tuned C(s) once its rate input is the
    angle's derivative (``C = -(G_theta + s G_omega)``): the same rational function, to
    the rounding of a difference of a linear map (measured 3e-16 relative)."""
    plant = linearize_arm(outputs=("theta1", "theta2"))
    with warnings.catch_warnings():         # the flexible modes cross 0 dB elsewhere too
        warnings.simplefilter("ignore", DesignWarning)
        tunings = [tune_pid(plant, f, 50.0, kind="pd", input=f"tau{i}", output=f"theta{i}")
                   for i, f in ((1, 0.5), (2, 5.0))]
    pd = joint_pd_controller(*tunings, feedforward=0)
    assert [pd.params[f"tf{i}"] for i in (1, 2)] == [t.params["tf"] for t in tunings]
    sys = as_iosystem(pd, inputs=["theta1", "omega1", "theta2", "omega2"])
    assert sys.dt == 0 and sys.state_labels == ["rate_error1_filtered", "rate_error2_filtered"]
    lin = ct.linearize(sys, np.zeros(2), np.zeros(4))
    w = 2 * np.pi * np.array([0.05, 0.5, 5.0, 50.0, 500.0])
    G = ct.frequency_response(lin, w).complex
    for i, tuning in enumerate(tunings):
        law = -(G[i, 2 * i] + 1j * w * G[i, 2 * i + 1])
        tuned = np.squeeze(ct.frequency_response(tuning.transfer_function, w).complex)
        np.testing.assert_allclose(law, tuned, rtol=1e-9)
    with pytest.raises(DesignError, match="joint 1: the tuning has integral action"):
        joint_pd_controller(tune_pid(ct.tf([1.0], [1.0, 1.0, 0.0]), 1.0, 60.0), tunings[1])


def test_the_linear_laws_closed_forms_are_the_linearisations_of_their_blocks():
    """A linear law's state space is ``control.linearize(as_iosystem(law, dt), x, u)``
    for every law alike; the closed forms some laws keep (the notch's biquad, the
    joint PD's feedback part with a rate filter, the default LQG design's feedback part
    ``LQGDesign.statespace()``) are the same systems, to the rounding of a forward
    difference of a linear map (1e-8 relative; 1e-15 measured for the first two, 1e-13
    of the largest gain for the LQG, whose 12 states carry gains up to 177 N m/rad)."""
    notch = NotchFilter(frequency=2.63, zeta_pole=0.2, dt=H)
    lin = ct.linearize(as_iosystem(notch, H), np.zeros(2), [0.0], copy_names=True)
    assert lin.dt == H and lin.state_labels == ["s1", "s2"]
    w = 2 * np.pi * np.array([0.1, 1.0, 2.63, 10.0, 300.0])
    np.testing.assert_allclose(ct.frequency_response(lin, w).complex,
                               ct.frequency_response(notch.transfer_function(), w).complex,
                               rtol=1e-8, atol=1e-12)
    pd = JointPDController(tf1=0.02, feedforward=0)
    measured = ["theta1", "theta2", "omega1", "omega2"]
    lin = ct.linearize(as_iosystem(pd, inputs=measured), np.zeros(1), np.zeros(4))
    closed = pd.feedback_system()
    np.testing.assert_allclose(ct.frequency_response(lin, w).complex,
                               ct.frequency_response(closed, w).complex, rtol=1e-8)
    design = design_from_json(default_design_json())
    lqg = as_iosystem(ArmLQGController(feedforward=0), design.dt, inputs=design.measured)
    lin = ct.linearize(lqg, lqg.x0, np.zeros(len(design.measured)))
    closed = ct.frequency_response(design.statespace(), w).complex
    np.testing.assert_allclose(ct.frequency_response(lin, w).complex, closed, rtol=0,
                               atol=1e-8 * np.abs(closed).max())


def test_as_iosystem_names_what_it_refuses():
    with pytest.raises(ValueError, match="PIDController has a discrete or constrained state "
                       r"\(integral, filter\) .* give dt"):
        as_iosystem(PIDController())
    with pytest.raises(ValueError, match="dt = -0.001: the sample time"):
        as_iosystem(PIDController(), -1e-3)
    with pytest.raises(KeyError, match="unknown output of JointPDController 'tau3'"):
        as_iosystem(JointPDController(), outputs=["tau3"])
    with pytest.raises(DesignError, match="kind = 'p'"):
        tune_pid(ct.tf([1.0], [1.0, 1.0, 0.0]), 1.0, 60.0, kind="p")


def record(settle_at, stop, dt=0.01):
    """A synthetic record of a move whose joints arrive at ``settle_at`` [s] (None:
    never) and whose end effector then swings by 2 mm."""
    t = np.arange(0.0, stop + dt / 2, dt)
    target = np.array([0.2617993877991494, 0.17453292519943295])
    arrived = t >= (settle_at if settle_at is not None else np.inf)
    theta = np.where(arrived[:, None], target, 0.5 * target)
    rigid = 0.5 * np.exp(1j * theta[:, 0]) + 0.5 * np.exp(1j * theta.sum(axis=1))
    tip = rigid + 1e-3 * np.sin(2 * np.pi * 3.0 * t)
    return {"time": t, "arm.theta1": theta[:, 0], "arm.theta2": theta[:, 1],
            "arm.x_tip": tip.real, "arm.y_tip": tip.imag, "ctrl.tau1": 0 * t,
            "ctrl.tau2": 0 * t}


def test_a_move_not_settled_is_inf_in_every_report():
    """One "not settled" value, inf (validation's docstring): a move whose joints never
    arrive, and one that arrives too late for the record to hold the 1 s window, give
    inf wherever they are reported; a settled one gives its 2 mm."""
    never = record(None, 3.0)
    assert settled_move(never)["move_time"] == NOT_SETTLED == np.inf
    assert settled_move(never)["residual_vibration"] == NOT_SETTLED
    assert move_report(never, 2.0)["residual_vibration"] == NOT_SETTLED
    late = record(2.5, 3.0)
    assert move_report(late, 2.0)["residual_vibration"] == NOT_SETTLED
    assert move_report(late, 2.0)["move_time"] == pytest.approx(2.5)
    settled = record(1.0, 3.0)
    assert move_report(settled, 2.0)["residual_vibration"] == pytest.approx(2e-3, rel=0.02)
