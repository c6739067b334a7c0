"""Control design as a control engineer reads it (issue 13, items 26-28): PID tuning on
one channel of the arm's own linear model, the rigid modes of modal tables, controllers
that connect by name, figures that are figures (Bode phase in the principal range,
margins marked, units on the axes)."""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import control as ct
import numpy as np
import pytest

from controllers.design import (
    ARM_SIGNAL_UNITS,
    DesignWarning,
    linearize_arm,
    minimal_realization,
    modal_table,
    plot_bode,
    plot_step,
    tune_pid,
)
from controllers.design.margins import principal_phase
from controllers.laws.joint_pd import JointPDController


def arm_channel_tuning(bandwidth_hz, kind="pd", **kw):
    plant = linearize_arm(outputs=("theta1", "theta2"))
    return tune_pid(plant, bandwidth_hz, 50.0, kind=kind, input="tau1", output="theta1", **kw)


# -- item 26: tune_pid on the arm ----------------------------------------------------------
def test_one_channel_of_the_arm_loses_the_other_joints_rigid_mode():
    """tau1 -> theta1 cannot move or see the rigid mode of joint 2 (two of the four
    eigenvalues at the origin); the minimal realization drops exactly those and keeps
    the channel's frequency response."""
    full = linearize_arm(outputs=("theta1",))[0, 0]
    reduced = minimal_realization(full)
    assert reduced.removed == 2 and reduced.nstates == full.nstates - 2
    assert np.sum(np.abs(np.linalg.eigvals(reduced.A)) < 1e-4) == 2
    w = 2 * np.pi * np.logspace(-2, 2, 200)
    g_full = ct.frequency_response(full, w).complex
    g_red = ct.frequency_response(reduced, w).complex
    np.testing.assert_allclose(g_red, g_full, rtol=1e-7)
    assert reduced.input_labels == ["tau1"] and reduced.output_labels == ["theta1"]


@pytest.mark.parametrize("bandwidth_hz", [0.5, 2.0])
def test_tune_pid_on_the_arms_linear_model_meets_the_phase_margin(bandwidth_hz):
    """Joint 1's PD on tau1 -> theta1 of the linear arm: the loop is stable and crosses
    over at the bandwidth with the phase margin asked, by python-control's margins.
    The undamped link modes make it cross 0 dB at other frequencies too, with less
    margin (measured: 16.0 deg at 16.1 Hz for 0.5 Hz, 17.7 deg at 0.47 Hz for 2 Hz):
    that is said by a DesignWarning, with the margin python-control finds."""
    with pytest.warns(DesignWarning, match="crosses 0 dB"):
        tuned = arm_channel_tuning(bandwidth_hz)
    loop = ct.series(tuned.plant, tuned.transfer_function)
    assert ct.feedback(loop, 1).poles().real.max() < 0
    _, pm, _, _, wgc, _ = ct.stability_margins(loop, returnall=True)
    k = int(np.argmin(np.abs(np.asarray(wgc) / (2 * np.pi) - bandwidth_hz)))
    assert wgc[k] / (2 * np.pi) == pytest.approx(bandwidth_hz, rel=1e-3)
    assert pm[k] == pytest.approx(50.0, abs=1.0)
    # the smallest margin over every crossover, undamped resonances included
    assert tuned.margins["phase_margin_deg"] == pytest.approx(ct.stability_margins(loop)[1],
                                                              abs=0.1)
    assert len(tuned.margins["crossover_hz"]) == len(wgc)
    here = int(np.argmin(np.abs(np.asarray(tuned.margins["crossover_hz"]) - bandwidth_hz)))
    assert tuned.margins["phase_margins_deg"][here] == pytest.approx(50.0, abs=1.0)


def test_tune_pid_says_where_the_loop_has_less_phase_margin_than_asked():
    with pytest.warns(DesignWarning, match=r"PD tuned for 50 deg of phase margin at 2 Hz: the "
                      r"loop crosses 0 dB 9 times .* its phase margin is 17\.7 deg, at 0\.472 Hz"):
        tuned = arm_channel_tuning(2.0)
    assert tuned.margins["phase_margin_deg"] == pytest.approx(17.7, abs=0.1)
    # a single crossover: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", DesignWarning)
        tune_pid(ct.tf([1.0], [1.0, 1.0, 0.0]), 1.0, 60.0)


# -- item 27 ---------------------------------------------------------------------------------
def test_modal_table_reports_rigid_modes_as_rigid():
    rows = modal_table(linearize_arm())
    rigid = [r for r in rows if r["rigid"]]
    assert len(rigid) == 4                       # two free joints, each a double integrator
    assert all(np.isnan(r["damping"]) and r["frequency"] == 0.0 for r in rigid)
    flexible = [r for r in rows if not r["rigid"]]
    assert all(abs(r["damping"]) < 1e-9 and r["frequency"] > 1.0 for r in flexible)
    assert rows[:4] == rigid
    # the same modes sampled
    sampled = modal_table(ct.c2d(linearize_arm(), 1e-3))
    assert sum(r["rigid"] for r in sampled) == 4


