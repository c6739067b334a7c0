"""Sweep the joint-1 PD gain and the payload, in parallel processes (one per CPU), or on a
Dask cluster given its scheduler's address; the progress on stderr says how many cases are
done, the cases per second and the time left.
Writes the table (tune_manipulator.csv: payload [kg], kp1 [N m/rad], residual vibration
[m]) and the figure of the residual vibration (controllers.design.validation: the end effector's
peak-to-peak deflection over the second after the joints settle, as the demo and the
other examples report it).

    python examples/tune_manipulator.py [results_dir] [dask_scheduler_address]
"""
import sys
from pathlib import Path

import numpy as np

from controllers.design.tuning import evaluate_move
from mbdcore.sweep import dask_executor, sweep
from flexcosim.console import ProgressPrinter, terminal_logging
from mbdcore.timeseries import axis_label


def main(out="results", scheduler=None):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    kps, payloads = (100.0, 200.0, 400.0), (0.05, 0.1, 0.2)
    cases = [{"ctrl": {"kp1": kp}, "arm": {"m_p": mp}, "step": 2e-3} for mp in payloads for kp in kps]
    executor, client = dask_executor(scheduler) if scheduler else (None, None)
    try:
        with ProgressPrinter("sweep", "cases") as progress:
            results = sweep(evaluate_move, cases, executor, progress=progress)
    finally:
        if client is not None:
            client.close()
    grid = np.array([r["residual_vibration"] for r in results]).reshape(len(payloads), len(kps))
    for mp, row in zip(payloads, grid):
        print(f"payload {mp:.2f} kg, residual end-effector vibration: "
              + ", ".join(f"kp1={kp:g}: " + (f"{1000 * v:.2f} mm" if np.isfinite(v) else
                                               "joints not settled 1 s before the record ends")
                          for kp, v in zip(kps, row)))
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(6, 4))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for mp, row in zip(payloads, grid):
        ax.plot(kps, 1000 * row, "o-", label=f"payload {mp} kg")
    ax.set_xlabel(axis_label("kp1", "N.m/rad"))
    ax.set_ylabel(axis_label("residual end-effector vibration, p-p", "mm"))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.savefig(out / "tune_manipulator.png", dpi=110)
    table = np.array([(mp, kp, v) for mp, row in zip(payloads, grid) for kp, v in zip(kps, row)])
    np.savetxt(out / "tune_manipulator.csv", table, delimiter=",", comments="", fmt="%.17g",
               header="payload_kg,kp1_Nm_per_rad,residual_vibration_m")
    print(f"results (CSV; inf: joints not settled) and plot in {out}")


if __name__ == "__main__":
    with terminal_logging():     # warnings as one line each on stderr, results on stdout
        main(*sys.argv[1:3])
