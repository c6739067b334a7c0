"""Joint PD on the flexible arm, with and without a ZV input shaper (docs/benchmarks.md §1).

    python examples/manipulator_input_shaping.py [results_dir]

The shaper is tuned to the 0.43 Hz link mode of the PD loop, identified on the linear
model.  Move time: both joints within 2 % from then on; residual vibration: the
end effector's peak-to-peak deflection over the second after it (the one definition of
controllers.evaluation.validation, as the demo and the sweep report it).  The shaped move
(1.2 s quintic + shaper) settles within 1.3x the move time of PD on the 2 s quintic.
"""
import sys
from pathlib import Path

import control as ct
import numpy as np

from controllers.design.adapters import linearize_arm
from controllers.design.realization import modal_table
from controllers.evaluation.validation import (
    closed_loop_move,
    end_effector_deflection,
    move_report,
)
from controllers.laws.input_shaping import ShapedQuinticTrajectory
from controllers.laws.joint_pd import JointPDController
from controllers.laws.trajectory import QuinticJointTrajectory
from flexcosim.console import ProgressPrinter, terminal_logging
from flexcosim.demo import plot_closed_loop
from mbdcore.timeseries import axis_label


def report_move(label, result, t_end):
    """Print and return the figures of one move (controllers.evaluation.validation.move_report)."""
    r = move_report(result, t_end)
    print(f"{label:18s} reference ends {t_end:.3f} s, joints settled (2 %) at "
          f"{r['move_time']:.3f} s, residual end-effector vibration after that "
          f"{1000 * r['residual_vibration']:.2f} mm p-p, peak torques "
          f"{r['peak_tau1']:.3f} / {r['peak_tau2']:.3f} N m")
    return r


def main(out="results"):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plant = linearize_arm(outputs=("theta1", "theta2", "omega1", "omega2"))
    G = JointPDController().feedback_system().D          # tau = G y
    mode = [m for m in modal_table(ct.ss(plant.A + plant.B @ G @ plant.C, plant.B, plant.C, 0))
            if m["damping"] < 0.1][0]
    print(f"link mode under PD: {mode['frequency']:.4f} Hz, damping {mode['damping']:.4f}")
    base = closed_loop_move(JointPDController(), QuinticJointTrajectory(), stop_time=3.5,
                            progress=ProgressPrinter("PD, 2 s quintic"))
    ref = ShapedQuinticTrajectory(shaper="zv", move_time=1.2, frequency1=mode["frequency"],
                                  zeta1=mode["damping"])
    shaped = closed_loop_move(JointPDController(), ref, stop_time=3.5,
                              progress=ProgressPrinter("PD + ZV shaper"))
    for label, res, t_end in (("PD, 2 s quintic", base, 2.0), ("PD + ZV shaper", shaped, ref.duration)):
        report_move(label, res, t_end)
    plot_closed_loop(shaped, out / "input_shaping_closed_loop.png",
                     title="Two-link flexible arm, joint PD + rigid feedforward, "
                           "ZV-shaped 1.2 s quintic (co-simulation)")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(8, 4))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for label, res in (("PD", base), ("PD + ZV", shaped)):
        e = end_effector_deflection(res["arm.theta1"], res["arm.theta2"], res["arm.x_tip"],
                                    res["arm.y_tip"])
        ax.plot(res.time, 100 * np.hypot(*e.T), label=label)
    ax.set_xlabel(axis_label("time", "s"))
    ax.set_ylabel(axis_label("end-effector deflection |e|", "cm"))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.savefig(out / "input_shaping_deflection.png", dpi=110)
    base.to_csv(out / "input_shaping_unshaped.csv")
    shaped.to_csv(out / "input_shaping_shaped.csv")
    print(f"results (CSV) and plots in {out}")


if __name__ == "__main__":
    with terminal_logging():     # warnings as one line each on stderr, results on stdout
        main(*sys.argv[1:2])
