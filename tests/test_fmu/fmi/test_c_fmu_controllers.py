"""C-source FMUs of the discrete controllers: the arm's LQG/LQI, the notch filter and the
input-shaped reference (and, for every model ``flexcosim export-c`` knows, the FMU
contract: valid description, sources that compile alone, no Python in the binary).

Each law is written once in C (``controllers/laws/native``); the Python block runs it
through ctypes and the FMU compiles it in, so they must agree to round-off — checked
here in closed loop with the flexible arm, against the physics the law promises (the
notch removes its frequency and passes DC; the shaped move ends at the target), and
for the values a C FMU must refuse.
"""
from __future__ import annotations

import math
import subprocess
import zipfile

import numpy as np
import pytest
from fmpy.validation import validate_fmu

from controllers.design.arm_lqg import INTEGRATED, design_arm_lqg
from controllers.evaluation.validation import closed_loop_move
from controllers.laws import (
    ArmLQGController,
    FlexibleArmReference,
    NotchFilter,
    QuinticJointTrajectory,
    ShapedQuinticTrajectory,
)
from support.fmi import DISCARD, ERROR, OK, Unzipped, start
from support.fmi import Instance
from flexcosim.catalog import C_MODELS, resolve
from fmu.cosim.fmu_component import FMUComponent
from fmu.fmi.export_c import GCC_COMMAND, export_c_fmu

pytestmark = pytest.mark.gcc

H = 1e-3


@pytest.fixture(scope="module")
def designs():
    return {"lqg": design_arm_lqg(), "lqi": design_arm_lqg(integrated=INTEGRATED)}


