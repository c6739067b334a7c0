"""C-source FMUs of the antenna pointing axis, its servo and the DC drive (issue 11).

Each C FMU is checked against its Python block (the same C code through ctypes): in
fmpy and in the plain C host started with an empty environment, over realistic runs
(both fixed-step methods), in the closed loop servo + axis of docs/antenna.md (the 1 mrad
step, which must also meet its spec), and against closed forms of the DC motor; bad
inputs and changes of the parameters built in at export are refused with a message
naming them; saved states continue bit for bit; the sources compile alone without
warnings and the binaries need no Python.
"""
from __future__ import annotations

import math
import subprocess
import zipfile

import fmpy
import numpy as np
import pytest
from fmpy.validation import validate_fmu

from controllers.evaluation.metrics import move_metrics
from controllers.laws.antenna_servo import AntennaServoController, PointingReference
from support.fmi import OK, ERROR, Unzipped, start
from support.fmi import Instance
from flexcosim.cli import main
from fmu.fmi.export_c import GCC_COMMAND, export_c_fmu
from mbdcore.models.antenna import PointingAxisBlock
from mbdcore.models.drive import DCMotorBlock, steady_speed

pytestmark = pytest.mark.gcc

H = 1e-3                 # s, communication step = controller sample time
STEP = 1e-3              # rad, the step of docs/antenna.md
DRIVE_OUTPUTS = [f"{q}{k}" for k in (1, 2)
                 for q in ("current", "speed", "angle", "torque", "gear_torque")] + ["axis_torque"]
AXIS_OUTPUTS = ["axis_angle", "axis_rate", "pointing_angle", "pointing_error",
                "dish_deflection", "current1", "speed1", "current2", "speed2", "axis_torque"]
SERVO_INPUTS = ["reference_angle", "reference_rate", "axis_angle", "speed1", "speed2"]
SERVO_OUTPUTS = ["current_ref", "rate_command"]


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    """The three C FMUs, exported once (the drive with its counter-torque pair)."""
    folder = tmp_path_factory.mktemp("antenna_cfmu")
    made = {
        "drive": export_c_fmu(DCMotorBlock, folder, model_name="DriveC",
                              parameters={"n_motors": 2}, platforms=("linux64",)),
        "axis": export_c_fmu(PointingAxisBlock, folder, model_name="AxisC", platforms=("linux64",)),
        "servo": export_c_fmu(AntennaServoController, folder, model_name="ServoC",
                              platforms=("linux64",)),
        "reference": export_c_fmu(PointingReference, folder, model_name="RefC",
                                  platforms=("linux64",)),
    }
    return {k: Unzipped(path, folder / k) for k, path in made.items()}


def _drive_inputs(k):
    t = k * H
    return {"voltage": 40.0 * math.sin(7.0 * t), "current_ref": 6.0 * math.sin(5.0 * t),
            "axis_angle": 2e-3 * math.sin(2.0 * t), "axis_rate": 4e-3 * math.cos(2.0 * t)}


def _axis_inputs(k):
    """A slew-like current command with a wind gust (1.2 s: through the 2 Hz mode)."""
    t = k * H
    return {"voltage": 30.0 * math.sin(4.0 * t), "current_ref": 4.0 * math.sin(3.0 * t),
            "wind_torque": 5e3 * math.exp(-((t - 0.6) / 0.1) ** 2),
            "reference_angle": 1e-3}


def _lockstep(block, fmu, inputs, outputs, n):
    """The block and the C FMU (fmpy's FMI calls) fed the same inputs: their outputs at
    the start and after each step."""
    py, c = [], []
    for k in range(n + 1):
        u = inputs(k)
        block.set_inputs(u)
        for name, v in u.items():
            fmu.set(name, float(v))
        py.append([block.outputs()[o] for o in outputs])
        c.append(fmu.get(*outputs))
        if k < n:
            block.do_step(k * H, H)
            fmu.step()
    return np.array(py), np.array(c)


