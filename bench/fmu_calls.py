"""Cost of one communication step through FMI: fmi2SetReal + fmi2DoStep + fmi2GetReal.

Uses the joint PD controller FMU (a cheap block, so the FMI round trip dominates) and
prints microseconds per step

* in the plain C host of the tests (``tests/support/c/host.c``), with our native wrapper;
* in fmpy (this Python process), with our native wrapper;
* in fmpy with pythonfmu 0.7.0's binary put back in the same FMU (for comparison);
* for the FMU's slave object called directly in Python (BlockSlave.set_real, do_step,
  get_real: the work every binary has to do), and for the bare block.

The difference between a host row and the slave row is the cost of the binary and the
host: GIL hand-over, argument conversion, log-queue check (and ctypes in fmpy).

    python bench/fmu_calls.py [steps]
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pythonfmu
from fmpy import extract, read_model_description

from controllers.laws.joint_pd import JointPDController
from fmu.fmi.export_c import FMI2_HEADERS
from flexcosim.demo import ensure_fmu
from fmu.fmi.slave import BlockSlave

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.fmi import Instance  # noqa: E402

H = 1e-3
INPUT, OUTPUT = "theta1", "tau1"


def c_host(folder: Path, unzipped: Path, md, steps: int) -> float:
    exe = folder / "host"
    subprocess.run(["gcc", "-O2", f"-I{FMI2_HEADERS}", str(ROOT / "tests" / "c_host" / "host.c"),
                    "-o", str(exe), "-ldl", "-lpthread"], check=True)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    binary = unzipped / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"
    script = (f"load {binary}\ninstantiate 0 pd {md.guid} {(unzipped / 'resources').as_uri()} 0\n"
              f"init 0 0\nexit_init 0\nbench 0 {H} {steps // 10} {vr[INPUT]} {vr[OUTPUT]}\n"
              f"bench 0 {H} {steps} {vr[INPUT]} {vr[OUTPUT]}\nfree 0\n")
    done = subprocess.run([str(exe)], input=script, capture_output=True, text=True, check=True,
                          env={"PATH": "/usr/bin:/bin"})
    return [float(line.split()[1]) for line in done.stdout.splitlines()
            if line.startswith("us_per_step")][-1]


def fmpy_host(unzipped: Path, md, steps: int) -> float:
    fmu = Instance(md, str(unzipped), step=H)
    vin, vout = [fmu.vr[INPUT]], [fmu.vr[OUTPUT]]
    slave = fmu.fmu
    best = float("inf")
    k0 = 0   # each fmi2DoStep starts where the FMU is
    for n in (steps // 10, steps):
        t0 = time.perf_counter()
        for k in range(k0, k0 + n):
            slave.setReal(vin, [0.1])
            slave.doStep(k * H, H)
            slave.getReal(vout)
        best = (time.perf_counter() - t0) / n * 1e6
        k0 += n
    fmu.close()
    return best


class _PDSlave(BlockSlave):
    BLOCK = JointPDController


def slave_in_python(steps: int) -> float:
    slave = _PDSlave(instance_name="bench", resources=".")
    vr = {v.name: v.value_reference for v in slave.vars.values()}
    slave.exit_initialization_mode()
    vin, vout = [vr[INPUT]], [vr[OUTPUT]]
    t0 = time.perf_counter()
    for k in range(steps):
        slave.set_real(vin, [0.1])
        slave.do_step(k * H, H)
        slave.get_real(vout)
    return (time.perf_counter() - t0) / steps * 1e6


def in_process(steps: int) -> float:
    block = JointPDController()
    t0 = time.perf_counter()
    for k in range(steps):
        block.set_input(INPUT, 0.1)
        block.do_step(k * H, H)
        block.outputs()[OUTPUT]
    return (time.perf_counter() - t0) / steps * 1e6


def main(steps: int = 20000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        fmu_file = ensure_fmu("joint-pd", tmp)
        md = read_model_description(str(fmu_file))
        native = Path(extract(str(fmu_file), str(tmp / "native")))
        legacy = Path(shutil.copytree(native, tmp / "pythonfmu"))
        shutil.copy(Path(pythonfmu.__file__).parent / "resources" / "binaries" / "linux64"
                    / "libpythonfmu-export.so",
                    legacy / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so")
        rows = [("C host, native wrapper", c_host(tmp, native, md, steps)),
                ("fmpy, native wrapper", fmpy_host(native, md, steps)),
                ("fmpy, pythonfmu 0.7.0 binary", fmpy_host(legacy, md, steps)),
                ("slave object in Python, no FMI", slave_in_python(steps)),
                ("block in Python, no FMI", in_process(steps))]
    print(f"{md.modelName}: us per (fmi2SetReal + fmi2DoStep + fmi2GetReal), {steps} steps")
    for label, us in rows:
        print(f"  {label:32s} {us:8.2f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
