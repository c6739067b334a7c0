"""Deployment of a six-bay ring truss by its diagonal motors (docs/ring_truss.md).

    python examples/ring_truss_deployment.py [results_dir]

The geared truss (4 m aperture, 0.5 m high) starts folded at a bay angle of 1.0 rad
(deployment ratio 0.84); each bay's motor turns the screw of its telescopic diagonal
under the deployment-rate PI controller (0.05 m/s, at most 48 V); the latches catch the
diagonals at their deployed length and the motors are switched off.  Writes
``ring_truss_deployment.csv`` (time [s], deployment ratio [1], bay angles [rad], aperture
and its error [m], motor currents [A] and torques [N m]),
``ring_truss_configurations.png`` (three configurations above the deployment ratio and the
motor currents against time),
``ring_truss_deployment.gif`` (an animation; needs Pillow) and ``ring_truss.json`` (the
truss as a model file, written before the run: ``flexcosim build ring_truss.json`` makes
it an FMU with inputs ``voltage0`` ... ``voltage5`` [V]).  About 20 s on one core
(350 implicit steps of a 330-coordinate system).
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # threaded BLAS is slower here

import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from flexcosim.console import ProgressPrinter, terminal_logging  # noqa: E402
from mbdcore.dae.simulate import simulate  # noqa: E402
from mbdcore.models.model_file import save_model  # noqa: E402
from mbdcore.models.ring_truss import (  # noqa: E402
    DeploymentRateController,
    plot_configuration,
    ring_truss,
    write_animation,
)
from mbdcore.timeseries import TimeSeries  # noqa: E402


def main(out="results", duration=7.0, h=0.02):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    truss = ring_truss(n_bays=6, folded_angle=1.0)
    # the model file describes the truss at its initial state (latches open): written
    # before the run; the controller is not part of it (it drives the inputs)
    save_model(truss.system, out / "ring_truss.json", "six-bay ring truss folded at 1.0 rad")
    control = DeploymentRateController(truss, rate=0.05, kp=2000.0, ki=2.0e4)
    r = simulate(truss.system, duration, h, "generalized-alpha", sparse=True, feedback=control,
                 rho_inf=0.6, iteration="newton", geometric_stiffness=False,
                 progress=ProgressPrinter("ring truss deployment"))
    n = truss.n_bays
    # the project's one result type: named columns with units, written by to_csv
    columns = {"time": r.t, "deployment_ratio": [truss.deployment_ratio(q) for q in r.q]}
    units = {"deployment_ratio": "1"}
    angles = np.array([truss.bay_angles(q) for q in r.q])
    currents = np.array([truss.motor_currents(v) for v in r.v])
    torques = np.array([truss.motor_torques(v) for v in r.v])
    for k in range(n):
        columns[f"bay_angle{k}"] = angles[:, k]
        units[f"bay_angle{k}"] = "rad"
    columns["aperture"] = [truss.aperture_diameter(q) for q in r.q]
    columns["aperture_error"] = [truss.aperture_error(q) for q in r.q]
    units.update(aperture="m", aperture_error="m")
    for k in range(n):
        columns[f"motor_current{k}"] = currents[:, k]
        columns[f"motor_torque{k}"] = torques[:, k]
        units[f"motor_current{k}"], units[f"motor_torque{k}"] = "A", "N m"
    series = TimeSeries.from_columns(columns, units)
    series.to_csv(out / "ring_truss_deployment.csv")
    latches = [f.latch_time for f in truss.system.forces_list if f.kind == "latch"]
    th = np.array([truss.bay_angles(q) for q in r.q])
    when = ", ".join("not latched" if x is None else f"{x:.3g}" for x in latches)
    print(f"latched at t = {when} s; final aperture {truss.aperture_diameter(r.q[-1]):.9f} m "
          f"(error {truss.aperture_error(r.q[-1]):.2e} m); bay-angle spread "
          f"{np.abs(th - th[:, :1]).max():.1e} rad; peak motor current "
          f"{max(np.abs(truss.motor_currents(v)).max() for v in r.v):.2f} A")

    # three configurations above the deployment ratio and the motor currents over time,
    # the latter drawn by the result type itself (one axis per unit) in a subfigure
    fig = Figure(figsize=(13, 8.5), layout="constrained")
    FigureCanvasAgg(fig)
    shapes, histories = fig.subfigures(2, 1, height_ratios=[1.0, 0.9])
    picks = [0, len(r.t) // 3, len(r.t) - 1]
    for i, k in enumerate(picks):
        ax = shapes.add_subplot(1, 3, i + 1, projection="3d")
        plot_configuration(truss, r.q[k], ax)
        ax.set_title(f"t = {r.t[k]:.2f} s, ratio {truss.deployment_ratio(r.q[k]):.3f}")
    series.plot(signals=["deployment_ratio"] + [f"motor_current{k}" for k in range(n)],
                figure=histories)
    fig.suptitle("Six-bay ring truss deployed by its diagonal motors (rate PI control, "
                 "latches at the deployed length)")
    fig.savefig(out / "ring_truss_configurations.png", dpi=90)
    frames = range(0, len(r.t), max(1, len(r.t) // 40))
    if write_animation(truss, [r.t[k] for k in frames], [r.q[k] for k in frames],
                       out / "ring_truss_deployment.gif"):
        print(f"wrote {out}/ring_truss_deployment.csv, ring_truss_configurations.png and "
              "ring_truss_deployment.gif")
    else:
        print(f"wrote {out}/ring_truss_deployment.csv and ring_truss_configurations.png; no "
              "GIF: Pillow is not installed (pip install pillow)")


if __name__ == "__main__":
    with terminal_logging():     # warnings as one line each on stderr, results on stdout
        main(*sys.argv[1:2])