@pytest.mark.parametrize("method", ["rk4", "gill"])
@pytest.mark.parametrize("command", ["voltage", "current"])
def test_c_drive_fmu_equals_the_python_drive(fmus, method, command):
    """Two motors with backlash and a counter-torque bias, a moving load, 1.5 s."""
    params = dict(n_motors=2, command=command, bias_current=1.0, backlash=1e-5,
                  method=method, substeps=20)
    block = DCMotorBlock(**params)
    fmu = Instance(fmus["drive"].md, str(fmus["drive"].dir), step=H, **params)
    assert not fmu.refused
    py, c = _lockstep(block, fmu, _drive_inputs, DRIVE_OUTPUTS, 1500)
    fmu.close()
    np.testing.assert_allclose(c, py, rtol=0, atol=1e-9)
    # it drove: the rotors turned and the gears carried torque both ways
    assert np.abs(py[:, 1]).max() > 10.0 and np.ptp(py[:, -1]) > 1e3


def test_c_drive_fmu_meets_the_closed_forms_of_the_motor(fmus):
    """Free shaft at 48 V: the steady speed (Kt u - R Tc) / (R b + Kt Ke); locked rotor:
    the current rises with L/R to u/R, the torque to the stall torque Kt u / R."""
    free = Instance(fmus["drive"].md, str(fmus["drive"].dir), step=H, gear_stiffness=0.0,
                    gear_damping=0.0, substeps=100)
    free.set("voltage", 48.0)
    for _ in range(150):
        free.step()
    assert free.get("speed1")[0] == pytest.approx(steady_speed(48.0), rel=1e-6)
    free.close()
    tau = 6.57e-3 / 3.07
    locked = Instance(fmus["drive"].md, str(fmus["drive"].dir), step=tau / 10,
                      locked_rotor=1, substeps=20)
    locked.set("voltage", 48.0)
    for _ in range(10):
        locked.step()
    assert locked.get("current1")[0] == pytest.approx(48.0 / 3.07 * (1 - math.exp(-1)),
                                                      rel=1e-6)
    for _ in range(190):
        locked.step()
    assert locked.get("torque1")[0] == pytest.approx(0.49 * 48.0 / 3.07, rel=1e-6)
    locked.close()


@pytest.mark.parametrize("method", ["rk4", "gill"])
@pytest.mark.parametrize("command", ["voltage", "current"])
def test_c_axis_fmu_equals_the_python_axis(fmus, method, command):
    params = dict(command=command, method=method, substeps=10, bias_current=0.5)
    block = PointingAxisBlock(**params)
    fmu = Instance(fmus["axis"].md, str(fmus["axis"].dir), step=H, **params)
    assert not fmu.refused
    py, c = _lockstep(block, fmu, _axis_inputs, AXIS_OUTPUTS, 1200)
    fmu.close()
    np.testing.assert_allclose(c, py, rtol=0, atol=1e-9)
    # it moved and the dish bent under the gust
    assert np.abs(py[:, 0]).max() > 1e-4 and np.abs(py[:, 4]).max() > 1e-6


def test_c_servo_fmu_equals_the_python_servo_through_both_limits(fmus):
    """Random measurements around large and small errors: the rate and current limits
    are reached and the integrators stop and resume (discrete law: 1e-12)."""
    rng = np.random.default_rng(11)
    block = AntennaServoController()
    fmu = Instance(fmus["servo"].md, str(fmus["servo"].dir), step=H)
    scale = np.array([2e-2, 1e-2, 2e-2, 50.0, 50.0])
    py, c = [], []
    for k in range(600):
        u = dict(zip(SERVO_INPUTS, rng.normal(size=5) * scale * (1.0 if k % 200 < 100
                                                                  else 1e-3)))
        block.set_inputs(u)
        for name, v in u.items():
            fmu.set(name, float(v))
        py.append([block.outputs()[o] for o in SERVO_OUTPUTS])
        c.append(fmu.get(*SERVO_OUTPUTS))
        block.do_step(k * H, H)
        fmu.step()
    fmu.close()
    py, c = np.array(py), np.array(c)
    np.testing.assert_allclose(c, py, rtol=0, atol=1e-12)
    assert np.abs(py[:, 0]).max() == block.params["current_limit"]
    assert np.abs(py[:, 1]).max() == block.params["rate_limit"]
    assert np.abs(py[:, 0]).min() < 1.0          # and it left the limits


