"""FMI 3.0 C-source FMUs (issue 25, item 2): ``export_c_fmu(..., fmi_version=3)`` and
``flexcosim export-c --fmi 3``.

The same model, variables, value references and checks as the FMI 2.0 FMU, through the
FMI 3.0 front end of the one wrapper (``fmi3_cs.c`` over ``cfmu_core.h``): fmpy's
validation is clean, ``simulate_fmu`` of the FMI 3.0 FMU equals the FMI 2.0 one bit for
bit, a saved and serialized state continues bit for bit, bad values and a corrupt state
are refused naming the cause, and the master runs the closed loop of FMI 3.0 C FMUs as
it runs the FMI 2.0 ones.  A vector signal (``tau1``, ``tau2``) is one array variable
(``tau`` [2]) unless exported with ``arrays=False``: the same numbers either way.
"""
from __future__ import annotations

import re
import subprocess
import zipfile

import numpy as np
import pytest
from fmpy import read_model_description, simulate_fmu
from fmpy.validation import validate_fmu

from flexcosim.catalog import C_MODELS, resolve
from flexcosim.cli import main
from fmu.cosim.components import BlockComponent
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.master import Master
from fmu.cosim.system import System
from fmu.fmi.export_c import BINARY_FOLDERS, binary_platforms, build_command, export_c_fmu
from mbdcore.models.manipulator import FlexibleManipulatorBlock
from support.blocks import SmoothStep

pytestmark = pytest.mark.gcc

MODELS = sorted(m for m, entry in C_MODELS.items() if entry.block is not None)


@pytest.fixture(scope="module")
def arms(tmp_path_factory):
    """The arm as FMI 2.0 and FMI 3.0 C FMUs of the same parameters; "3s": FMI 3.0 with
    the FMI 2.0 FMU's scalars (``arrays=False``)."""
    out = tmp_path_factory.mktemp("arms")
    return {v: export_c_fmu(FlexibleManipulatorBlock, out / f"v{v}", model_name="ArmC",
                            fmi_version=int(str(v)[0]), arrays=v != "3s",
                            platforms=("linux64",)) for v in (2, 3, "3s")}


def _fmi2_name(name: str) -> str:
    """The FMI 2.0 FMU's scalar of an array element: theta[2] -> theta2,
    arm.theta_ref[1] -> arm.theta1_ref."""
    return re.sub(r"^(.*?)([A-Za-z]+)((?:_[A-Za-z]\w*)?)\[(\d+)\]$", r"\1\2\4\3", name)


def test_vector_signals_are_arrays_in_fmi3(arms):
    """The arm's torques, joint angles and rates are arrays of 2 (one unit and range
    each); the tip deflections, whose ranges differ (each link's length), and the tip
    coordinates stay scalars; the value references of the arrays follow time and the
    Model Exchange state's."""
    md = read_model_description(str(arms[3]))
    n_vars = len(read_model_description(str(arms[2])).modelVariables)
    arrays = {v.name: ([int(d.start) for d in v.dimensions], v.unit, v.causality,
                       v.valueReference) for v in md.modelVariables if v.dimensions}
    assert arrays == {"tau": ([2], "N.m", "input", n_vars + 3),
                      "theta": ([2], "rad", "output", n_vars + 4),
                      "omega": ([2], "rad/s", "output", n_vars + 5)}
    names = {v.name for v in md.modelVariables}
    assert {"w1", "w2", "x_tip", "y_tip"} <= names and not names & {"tau1", "theta2"}
    assert validate_fmu(str(arms["3s"])) == []


@pytest.mark.parametrize("model", MODELS)
def test_every_model_exports_a_valid_fmi3_fmu_that_compiles_alone(model, tmp_path):
    entry = C_MODELS[model]
    fmu = export_c_fmu(resolve(entry.block), tmp_path, model_name=entry.model_name,
                       fmi_version=3, platforms=("linux64",))
    assert validate_fmu(str(fmu)) == []
    md = read_model_description(str(fmu))
    assert md.fmiVersion == "3.0" and md.coSimulation.canSerializeFMUstate
    assert [v.name for v in md.modelVariables if v.causality == "independent"] == ["time"]
    assert binary_platforms(fmu)[0] == "x86_64-linux"
    folder = tmp_path / "again"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(folder)
    (folder / "binaries" / "x86_64-linux").mkdir(parents=True, exist_ok=True)
    command = build_command("linux64", 3).format(id="again").split() + ["-pedantic"]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    symbols = subprocess.run(["nm", "-D", "--defined-only",
                              str(folder / "binaries" / "x86_64-linux" / "again.so")],
                             capture_output=True, text=True, check=True).stdout.split()
    exported = {s for s in symbols if s.startswith("fmi")}
    assert len(exported) == 75 and all(s.startswith("fmi3") for s in exported)
    assert not any("Py" in s for s in symbols)


