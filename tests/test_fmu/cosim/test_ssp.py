"""Systems in files: SSP 1.0 (.ssp/.ssd) and JSON round trips, malformed files, unsafe archives."""
from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest
from fmpy.ssp.simulation import simulate_ssp
from lxml import etree

from flexcosim.cli import main
from fmu.cosim.components import BlockComponent
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.master import Master
from fmu.cosim.system import System
from fmu.cosim.simulate import auto_interval, cosimulate
from fmu.cosim.file_rules import SSPError
from fmu.cosim.ssp import export_ssp, import_ssp
from fmu.cosim.system_file import load_system, save_system

from support.blocks import SmoothStep, Tracking




def two_lags(fmu):
    """Two C FMUs in series under a Python controller, one with a feedthrough override."""
    return System([BlockComponent("ref", SmoothStep(r1=2.0, t_switch=0.3)),
                   BlockComponent("ctrl", Tracking(kp=4.0)),
                   FMUComponent("plant", fmu, {"T": 0.5, "K": 1.5, "x0": 1.0}),
                   FMUComponent("sensor", fmu, {"T": 0.02}, feedthrough={"x": (), "dx": ("u",)})],
                  {"ref.r": "ctrl.r", "sensor.x": "ctrl.x", "ctrl.u": "plant.u",
                   "plant.x": "sensor.u"})


def run(system, method="jacobi"):
    return Master(system, 0.01, method, extrapolation=1).run(1.0)


@pytest.mark.parametrize("suffix", [".ssp", ".ssd", ".json"])
def test_round_trip_runs_identically(lag_fmu, tmp_path, suffix):
    original = two_lags(lag_fmu)
    path = save_system(original, tmp_path / f"loop{suffix}", stop_time=1.0, step=0.01,
                       method="jacobi")
    back = load_system(path, allow_python_blocks=True)
    assert [c.name for c in back.components] == ["ref", "ctrl", "plant", "sensor"]
    assert back.connections == original.connections
    assert back.experiment == {"stop_time": 1.0, "step": 0.01, "method": "jacobi"}
    assert back.by_name["plant"].parameters == {"T": 0.5, "K": 1.5, "x0": 1.0}
    assert back.by_name["sensor"].feedthrough == {"x": (), "dx": ("u",)}
    assert back.by_name["ref"].block.params["r1"] == 2.0
    np.testing.assert_array_equal(run(back).data, run(original).data)


def test_ssp_archive_layout(lag_fmu, tmp_path):
    path = export_ssp(two_lags(lag_fmu), tmp_path / "loop.ssp")
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["SystemStructure.ssd", "resources/FirstOrderLag.fmu"]
        ssd = z.read("SystemStructure.ssd").decode()
    for text in ('xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"',
                 'version="1.0"', 'source="resources/FirstOrderLag.fmu"',
                 'type="application/x-fmu-sharedlibrary"', '<ssd:Connector name="u" kind="input">',
                 '<ssd:Connector name="T" kind="parameter">', '<ssv:Real value="0.5" />',
                 'startElement="plant" startConnector="x" endElement="sensor" endConnector="u"',
                 'source="python:support.blocks:Tracking"'):
        assert text in ssd


def test_python_blocks_can_be_refused(lag_fmu, tmp_path):
    path = export_ssp(two_lags(lag_fmu), tmp_path / "loop.ssp")
    with pytest.raises(SSPError, match="Component name='ref'.*not allowed"):
        import_ssp(path, allow_python_blocks=False)


MINIMAL = """<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon" version="1.0" name="s">
  <ssd:System name="s">
    <ssd:Elements>
      <ssd:Component name="plant" source="FirstOrderLag.fmu">
        <ssd:Connectors><ssd:Connector name="x" kind="output"/></ssd:Connectors>
      </ssd:Component>
      <ssd:Component name="sensor" source="FirstOrderLag.fmu"/>
    </ssd:Elements>
    <ssd:Connections>
      <ssd:Connection startElement="plant" startConnector="x" endElement="sensor" endConnector="u"/>
    </ssd:Connections>
  </ssd:System>
  <ssd:DefaultExperiment startTime="0" stopTime="2"/>
</ssd:SystemStructureDescription>
"""


