"""Real-time figures of the C-source FMUs (printed, never asserted).

    python3 bench/c_fmu.py [--steps 100000]

For each exported model: the median, 99.9th percentile and worst time of one
``fmi2SetReal + fmi2DoStep + fmi2GetReal`` at a 1 ms communication step over N steps,
in a plain C harness (dlopen, no Python; CLOCK_MONOTONIC around every step), and the
time from the start of a fresh process to the first completed ``fmi2DoStep``
(process start, dlopen, instantiate, initialise, one step).  Models: the 2-state
mass-spring-damper plant, a 24-state linear plant, the flexible arm with 2 and 5 modes
per link (exact kinematics, RK4, 10 substeps per step, set at export: the FMU's default
is substeps = 0, "auto", which bench/auto_substeps.py measures; and with 1 substep, and
with the second-order kinematics), the antenna's pointing axis (10
substeps) and the discrete laws (joint PD, LQG, notch, antenna servo); and, for comparison, the Python FMU of the arm (fresh process, then again with its
caches warm).
"""
from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

import control as ct
import fmpy
import numpy as np
from fmpy import extract, read_model_description

from controllers.laws import (
    AntennaServoController,
    ArmLQGController,
    JointPDController,
    NotchFilter,
)
from fmu.fmi.build import build_fmu
from fmu.fmi.export_c import export_c_fmu
from mbdcore.models.antenna import PointingAxisBlock
from mbdcore.models.linear import LinearSystemBlock, state_space_config
from mbdcore.models.manipulator import FlexibleManipulatorBlock

HARNESS = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "fmi2Functions.h"

static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
                          return ts.tv_sec + 1e-9 * ts.tv_nsec; }
static void logger(fmi2ComponentEnvironment e, fmi2String n, fmi2Status s, fmi2String c,
                   fmi2String m, ...) { (void)e; (void)n; (void)s; (void)c; fprintf(stderr, "%s\n", m); }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b;
                                               return (x > y) - (x < y); }