def test_c_reference_fmu_equals_the_python_reference(fmus):
    # (its 'step' parameter, the amplitude, stays at 1 mrad: Instance's own 'step' is the
    # communication step)
    params = dict(step_time=0.05, rate=1e-2, ramp_time=0.1)
    block = PointingReference(**params)
    fmu = Instance(fmus["reference"].md, str(fmus["reference"].dir), step=1e-2, **params)
    for k in range(30):
        expected = [block.outputs()[n] for n in ("reference_angle", "reference_rate")]
        assert fmu.get("reference_angle", "reference_rate") == expected
        block.do_step(fmu.t, 1e-2)           # the same clock: t + h as the FMU sums it
        fmu.step()
    assert expected == [pytest.approx(1e-3 + 1e-2 * 0.19), 1e-2]
    fmu.close()


def _python_closed_loop(T):
    """The servo and the axis as Python blocks (docs/antenna.md, tests of the pointing):
    the controller samples the axis at t_k, its command is held over the step."""
    plant, ctrl = PointingAxisBlock(), AntennaServoController()
    rows = []
    for k in range(int(round(T / H))):
        out = plant.outputs()
        ctrl.set_inputs({"reference_angle": STEP, "reference_rate": 0.0,
                         "axis_angle": out["axis_angle"], "speed1": out["speed1"],
                         "speed2": out["speed2"]})
        cmd = ctrl.outputs()
        plant.set_inputs({"current_ref": cmd["current_ref"], "reference_angle": STEP,
                          "wind_torque": 0.0})
        rows.append([k * H] + [out[n] for n in AXIS_OUTPUTS] + [cmd[n] for n in SERVO_OUTPUTS])
        ctrl.do_step(k * H, H)
        plant.do_step(k * H, H)
    return np.array(rows)


@pytest.fixture(scope="module")
def python_loop():
    return _python_closed_loop(3.0)


def test_closed_loop_of_the_c_fmus_equals_the_python_blocks_and_meets_the_spec(fmus,
                                                                              python_loop):
    """The 1 mrad step of docs/antenna.md, the servo and the axis as two C FMUs wired by
    hand in fmpy, against the same loop of Python blocks (1e-9) and against the spec
    (overshoot <= 10 %, settling to 2 % within 3 s)."""
    plant = Instance(fmus["axis"].md, str(fmus["axis"].dir), step=H)
    ctrl = Instance(fmus["servo"].md, str(fmus["servo"].dir), step=H)
    rows = []
    for k in range(python_loop.shape[0]):
        out = dict(zip(AXIS_OUTPUTS, plant.get(*AXIS_OUTPUTS)))
        for name, v in (("reference_angle", STEP), ("reference_rate", 0.0),
                        ("axis_angle", out["axis_angle"]), ("speed1", out["speed1"]),
                        ("speed2", out["speed2"])):
            ctrl.set(name, v)
        cmd = dict(zip(SERVO_OUTPUTS, ctrl.get(*SERVO_OUTPUTS)))
        plant.set("current_ref", cmd["current_ref"])
        plant.set("reference_angle", STEP)
        rows.append([k * H] + [out[n] for n in AXIS_OUTPUTS] + [cmd[n] for n in SERVO_OUTPUTS])
        ctrl.step()
        plant.step()
    plant.close()
    ctrl.close()
    rows = np.array(rows)
    np.testing.assert_allclose(rows, python_loop, rtol=0, atol=1e-9)
    m = move_metrics(rows[:, 0], rows[:, 1], 0.0, STEP)
    assert m["overshoot"] <= 0.10 and m["settling_time"] <= 3.0


def _host_run(host, fmu, tmp_path, inputs, in_names, out_names, params=""):
    ins = tmp_path / f"{fmu.identifier}_u.txt"
    ins.write_text("".join(" ".join(repr(float(v)) for v in row) + "\n" for row in inputs))
    outs = tmp_path / f"{fmu.identifier}_y.csv"
    run = host(start(fmu, params=params) +
               f"run 0 {H} {len(in_names)} {fmu.vrs(*in_names)} {len(out_names)} "
               f"{fmu.vrs(*out_names)} {ins} {outs}\nterminate 0\nfree 0\n", env={})
    assert run.statuses("run") == [OK] and f"run steps {len(inputs)}" in run.lines
    return np.loadtxt(outs, delimiter=",", ndmin=2)