@pytest.mark.parametrize("old, new, words", [
    (None, None, None),
    ('<ssd:Component name="plant" source="FirstOrderLag.fmu">', '<ssd:Component name="plant">',
     ["<ssd:Component name='plant'>", "missing required attribute 'source'"]),
    ('kind="output"', 'kind="sideways"', ["<ssd:Connector name='x'>", "'sideways'", "inout"]),
    ('name="x" kind="output"', 'name="y" kind="output"', ["<ssd:Connector name='y'>",
                                                         "no output 'y'", "outputs: x, dx"]),
    ('endConnector="u"/>', '/>', ["<ssd:Connection> #1", "missing required attribute "
                                                         "'endConnector'"]),
    ('endElement="sensor"', 'endElement="sensr"', ["<ssd:Connection> #1", "unknown component "
                                                   "'sensr'"]),
    ('</ssd:Elements>', '</ssd:Elements', ["not well-formed"]),
    ('version="1.0" name="s"', 'name="s"', ["<ssd:SystemStructureDescription>",
                                            "missing required attribute 'version'"]),
    ('stopTime="2"', 'stopTime="two"', ["<ssd:DefaultExperiment>", "stopTime='two'"]),
    ('source="FirstOrderLag.fmu"/>', 'source="missing.fmu"/>',
     ["<ssd:Component name='sensor'>", "'missing.fmu' not found"]),
    ('<ssd:Elements>', '<ssd:Elements><ssd:System name="inner"/>', ["nested systems"]),
    ('endConnector="u"/>', 'endConnector="u"><ssc:LinearTransformation factor="2"/>'
                           '</ssd:Connection>', ["LinearTransformation", "not supported"]),
])
def test_malformed_ssd_names_the_element(lag_fmu, tmp_path, old, new, words):
    shutil.copy(lag_fmu, tmp_path / "FirstOrderLag.fmu")
    path = tmp_path / "s.ssd"
    path.write_text(MINIMAL if old is None else MINIMAL.replace(old, new, 1))
    if old is None:   # the unmodified file is fine
        s = import_ssp(path)
        assert s.connections == {"sensor.u": "plant.x"} and s.experiment["stop_time"] == 2.0
        return
    with pytest.raises(SSPError) as info:
        import_ssp(path)
    for w in words:
        assert w in str(info.value)
    assert str(path) in str(info.value)


def _add_member(src, dst, name, data=b"owned"):
    shutil.copy(src, dst)
    with zipfile.ZipFile(dst, "a") as z:
        z.writestr(zipfile.ZipInfo(name), data)
    return dst


@pytest.mark.parametrize("member", ["../../evil.txt", "/tmp/evil_abs.txt", "resources/../../x",
                                    "C:/evil.txt", "..\\evil.txt"])
def test_path_traversal_archives_are_rejected(lag_fmu, tmp_path, member):
    good_ssp = export_ssp(System([FMUComponent("p", lag_fmu)]), tmp_path / "good.ssp")
    inner = tmp_path / "inner"
    inner.mkdir()
    for evil, opener in ((_add_member(good_ssp, inner / "bad.ssp", member), import_ssp),
                         (_add_member(lag_fmu, inner / "bad.fmu", member),
                          lambda p: FMUComponent("p", p))):
        with pytest.raises(ValueError, match="refusing to extract") as info:
            opener(evil)
        assert repr(member) in str(info.value)
    assert not (tmp_path / "evil.txt").exists() and not list(tmp_path.rglob("evil*"))


def test_symlink_member_is_rejected(lag_fmu, tmp_path):
    bad = tmp_path / "link.fmu"
    shutil.copy(lag_fmu, bad)
    info = zipfile.ZipInfo("binaries/linux64/link")
    info.external_attr = (0o120777 << 16)
    with zipfile.ZipFile(bad, "a") as z:
        z.writestr(info, "/etc/passwd")
    with pytest.raises(ValueError, match="symbolic link"):
        FMUComponent("p", bad)