@pytest.mark.parametrize("model", [m for m, (block, _, _) in C_MODELS.items() if block])
def test_every_exported_model_is_a_valid_python_free_fmu(model, tmp_path):
    """For each model of ``flexcosim export-c``: fmpy's validation is clean, the sources
    compile alone with the documented command (and -pedantic) without a warning, and
    neither binary names a Python symbol or exports anything but fmi2*."""
    block, name, _ = C_MODELS[model]
    fmu = export_c_fmu(resolve(block), tmp_path, model_name=name, platforms=("linux64",))
    assert validate_fmu(str(fmu)) == []
    folder = tmp_path / "again"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(folder)
    (folder / "binaries" / "linux64").mkdir(parents=True, exist_ok=True)
    done = subprocess.run(GCC_COMMAND.format(id="again").split() + ["-pedantic"], cwd=folder,
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    for binary in (folder / "binaries" / "linux64" / "again.so",
                   folder / "binaries" / "linux64" / f"{name}.so"):
        exported = subprocess.run(["nm", "-D", "--defined-only", str(binary)],
                                  capture_output=True, text=True).stdout.split()
        undefined = subprocess.run(["nm", "-D", "--undefined-only", str(binary)],
                                   capture_output=True, text=True).stdout.split()
        assert not [s for s in exported + undefined if "Py" in s]
        names = [s for s in exported if s.startswith("fmi2")]
        assert len(names) > 20 and all(s.startswith("fmi2") for s in exported[2::3])


@pytest.mark.parametrize("kind, reference", [("lqg", "rigid"), ("lqi", "rigid"),
                                             ("lqi", "model")])
def test_c_lqg_fmu_drives_the_arm_as_the_python_law_does(kind, reference, designs, tmp_path):
    """The flexible arm moved by the C LQG FMU under the master and by the Python block:
    joint angles and torques equal to 1e-9 over a 1.5 s move that saturates joint 1's
    torque (tau_max1 = 0.15 N m; unlimited it reaches 0.18-0.70 N m), with the integrators of the LQI and its anti-windup and
    with the design model as the reference; the C FMU was exported with the design in."""
    text = designs[kind].to_json()
    params = {"reference": reference, "tau_max1": 0.15}
    fmu = export_c_fmu(ArmLQGController, tmp_path, model_name="LQGC",
                       parameters={"design": text}, platforms=("linux64",))

    def reference_block():
        return (FlexibleArmReference(design=text) if reference == "model"
                else QuinticJointTrajectory())
    python = closed_loop_move(ArmLQGController(design=text, **params), reference_block(),
                              stop_time=1.5)
    in_c = closed_loop_move(FMUComponent("ctrl", fmu, parameters=params), reference_block(),
                            stop_time=1.5)
    for name in ("arm.theta1", "arm.theta2", "arm.w1", "ctrl.tau1", "ctrl.tau2"):
        np.testing.assert_allclose(in_c[name], python[name], rtol=0, atol=1e-9)
    assert np.abs(python["ctrl.tau1"]).max() == 0.15            # the limit was reached
    assert python["arm.theta1"][-1] > 0.1                        # and the arm moved


def test_c_lqg_fmu_refuses_other_steps_and_another_design(host, tmp_path):
    """The design is sampled at 1 ms: a 2 ms step is discarded with a message naming the
    design's step and the state is kept (the next 1 ms steps equal an undisturbed run);
    the design is built in, so setting another one is refused naming the parameter."""
    fmu = Unzipped(export_c_fmu(ArmLQGController, tmp_path, model_name="LQGC",
                                platforms=("linux64",)),
                   tmp_path / "x")
    outs = fmu.vrs("tau1", "tau2")
    theta1 = fmu.vr["theta1"]
    steps = "".join(f"set_real 0 {theta1} {-0.01 * k!r}\nstep 0 {k * H!r} {H}\n"
                    f"get_real 0 {outs}\n" for k in range(5))
    clean = host(start(fmu) + steps)
    run = host(start(fmu, params=f'set_string 0 {fmu.vr["design"]} {{}}\n')
               + steps[:steps.index("get_real")] + f"step 0 {H!r} {2 * H}\n"
               + steps[steps.index("get_real"):])
    assert run.statuses("set_string") == [ERROR]
    assert any("parameter design" in e and "refused" in e for e in run.errors())
    assert DISCARD in run.statuses("step")
    assert any("designed for steps of 0.001 s; got a step of 0.002 s" in message
               for _, _, _, message in run.logs)
    assert run.values() == clean.values()


def test_c_notch_equals_the_python_filter_and_removes_its_frequency(tmp_path, host):
    """A sum of a sine at the notch frequency (2 Hz) and a constant through the C FMU and
    the Python block: equal to 1e-12; after the transient the sine is gone (below 1e-3 of
    its amplitude) and the constant passes (gain 1).  The frequency stays settable in
    the FMU; one above the Nyquist frequency is refused naming it."""
    fmu = Unzipped(export_c_fmu(NotchFilter, tmp_path, model_name="NotchC",
                                platforms=("linux64",)), tmp_path / "x")
    params = dict(frequency=2.0, zeta_pole=0.5, dt=H)
    block = NotchFilter(**params)
    c_notch = Instance(fmu.md, str(fmu.dir), step=H, **params)
    assert not c_notch.refused
    out = []
    for k in range(8000):
        u = 0.7 + math.sin(2 * math.pi * 2.0 * k * H)
        block.set_inputs({"u": u})
        c_notch.set("u", u)
        y = block.outputs()["y"]
        assert c_notch.get("y")[0] == pytest.approx(y, abs=1e-12)
        out.append(y)
        block.do_step(k * H, H)
        c_notch.step()
    c_notch.close()
    tail = np.array(out[-1000:])
    assert abs(tail.mean() - 0.7) < 1e-3 and np.ptp(tail) < 2e-3
    run = host(start(fmu, params=f"set_real 0 {fmu.vr['frequency']} 600\n"))
    assert run.statuses("exit_init") == [ERROR]
    assert any("notch frequency = 600 Hz must lie in (0, 500) Hz" in e for e in run.errors())


def test_c_shaped_reference_equals_the_python_one_with_its_shaper_built_in(tmp_path, host):
    """A ZVD shaper on two modes convolved with the quintic: the C FMU (impulses built in
    at export) equals the Python block to 1e-12 over the move, which ends at the target
    at move_time + 2 damped periods of each mode; the move's timing stays settable in
    the FMU, the shaper's frequency is fixed and refused."""
    shaping = dict(shaper="zvd", frequency1=0.8, zeta1=0.02, frequency2=2.5)
    fmu = Unzipped(export_c_fmu(ShapedQuinticTrajectory, tmp_path, model_name="ShapedC",
                                parameters=shaping, platforms=("linux64",)), tmp_path / "x")
    block = ShapedQuinticTrajectory(**shaping, move_time=1.2, start_time=0.1)
    c_ref = Instance(fmu.md, str(fmu.dir), step=1e-2, move_time=1.2, start_time=0.1)
    assert not c_ref.refused
    names = block.output_names()
    for k in range(400):
        expected = [block.outputs()[n] for n in names]
        np.testing.assert_allclose(c_ref.get(*names), expected, rtol=0, atol=1e-12)
        block.do_step(k * 1e-2, 1e-2)
        c_ref.step()
    c_ref.close()
    end = 0.1 + block.duration
    assert end == pytest.approx(0.1 + 1.2 + 1 / (0.8 * math.sqrt(1 - 0.02**2)) + 1 / 2.5)
    assert block.time > end and block.outputs()["theta1_ref"] == pytest.approx(
        block.params["theta1_end"], abs=1e-12)
    run = host(start(fmu, params=f"set_real 0 {fmu.vr['frequency1']} 0.9\n"))
    assert run.statuses("set_real") == [ERROR]
    assert any("frequency1 = 0.9 refused" in e for e in run.errors())
    assert OK in run.statuses("exit_init")