def test_c_host_with_an_empty_environment_gives_the_python_closed_loop(host, fmus, tmp_path,
                                                                      python_loop):
    """The C host (no Python, empty environment) runs the axis FMU on the current
    commands of the Python closed loop and the servo FMU on its measurements: both give
    the Python blocks' outputs after each step."""
    axis, servo = fmus["axis"], fmus["servo"]
    commands = python_loop[:, 1 + len(AXIS_OUTPUTS)]
    got = _host_run(host, axis, tmp_path, [(c, STEP, 0.0) for c in commands[:-1]],
                    ["current_ref", "reference_angle", "wind_torque"], AXIS_OUTPUTS)
    expected = python_loop[1:, 1:1 + len(AXIS_OUTPUTS)]
    assert np.abs(got[:, 0] - STEP).min() < 0.05 * STEP            # the step was made
    # the axis's outputs after step k are the loop's outputs at k + 1 except the axis
    # torque, which follows the command of step k (held) instead of k + 1
    np.testing.assert_allclose(got[:, :-1], expected[:, :-1], rtol=0, atol=1e-9)
    a = {n: python_loop[:, 1 + i] for i, n in enumerate(AXIS_OUTPUTS)}
    measured = np.column_stack([np.full(commands.size, STEP), np.zeros(commands.size),
                                a["axis_angle"], a["speed1"], a["speed2"]])
    got = _host_run(host, servo, tmp_path, measured, SERVO_INPUTS, SERVO_OUTPUTS)
    # the servo's output after step k with the inputs of step k held = the Python law
    # stepped then evaluated at the same inputs
    block, expected = AntennaServoController(), []
    for k, row in enumerate(measured):
        block.set_inputs(dict(zip(SERVO_INPUTS, row)))
        block.do_step(k * H, H)
        expected.append([block.outputs()[n] for n in SERVO_OUTPUTS])
    np.testing.assert_allclose(got, np.array(expected), rtol=0, atol=1e-12)


def test_bad_inputs_and_built_in_parameters_are_refused_by_name(host, fmus):
    axis, servo = fmus["axis"], fmus["servo"]
    run = host(start(axis, params=f"set_real 0 {axis.vr['reflector_ei']} 5e7\n"
                                  f"set_integer 0 {axis.vr['n_motors']} 1\n"
                                  f"set_real 0 {axis.vr['gear_stiffness']} 1.2e7\n") +
               f"set_real 0 {axis.vr['current_ref']} 1.0\nstep 0 0 {H}\n"
               f"get_real 0 {axis.vrs('axis_rate', 'current1')}\n"
               f"set_real 0 {axis.vr['current_ref']} nan\n"
               f"set_real 0 {axis.vr['wind_torque']} inf\nstep 0 {H} {H}\n"
               f"get_real 0 {axis.vrs('axis_rate', 'current1')}\n", env={})
    errors = run.errors()
    assert any("parameter reflector_ei = " in e and "refused" in e for e in errors)
    assert any("n_motors = 1 refused" in e for e in errors)
    assert any("input current_ref = nan refused" in e for e in errors)
    assert any("input wind_torque = inf refused" in e for e in errors)
    assert run.statuses("set_real").count(ERROR) == 3     # ei, nan, inf; gear stiffness ok
    assert run.statuses("step") == [OK, OK]
    (rate1, current1), (rate2, current2) = run.values()
    assert current1 > 0.1 and current2 > current1         # the command 1 A was kept
    run = host(start(servo) + f"set_real 0 {servo.vr['axis_angle']} nan\n"
               f"set_real 0 {servo.vr['speed2']} -inf\nstep 0 0 {H}\n", env={})
    assert any("input axis_angle = nan refused" in e for e in run.errors())
    assert any("input speed2 = -inf refused" in e for e in run.errors())
    desc = {v.name: v for v in axis.md.modelVariables}
    assert "export again with --set reflector_ei=VALUE" in desc["reflector_ei"].description
    assert "fixed when exported" not in desc["gear_stiffness"].description


def _steps(fmu, k0, n, slot=0):
    out = fmu.vrs("axis_angle", "pointing_error", "dish_deflection", "current1")
    return "".join(f"set_real {slot} {fmu.vr['current_ref']} {3.0 * math.sin(0.01 * (k0 + k))!r}\n"
                   f"set_real {slot} {fmu.vr['wind_torque']} {1e3 * math.cos(0.02 * (k0 + k))!r}\n"
                   f"step {slot} {(k0 + k) * H!r} {H}\nget_real {slot} {out}\n"
                   for k in range(n))