def test_cosim_command_runs_a_system_file(lag_fmu, tmp_path, capsys):
    path = export_ssp(two_lags(lag_fmu), tmp_path / "loop.ssp", stop_time=1.0, step=0.01,
                      method="jacobi", extrapolation=1)
    out = tmp_path / "r.csv"
    assert main(["cosim", "--allow-python-blocks", str(path), "-o", str(out)]) == 0
    back = np.genfromtxt(out, delimiter=",", names=True, deletechars="")
    np.testing.assert_array_equal(back["plant.x"], run(two_lags(lag_fmu))["plant.x"])
    assert main(["cosim", "--allow-python-blocks", str(path), "--stop", "0.5", "--step", "0.05", "--variable-step",
                 "--rtol", "1e-3", "--atol", "1e-4"]) == 0
    assert "rejected" in capsys.readouterr().out
    assert main(["cosim", str(tmp_path / "nothing.ssp")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cosimulate_takes_what_is_not_given_from_the_default_experiment(lag_fmu, tmp_path):
    """fmpy.simulate_fmu-style: a file in, its result out; the experiment in the file
    supplies stop time, step and coupling method, arguments override them."""
    path = save_system(two_lags(lag_fmu), tmp_path / "loop.ssp", stop_time=1.0, step=0.01,
                       method="jacobi")
    by_file = cosimulate(path, allow_python_blocks=True)
    by_hand = Master(load_system(path, allow_python_blocks=True), 0.01, "jacobi").run(1.0)
    np.testing.assert_array_equal(by_file.data, by_hand.data)
    shorter = cosimulate(path, allow_python_blocks=True,
                       stop_time=0.5, step_size=0.005, method="gauss-seidel")
    assert shorter.time[-1] == pytest.approx(0.5) and len(shorter) == 101
    # neither given nor in the experiment: fmpy's rules (issue 25, defect 3), 1 s in
    # 500 steps of 2 ms, as fmpy.simulate_fmu runs such an FMU
    bare = cosimulate(two_lags(lag_fmu))
    np.testing.assert_allclose(bare.time, np.linspace(0.0, 1.0, 501), atol=1e-12)


@pytest.mark.parametrize("source", ["../secret.ssv", "SECRET_ABS", "file:SECRET_ABS"])
def test_parameter_binding_outside_the_archive_is_refused(lag_fmu, tmp_path, source):
    secret = tmp_path / "secret.ssv"
    secret.write_text(
        '<ssv:ParameterSet xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues"'
        ' version="1.0" name="p"><ssv:Parameters><ssv:Parameter name="T"><ssv:Real value="0.7"/>'
        '</ssv:Parameter></ssv:Parameters></ssv:ParameterSet>')
    source = source.replace("SECRET_ABS", str(secret))
    ssd = MINIMAL.replace('source="FirstOrderLag.fmu"/>',
                          'source="resources/FirstOrderLag.fmu"><ssd:ParameterBindings>'
                          f'<ssd:ParameterBinding source="{source}"/></ssd:ParameterBindings>'
                          '</ssd:Component>').replace('source="FirstOrderLag.fmu"',
                                                      'source="resources/FirstOrderLag.fmu"')
    path = tmp_path / "s.ssp"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", ssd)
        z.write(lag_fmu, "resources/FirstOrderLag.fmu")
    with pytest.raises(SSPError, match="ParameterBinding.*points outside the archive"):
        import_ssp(path)


@pytest.mark.parametrize("where, key, words", [
    ("top", "stpo_time", ["(top level): unknown key 'stpo_time'", "components, connections"]),
    ("component", "paramters", ["components[2] ('plant'): unknown key 'paramters'",
                                "did you mean 'parameters'?", "name, fmu, block"]),
    ("experiment", "stpo_time", ["experiment: unknown key 'stpo_time'",
                                 "did you mean 'stop_time'?", "start_time, stop_time, step"]),
])
def test_unknown_keys_of_a_json_system_are_refused(lag_fmu, tmp_path, where, key, words):
    path = save_system(two_lags(lag_fmu), tmp_path / "loop.json", stop_time=1.0, step=0.01)
    data = json.loads(path.read_text())
    target = {"top": data, "component": data["components"][2],
              "experiment": data["experiment"]}[where]
    target[key] = 1.0
    path.write_text(json.dumps(data))
    with pytest.raises(SSPError) as info:
        load_system(path, allow_python_blocks=True)
    for w in words:
        assert w in str(info.value)


@pytest.mark.parametrize("suffix", [".json", ".ssp", ".ssd"])
def test_python_blocks_are_refused_before_any_import(lag_fmu, tmp_path, suffix, capsys):
    # a module that records its import: it must never run
    (tmp_path / "evil_blocks.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('ran').write_text('x')\n")
    system = two_lags(lag_fmu)
    path = save_system(system, tmp_path / f"loop{suffix}", stop_time=0.1, step=0.01)
    if suffix == ".ssp":
        with zipfile.ZipFile(path) as z:
            members = {n: z.read(n) for n in z.namelist()}
        ssd = members["SystemStructure.ssd"].decode()
        members["SystemStructure.ssd"] = ssd.replace("python:support.blocks:Tracking",
                                                     "python:evil_blocks:Tracking").encode()
        path.unlink()
        with zipfile.ZipFile(path, "w") as z:
            for n, b in members.items():
                z.writestr(n, b)
    else:
        path.write_text(path.read_text().replace("support.blocks:Tracking",
                                                 "evil_blocks:Tracking"))
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(SSPError, match="Python blocks are not allowed"):
            load_system(path, allow_python_blocks=False)
        assert main(["cosim", str(path), "--no-python-blocks"]) == 2
    finally:
        sys.path.remove(str(tmp_path))
    assert "Python blocks are not allowed" in capsys.readouterr().err
    assert not (tmp_path / "ran").exists() and "evil_blocks" not in sys.modules


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["experiment"].update(stop_time="abc"),
     ["experiment.stop_time = 'abc'", "a finite number"]),
    (lambda d: d["experiment"].update(method="newton"),
     ["experiment.method = 'newton'", "gauss-seidel, jacobi"]),
    (lambda d: d.update(connections="ref.r"), ["connections = 'ref.r'", "pairs"]),
    (lambda d: d.update(connections=["ref.r"]), ["connections[0] = 'ref.r'", "a pair"]),
    ("BIGINT", ["loop.json", "4300 digits"]),
    ("DEEP", ["loop.json", "nested too deeply"]),
])
def test_bad_values_of_a_json_system_are_one_line_messages(lag_fmu, tmp_path, capsys, edit,
                                                             words):
    path = save_system(two_lags(lag_fmu), tmp_path / "loop.json", stop_time=1.0, step=0.01)
    if edit == "BIGINT":
        path.write_text(path.read_text().replace('"stop_time": 1.0', '"stop_time": ' + "9" * 5000))
    elif edit == "DEEP":
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        data = json.loads(path.read_text())
        edit(data)
        path.write_text(json.dumps(data))
    assert main(["cosim", "--allow-python-blocks", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err


# ---------------------------------------------------------------------------------
# what is written is valid SSP 1.0 (issue 13, item 23)
# ---------------------------------------------------------------------------------
def _schema(name):
    """An SSP 1.0 schema from the copies fmpy ships (fmpy/ssp/schema), for lxml."""
    path = Path(fmpy.__file__).parent / "ssp" / "schema" / name
    assert path.is_file(), f"fmpy ships no {name}"
    return etree.XMLSchema(etree.parse(str(path)))


def assert_valid_ssp10(ssd: bytes):
    """The SSD against SystemStructureDescription.xsd, and each inline ssv:ParameterSet
    against SystemStructureParameterValues.xsd (the SSD schema leaves them to 'lax')."""
    ssd_schema = _schema("SystemStructureDescription.xsd")
    ssv_schema = _schema("SystemStructureParameterValues.xsd")
    doc = etree.fromstring(ssd)
    assert ssd_schema.validate(doc), "\n".join(str(e) for e in ssd_schema.error_log)
    sets = doc.findall(".//{http://ssp-standard.org/SSP1/SystemStructureParameterValues}"
                       "ParameterSet")
    for pset in sets:
        assert ssv_schema.validate(etree.ElementTree(pset)), \
            "\n".join(str(e) for e in ssv_schema.error_log)
    return doc


def lags_only(fmu, connected=True):
    """FMUs only (fmpy's SSP runner cannot run Python blocks), one feedthrough override."""
    return System([FMUComponent("plant", fmu, {"T": 0.5, "K": 1.5, "x0": 1.0}),
                   FMUComponent("sensor", fmu, {"T": 0.02}, feedthrough={"x": (), "dx": ("u",)})],
                  {"plant.x": "sensor.u"} if connected else {})


@pytest.mark.parametrize("case", ["blocks and FMUs", "FMUs", "no connections", "bare"])
@pytest.mark.parametrize("suffix", [".ssp", ".ssd"])
def test_every_exported_ssd_is_valid_ssp_1_0(lag_fmu, tmp_path, case, suffix):
    system = {"blocks and FMUs": lambda: two_lags(lag_fmu),
              "FMUs": lambda: lags_only(lag_fmu),
              "no connections": lambda: lags_only(lag_fmu, connected=False),
              "bare": lambda: System([FMUComponent("plant", lag_fmu)])}[case]()
    experiment = {} if case == "bare" else {"stop_time": 1.0, "step": 0.01, "method": "jacobi"}
    path = export_ssp(system, tmp_path / f"s{suffix}", **experiment)
    if suffix == ".ssp":
        with zipfile.ZipFile(path) as z:
            ssd = z.read("SystemStructure.ssd")
    else:
        ssd = path.read_bytes()
    assert_valid_ssp10(ssd)
    back = load_system(path, allow_python_blocks=True)   # and it still reads back the same
    assert back.connections == system.connections
    for c in system.components:
        assert back.by_name[c.name].feedthrough == c.feedthrough


@pytest.mark.parametrize("connected", [True, False])
def test_fmpy_runs_the_exported_ssp(lag_fmu, tmp_path, connected):
    path = export_ssp(lags_only(lag_fmu, connected), tmp_path / "s.ssp", stop_time=1.0)
    rows = simulate_ssp(str(path), stop_time=0.1, step_size=0.01)   # validates the SSD first
    assert len(rows) >= 10


def test_feedthrough_annotation_of_earlier_files_is_still_read(lag_fmu, tmp_path):
    """Files written before the fix had the fc:Feedthrough entries directly in the annotation."""
    path = export_ssp(lags_only(lag_fmu), tmp_path / "s.ssd")
    text = path.read_text()
    start, end = text.index("<fc:FeedthroughOverride>"), text.index("</fc:FeedthroughOverride>")
    inner = text[start + len("<fc:FeedthroughOverride>"):end]
    path.write_text(text[:start] + inner + text[end + len("</fc:FeedthroughOverride>"):])
    assert load_system(path).by_name["sensor"].feedthrough == {"x": (), "dx": ("u",)}


# ---------------------------------------------------------------------------------
# exchange with OMSimulator (issue 13, item 24)
# ---------------------------------------------------------------------------------
#: An SSD shaped as OMSimulator 3 writes it: version 2.0, its org.openmodelica
#: annotations, geometry, an empty list of system connectors, a connection geometry.
OMS_SSD = """<?xml version="1.0"?>
<ssd:SystemStructureDescription xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues"
    xmlns:ssm="http://ssp-standard.org/SSP1/SystemStructureParameterMapping"
    xmlns:ssb="http://ssp-standard.org/SSP1/SystemStructureSignalDictionary"
    xmlns:oms="https://raw.githubusercontent.com/OpenModelica/OMSimulator/master/schema/oms.xsd"
    name="model" version="2.0">
  <ssd:System name="root">
    <ssd:Connectors />
    <ssd:Elements>
      <ssd:Component name="plant" type="application/x-fmu-sharedlibrary"
          source="FirstOrderLag.fmu">
        <ssd:Connectors>
          <ssd:Connector name="u" kind="input"><ssc:Real /><ssd:ConnectorGeometry x="0" y="0.5" /></ssd:Connector>
          <ssd:Connector name="x" kind="output"><ssc:Real /><ssd:ConnectorGeometry x="1" y="0.5" /></ssd:Connector>
        </ssd:Connectors>
        <ssd:ElementGeometry x1="-10" y1="-10" x2="10" y2="10" rotation="0" />
        <ssd:ParameterBindings>
          <ssd:ParameterBinding>
            <ssd:ParameterValues>
              <ssv:ParameterSet version="2.0" name="parameters">
                <ssv:Parameters>
                  <ssv:Parameter name="T"><ssv:Float64 value="0.5" /></ssv:Parameter>
                  <ssv:Parameter name="x0"><ssv:Real value="1" /></ssv:Parameter>
                </ssv:Parameters>
              </ssv:ParameterSet>
            </ssd:ParameterValues>
          </ssd:ParameterBinding>
        </ssd:ParameterBindings>
      </ssd:Component>
      <ssd:Component name="sensor" type="application/x-fmu-sharedlibrary"
          source="FirstOrderLag.fmu">
        <ssd:Connectors>
          <ssd:Connector name="u" kind="input"><ssc:Real /></ssd:Connector>
        </ssd:Connectors>
      </ssd:Component>
    </ssd:Elements>
    <ssd:Connections>
      <ssd:Connection startElement="plant" startConnector="x" endElement="sensor" endConnector="u">
        <ssd:ConnectionGeometry pointsX="10 20" pointsY="0 0" />
      </ssd:Connection>
    </ssd:Connections>
    <ssd:Annotations>
      <ssc:Annotation type="org.openmodelica">
        <oms:Annotations>
          <oms:SimulationInformation>
            <oms:FixedStepMaster description="oms-ma" stepSize="0.01" absoluteTolerance="0.0001"
                relativeTolerance="0.0001" />
          </oms:SimulationInformation>
        </oms:Annotations>
      </ssc:Annotation>
    </ssd:Annotations>
  </ssd:System>
  <ssd:DefaultExperiment startTime="0" stopTime="1">
    <ssd:Annotations>
      <ssc:Annotation type="org.openmodelica">
        <oms:Annotations>
          <oms:SimulationInformation resultFile="model_res.mat" loggingInterval="0" bufferSize="10"
              signalFilter="resources/signalFilter.xml" />
        </oms:Annotations>
      </ssc:Annotation>
    </ssd:Annotations>
  </ssd:DefaultExperiment>
</ssd:SystemStructureDescription>
"""


def test_an_ssp_2_0_file_as_omsimulator_writes_it_is_read(lag_fmu, tmp_path):
    shutil.copy(lag_fmu, tmp_path / "FirstOrderLag.fmu")
    path = tmp_path / "oms.ssd"
    path.write_text(OMS_SSD)
    s = import_ssp(path)
    assert s.connections == {"sensor.u": "plant.x"}
    assert s.by_name["plant"].parameters == {"T": 0.5, "x0": 1.0}   # Float64 read as Real
    # the step: OMSimulator keeps it in its FixedStepMaster annotation only
    assert s.experiment == {"start_time": 0.0, "stop_time": 1.0, "step": 0.01}
    relabelled = tmp_path / "oms10.ssd"
    relabelled.write_text(OMS_SSD.replace('version="2.0"', 'version="1.0"')
                          .replace("Float64", "Real"))
    np.testing.assert_array_equal(Master(s, 0.01).run(1.0).data,
                                  Master(import_ssp(relabelled), 0.01).run(1.0).data)


@pytest.mark.parametrize("version", ["3.0", "0.9", "Draft20180219"])
def test_other_ssd_versions_are_refused_naming_the_accepted(lag_fmu, tmp_path, version):
    shutil.copy(lag_fmu, tmp_path / "FirstOrderLag.fmu")
    path = tmp_path / "s.ssd"
    path.write_text(MINIMAL.replace('version="1.0"', f'version="{version}"'))
    with pytest.raises(SSPError, match=rf"version '{version}' is not supported; accepted: 1\.x "
                                       r"\(SSP 1\.0\) and 2\.x"):
        import_ssp(path)


def test_a_transformation_in_a_connection_is_still_refused_geometry_is_not(lag_fmu, tmp_path):
    shutil.copy(lag_fmu, tmp_path / "FirstOrderLag.fmu")
    path = tmp_path / "s.ssd"
    path.write_text(OMS_SSD.replace('<ssd:ConnectionGeometry pointsX="10 20" pointsY="0 0" />',
                                    '<ssc:LinearTransformation factor="2" />'))
    with pytest.raises(SSPError, match="LinearTransformation.*not supported"):
        import_ssp(path)


OMS_NS = "https://raw.githubusercontent.com/OpenModelica/OMSimulator/master/schema/oms.xsd"


@pytest.mark.parametrize("experiment, step", [({"stop_time": 1.0, "step": 0.01}, "0.01"),
                                              ({}, "0.001")])
def test_exported_system_carries_the_annotation_omsimulator_needs(lag_fmu, tmp_path, experiment,
                                                                 step):
    path = export_ssp(lags_only(lag_fmu), tmp_path / "s.ssp", **experiment)
    with zipfile.ZipFile(path) as z:
        ssd = z.read("SystemStructure.ssd")
    doc = assert_valid_ssp10(ssd)            # still valid SSP 1.0
    ns = {"ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
          "ssc": "http://ssp-standard.org/SSP1/SystemStructureCommon", "oms": OMS_NS}
    system = doc.find("ssd:System", ns)
    assert system[-1].tag == f"{{{ns['ssd']}}}Annotations"        # last, as SSP 1.0 wants
    ann = system.findall("ssd:Annotations/ssc:Annotation", ns)
    assert [a.get("type") for a in ann] == ["org.openmodelica"]
    master = ann[0].find("oms:Annotations/oms:SimulationInformation/oms:FixedStepMaster", ns)
    assert master.get("description") == "oms-ma" and master.get("stepSize") == step
    # OMSimulator matches prefixed names literally (pugixml): the prefixes must be these
    text = ssd.decode()
    for tag in ("<ssd:Annotations>", '<ssc:Annotation type="org.openmodelica">',
                "<oms:Annotations>", "<oms:SimulationInformation>", "<oms:FixedStepMaster "):
        assert tag in text
    assert load_system(path).connections == {"sensor.u": "plant.x"}   # and we ignore it


OSP_NS = "http://opensimulationplatform.com/SSP/OSPAnnotations"


@pytest.mark.parametrize("experiment, step", [({"stop_time": 1.0, "step": 0.01}, "0.01"),
                                              ({}, "0.001")])
def test_exported_system_carries_the_algorithm_annotation_libcosim_needs(lag_fmu, tmp_path,
                                                                         experiment, step):
    """libcosim (Open Simulation Platform) takes its co-simulation algorithm and step only
    from the DefaultExperiment annotation ``com.opensimulationplatform``; without it its
    SSP loader runs a null algorithm and the process crashes (tests/test_fmu/
    test_libcosim.py runs the file there).  Written with the experiment's step, 1 ms if
    none, as valid SSP 1.0, with the literal prefixes libcosim's parser matches."""
    path = export_ssp(lags_only(lag_fmu), tmp_path / "s.ssp", **experiment)
    with zipfile.ZipFile(path) as z:
        ssd = z.read("SystemStructure.ssd")
    doc = assert_valid_ssp10(ssd)
    ns = {"ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
          "ssc": "http://ssp-standard.org/SSP1/SystemStructureCommon", "osp": OSP_NS}
    ann = doc.findall("ssd:DefaultExperiment/ssd:Annotations/ssc:Annotation", ns)
    osp = [a for a in ann if a.get("type") == "com.opensimulationplatform"]
    assert len(osp) == 1 and len(osp[0]) == 1      # SSP 1.0: one element per annotation
    algorithm = osp[0].find("osp:Algorithm/osp:FixedStepAlgorithm", ns)
    assert algorithm.get("baseStepSize") == step
    text = ssd.decode()
    for tag in ('<ssc:Annotation type="com.opensimulationplatform">', "<osp:Algorithm>",
                "<osp:FixedStepAlgorithm "):
        assert tag in text
    assert load_system(path).experiment == experiment          # and we ignore it


SYSTEM_BINDING = """<ssd:ParameterBindings>
      <ssd:ParameterBinding>
        <ssd:ParameterValues>
          <ssv:ParameterSet version="2.0" name="root">
            <ssv:Parameters>
              <ssv:Parameter name="plant.T"><ssv:Float64 value="0.25" /></ssv:Parameter>
              <ssv:Parameter name="sensor.K"><ssv:Real value="3" /></ssv:Parameter>
            </ssv:Parameters>
          </ssv:ParameterSet>
        </ssd:ParameterValues>
      </ssd:ParameterBinding>
    </ssd:ParameterBindings>
    <ssd:Elements>"""


def test_parameters_bound_at_system_level_reach_their_components(lag_fmu, tmp_path):
    """OMSimulator binds the parameters of a system's components at the system
    ('component.variable'); they were silently ignored.  They override the component's
    own binding (plant.T = 0.5 there)."""
    shutil.copy(lag_fmu, tmp_path / "FirstOrderLag.fmu")
    path = tmp_path / "oms.ssd"
    path.write_text(OMS_SSD.replace("<ssd:Elements>", SYSTEM_BINDING, 1))
    s = import_ssp(path)
    assert s.by_name["plant"].parameters == {"T": 0.25, "x0": 1.0}
    assert s.by_name["sensor"].parameters == {"K": 3.0}


@pytest.mark.parametrize("name, words", [("nosuch.T", ["'nosuch.T'", "components: plant, sensor"]),
                                         ("T", ["'T'", "'component.variable'"]),
                                         ("plant.nosuch", ["'plant'", "'nosuch'"])])
def test_a_system_level_binding_of_nothing_is_refused_naming_it(lag_fmu, tmp_path, name, words):
    shutil.copy(lag_fmu, tmp_path / "FirstOrderLag.fmu")
    path = tmp_path / "oms.ssd"
    path.write_text(OMS_SSD.replace("<ssd:Elements>", SYSTEM_BINDING, 1)
                    .replace('name="plant.T"', f'name="{name}"'))
    with pytest.raises(SSPError) as info:
        import_ssp(path)
    for w in words:
        assert w in str(info.value)


def test_a_string_input_given_a_value_is_bound_not_declared_a_parameter(stair_fmu, tmp_path):
    """A String input (not connectable) given a value: bound to the component, without a
    connector of kind 'parameter' (it is an input of the FMU)."""
    system = System([FMUComponent("stair", stair_fmu,
                                  parameters={"label": "abcd", "stop_at": 5.0})])
    path = export_ssp(system, tmp_path / "s.ssd")
    doc = assert_valid_ssp10(path.read_bytes())
    ns = {"ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription"}
    kinds = {c.get("name"): c.get("kind") for c in doc.iterfind(".//ssd:Connector", ns)}
    assert kinds == {"counter": "output", "y": "output", "stop_at": "parameter"}
    assert load_system(path).by_name["stair"].parameters == {"label": "abcd", "stop_at": 5.0}


def _as_written_by_another_tool(path: Path, keep: str) -> Path:
    """Our export of ``path`` with its own step annotation and tool name taken out, only
    the ``keep`` tool's step left ("oms" or "osp"), as OMSimulator or a libcosim user
    writes the file."""
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    doc = etree.fromstring(members["SystemStructure.ssd"])
    doc.attrib.pop("generationTool")
    for ann in doc.iter("{http://ssp-standard.org/SSP1/SystemStructureCommon}Annotation"):
        if ann.get("type") in {"org.flexcosim.master",
                               {"oms": "com.opensimulationplatform",
                                "osp": "org.openmodelica"}[keep]}:
            ann.getparent().remove(ann)
    members["SystemStructure.ssd"] = etree.tostring(doc)
    other = path.with_name(f"{keep}.ssp")
    with zipfile.ZipFile(other, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    return other


@pytest.mark.parametrize("tool", ["oms", "osp"])
def test_the_step_another_tool_keeps_in_its_annotation_is_the_default_step(lag_fmu, tmp_path,
                                                                           tool):
    """OMSimulator keeps the communication step in its ``oms:FixedStepMaster stepSize``
    only, libcosim's files in ``osp:FixedStepAlgorithm baseStepSize``: ``flexcosim cosim``
    of such a file stopped with "has no default for --step" (issue 25)."""
    path = export_ssp(lags_only(lag_fmu), tmp_path / "s.ssp", stop_time=0.5, step=0.025)
    other = _as_written_by_another_tool(path, tool)
    assert load_system(other).experiment == {"stop_time": 0.5, "step": 0.025}
    # our own export of a system without a step: the 1 ms written for those tools is not
    # read back as the system's step
    plain = export_ssp(lags_only(lag_fmu), tmp_path / "plain.ssp", stop_time=0.5)
    assert "step" not in load_system(plain).experiment
    # a step those tools could not run is refused naming it
    with zipfile.ZipFile(other) as z:
        members = {n: z.read(n) for n in z.namelist()}
    attr = {"oms": b'stepSize="0.025"', "osp": b'baseStepSize="0.025"'}[tool]
    assert attr in members["SystemStructure.ssd"]
    members["SystemStructure.ssd"] = members["SystemStructure.ssd"].replace(
        attr, attr.replace(b"0.025", b"-1"))
    broken = tmp_path / "broken.ssp"
    with zipfile.ZipFile(broken, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    with pytest.raises(SSPError, match="=.-1.: accepted: a finite XML Schema number > 0"):
        load_system(broken)


@pytest.mark.parametrize("duration", [1.0, 10.0, 0.3, 2.0, 7.0, 123.0, 4.5e-3, 2.6e4])
def test_the_default_step_is_fmpys(duration):
    """The step chosen where none is given is fmpy's auto_interval: a round number that
    divides the run into 500 to 1000 steps."""
    from fmpy.util import auto_interval as fmpys
    h = auto_interval(duration)
    assert h == fmpys(duration)
    assert 200 <= duration / h <= 2500
    with pytest.raises(ValueError, match="duration = 0.0 s: accepted: a finite number > 0"):
        auto_interval(0.0)
