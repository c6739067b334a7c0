"""LQG (LQR + Kalman predictor) on the flexible arm: design, margins, nonlinear validation.

    python examples/manipulator_lqr.py [results_dir]
"""
import sys
from pathlib import Path

import control as ct

from controllers.design import loop_margins, modal_table, plot_bode
from controllers.ioadapters import linearize_arm
from controllers.lqr import MEASURED, ArmLQGController, design_arm_lqg
from controllers.trajectory import QuinticJointTrajectory
from controllers.validation import closed_loop_move, move_report
from fmu.demo import plot_closed_loop


def main(out="results"):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    design = design_arm_lqg()
    plant = ct.c2d(linearize_arm(outputs=MEASURED), design.dt)
    margins = loop_margins(plant, design.controller())
    for m in margins:
        print(f"loop {m['input']}: gain margin {m['gain_margin_db']:.1f} dB / "
              f"{m['gain_reduction_db']:.1f} dB, phase margin {m['phase_margin_deg']:.1f} deg, "
              f"sensitivity peak {m['sensitivity_peak']:.2f}")
    plot_bode({f"L at {m['input']}": m["loop"] for m in margins}, out / "lqg_loops_bode.png")
    ctrl = ArmLQGController(design=design.to_json())
    closed = ct.ss(ctrl.Ad - ctrl.Bd @ ctrl.K, ctrl.Bd, ctrl.K, 0, design.dt)
    for m in modal_table(closed)[:4]:
        print(f"regulator mode {m['frequency']:.3f} Hz, damping {m['damping']:.3f}")
    result = closed_loop_move(ctrl, QuinticJointTrajectory(), stop_time=3.0)
    r = move_report(result, 2.0)
    print(f"residual end-effector vibration {1000 * r['residual_vibration']:.2f} mm p-p, "
          f"final joint errors {100 * r['final_error1']:+.1f} % / {100 * r['final_error2']:+.1f} %")
    plot_closed_loop(result, out / "lqg_closed_loop.png")
    print(f"plots in {out}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