def test_axis_state_get_set_and_serialization_continue_bit_for_bit(host, fmus, tmp_path):
    fmu = fmus["axis"]
    blob = tmp_path / "state.bin"
    run = host(start(fmu, params=f"set_string 0 {fmu.vr['method']} gill\n") + _steps(fmu, 0, 37)
               + f"get_state 0 0\nserialize 0 0 {blob}\n" + _steps(fmu, 37, 40)
               + "set_state 0 0\n" + _steps(fmu, 37, 40)
               + f"instantiate 1 other {fmu.guid} {fmu.uri()} 0\ninit 1 0\n"
               f"set_string 1 {fmu.vr['method']} gill\nexit_init 1\n"
               f"deserialize 1 {blob} 1\nset_state 1 1\n" + _steps(fmu, 37, 40, slot=1)
               + "free_state 0 0\nfree_state 1 1\nfree 0\nfree 1\n", env={})
    assert set(run.statuses("get_state") + run.statuses("set_state") + run.statuses("serialize")
               + run.statuses("deserialize") + run.statuses("step")) == {OK}
    values = run.values()[37:]
    first, rolled_back, restored = values[:40], values[40:80], values[80:]
    assert rolled_back == first and restored == first
    assert len({tuple(v) for v in first}) == 40                   # it kept moving


@pytest.mark.parametrize("which", ["drive", "axis", "servo", "reference"])
def test_sources_compile_alone_without_warnings_and_need_no_python(fmus, which, tmp_path):
    fmu = fmus[which]
    assert validate_fmu(str(fmu.fmu_file)) == []
    with zipfile.ZipFile(fmu.fmu_file) as z:
        z.extractall(tmp_path)
    (tmp_path / "binaries" / "linux64").mkdir(parents=True, exist_ok=True)
    command = GCC_COMMAND.format(id="again").split() + ["-pedantic"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    for binary in (tmp_path / "binaries" / "linux64" / "again.so", fmu.binary):
        exported = {s for line in subprocess.run(["nm", "-D", "--defined-only", str(binary)],
                                                 capture_output=True, text=True).stdout.splitlines()
                    for s in line.split()[2:]}
        assert exported and all(s.startswith("fmi2") for s in exported)
        symbols = subprocess.run(["nm", "-D", str(binary)], capture_output=True, text=True).stdout
        assert "Py" not in symbols
    needed = subprocess.run(["readelf", "-d", str(fmu.binary)], capture_output=True,
                            text=True).stdout
    assert "python" not in needed.lower()


def test_command_line_exports_the_antenna_models(tmp_path, capsys):
    assert main(["export-c", "antenna-axis", "-o", str(tmp_path), "--set", "n_motors=1",
                 "--set", "reflector_ei=5e7", "--set", "command=voltage", "--no-compile"]) == 0
    assert main(["export-c", "antenna-servo", "-o", str(tmp_path), "--set", "kp_pos=2"]) == 0
    assert main(["export-c", "drive", "-o", str(tmp_path), "--name", "Motor",
                 "--set", "method=gill"]) == 0
    axis = {v.name: v for v in fmpy.read_model_description(
        str(tmp_path / "PointingAxisC.fmu")).modelVariables}
    assert axis["n_motors"].start == "1" and axis["n_motors"].max == "1"
    assert axis["reflector_ei"].start == "50000000.0" == axis["reflector_ei"].min
    assert axis["command"].start == "voltage"
    servo = {v.name: v for v in fmpy.read_model_description(
        str(tmp_path / "AntennaServoC.fmu")).modelVariables}
    assert servo["kp_pos"].start == "2.0" and servo["kp_pos"].max is None
    drive = {v.name: v.start for v in fmpy.read_model_description(
        str(tmp_path / "Motor.fmu")).modelVariables}
    assert drive["method"] == "gill"
    capsys.readouterr()
    for argv, message in (
            (["export-c", "drive", "--set", "n_motors=3"], "'n_motors' = 3 is invalid"),
            (["export-c", "antenna-axis", "--set", "method=bdf2"], "'bdf2' has no C"),
            (["export-c", "antenna-servo", "--set", "gain=1"], "--set gain: unknown parameter 'gain'"),
            (["export-c", "antena-axis"], "antenna-axis, antenna-servo, drive")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
