"""Deployment of the ring truss by its diagonal motors (docs/ring_truss.md).

    python examples/ring_truss_deployment.py [results_dir] [--bays N] [--stop T]
                                             [--step H] [--folded-angle A]
                                             [--net [--net-rings K]]

By default the geared six-bay truss (4 m aperture, 0.5 m high) starts folded at a bay
angle of 1.0 rad (deployment ratio 0.84); each bay's motor turns the screw of its
telescopic diagonal under the deployment-rate PI controller (0.05 m/s, at most 48 V);
the latches catch the diagonals at their deployed length and the motors are switched
off.  ``--net`` hangs the Kevlar cable net (``--net-rings`` rings, default 1) on the
truss, slack while folded (:func:`mbdcore.models.cable_net.add_cable_net`), and the steps
are error-controlled: from ``--folded-angle 1.3`` the 4-bay truss with its net latches
at 2.8 s (``--bays 4 --stop 3``, about 20 minutes of wall time).  Prints the latch time of every bay,
the spread of the bay angles, the peak motor current (and cable tension), the energy
balance, the simulated time, step and wall time; its last line reads ``latched: K of N bays at t = T s``.  A run
that fails part-way says why, still writes what it reached and exits with status 1.  Writes
``ring_truss_deployment.csv`` (time [s], deployment ratio [1], bay angles [rad], aperture
and its error [m], motor currents [A] and torques [N m]; with the net the largest and
smallest cable tension [N]), ``ring_truss_configurations.png`` (three configurations
above the deployment ratio and the motor currents against time),
``ring_truss_deployment.gif`` (an animation; needs Pillow) and ``ring_truss.json`` (the
truss as a model file, written before the run: ``flexcosim build ring_truss.json`` makes
it an FMU with inputs ``voltage0`` ... ``voltage5`` [V]).  About 20 s on one core
(350 implicit steps of a 330-coordinate system).
"""
import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # threaded BLAS is slower here

import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from flexcosim.console import ProgressPrinter, terminal_logging  # noqa: E402
from mbdcore.models.model_file import save_model  # noqa: E402
from mbdcore.models.ring_truss import (  # noqa: E402
    plot_configuration,
    ring_truss,
    write_animation,
)
from mbdcore.models.truss_deployment import deploy_truss  # noqa: E402


def main(out="results", n_bays=6, stop=7.0, h=0.02, folded_angle=1.0, net=None):
    """Deploy, write the CSV, the figure, the animation and the model file into ``out``;
    ``net``: None, or the net's parameters (:data:`mbdcore.models.cable_net.NET_PARAMETERS`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # the model file describes the truss at its initial state (latches open): written
    # before the run; the controller is not part of it (it drives the inputs)
    save_model(ring_truss(n_bays=n_bays, folded_angle=folded_angle).system,
               out / "ring_truss.json",
               f"{n_bays}-bay ring truss folded at {folded_angle:g} rad")
    run = deploy_truss(n_bays, folded_angle, stop, net=net, h=h,
                       progress=ProgressPrinter("ring truss deployment"))
    truss, r, n = run.truss, run.result, run.n_bays
    series = run.timeseries()       # the project's one result type, written by to_csv
    series.to_csv(out / "ring_truss_deployment.csv")

    # three configurations above the deployment ratio and the motor currents over time,
    # the latter drawn by the result type itself (one axis per unit) in a subfigure
    fig = Figure(figsize=(13, 8.5), layout="constrained")
    FigureCanvasAgg(fig)
    shapes, histories = fig.subfigures(2, 1, height_ratios=[1.0, 0.9])
    picks = np.searchsorted(r.t, np.linspace(r.t[0], r.t[-1], 4)[[0, 1, 3]]).clip(0, len(r.t) - 1)
    for i, k in enumerate(picks):
        ax = shapes.add_subplot(1, 3, i + 1, projection="3d")
        plot_configuration(truss, r.q[k], ax)
        ax.set_title(f"t = {r.t[k]:.2f} s, ratio {truss.deployment_ratio(r.q[k]):.3f}")
    signals = ["deployment_ratio"] + [f"motor_current{k}" for k in range(n)]
    if run.net is not None:
        signals += ["cable_tension_max", "cable_tension_min"]
    series.plot(signals=signals, figure=histories)
    fig.suptitle(f"{n}-bay ring truss{' with its cable net' if net else ''} deployed by its "
                 "diagonal motors (rate PI control, latches at the deployed length)")
    fig.savefig(out / "ring_truss_configurations.png", dpi=90)
    # about 40 frames evenly in time (a net's run records every error-controlled step,
    # dense where the cords snap taut)
    frames = sorted(set(np.searchsorted(r.t, np.linspace(r.t[0], r.t[-1], 41))
                        .clip(0, len(r.t) - 1)))
    if write_animation(truss, [r.t[k] for k in frames], [r.q[k] for k in frames],
                       out / "ring_truss_deployment.gif"):
        print(f"wrote {out}/ring_truss_deployment.csv, ring_truss_configurations.png and "
              "ring_truss_deployment.gif")
    else:
        print(f"wrote {out}/ring_truss_deployment.csv and ring_truss_configurations.png; no "
              "GIF: Pillow is not installed (pip install pillow)")
    lines = run.report()
    print("\n".join(lines[:-1] + [run.energy_line(), lines[-1]]))
    return run


def parse(argv):
    ap = argparse.ArgumentParser(description="Deploy the ring truss by its motors.")
    ap.add_argument("out", nargs="?", default="results", help="results folder")
    ap.add_argument("--bays", type=int, default=6, help="number of bays (even, >= 4)")
    ap.add_argument("--stop", type=float, default=7.0, help="simulated time [s]")
    ap.add_argument("--step", type=float, default=None,
                    help="integrator step [s] (default 0.02); with --net the output grid "
                         "and the controller's sampling (default 0.01), the integrator's "
                         "steps error-controlled")
    ap.add_argument("--folded-angle", type=float, default=1.0,
                    help="initial bay angle [rad] (pi/2: deployed)")
    ap.add_argument("--net", action="store_true", help="hang the cable net on the truss")
    ap.add_argument("--net-rings", type=int, default=1,
                    help="rings of free nodes in each net (with --net)")
    return ap.parse_args(argv)


if __name__ == "__main__":
    args = parse(sys.argv[1:])
    with terminal_logging():     # warnings as one line each on stderr, results on stdout
        try:
            step = args.step if args.step is not None else (0.01 if args.net else 0.02)
            run = main(args.out, args.bays, args.stop, step, args.folded_angle,
                       {"net_rings": args.net_rings} if args.net else None)
        except (ValueError, MemoryError) as err:   # a bad parameter: one line, no traceback
            sys.exit(f"ring_truss_deployment: error: {err}")
    sys.exit(0 if run.failure is None else 1)
