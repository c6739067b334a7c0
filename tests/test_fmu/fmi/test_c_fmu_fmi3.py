"""FMI 3.0 C-source FMUs (issue 25, item 2): ``export_c_fmu(..., fmi_version=3)`` and
``flexcosim export-c --fmi 3``.

The same model, variables, value references and checks as the FMI 2.0 FMU, through the
FMI 3.0 front end of the one wrapper (``fmi3_cs.c`` over ``cfmu_core.h``): fmpy's
validation is clean, ``simulate_fmu`` of the FMI 3.0 FMU equals the FMI 2.0 one bit for
bit, a saved and serialized state continues bit for bit, bad values and a corrupt state
are refused naming the cause, and the master runs the closed loop of FMI 3.0 C FMUs as
it runs the FMI 2.0 ones.
"""
from __future__ import annotations

import subprocess
import zipfile

import numpy as np
import pytest
from fmpy import read_model_description, simulate_fmu
from fmpy.validation import validate_fmu

from flexcosim.catalog import C_MODELS, resolve
from flexcosim.cli import main
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.master import Master
from fmu.cosim.system import System
from fmu.fmi.export_c import BINARY_FOLDERS, binary_platforms, build_command, export_c_fmu
from mbdcore.models.manipulator import FlexibleManipulatorBlock

pytestmark = pytest.mark.gcc

MODELS = sorted(m for m, entry in C_MODELS.items() if entry.block is not None)


@pytest.fixture(scope="module")
def arms(tmp_path_factory):
    """The arm as FMI 2.0 and FMI 3.0 C FMUs of the same parameters."""
    out = tmp_path_factory.mktemp("arms")
    return {v: export_c_fmu(FlexibleManipulatorBlock, out / f"v{v}", model_name="ArmC",
                            fmi_version=v) for v in (2, 3)}


@pytest.mark.parametrize("model", MODELS)
def test_every_model_exports_a_valid_fmi3_fmu_that_compiles_alone(model, tmp_path):
    entry = C_MODELS[model]
    fmu = export_c_fmu(resolve(entry.block), tmp_path, model_name=entry.model_name,
                       fmi_version=3)
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
    """fmpy's simulate_fmu of both FMUs with the same torques: every output the same
    double, and the variables the same names, units and value references."""
    t = np.arange(0.0, 1.0, 1e-3)
    signals = np.array(list(zip(t, 0.3 * np.sin(4 * t), -0.2 * np.cos(3 * t))),
                       dtype=[("time", float), ("tau1", float), ("tau2", float)])
    r = {v: simulate_fmu(str(arms[v]), stop_time=1.0, output_interval=1e-3, input=signals)
         for v in (2, 3)}
    assert r[2].dtype.names == r[3].dtype.names and len(r[2]) == 1001
    for name in r[2].dtype.names:
        assert np.array_equal(r[2][name], r[3][name]), name
    assert np.abs(r[3]["theta1"]).max() > 1e-3          # the arm moved
    v2 = {v.name: (v.valueReference, v.unit) for v in read_model_description(str(arms[2])).modelVariables}
    v3 = {v.name: (v.valueReference, v.unit) for v in read_model_description(str(arms[3])).modelVariables
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
    arm.setFloat64([vr["tau1"]], [0.3])
    for k in range(100):
        arm.doStep(k * 1e-3, 1e-3)
    saved = arm.serializeFMUState(arm.getFMUState())
    straight = []
    for k in range(100, 200):
        arm.doStep(k * 1e-3, 1e-3)
        straight.append(arm.getFloat64([vr["theta1"], vr["w1"], vr["time"]]))
    state = arm.deserializeFMUState(saved)
    arm.setFMUState(state)
    assert arm.getFloat64([vr["time"]]) == [pytest.approx(0.1, abs=1e-15)]
    again = []
    for k in range(100, 200):
        arm.doStep(k * 1e-3, 1e-3)
        again.append(arm.getFloat64([vr["theta1"], vr["w1"], vr["time"]]))
    assert again == straight
    # a corrupt state is refused with fmi3Error naming the cause, the instance unchanged
    broken = bytearray(saved)
    broken[len(broken) // 2] ^= 0xFF
    with pytest.raises(Exception, match="fmi3DeserializeFMUState"):
        arm.deserializeFMUState(bytes(broken))
    assert any("checksum" in m for s, m in messages if s == 3)
    # a value outside its range: fmi3Error naming it and the accepted range; kept
    with pytest.raises(Exception):
        arm.setFloat64([vr["tau1"]], [float("nan")])
    assert any("input tau1 = nan refused" in m for s, m in messages)
    with pytest.raises(Exception):
        arm.doStep(0.5, 1e-3)                              # not the FMU's time
    assert any("the communication point must be the FMU's time exactly" in m for s, m in messages)
    arm.terminate()
    arm.freeInstance()


def test_the_master_runs_the_closed_loop_of_fmi3_c_fmus_as_of_fmi2(tmp_path):
    """trajectory -> joint PD -> arm, all three C FMUs: the FMI 3.0 loop equals the FMI
    2.0 loop to the last bit."""
    results = {}
    for v in (2, 3):
        fmus = {name: export_c_fmu(resolve(C_MODELS[name].block), tmp_path / f"v{v}",
                                   model_name=C_MODELS[name].model_name, fmi_version=v)
                for name in ("trajectory", "joint-pd", "manipulator")}
        comps = [FMUComponent("ref", fmus["trajectory"]), FMUComponent("pd", fmus["joint-pd"]),
                 FMUComponent("arm", fmus["manipulator"])]
        links = {f"ref.{s}": f"pd.{s}" for s in ("theta1_ref", "theta2_ref", "omega1_ref",
                                                 "omega2_ref", "alpha1_ref", "alpha2_ref")}
        links.update({"pd.tau1": "arm.tau1", "pd.tau2": "arm.tau2",
                      **{f"arm.{s}": f"pd.{s}" for s in ("theta1", "theta2", "omega1", "omega2")}})
        results[v] = Master(System(comps, links), 1e-3).run(0.5)
    assert results[2].data.dtype.names == results[3].data.dtype.names
    for name in results[2].data.dtype.names:
        assert np.array_equal(results[2][name], results[3][name]), name
    assert np.abs(results[3]["arm.theta1"]).max() > 1e-3


def test_command_line_writes_an_fmi3_fmu(tmp_path, capsys):
    assert main(["export-c", "trajectory", "--fmi", "3", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr()
    path = out.out.strip().splitlines()[-1]
    assert read_model_description(path).fmiVersion == "3.0"
    assert f"binaries for {BINARY_FOLDERS[3]['linux64']}" in out.err
