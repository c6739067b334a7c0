"""Model files as C-source FMUs that step themselves (issue 23, build item 1): a
SystemBlock's ``c_model()`` (mbdcore.multibody.compiled_model) — the whole
generalized-alpha step in C over the system's compiled terms, written out with their
structures (mbdcore.cimage) — inside the C wrapper's one mechanism for a model with its
own step (``CModel.own_step``, ``model_step``).  A planar hub with an ANCF beam and a
four-bar, each driven by an input torque that jumps: the FMU in fmpy equals the Python
block (same method, substeps, rho_inf and Newton tolerance 1e-12) to 1e-9; the sources
compile alone with -pedantic without a warning, export only fmi2*, and validate; an
absurd torque is a discarded step naming the Newton failure, the state kept; a file
with a part that has no compiled form is refused naming it."""
from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest
from fmpy.validation import validate_fmu

from support.fmi import DISCARD, Instance, Unzipped
from flexcosim.cli import main
from fmu.fmi.export_c import GCC_COMMAND, export_c_fmu
from mbdcore.codegen import CModelError
from mbdcore.models.model_block import ModelSystemBlock

pytestmark = pytest.mark.gcc

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "models"
METHOD = {"name": "generalized-alpha", "substeps": 2, "rho_inf": 0.8, "tol": 1e-12}
HUB_ANCF = {
    "format": "flexcosim-model", "version": 1,
    "description": "a hub with a 2 m ANCF beam clamped to it, turned by an input torque",
    "gravity": [0.0, 0.0], "ground": {"markers": {"axis": [0.0, 0.0]}},
    "bodies": [
        {"name": "hub", "mass": 1.0, "inertia": 0.5, "position": [0.0, 0.0], "angle": 0.0,
         "velocity": [0.0, 0.0], "omega": 0.0, "markers": {"axis": [0.0, 0.0]}},
        {"type": "ancf_beam", "name": "beam", "start": [0.0, 0.0], "end": [2.0, 0.0],
         "n_elements": 3, "rho_a": 1.2, "ei": 500.0, "ea": 1e5}],
    "joints": [{"type": "revolute", "name": "bearing", "a": "ground.axis", "b": "hub.axis"},
               {"type": "weld", "name": "clamp", "a": "hub.axis", "b": "beam.root",
                "angle": 0.0}],
    "forces": [{"type": "torque", "name": "motor", "a": "ground", "b": "hub",
                "input": "tau"}],
    "inputs": {"tau": 0.0}, "outputs": ["hub.phi", "der(hub.phi)"], "method": METHOD}


def four_bar_by_torque():
    """The example four-bar with its crank turned by an input torque, not driven."""
    model = json.loads((EXAMPLES / "four_bar.json").read_text())
    model["joints"] = [j for j in model["joints"] if j["type"] != "driver"]
    model["forces"] = [{"type": "torque", "name": "motor", "a": "ground", "b": "crank",
                        "input": "tau"}]
    model.update(inputs={"tau": 0.0}, method=METHOD,
                 outputs=["crank.phi", "der(crank.phi)", "rocker.phi", "der(coupler.x)"])
    return model


MODELS = {"hub_ancf": lambda: HUB_ANCF, "four_bar": four_bar_by_torque}
H, STEPS = 0.01, 30


def torque(t):
    return 0.5 if t < 0.1 else -0.3


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """name -> (block class, FMU path), each exported once."""
    folder = tmp_path_factory.mktemp("multibody")
    out = {}
    for name, model in MODELS.items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(model()))
        block = ModelSystemBlock.for_model(path)
        out[name] = (block, export_c_fmu(block, folder, model_name=name))
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_the_c_fmu_equals_the_python_block_in_fmpy(name, exported):
    block_class, fmu = exported[name]
    signal = np.array([(0.0, 0.5), (0.1, 0.5), (0.1, -0.3), (1.0, -0.3)],
                      dtype=[("time", float), ("tau", float)])
    result = fmpy.simulate_fmu(str(fmu), stop_time=STEPS * H, output_interval=H,
                               input=signal)
    block = block_class()
    rows = []
    for k in range(STEPS):
        block.inputs["tau"] = torque(k * H)
        block.do_step(k * H, H)
        rows.append([block.outputs()[s.name] for s in block_class.OUTPUTS])
    c = np.array([result[s.name] for s in block_class.OUTPUTS]).T[1:]
    assert np.abs(np.array(rows)).max() > 1e-3          # it moved
    assert np.abs(c - np.array(rows)).max() <= 1e-9


