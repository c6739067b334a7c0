"""LQG (LQR + Kalman predictor) on the flexible arm: design, margins, nonlinear validation.

    python examples/manipulator_lqr.py [results_dir]

Two references for the same regulator: the rigid one (joint quintic, straight links,
rigid feedforward), whose joints overshoot, and the two-degree-of-freedom one
(feedforward that moves the linear flexible model rest to rest, that model as the
state reference), compared with joint PD by move time (joints within 2 % from then on)
and the residual vibration after it.  Then the option of integrators on the joint
angles: margins, and the same flexible-reference move on an arm with a 50 % heavier
payload (tests/test_controllers/design/test_control_lqg_robust.py has the figures and what they show).
Last, the robustness-oriented option (``design_arm_lqg_robust``): least closed-loop
damping over payload 0.08-0.15 kg x EI +/-10 %, its margins and its moves on the
perturbed arms (tests/test_controllers/design/test_control_lqg_robust2.py).
"""
import sys
from pathlib import Path

import control as ct
import numpy as np

from controllers.design.adapters import linearize_arm
from controllers.design.arm_lqg import (
    INTEGRATED,
    MEASURED,
    arm_plant_grid,
    design_arm_lqg,
    design_arm_lqg_robust,
)
from controllers.design.margins import loop_margins
from controllers.design.plots import plot_bode
from controllers.design.realization import modal_table
from controllers.design.robustness import robustness_scan
from controllers.evaluation.validation import closed_loop_move, move_report, settled_move
from controllers.laws.arm_lqg import ArmLQGController, FlexibleArmReference
from controllers.laws.joint_pd import JointPDController
from controllers.laws.trajectory import QuinticJointTrajectory
from flexcosim.console import ProgressPrinter, terminal_logging
from flexcosim.demo import plot_closed_loop


def main(out="results"):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    design = design_arm_lqg()
    plant = ct.c2d(linearize_arm(outputs=MEASURED), design.dt)
    margins = loop_margins(plant, design.statespace())
    for m in margins:
        print(f"loop {m['input']}: gain margin {m['gain_margin_db']:.1f} dB / "
              f"{m['gain_reduction_db']:.1f} dB, phase margin {m['phase_margin_deg']:.1f} deg, "
              f"sensitivity peak {m['sensitivity_peak']:.2f}")
    plot_bode({f"L at {m['input']}": m["loop"] for m in margins}, out / "lqg_loops_bode.png")
    ctrl = ArmLQGController(design=design.to_json())
    Ad, Bd, K = (np.asarray(getattr(design, a)) for a in ("Ad", "Bd", "K"))
    closed = ct.ss(Ad - Bd @ K, Bd, K, 0, design.dt)
    for m in modal_table(closed)[:4]:
        print(f"regulator mode {m['frequency']:.3f} Hz, damping {m['damping']:.3f}")
    runs = {
        "joint PD": closed_loop_move(JointPDController(), QuinticJointTrajectory(), stop_time=3.5,
                                     progress=ProgressPrinter("joint PD")),
        "LQG, rigid reference": closed_loop_move(ctrl, QuinticJointTrajectory(), stop_time=3.5,
                                                 progress=ProgressPrinter("LQG, rigid reference")),
        "LQG, flexible model reference": closed_loop_move(
            ArmLQGController(design=design.to_json(), reference="model"),
            FlexibleArmReference(design=design.to_json()), stop_time=3.5,
            progress=ProgressPrinter("LQG, flexible model reference")),
    }
    for label, result in runs.items():
        r, s = move_report(result, 2.0), settled_move(result)
        print(f"{label:30s} joints settled (2 %) at {s['move_time']:.3f} s, residual after "
              f"that {1000 * s['residual_vibration']:.2f} mm p-p; overshoot "
              f"{100 * r['overshoot1']:.1f} % / {100 * r['overshoot2']:.1f} %")
    integral = design_arm_lqg(integrated=INTEGRATED)
    for m in loop_margins(plant, integral.statespace()):
        print(f"with integrators, loop {m['input']}: gain margins {m['gain_margin_db']:.1f} / "
              f"{m['gain_reduction_db']:.1f} dB, phase margin {m['phase_margin_deg']:.1f} deg")
    heavy = {"m_p": 0.15}
    for label, ctrl_heavy in (("LQG", ArmLQGController(design=design.to_json(), reference="model")),
                              ("LQG + integrators", ArmLQGController(design=integral.to_json(),
                                                                     reference="model"))):
        result = closed_loop_move(ctrl_heavy, FlexibleArmReference(design=design.to_json()),
                                  arm_params=heavy, stop_time=3.5,
                                  progress=ProgressPrinter(f"payload 0.15 kg, {label}"))
        r = move_report(result, 2.0, window=1.5)
        print(f"payload 0.15 kg, {label:18s} final joint error {100 * r['final_error1']:+.2f} % / "
              f"{100 * r['final_error2']:+.2f} %, end-effector vibration after the reference "
              f"(2-3.5 s) {1000 * r['vibration_after_reference']:.1f} mm p-p")
    grid = arm_plant_grid()
    robust = design_arm_lqg_robust()
    for label, d in (("default", design), ("robust", robust)):
        scan = robustness_scan(d, grid, max_frequency=10.0)
        mode = scan.least_damped[scan.worst]
        print(f"{label} LQG: least damping below 10 Hz over {len(grid)} arms "
              f"{scan.min_damping:+.4f} at {mode['frequency']:.2f} Hz "
              f"(payload {scan.worst[0]} kg, EI x{scan.worst[1]})")
    for m in loop_margins(plant, robust.statespace()):
        print(f"robust LQG, loop {m['input']}: gain margins {m['gain_margin_db']:.1f} / "
              f"{m['gain_reduction_db']:.1f} dB, phase margin {m['phase_margin_deg']:.1f} deg")
    for label, arm in (("nominal arm", {}),
                       ("m_p 0.15 kg, EI -10 %", {"m_p": 0.15, "ei1": 0.9, "ei2": 0.9}),
                       ("m_p 0.15 kg, EI +10 %", {"m_p": 0.15, "ei1": 1.1, "ei2": 1.1})):
        result = closed_loop_move(ArmLQGController(design=robust.to_json(), reference="model"),
                                  FlexibleArmReference(design=design.to_json()),
                                  arm_params=arm, stop_time=6.0,
                                  progress=ProgressPrinter(f"robust LQG, {label}"))
        s = settled_move(result)
        print(f"robust LQG, {label:22s} joints settled (2 %) at {s['move_time']:.3f} s, "
              f"residual after that {1000 * s['residual_vibration']:.2f} mm p-p")
    plot_closed_loop(runs["LQG, rigid reference"], out / "lqg_closed_loop.png",
                     title="Two-link flexible arm, LQG with the rigid reference and rigid "
                           "feedforward (co-simulation)")
    plot_closed_loop(runs["LQG, flexible model reference"], out / "lqg_2dof_closed_loop.png",
                     title="Two-link flexible arm, LQG with the flexible-model reference "
                           "(two degrees of freedom, co-simulation)")
    runs["LQG, rigid reference"].to_csv(out / "lqg_closed_loop.csv")
    runs["LQG, flexible model reference"].to_csv(out / "lqg_2dof_closed_loop.csv")
    print(f"results (CSV) and plots in {out}")


if __name__ == "__main__":
    with terminal_logging():     # warnings as one line each on stderr, results on stdout
        main(*sys.argv[1:2])
