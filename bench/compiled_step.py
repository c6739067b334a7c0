"""Benchmark of the whole generalized-alpha step in C (issue 23, build item 1).

Side by side in one run, CPU time (``time.process_time``), nothing asserted:

* in process: the Python integrator (its Newton iterations already in C, the loop, the
  matrix policy and the step in Python) against ``CompiledAlphaStep`` (one C call per
  step), on the ANCF hub-beam spin-up (8 elements, 6 rad/s, h = 2.5e-3 s, rho_inf 0.8,
  1 s), the four-bar (constant-rate driver, gravity, h = 1e-3 s, 1 s) and a crank
  falling with a tip load onto two penalty stops (contact of a circle with a ground line
  and of a post's circle with the crank's line, h = 1e-3 s, 1 s; also with the Python
  residual, ``compiled_residual = False``, as before those elements had compiled
  forms), with the largest difference of the final state;
* the hub-beam as a C FMU (``flexcosim export-c`` of the same system written as a model
  file) stepped by fmpy's ``fmi2DoStep`` at 2.5 ms against the Python block's
  ``do_step``: CPU per communication step.

    python bench/compiled_step.py
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings (see tests/conftest)

import fmpy  # noqa: E402
from fmpy.fmi2 import FMU2Slave  # noqa: E402
import numpy as np  # noqa: E402

from fmu.fmi.export_c import export_c_fmu  # noqa: E402
from mbdcore.dae.compiled_step import CompiledAlphaStep  # noqa: E402
from mbdcore.dae.index1 import assemble  # noqa: E402
from mbdcore.dae.methods import make_method  # noqa: E402
from mbdcore.models.mechanisms import four_bar, hub_beam  # noqa: E402
from mbdcore.models.model_block import ModelSystemBlock  # noqa: E402
from mbdcore.models.model_file import MODEL_FORMAT  # noqa: E402
from mbdcore.multibody.ancf import ANCFBeam  # noqa: E402
from mbdcore.multibody.constraints import Revolute  # noqa: E402
from mbdcore.multibody.forces import Contact, PointForce  # noqa: E402
from mbdcore.multibody.system import System  # noqa: E402


def spin_up():
    return hub_beam(lambda n, L, ra, ei, ea: ANCFBeam(n, (0.0, 0.0), (L, 0.0), 8, ra, ei, ea),
                    6.0)


def crank_on_stops():
    """The rigid crank (0.75 m, 1.4 kg) pinned at one end, released horizontal under
    gravity and a (2, -3) N tip load onto a floor line 0.3 m below its pivot (tip
    circle 50 mm, exponent 1.5) and a post's circle (20 mm) at (0.25, -0.112) m against
    its own line (exponent 1): it bounces on both."""
    s = System(gravity=(0.0, -9.81))
    s.ground.add_marker("O", (0.0, 0.0))
    s.ground.add_marker("floor", (0.5, -0.3))
    s.ground.add_marker("post", (0.25, -0.112))
    s.add_body("crank", mass=1.4, inertia=0.065625, position=(0.375, 0.0),
               markers={"O": (-0.375, 0.0), "tip": (0.375, 0.0)})
    s.add_joint(Revolute("ground.O", "crank.O"))
    s.add_force(Contact("crank.tip", "ground.floor", 0.05, 1e5, exponent=1.5,
                        damping=500.0, line_direction=(1.0, 0.0)))
    s.add_force(Contact("ground.post", "crank.O", 0.02, 1e5, exponent=1.0, damping=300.0,
                        line_direction=(-1.0, 0.0)))
    s.add_force(PointForce("crank.tip", (2.0, -3.0)))
    return s


# name: (system, h [s], t_end [s], also time the Python residual)
CASES = {"ANCF hub-beam 8 el., h 2.5e-3 s, 1 s": (spin_up, 2.5e-3, 1.0, False),
         "four-bar, h 1e-3 s, 1 s": (four_bar, 1e-3, 1.0, False),
         "crank on two stops, h 1e-3 s, 1 s": (crank_on_stops, 1e-3, 1.0, True)}


def python_residual(make, h, t_end):
    """CPU time [s] of the Python integrator with the residual evaluated in Python."""
    system = make()
    system.compiled_residual = False
    python = make_method("generalized-alpha", rho_inf=0.8, sparse=False)
    q, v = assemble(system, 0.0)
    start = time.process_time()
    python.start(system, 0.0, q, v)
    for k in range(int(round(t_end / h))):
        q, v = python.step(system, k * h, q, v, h)
    return time.process_time() - start


def in_process(make, h, t_end):
    system = make()
    options = dict(rho_inf=0.8, sparse=False)
    python = make_method("generalized-alpha", **options)
    compiled = CompiledAlphaStep(make_method("generalized-alpha", **options), system)
    q0, v0 = assemble(system, 0.0)
    steps = int(round(t_end / h))
    start = time.process_time()
    python.start(system, 0.0, q0, v0)
    q, v = q0, v0
    for k in range(steps):
        q, v = python.step(system, k * h, q, v, h)
    t_python = time.process_time() - start
    start = time.process_time()
    compiled.start(0.0, q0, v0)
    for k in range(steps):
        compiled.step(k * h, h)
    t_c = time.process_time() - start
    diff = max(np.abs(compiled.q - q).max(), np.abs(compiled.v - v).max())
    return steps, t_python, t_c, diff


def fmu_steps(h=2.5e-3, t_end=0.5):
    model = MODEL_FORMAT.to_dict(spin_up())
    model["method"] = {"name": "generalized-alpha", "substeps": 1, "rho_inf": 0.8}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hub_beam.json"
        path.write_text(json.dumps(model))
        block_class = ModelSystemBlock.for_model(path)
        fmu = export_c_fmu(block_class, tmp, model_name="hub_beam")
        steps = int(round(t_end / h))
        md = fmpy.read_model_description(str(fmu))
        unzipped = fmpy.extract(str(fmu), os.path.join(tmp, "x"))
        slave = FMU2Slave(guid=md.guid, unzipDirectory=unzipped,
                          modelIdentifier=md.coSimulation.modelIdentifier)
        slave.instantiate()
        slave.setupExperiment(startTime=0.0)
        slave.enterInitializationMode()
        slave.exitInitializationMode()
        start = time.process_time()
        for k in range(steps):
            slave.doStep(k * h, h)
        t_fmu = time.process_time() - start
        slave.terminate()
        slave.freeInstance()
    block = block_class()
    start = time.process_time()
    for k in range(steps):
        block.do_step(k * h, h)
    t_block = time.process_time() - start
    return steps, t_block, t_fmu


def main():
    print("in process: Python integrator vs CompiledAlphaStep (CPU time)")
    for name, (make, h, t_end, slow) in CASES.items():
        steps, t_python, t_c, diff = in_process(make, h, t_end)
        if slow:
            t_slow = python_residual(make, h, t_end)
            print(f"  {name}: Python integrator with the Python residual {t_slow:.3f} s "
                  f"({1e6 * t_slow / steps:.0f} us/step)")
        print(f"  {name}: {steps} steps; Python {t_python:.3f} s "
              f"({1e6 * t_python / steps:.0f} us/step), C {t_c:.3f} s "
              f"({1e6 * t_c / steps:.0f} us/step), {t_python / t_c:.1f}x; "
              f"final state differs by {diff:.2g}")
    steps, t_block, t_fmu = fmu_steps()
    print(f"hub-beam 8 el. at 2.5 ms, {steps} communication steps: Python block "
          f"{1e6 * t_block / steps:.0f} us/step, C FMU (fmpy's fmi2DoStep) "
          f"{1e6 * t_fmu / steps:.0f} us/step")


if __name__ == "__main__":
    main()