#define F(name) name##TYPE *name = (name##TYPE *)dlsym(lib, #name)
int main(int argc, char **argv) {
    double t_start = now();
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { printf("dlopen failed\n"); return 1; }
    F(fmi2Instantiate); F(fmi2SetupExperiment); F(fmi2EnterInitializationMode);
    F(fmi2ExitInitializationMode); F(fmi2DoStep); F(fmi2SetReal); F(fmi2GetReal); F(fmi2FreeInstance);
    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    fmi2Component c = fmi2Instantiate("bench", fmi2CoSimulation, argv[2], argv[7], &cb, 0, 0);
    if (!c) { printf("instantiate failed\n"); return 1; }
    fmi2ValueReference in = (fmi2ValueReference)atoi(argv[3]), out = (fmi2ValueReference)atoi(argv[4]);
    long n = atol(argv[5]);
    double scale = atof(argv[6]);
    double h = 1e-3, u, y, *dt = malloc(n * sizeof *dt);
    fmi2SetupExperiment(c, 0, 0, 0.0, 0, 0);
    fmi2EnterInitializationMode(c);
    fmi2ExitInitializationMode(c);
    for (long k = 0; k < n; k++) {
        double t0 = now();
        u = ((k / 500) % 2 ? 1.0 : -1.0) * scale;
        fmi2SetReal(c, &in, 1, &u);
        if (fmi2DoStep(c, k * h, h, fmi2True) != fmi2OK) { printf("step failed\n"); return 1; }
        fmi2GetReal(c, &out, 1, &y);
        dt[k] = now() - t0;
        if (k == 0) printf("first_step_after_start %.9f\n", now() - t_start);
    }
    qsort(dt, n, sizeof *dt, cmp);
    printf("median %.9f p999 %.9f worst %.9f last_output %.17g\n", dt[n / 2], dt[(long)(0.999 * n)],
           dt[n - 1], y);
    fmi2FreeInstance(c);
    return 0;
}
"""


def _models():
    """label -> (block class, export parameters, input name, output name)."""
    out = {label: (LinearSystemBlock.configured(state_space_config(system), "Bench"), {},
                   "u0", "y0") for label, system in _plants().items()}
    out["arm, 2 modes/link"] = (FlexibleManipulatorBlock, {"substeps": 10}, "tau1", "theta1")
    out["arm, 2 modes, 1 sub"] = (FlexibleManipulatorBlock, {"substeps": 1}, "tau1", "theta1")
    out["arm, 2nd-order kin."] = (FlexibleManipulatorBlock, {"kinematics": "second-order",
                                                             "substeps": 10}, "tau1", "theta1")
    out["arm, 5 modes/link"] = (FlexibleManipulatorBlock, {"n_modes": 5, "substeps": 10},
                                "tau1", "theta1")
    out["joint PD"] = (JointPDController, {}, "theta1", "tau1")
    out["LQG (12 states)"] = (ArmLQGController, {}, "theta1", "tau1")
    out["notch"] = (NotchFilter, {}, "u", "y")
    out["antenna axis"] = (PointingAxisBlock, {}, "current_ref", "axis_angle")
    out["antenna servo"] = (AntennaServoController, {}, "axis_angle", "current_ref")
    return out


def _plants():
    two = ct.ss([[0.0, 1.0], [-200.0, -2.0]], [[0.0], [0.5]], [[1.0, 0.0]], [[0.0]])
    rng = np.random.default_rng(3)
    n = 24
    wn = np.sort(rng.uniform(5.0, 400.0, n // 2))
    A = np.zeros((n, n))
    for i, w in enumerate(wn):
        A[2 * i, 2 * i + 1] = 1.0
        A[2 * i + 1, 2 * i] = -w * w
        A[2 * i + 1, 2 * i + 1] = -2 * 0.02 * w
    T = np.linalg.qr(rng.normal(size=(n, n)))[0]
    big = ct.ss(T @ A @ T.T, T @ rng.normal(size=(n, 1)), rng.normal(size=(1, n)) @ T.T, [[0.0]])
    return {"plant, 2 states": two, "plant, 24 states": big}


def main(steps: int) -> None:
    headers = Path(fmpy.__file__).resolve().parent / "c-code"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "harness.c").write_text(HARNESS)
        subprocess.run(["gcc", "-O2", "-std=gnu99", f"-I{headers}", str(tmp / "harness.c"),
                        "-o", str(tmp / "harness"), "-ldl"], check=True)
        print(f"C-source FMUs, 1 ms communication step, RK4 x 10 substeps, {steps} steps "
              "(input: +-1 square wave, the arm's torque 0.02 x that)")
        print(f"{'model':>20} {'median [us]':>12} {'p99.9 [us]':>11} {'worst [us]':>11} "
              f"{'start->1st step [ms]':>21} {'process [ms]':>13}")
        for label, (block, params, u_name, y_name) in _models().items():
            folder = tmp / "".join(ch if ch.isalnum() else "_" for ch in label)
            fmu = export_c_fmu(block, folder, model_name="Bench", parameters=params)
            md = read_model_description(str(fmu))
            folder = extract(str(fmu), str(folder / "x"))
            binary = Path(folder) / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"
            vr = {v.name: v.valueReference for v in md.modelVariables}
            _row(tmp / "harness", label, binary, md, vr[u_name], vr[y_name], steps,
                 0.02 if u_name == "tau1" else 1.0)
        # the Python FMU of the arm, for comparison (its kernel cache warm: second run)
        fmu = build_fmu(FlexibleManipulatorBlock, tmp / "py", model_name="ArmPy")
        md = read_model_description(str(fmu))
        folder = Path(extract(str(fmu), str(tmp / "py" / "x")))
        binary = folder / "binaries" / "linux64" / "ArmPy.so"
        vr = {v.name: v.valueReference for v in md.modelVariables}
        for run in ("first", "warm"):
            _row(tmp / "harness", f"Python arm FMU ({run})", binary, md, vr["tau1"],
                 vr["theta1"], min(steps, 2000), 0.02, (folder / "resources").as_uri())
        print("(start->1st step: from main() of a fresh process through dlopen, instantiate, "
              "initialise and one step; process: the whole run, spawn included; the Python "
              "FMU runs 2000 steps)")


def _row(harness, label, binary, md, vr_in, vr_out, steps, scale, uri="file:///tmp"):
    wall = time.perf_counter()
    done = subprocess.run([str(harness), str(binary), md.guid, str(vr_in), str(vr_out),
                           str(steps), repr(scale), uri], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"})
    wall = time.perf_counter() - wall
    fields = dict(zip(done.stdout.split()[::2], done.stdout.split()[1::2]))
    if done.returncode != 0 or "median" not in fields:
        print(f"{label:>20} failed: {done.stdout.strip()} {done.stderr.strip()[-300:]}")
        return
    print(f"{label:>20} {1e6 * float(fields['median']):12.2f} "
          f"{1e6 * float(fields['p999']):11.2f} {1e6 * float(fields['worst']):11.2f} "
          f"{1e3 * float(fields['first_step_after_start']):21.3f} {1e3 * wall:13.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100000)
    main(parser.parse_args().steps)