def test_the_fmi3_arm_equals_the_fmi2_arm_bit_for_bit(arms):
    """fmpy's simulate_fmu of the FMUs with the same torques (FMI 3.0: the array ``tau``):
    every output the same double, and, with ``arrays=False``, the variables the same
    names, units and value references."""
    t = np.arange(0.0, 1.0, 1e-3)
    tau = np.column_stack([0.3 * np.sin(4 * t), -0.2 * np.cos(3 * t)])
    scalar = np.array(list(zip(t, *tau.T)), dtype=[("time", float), ("tau1", float), ("tau2", float)])
    array = np.zeros(len(t), dtype=[("time", float), ("tau", float, (2,))])
    array["time"], array["tau"] = t, tau
    r = {v: simulate_fmu(str(arms[v]), stop_time=1.0, output_interval=1e-3,
                         input=array if v == 3 else scalar) for v in (2, 3, "3s")}
    assert r[2].dtype.names == r["3s"].dtype.names and len(r[2]) == 1001
    for name in r[2].dtype.names:
        assert np.array_equal(r[2][name], r["3s"][name]), name
        base, k = re.fullmatch(r"([a-z_]+?)(\d?)", name).groups()
        columns = r[3][base][:, int(k) - 1] if base in ("theta", "omega") else r[3][name]
        assert np.array_equal(r[2][name], columns), name
    assert np.abs(r[3]["theta"]).max() > 1e-3          # the arm moved
    v2 = {v.name: (v.valueReference, v.unit) for v in read_model_description(str(arms[2])).modelVariables}
    v3 = {v.name: (v.valueReference, v.unit) for v in read_model_description(str(arms["3s"])).modelVariables
          if v.name != "time"}
    assert v2 == v3


def _slave(fmu, tmp_path, messages):
    from fmpy import extract
    from fmpy.fmi3 import FMU3Slave
    md = read_model_description(str(fmu))
    slave = FMU3Slave(guid=md.guid, unzipDirectory=extract(str(fmu), str(tmp_path / "u")),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName="arm")
    slave.instantiate(logMessage=lambda env, status, cat, msg: messages.append((status, msg.decode())))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    return slave, vr


