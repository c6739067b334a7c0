"""Our FMUs and SSP files in a third-party co-simulation host: libcosim, the Open
Simulation Platform's library (through libcosimpy, an optional test dependency).

libcosim runs in a process of its own (``tests/support/libcosim_host.py``: an empty environment, an
interpreter that imported nothing of the project).  Its fixed-step algorithm steps every
FMU over [t_k, t_k + h] and only then copies each output read after the step into the
inputs it feeds (``fixed_step_algorithm::do_step`` / ``calculate_and_transfer`` in
libcosim's sources): a Jacobi scheme that never re-reads an output after its FMU's inputs
changed.  Our master's Jacobi evaluates direct feedthrough (the joint PD's torque is an
algebraic function of its inputs) at every communication point; told that the controller
has none (``feedthrough={"tau1": (), "tau2": ()}``) it is libcosim's scheme, and the two
must agree to round-off.  With the feedthrough, the torque libcosim applies is one step
older: a first-order (O(h)) difference that halves with the step.
"""
from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest
from lxml import etree

from controllers.laws import JointPDController, QuinticJointTrajectory
from flexcosim.demo import MEASURED, closed_loop_system, ensure_c_fmu
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.master import Master
from fmu.cosim.system import System
from fmu.cosim.ssp import export_ssp
from fmu.cosim.system_file import load_system
from mbdcore.models.manipulator import FlexibleManipulatorBlock, bang_bang_torque
from support import TESTS

# looked up, not imported: libcosim (its own boost, OpenSSL, libstdc++ inside libcosimc.so)
# is loaded only in the host process of tests/support/libcosim_host.py, never in the test session
pytestmark = [pytest.mark.gcc, pytest.mark.skipif(
    importlib.util.find_spec("libcosimpy") is None,
    reason="libcosimpy (optional test dependency, Python >= 3.11 on x86-64 Linux) is not "
           "installed: pip install 'libcosimpy>=0.0.6'")]

HOST_SCRIPT = TESTS / "support" / "libcosim_host.py"
HOST_ENV = {"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"}
H = 1e-3
ARM_OUTPUTS = ("theta1", "theta2", "omega1", "omega2", "w1", "w2", "x_tip", "y_tip")
#: arm settings of the runs here: two Gill steps per 1 ms communication step
#: one Gill step per communication step: 4.5e-9 rad/s from the default (error-controlled
#: substeps, which takes two here), so a setting that did not arrive would show
ARM_SETTINGS = {"method": "gill", "substeps": 1}
#: a joint-1 proportional gain other than the controller's default [N m/rad]
SOFT_KP1 = 60.0
SSP_NAMESPACES = {"ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
                  "ssc": "http://ssp-standard.org/SSP1/SystemStructureCommon",
                  "osp": "http://opensimulationplatform.com/SSP/OSPAnnotations"}


