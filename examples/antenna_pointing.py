"""Antenna pointing axis under the cascaded servo (docs/benchmarks.md §3).

    python examples/antenna_pointing.py [results_dir]

Three runs under the co-simulation master (controller -> two-motor drive -> structure,
1 ms communication step): a 1 mrad step, a 0.5 deg/s ramp, and the ramp with a 1-cos
wind gust of 5 kN m on the dish at t = 6 s.  Writes ``pointing_<case>.csv`` and
``antenna_pointing.png`` and prints the margins of the rate and position loops, the step
figures, the ramp lag and the pointing error the gust causes.
"""
import math
import sys
from pathlib import Path

import numpy as np

from controllers.design.antenna_servo import (
    design_servo,
    pointing_axis_plant,
    servo_cosim_system,
    servo_margins,
)
from controllers.evaluation.metrics import move_metrics
from flexcosim.console import ProgressPrinter, terminal_logging
from fmu.cosim.master import Master
from mbdcore.blocks import Block, Parameter, Signal
from mbdcore.models.antenna import AntennaStructure
from mbdcore.timeseries import axis_label


class WindGust(Block):
    """1-cos gust torque [N m] of ``peak`` lasting ``length`` s from ``start``."""

    OUTPUTS = (Signal("wind_torque", "N.m", "wind-gust torque on the dish"),)
    PARAMETERS = (Parameter("peak", 5e3, "N.m", "peak torque"),
                  Parameter("start", 6.0, "s", "start", min=0.0),
                  Parameter("length", 1.0, "s", "duration", min=0.0, exclusive_min=True))

    def outputs(self):
        p, t = self.params, self.time
        on = p["start"] <= t < p["start"] + p["length"]
        return {"wind_torque": p["peak"] * (1 - math.cos(2 * math.pi * (t - p["start"])
                                                         / p["length"])) / 2 if on else 0.0}


def run(reference, gust=False, stop=10.0, label="pointing"):
    system = servo_cosim_system(reference=reference, wind=WindGust() if gust else None)
    return Master(system, 1e-3).run(stop, progress=ProgressPrinter(label))


def main(out="results"):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    structure = AntennaStructure.from_engine()
    margins = servo_margins(design_servo(structure), pointing_axis_plant(structure))
    for loop, m in margins.items():
        print(f"{loop} loop: gain margin {m['gain_margin_db']:.1f} dB, phase margin "
              f"{m['phase_margin_deg']:.1f} deg, crossover {m['crossover_hz']:.2f} Hz")
    rate = math.radians(0.5)
    cases = {"step": (dict(step=1e-3), False), "ramp": (dict(step=0.0, rate=rate), False),
             "ramp_gust": (dict(step=0.0, rate=rate), True)}
    results = {}
    for name, (ref, gust) in cases.items():
        results[name] = res = run(ref, gust, label=name)
        res.to_csv(out / f"pointing_{name}.csv")
    step = results["step"]
    m = move_metrics(step.time, step["structure.axis_angle"], 0.0, 1e-3)
    print(f"1 mrad step: overshoot {100 * m['overshoot']:.2f} %, settling (2 %) "
          f"{m['settling_time']:.2f} s, final error {100 * m['final_error']:+.2f} %")
    ramp = results["ramp"]
    print(f"0.5 deg/s ramp: pointing lag at 10 s {1e6 * ramp['structure.pointing_error'][-1]:.0f}"
          f" urad")
    d = results["ramp_gust"]["structure.pointing_error"] - ramp["structure.pointing_error"]
    print(f"5 kN m wind gust: peak pointing error {1e6 * np.abs(d).max():.0f} urad, rms over "
          f"the 4 s after it {1e6 * np.sqrt(np.mean(d[step.time >= 6.0] ** 2)):.0f} urad")

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 9))
    FigureCanvasAgg(fig)
    ax = fig.subplots(3, 1, sharex=True)
    t = step.time
    ax[0].plot(t, 1e3 * step["structure.axis_angle"], label="axis angle")
    ax[0].plot(t, 1e3 * step["structure.pointing_angle"], "--", label="pointing angle")
    ax[0].plot(t, 1e3 * step["ref.reference_angle"], "k:", label="reference")
    ax[0].set_ylabel(axis_label("1 mrad step", "mrad"))
    ax[1].plot(t, 1e6 * ramp["structure.pointing_error"], label="ramp")
    ax[1].plot(t, 1e6 * results["ramp_gust"]["structure.pointing_error"], label="ramp + gust")
    ax[1].set_ylabel(axis_label("pointing error", "urad"))
    ax[2].plot(t, step["drive.current1"], label="motor 1 (step)")
    ax[2].plot(t, results["ramp_gust"]["drive.current1"], label="motor 1 (ramp + gust)")
    ax[2].set_ylabel(axis_label("current", "A"))
    ax[2].set_xlabel(axis_label("time", "s"))
    for a in ax:
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle("Antenna pointing axis: cascaded servo, three components under the master")
    fig.tight_layout()
    fig.savefig(out / "antenna_pointing.png", dpi=100)
    print(f"wrote {out}/pointing_*.csv and {out}/antenna_pointing.png")


if __name__ == "__main__":
    with terminal_logging():     # warnings as one line each on stderr, results on stdout
        main(*sys.argv[1:2])
