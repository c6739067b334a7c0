"""What crossing into the compiled kernels costs, and the Python FMU's first start.

Prints (nothing is asserted):

* microseconds per call of the arm's right-hand side (``ArmKernel.__call__``: 3 arrays
  and 2 scalars in, one array out) and of the joint PD law's outputs
  (``JointPDController.outputs()``: one kernel call with 5 arrays), best of 5 repeats;
* the wall time of the first ``fmi2Instantiate`` of the Python arm FMU in a fresh
  process and a freshly unzipped folder (fmpy), median of 3 (each in a new process and
  folder: what a host pays at every start).

    python3 bench/kernel_calls.py

Measured on this project's 2-core machine (issue 21): before, the kernels were called
through ctypes ``ndpointer`` arguments (about 2 us each) and the FMU compiled its arm
kernel at every start in a new folder; see docs/benchmarks.md for the table.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np

from controllers.laws import JointPDController
from fmu.fmi.build import build_fmu
from mbdcore.models.manipulator import FlexibleManipulator, FlexibleManipulatorBlock

_FIRST_START = """
import sys, time, shutil, tempfile
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave
fmu = sys.argv[1]
folder = extract(fmu, tempfile.mkdtemp())
md = read_model_description(fmu)
t0 = time.perf_counter()
slave = FMU2Slave(guid=md.guid, unzipDirectory=folder,
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="arm")
slave.instantiate()
print(time.perf_counter() - t0)
slave.freeInstance()
"""


def per_call_us(statement, number: int = 20000) -> float:
    """Best of 5 repeats, microseconds per call."""
    return min(timeit.repeat(statement, number=number, repeat=5)) / number * 1e6


def main() -> None:
    arm = FlexibleManipulator()
    kernel = arm.kernel
    x = np.zeros(2 * arm.n_dof)
    x[0] = 0.1
    print(f"arm right-hand side, ArmKernel(x, tau1, tau2): {per_call_us(lambda: kernel(x, 0.3, -0.1)):7.2f} us/call")
    law = JointPDController()
    print(f"joint PD law, outputs():                       {per_call_us(law.outputs):7.2f} us/call")

    with tempfile.TemporaryDirectory() as tmp:
        fmu = build_fmu(FlexibleManipulatorBlock, Path(tmp), model_name="ArmBench")
        times = []
        for _ in range(3):
            done = subprocess.run([sys.executable, "-c", _FIRST_START, str(fmu)],
                                  capture_output=True, text=True, check=True)
            times.append(float(done.stdout.strip().splitlines()[-1]))
    print(f"first fmi2Instantiate of the Python arm FMU, fresh process and folder: "
          f"{statistics.median(times):.3f} s (median of 3: "
          f"{', '.join(f'{t:.3f}' for t in times)})")


if __name__ == "__main__":
    main()