def test_fmi3_state_serialization_and_bad_values(arms, tmp_path):
    messages = []
    arm, vr = _slave(arms[3], tmp_path, messages)
    arm.enterInitializationMode(startTime=0.0)
    arm.exitInitializationMode()
    arm.setFloat64([vr["tau"]], [0.3, -0.1])
    assert arm.getFloat64([vr["tau"]], 2) == [0.3, -0.1]
    for k in range(100):
        arm.doStep(k * 1e-3, 1e-3)
    saved = arm.serializeFMUState(arm.getFMUState())
    straight = []
    for k in range(100, 200):
        arm.doStep(k * 1e-3, 1e-3)
        straight.append(arm.getFloat64([vr["theta"], vr["w1"], vr["time"]], 4))
    state = arm.deserializeFMUState(saved)
    arm.setFMUState(state)
    assert arm.getFloat64([vr["time"]]) == [pytest.approx(0.1, abs=1e-15)]
    again = []
    for k in range(100, 200):
        arm.doStep(k * 1e-3, 1e-3)
        again.append(arm.getFloat64([vr["theta"], vr["w1"], vr["time"]], 4))
    assert again == straight
    # a corrupt state is refused with fmi3Error naming the cause, the instance unchanged
    broken = bytearray(saved)
    broken[len(broken) // 2] ^= 0xFF
    with pytest.raises(Exception, match="fmi3DeserializeFMUState"):
        arm.deserializeFMUState(bytes(broken))
    assert any("checksum" in m for s, m in messages if s == 3)
    # a value outside its range: fmi3Error naming the element and the accepted range;
    # no element of the array is set (every value checked before any is applied)
    with pytest.raises(Exception):
        arm.setFloat64([vr["tau"]], [0.2, float("nan")])
    assert any("input tau2 = nan refused" in m for s, m in messages)
    assert arm.getFloat64([vr["tau"]], 2) == [0.3, -0.1]
    # an array's values miscounted: refused, saying how many it holds
    with pytest.raises(Exception):
        arm.setFloat64([vr["tau"]], [0.2])
    assert any("1 values for 1 value references that hold 2" in m for s, m in messages)
    with pytest.raises(Exception):
        arm.doStep(0.5, 1e-3)                              # not the FMU's time
    assert any("the communication point must be the FMU's time exactly" in m for s, m in messages)
    arm.terminate()
    arm.freeInstance()


def test_the_master_runs_the_closed_loop_of_fmi3_c_fmus_as_of_fmi2(tmp_path):
    """trajectory -> joint PD -> arm, all three C FMUs: the FMI 3.0 loop, its vectors
    arrays connected by name (``pd.tau`` -> ``arm.tau``), equals the FMI 2.0 loop to the
    last bit, element by element."""
    results = {}
    for v in (2, 3):
        fmus = {name: export_c_fmu(resolve(C_MODELS[name].block), tmp_path / f"v{v}",
                                   model_name=C_MODELS[name].model_name, fmi_version=v,
                                   platforms=("linux64",))
                for name in ("trajectory", "joint-pd", "manipulator")}
        comps = [FMUComponent("ref", fmus["trajectory"]), FMUComponent("pd", fmus["joint-pd"]),
                 FMUComponent("arm", fmus["manipulator"])]
        if v == 2:
            links = {f"ref.{s}": f"pd.{s}" for s in ("theta1_ref", "theta2_ref", "omega1_ref",
                                                     "omega2_ref", "alpha1_ref", "alpha2_ref")}
            links.update({"pd.tau1": "arm.tau1", "pd.tau2": "arm.tau2",
                          **{f"arm.{s}": f"pd.{s}" for s in ("theta1", "theta2", "omega1", "omega2")}})
        else:
            links = {f"ref.{s}": f"pd.{s}" for s in ("theta_ref", "omega_ref", "alpha_ref")}
            links.update({"pd.tau": "arm.tau", "arm.theta": "pd.theta", "arm.omega": "pd.omega"})
        results[v] = Master(System(comps, links), 1e-3).run(0.5)
    names3 = results[3].data.dtype.names
    assert sorted(map(_fmi2_name, names3)) == sorted(results[2].data.dtype.names)
    for name in names3:
        assert np.array_equal(results[2][_fmi2_name(name)], results[3][name]), name
    assert np.abs(results[3]["arm.theta[1]"]).max() > 1e-3


def test_an_array_input_set_in_part_keeps_its_other_elements(arms):
    """Only ``tau[1]`` connected: the master writes the whole array, ``tau[2]`` with its
    start value (0); the arm moves as the FMI 2.0 arm with ``tau1`` alone connected."""
    results = {}
    for v, end in ((2, "arm.tau1"), (3, "arm.tau[1]")):
        source = BlockComponent("torque", SmoothStep(r0=0.4, r1=0.4))
        results[v] = Master(System([source, FMUComponent("arm", arms[v])],
                                   {"torque.r": end}), 1e-3).run(0.2)
    for name in results[3].data.dtype.names:
        assert np.array_equal(results[2][_fmi2_name(name)], results[3][name]), name
    assert np.all(results[3]["arm.tau[2]"] == 0.0) and results[3]["arm.theta[1]"][-1] > 1e-3


def test_command_line_writes_an_fmi3_fmu(tmp_path, capsys):
    assert main(["export-c", "trajectory", "--fmi", "3", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr()
    path = out.out.strip().splitlines()[-1]
    md = read_model_description(path)
    assert md.fmiVersion == "3.0"
    assert f"binaries for {BINARY_FOLDERS[3]['linux64']}" in out.err
    outputs = {v.name: len(v.dimensions) for v in md.modelVariables if v.causality == "output"}
    assert outputs == {"theta_ref": 1, "omega_ref": 1, "alpha_ref": 1}
    # --scalars: the FMI 2.0 FMU's names
    assert main(["export-c", "trajectory", "--fmi", "3", "--scalars", "--no-compile",
                 "-o", str(tmp_path / "s")]) == 0
    path = capsys.readouterr().out.strip().splitlines()[-1]
    assert {v.name for v in read_model_description(path).modelVariables
            if v.causality == "output"} == {f"{q}{k}_ref" for q in ("theta", "omega", "alpha")
                                            for k in (1, 2)}