@pytest.mark.parametrize("name", list(MODELS))
def test_the_sources_compile_alone_warning_free_and_export_only_fmi2(name, exported,
                                                                      tmp_path):
    _, fmu = exported[name]
    assert validate_fmu(str(fmu)) == []
    with zipfile.ZipFile(fmu) as z:
        z.extractall(tmp_path)
    (tmp_path / "binaries" / "linux64").mkdir(parents=True, exist_ok=True)
    done = subprocess.run(GCC_COMMAND.format(id="again").split() + ["-pedantic"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    exported_symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(tmp_path / "binaries" / "linux64" / "again.so")],
        capture_output=True, text=True).stdout.split()[2::3]
    assert exported_symbols and all(s.startswith("fmi2") for s in exported_symbols)


def test_a_newton_failure_is_a_discarded_step_with_the_solver_message(exported, tmp_path):
    _, fmu = exported["hub_ancf"]
    unzipped = Unzipped(fmu, tmp_path / "x")
    instance = Instance(unzipped.md, str(unzipped.dir), step=H)
    instance.set("tau", 0.5)
    instance.step()
    before = instance.get("hub.phi", "der(hub.phi)")
    instance.set("tau", 1e12)
    with pytest.raises(fmpy.fmi1.FMICallException) as failed:
        instance.step()
    assert failed.value.status == DISCARD
    assert any("generalized-alpha: Newton did not converge at t = " in m and
               "; the state is kept at t = 0.01" in m
               for s, m in instance.messages if s == DISCARD), instance.messages
    assert instance.get("hub.phi", "der(hub.phi)") == before
    instance.set("tau", 0.5)
    instance.step()                 # and it goes on from there
    instance.fmu.terminate()
    instance.fmu.freeInstance()


@pytest.mark.parametrize("file, part", [
    ("slider_crank.json", "force 'spring' (TranslationalSpringDamper: depends on the state)"),
    ("hub_beam.json", "body 'beam' (ModalBeam: no compiled form)"),
    ("four_bar.json", "joint 'drive' (a driving constraint")])
def test_a_file_with_a_part_without_compiled_form_is_refused_naming_it(file, part):
    model = json.loads((EXAMPLES / file).read_text())
    model["method"] = METHOD
    block = ModelSystemBlock.configured({"model": model})()
    with pytest.raises(CModelError, match=part.replace("(", r"\(").replace(")", r"\)")):
        block.c_model()


def test_export_c_takes_a_model_file_and_refuses_one_naming_the_part(tmp_path, capsys):
    """``flexcosim export-c MODEL.json`` (build item 2): a file whose every part has a
    compiled form becomes a C FMU named after the file; one with a part that has none is
    one error line naming it, exit code 2."""
    path = tmp_path / "hub_ancf.json"
    path.write_text(json.dumps(HUB_ANCF))
    assert main(["-q", "export-c", str(path), "-o", str(tmp_path), "--no-compile"]) == 0
    fmu = tmp_path / "HubAncfC.fmu"
    assert capsys.readouterr().out.strip() == str(fmu)
    with zipfile.ZipFile(fmu) as z:
        assert "sources/newton.c" in z.namelist()
    assert main(["-q", "export-c", str(EXAMPLES / "slider_crank.json"), "-o",
                 str(tmp_path)]) == 2
    line, = capsys.readouterr().err.splitlines()
    assert line.startswith("flexcosim export-c: error: ") and \
        "force 'spring' (TranslationalSpringDamper: depends on the state)" in line, line