def test_tuned_controller_connects_by_name():
    with pytest.warns(DesignWarning):
        tuned = arm_channel_tuning(0.5)
    assert tuned.transfer_function.input_labels == ["theta1_error"]
    assert tuned.transfer_function.output_labels == ["tau1"]
    error = ct.summing_junction(inputs=["theta1_ref", "-theta1"], output="theta1_error")
    closed = ct.interconnect([tuned.plant, tuned.transfer_function, error], inplist=["theta1_ref"],
                             outlist=["theta1"])
    step = ct.step_response(closed, np.linspace(0, 20, 4001))
    assert step.outputs[-1] == pytest.approx(1.0, abs=1e-3)
    named = tune_pid(ct.tf([1.0], [1.0, 1.0, 0.0]), 1.0, 60.0, names=("e", "u"))
    assert named.transfer_function.input_labels == ["e"] and named.transfer_function.output_labels == ["u"]


def test_plots_return_the_figure_and_stay_path_like(tmp_path):
    plant = ct.c2d(linearize_arm(outputs=("theta1", "theta2")), 1e-3)
    pd = JointPDController().feedback_system()
    loops = {}
    for i, u in enumerate(("tau1", "tau2")):
        loops[f"L at {u}"] = -ct.series(plant[:, i], pd[i, :2])   # stand-in loops
    fig = plot_bode(loops, tmp_path / "bode.png")
    assert fig.path == tmp_path / "bode.png" and Path(fig).is_file()
    assert os.fspath(fig) == str(tmp_path / "bode.png")
    phase_axis = fig.axes[1]
    for line in phase_axis.get_lines()[:1]:
        assert -270 < line.get_ydata()[0] <= 90
    legend = " ".join(t.get_text() for t in fig.axes[0].get_legend().get_texts())
    assert "PM" in legend
    step = plot_step(ct.ss(linearize_arm(outputs=("theta1",))[0, 0]), tmp_path / "step.png",
                     t_end=0.5, units=ARM_SIGNAL_UNITS)
    assert Path(step).is_file() and step.axes[0].get_ylabel() == "theta1 [rad]"


def test_bode_phase_starts_in_the_principal_range(tmp_path):
    """A double integrator's response is -1/w^2 + 0j: ``angle`` says +180 deg, or -180
    for -0j; either way the curve drawn starts at -180 deg (the loops of the arm's
    two inputs were drawn 360 deg apart)."""
    s = ct.tf("s")
    fig = plot_bode({"1/s^2": 1.0 / s**2, "PD / s^2": (1.0 + 0.5 * s) / s**2},
                    tmp_path / "bode.png")
    curves = [ln.get_ydata() for ln in fig.axes[1].get_lines() if len(ln.get_xdata()) > 100]
    assert len(curves) == 2
    assert curves[0][0] == pytest.approx(-180.0, abs=1e-6)
    assert curves[1][0] == pytest.approx(-180.0 + np.degrees(np.arctan(0.5 * 2 * np.pi * 0.05)))
    assert principal_phase(np.array([-1 + 0j, -1 + 0j]))[0] == -180.0
    assert principal_phase(np.array([complex(-1, -0.0)] * 2))[0] == -180.0


def test_bode_marks_the_phase_margin_down_to_minus_180(tmp_path):
    """The phase-margin bar at a gain crossover spans the margin: from the loop's phase
    down to -180 deg (it was drawn 180 - PM long, past -180)."""
    s = ct.tf("s")
    loop = 2.0 / (s * (s + 1.0))
    fig = plot_bode({"L": loop}, tmp_path / "bode.png")
    (segment,) = [seg for c in fig.axes[1].collections for seg in c.get_segments()]
    pm = ct.stability_margins(loop)[1]
    assert segment[:, 1].min() == pytest.approx(-180.0, abs=0.5)
    assert np.ptp(segment[:, 1]) == pytest.approx(pm, abs=0.5)


def test_bode_draws_and_marks_the_crossings_at_undamped_resonances(tmp_path):
    """The arm's PD loop crosses 0 dB twice within 1e-4 of its 16.12 Hz mode: the plot
    is refined there, and every phase-margin bar runs from the loop's phase at its
    crossover to an odd multiple of 180 deg, as long as the margin."""
    with pytest.warns(DesignWarning):
        tuned = arm_channel_tuning(0.5)
    fig = plot_bode({"L": tuned.loop}, tmp_path / "bode.png", hz=(0.05, 50.0))
    segments = [seg for c in fig.axes[1].collections for seg in c.get_segments()]
    assert len(segments) == len(tuned.margins["crossover_hz"]) == 9
    for seg, pm in zip(segments, tuned.margins["phase_margins_deg"]):
        assert np.ptp(seg[:, 1]) == pytest.approx(pm, abs=0.5)
        ends = (seg[:, 1] - 180.0) / 360.0
        assert np.min(np.abs(ends - np.round(ends))) < 1e-3