def run_libcosim(spec: dict, folder: Path) -> dict[str, np.ndarray]:
    """Run ``spec`` (see tests/support/libcosim_host.py) in a libcosim process of its own."""
    spec_file, out_file = folder / "libcosim_spec.json", folder / "libcosim_out.json"
    spec_file.write_text(json.dumps(spec))
    done = subprocess.run([sys.executable, str(HOST_SCRIPT), str(spec_file), str(out_file)],
                          env=HOST_ENV, cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (f"libcosim exit code {done.returncode}:\n"
                                  f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return {k: np.array(v) for k, v in json.loads(out_file.read_text()).items()}


@pytest.fixture(scope="module")
def c_fmus(tmp_path_factory):
    """The demo's three C-source FMUs: quintic reference, joint PD, flexible arm."""
    folder = tmp_path_factory.mktemp("libcosim_c_fmus")
    return {name: ensure_c_fmu(model, folder) for name, model in
            (("ref", "trajectory"), ("ctrl", "joint-pd"), ("arm", "manipulator"))}


def bang_bang_inputs(n: int) -> dict[str, list[float]]:
    """The open-loop torques of docs/benchmarks.md §1 (load case 1a) on steps 1..n [N m]."""
    torques = [bang_bang_torque(k * H) for k in range(n)]
    return {"tau1": [t[0] for t in torques], "tau2": [t[1] for t in torques]}


def arm_spec(fmu: Path, n: int) -> dict:
    return {"step": H, "steps": n, "fmus": {"arm": str(fmu)}, "start": {"arm": ARM_SETTINGS},
            "inputs": {"arm": bang_bang_inputs(n)}, "observe": {"arm": list(ARM_OUTPUTS)}}


def table(result, names, prefix="arm.") -> np.ndarray:
    return np.column_stack([result[prefix + n] for n in names])


def test_c_arm_fmu_in_libcosim_equals_the_python_arm_block(c_fmus, tmp_path):
    """Load case 1a (0.7 s: both torque reversals and 0.1 s of free motion) of the C-source
    arm in libcosim, its method and substeps set as initial values and the torques by an
    override manipulator, against the Python arm block stepped by hand: equal to 1e-12
    (measured 4e-16).  The arm must have moved and bent, so the agreement means something."""
    n = 700
    in_libcosim = table(run_libcosim(arm_spec(c_fmus["arm"], n), tmp_path), ARM_OUTPUTS)
    block = FlexibleManipulatorBlock(**ARM_SETTINGS)
    rows = []
    for k in range(n):
        block.set_inputs(dict(zip(("tau1", "tau2"), bang_bang_torque(k * H))))
        block.do_step(k * H, H)
        rows.append([block.outputs()[name] for name in ARM_OUTPUTS])
    np.testing.assert_allclose(in_libcosim, np.array(rows), rtol=0, atol=1e-12)
    assert abs(in_libcosim[:, 0]).max() > 0.05 and abs(in_libcosim[:, 4]).max() > 0.05


def test_python_arm_fmu_in_a_libcosim_process_equals_fmpy(arm_fmu, tmp_path):
    """The Python FMU of the arm (embedded interpreter, our FMI wrapper) instantiated by
    libcosim in a fresh process with an empty environment — it finds its Python
    environment from what it recorded and runs the sources it embeds — over 0.3 s of load
    case 1a: outputs equal to fmpy's in this process to 1e-12 (measured 2e-16), the method
    and substeps set by libcosim as String and Integer initial values reaching the model
    (the default, error-controlled substeps, differs by 4.5e-9 rad/s)."""
    n = 300
    in_libcosim = table(run_libcosim(arm_spec(arm_fmu, n), tmp_path), ARM_OUTPUTS)
    torques = bang_bang_inputs(n)
    signals = np.array(list(zip(H * np.arange(n), torques["tau1"], torques["tau2"])),
                       dtype=[("time", float), ("tau1", float), ("tau2", float)])
    res = fmpy.simulate_fmu(str(arm_fmu), stop_time=n * H, step_size=H, output_interval=H,
                            input=signals, start_values=ARM_SETTINGS, output=list(ARM_OUTPUTS))
    in_fmpy = np.column_stack([res[name] for name in ARM_OUTPUTS])[1:]
    np.testing.assert_allclose(in_libcosim, in_fmpy, rtol=0, atol=1e-12)
    default = fmpy.simulate_fmu(str(arm_fmu), stop_time=n * H, step_size=H, output_interval=H,
                                input=signals, output=["omega2"])["omega2"][1:]
    assert abs(default - in_libcosim[:, 3]).max() > 1e-10        # measured 4.5e-9 rad/s


def closed_loop(c_fmus, ctrl_feedthrough: bool, ctrl_params=None) -> System:
    """The demo's loop (quintic reference -> joint PD -> arm) of C FMUs; without
    ``ctrl_feedthrough`` the master is told the torques depend on no input."""
    demo = closed_loop_system(Path(c_fmus["arm"]).parent, arm_params=ARM_SETTINGS, c_fmus=True)
    ctrl = FMUComponent("ctrl", c_fmus["ctrl"], parameters=ctrl_params,
                        feedthrough=None if ctrl_feedthrough else {"tau1": (), "tau2": ()})
    components = [ctrl if c.name == "ctrl" else c for c in demo.components]
    return System(components, {out: inp for inp, out in demo.connections.items()})


def loop_spec(c_fmus, n: int, step: float) -> dict:
    connections = [[f"ref.{v}", f"ctrl.{v}"] for v in QuinticJointTrajectory.output_names()]
    connections += [[f"arm.{v}", f"ctrl.{v}"] for v in MEASURED]
    connections += [["ctrl.tau1", "arm.tau1"], ["ctrl.tau2", "arm.tau2"]]
    return {"step": step, "steps": n, "fmus": {k: str(v) for k, v in c_fmus.items()},
            "connections": connections, "start": {"arm": ARM_SETTINGS},
            "observe": {"arm": list(ARM_OUTPUTS), "ctrl": ["tau1", "tau2"]}}


def loop_table(result) -> np.ndarray:
    return np.column_stack([result[f"arm.{v}"] for v in ARM_OUTPUTS] +
                           [result[f"ctrl.{v}"] for v in ("tau1", "tau2")])


def ours(c_fmus, step: float, feedthrough: bool, stop_time: float) -> np.ndarray:
    """Our master's Jacobi on the closed loop, on libcosim's grid (t0 + h, t0 + 2h, ...)."""
    return loop_table(Master(closed_loop(c_fmus, feedthrough), step, "jacobi").run(stop_time))[1:]


def theirs(c_fmus, step: float, stop_time: float, folder: Path) -> np.ndarray:
    return loop_table(run_libcosim(loop_spec(c_fmus, round(stop_time / step), step), folder))


def test_closed_loop_in_libcosim_is_our_jacobi_without_feedthrough(c_fmus, tmp_path):
    """The demo's closed loop, 0.3 s of the quintic move, connected in libcosim
    (``connect_real_variables``) against our master's Jacobi at the same 1 ms step:

    * with the controller declared free of feedthrough (libcosim's scheme, see the module
      docstring) equal to round-off: 1e-12 rad, rad/s, m, N m (measured 6e-15);
    * with the feedthrough our master honours, the torque libcosim applies lags one step:
      the joint-1 angle differs at first order in h — the difference halves (measured
      5.68e-7 -> 2.79e-7 -> 1.40e-7 rad at h = 1, 0.5, 0.25 ms) — and is small against
      the motion (under 1e-4 of the 7.3e-3 rad reached)."""
    theta1 = ARM_OUTPUTS.index("theta1")
    libcosim_1ms = theirs(c_fmus, H, 0.3, tmp_path)
    assert len(libcosim_1ms) == 300 and abs(libcosim_1ms[:, theta1]).max() > 5e-3   # it moved
    np.testing.assert_allclose(libcosim_1ms, ours(c_fmus, H, False, 0.3), rtol=0, atol=1e-12)
    lag_1ms = abs(libcosim_1ms - ours(c_fmus, H, True, 0.3))[:, theta1].max()
    lag_05ms = abs(theirs(c_fmus, H / 2, 0.3, tmp_path) -
                   ours(c_fmus, H / 2, True, 0.3))[:, theta1].max()
    assert 1.9 < lag_1ms / lag_05ms < 2.1, (lag_1ms, lag_05ms)
    assert lag_1ms < 1e-4 * abs(libcosim_1ms[:, theta1]).max()


def test_the_extra_step_of_delay_destabilises_the_loop_at_2_ms(c_fmus, tmp_path):
    """At a 2 ms communication step the one step libcosim's scheme adds to the joint PD's
    loop (phase lag of the derivative action) makes the closed loop unstable: over 1 s
    the torque ends chattering between its limits (+-tau_max1 = 2 N m, peak to peak
    2 tau_max1 over the last 0.1 s), as our master does when told of no feedthrough, while
    our Jacobi with the feedthrough settles (last 0.1 s within 0.05 N m; measured 0.01)."""
    tau_max1 = JointPDController().params["tau_max1"]
    tau1 = len(ARM_OUTPUTS)
    last = slice(-50, None)
    libcosim_2ms = theirs(c_fmus, 2 * H, 1.0, tmp_path)
    assert np.ptp(libcosim_2ms[last, tau1]) == pytest.approx(2 * tau_max1)
    np.testing.assert_allclose(libcosim_2ms, ours(c_fmus, 2 * H, False, 1.0), rtol=0, atol=1e-9)
    assert np.ptp(ours(c_fmus, 2 * H, True, 1.0)[last, tau1]) < 0.05


@pytest.mark.parametrize("suffix", [".ssp", ".ssd"])
def test_exported_ssp_runs_in_libcosim_with_its_own_step(c_fmus, tmp_path, suffix):
    """``export_ssp`` of the closed loop (an archive, or a description referring to the
    FMUs where they are) at a 0.5 ms step (parameters bound: the arm's
    method and substeps, a softer joint-1 gain, 60 instead of 200 N m/rad; the
    controller's feedthrough override) loaded by ``CosimExecution.from_ssp_file``
    *without a step*: libcosim takes its algorithm and step only from its own
    DefaultExperiment annotation (without it the process crashed, exit code -11), binds
    the parameters, and 0.2 s of the run equal our master's on the same file to 1e-12
    (measured 1e-17).  The file carries the annotation with the prefixes libcosim matches
    literally (its SSP 1.0 validity: tests/test_fmu/cosim/test_ssp.py)."""
    system = closed_loop(c_fmus, ctrl_feedthrough=False, ctrl_params={"kp1": SOFT_KP1})
    path = export_ssp(system, tmp_path / f"loop{suffix}", stop_time=0.2, step=H / 2,
                      method="jacobi")
    if suffix == ".ssp":
        with zipfile.ZipFile(path) as z:
            ssd = z.read("SystemStructure.ssd")
    else:
        ssd = path.read_bytes()
    algorithm = etree.fromstring(ssd).find(
        "ssd:DefaultExperiment/ssd:Annotations/ssc:Annotation[@type='com.opensimulationplatform']"
        "/osp:Algorithm/osp:FixedStepAlgorithm", SSP_NAMESPACES)
    assert algorithm.get("baseStepSize") == "0.0005"
    assert b"<osp:FixedStepAlgorithm " in ssd
    n = 400
    spec = {"ssp": str(path), "step": None, "steps": n, "observe": {"arm": list(ARM_OUTPUTS)}}
    in_libcosim = table(run_libcosim(spec, tmp_path), ARM_OUTPUTS)
    back = load_system(path)
    assert back.experiment == {"stop_time": 0.2, "step": H / 2, "method": "jacobi"}
    ours = Master(back, back.experiment["step"], back.experiment["method"]).run(0.2)
    np.testing.assert_allclose(in_libcosim, table(ours, ARM_OUTPUTS)[1:], rtol=0, atol=1e-12)
    # the bound gain took effect in libcosim: the default kp1 moves joint 1 otherwise
    default = Master(closed_loop(c_fmus, ctrl_feedthrough=False), H / 2, "jacobi").run(0.2)
    assert abs(default["arm.theta1"][1:] - in_libcosim[:, 0]).max() > 1e-6
    assert math.isclose(back.by_name["ctrl"].parameters["kp1"], SOFT_KP1)
