"""System files in the field, second round (issue 22 items 9, 11, 12): a file names only
the project's own Python blocks unless asked, SSP 2.0 typed values are read as XML Schema
and range-checked, a parameter bound twice is refused, names with control characters are
refused."""
from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flexcosim.cli import main
from fmu.cosim.file_rules import SSPError
from fmu.cosim.system_file import load_system
from support import EXAMPLES


def _json_system(folder: Path, block: str, name: str = "b", parameters=None) -> Path:
    path = folder / "system.json"
    entry = {"name": name, "block": block}
    if parameters is not None:
        entry["parameters"] = parameters
    path.write_text(json.dumps({"components": [entry],
                                "experiment": {"stop_time": 0.01, "step": 0.01}}))
    return path


# -- item 12: safe by default ----------------------------------------------------------
def test_a_module_outside_the_project_is_not_imported_unless_allowed(tmp_path):
    """Was: `this` printed the Zen of Python and a local module wrote a file on load."""
    (tmp_path / "writer_blocks.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('ran').write_text('x')\n"
        "from mbdcore.blocks import Block\nclass B(Block):\n"
        "    def outputs(self):\n        return {}\n")
    for block in ("this:Anything", "writer_blocks:B"):
        path = _json_system(tmp_path, block)
        proc = subprocess.run([sys.executable, "-m", "flexcosim", "cosim", str(path)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr
        assert "Zen of Python" not in proc.stdout and "Beautiful" not in proc.stdout
        assert not (tmp_path / "ran").exists()
        [line] = proc.stderr.splitlines()
        assert f"'{block}'" in line and "not one of the project's own" in line
        assert "--allow-python-blocks" in line and "allow_python_blocks=True" in line
    # asked for: the local module is imported and its block runs
    proc = subprocess.run([sys.executable, "-m", "flexcosim", "cosim", str(path),
                           "--allow-python-blocks"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ran").exists()


def test_the_projects_own_blocks_load_by_default_and_no_python_blocks_refuses_them(tmp_path):
    path = _json_system(tmp_path, "controllers.laws.pid:PIDController")
    system = load_system(path)
    assert type(system.by_name["b"].block).__name__ == "PIDController"
    assert main(["cosim", str(path), "-q"]) == 0
    with pytest.raises(SSPError, match="allow_python_blocks=False, --no-python-blocks"):
        load_system(path, allow_python_blocks=False)
    assert main(["cosim", str(path), "--no-python-blocks"]) == 2
    with pytest.raises(ValueError, match="allow_python_blocks = 'yes'"):
        load_system(path, allow_python_blocks="yes")


def test_a_package_named_like_the_projects_elsewhere_is_not_the_projects(tmp_path):
    """A folder controllers/ in the working directory (first on sys.path with
    ``python -m``) is not the installed package: refused, never imported."""
    pkg = tmp_path / "controllers"
    pkg.mkdir()
    for name in ("__init__.py", "evil.py"):
        (pkg / name).write_text(
            "import pathlib\npathlib.Path(__file__).parent.with_name('ran').write_text('x')\n")
    path = _json_system(tmp_path, "controllers.evil:B")
    proc = subprocess.run([sys.executable, "-m", "flexcosim", "cosim", str(path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "'controllers.evil:B', which is not one of the project's own" in proc.stderr
    assert not (tmp_path / "ran").exists()


# -- item 11: SSP 2.0 values -----------------------------------------------------------
def _ssd(folder: Path, parameters: str, name: str = "pid") -> Path:
    """An SSP 2.0 description of one project block with the given <ssv:Parameter>s."""
    path = folder / "s.ssd"
    path.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues"
    version="2.0" name="s">
  <ssd:System name="s">
    <ssd:Elements>
      <ssd:Component name="{name}" type="application/x-flexcosim-python-block"
          source="python:controllers.laws.pid:PIDController">
        <ssd:ParameterBindings><ssd:ParameterBinding><ssd:ParameterValues>
          <ssv:ParameterSet version="2.0" name="p"><ssv:Parameters>
            {parameters}
          </ssv:Parameters></ssv:ParameterSet>
        </ssd:ParameterValues></ssd:ParameterBinding></ssd:ParameterBindings>
      </ssd:Component>
    </ssd:Elements>
  </ssd:System>
  <ssd:DefaultExperiment startTime="0" stopTime="0.01"/>
</ssd:SystemStructureDescription>
""")
    return path


def _param(name: str, kind: str, value: str) -> str:
    return f'<ssv:Parameter name="{name}"><ssv:{kind} value="{value}"/></ssv:Parameter>'


@pytest.mark.parametrize("kind, value, words", [
    ("Int8", "300", ["<ssv:Int8>", "'300'", "out of range", "[-128, 127]"]),
    ("UInt8", "-1", ["<ssv:UInt8>", "out of range", "[0, 255]"]),
    ("Int64", str(2**63), ["<ssv:Int64>", "out of range"]),
    ("Integer", str(2**31), ["<ssv:Integer>", "out of range", "2147483647"]),
    ("Float32", "1e300", ["<ssv:Float32>", "'1e300'", "out of range", "Float32"]),
    ("Float64", "1_0.5", ["<ssv:Float64>", "'1_0.5'", "not an XML Schema number"]),
    ("Real", "1_0", ["<ssv:Real>", "not an XML Schema number"]),
    ("Float64", "infinity", ["not an XML Schema number"]),
    ("Float64", "INF", ["accepted: a finite number"]),
    ("Float64", "\u0661.5", ["not an XML Schema number"]),       # an Arabic-Indic digit
    ("Int32", "1_000", ["<ssv:Int32>", "not an integer"]),
    ("Boolean", "True", ["<ssv:Boolean>", "true, false, 1, 0"]),
])
def test_typed_values_are_read_as_xml_schema_and_range_checked(tmp_path, kind, value, words):
    with pytest.raises(SSPError) as info:
        load_system(_ssd(tmp_path, _param("kp", kind, value)))
    text = str(info.value)
    assert "<ssv:Parameter name='kp'>" in text
    for w in words:
        assert w in text, text


@pytest.mark.parametrize("kind, value, expected", [
    ("Float64", " 2.5e0 ", 2.5), ("Float32", "3.4028234e38", 3.4028234e38),
    ("Float64", "-.5", -0.5), ("Float64", "+7.", 7.0), ("Int8", "-128", -128),
    ("UInt64", str(2**64 - 1), float(2**64 - 1)), ("Int16", "+12", 12.0),
])
def test_valid_typed_values_are_read(tmp_path, kind, value, expected):
    system = load_system(_ssd(tmp_path, _param("kp", kind, value)))
    assert system.by_name["pid"].block.params["kp"] == expected


def test_a_parameter_given_twice_in_one_set_is_refused(tmp_path):
    path = _ssd(tmp_path, _param("kp", "Float64", "1") + _param("kp", "Float64", "2"))
    with pytest.raises(SSPError, match=r"<ssv:Parameter name='kp'>: given twice in one "
                                       r"<ssv:ParameterSet>"):
        load_system(path)
    json_path = tmp_path / "s.json"
    json_path.write_text('{"components": [{"name": "pid", "block": '
                         '"controllers.laws.pid:PIDController", '
                         '"parameters": {"kp": 1.0, "kp": 2.0}}]}')
    with pytest.raises(SSPError, match="key 'kp' is given twice in one object"):
        load_system(json_path)


def test_a_bar_too_long_to_represent_names_the_cause(tmp_path):
    """Was: "center = None is invalid" for a bar whose ends are 1e200 m apart."""
    from mbdcore.models.model_file import ModelFileError, load_model

    model = json.loads((EXAMPLES / "models" / "spatial" / "double_pendulum.json").read_text())
    bar = next(b for b in model["bodies"] if b["type"] == "bar")
    for end_j, words in (([1e200, 0.0, 0.0], ["length 2e+200 m", "not representable"]),
                         ([1e308, 1e308, 0.0], ["distance is not representable",
                                                "end_j = [1e+308, 1e+308, 0.0]"])):
        bar["end_i"], bar["end_j"] = [-x for x in end_j], end_j
        path = tmp_path / "bar.json"
        path.write_text(json.dumps(model))
        with pytest.raises(ModelFileError) as info:
            load_model(path)
        text = str(info.value)
        assert "bodies[1]: bar 'rod'" in text and "center = None" not in text
        for w in words:
            assert w in text, text


# -- item 9: the results CSV's header ----------------------------------------------------
def _read_csv(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_names_with_commas_and_formula_starts_keep_one_header_cell_per_column(tmp_path):
    """Was: a component named with a comma shifted every column; a name starting with
    '=' went raw into a file spreadsheets open."""
    names = ["a,b", '=HYPERLINK("http://x")', "@SUM(1)", "+1", "-1", "plain"]
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "components": [{"name": n, "block": "controllers.laws.pid:PIDController"}
                       for n in names], "experiment": {"stop_time": 1.0, "step": 0.01}}))
    out = tmp_path / "out.csv"
    assert main(["cosim", str(path), "-q", "-o", str(out)]) == 0
    header, *rows = _read_csv(out)
    assert len(rows) == 101 and all(len(r) == len(header) for r in rows)
    assert len(out.read_text().splitlines()) == 102
    assert "a,b.u" in header and "plain.u" in header
    assert "'=HYPERLINK(\"http://x\").u" in header and "'@SUM(1).u" in header
    assert "'+1.u" in header and "'-1.u" in header
    assert not any(cell.startswith(("=", "+", "-", "@")) for cell in header)


@pytest.mark.parametrize("name, code", [("a\nb", "U+000A"), ("a\rb", "U+000D"),
                                        ("a\x85b", "U+0085"), ("a\u2028b", "U+2028"),
                                        ("\u202eevil", "U+202E")])
def test_names_with_control_characters_are_refused_when_a_system_is_read(tmp_path, name,
                                                                         code):
    """Was: an SSP component named with a newline gave 105 lines for 101 rows."""
    path = _json_system(tmp_path, "controllers.laws.pid:PIDController", name=name)
    with pytest.raises(SSPError, match=re.escape(f"holds the control character {code}")):
        load_system(path)
    escaped = name.replace("\n", "&#10;").replace("\r", "&#13;")
    with pytest.raises(SSPError, match=re.escape(f"holds the control character {code}")):
        load_system(_ssd(tmp_path, _param("kp", "Real", "1"), name=escaped))
    with pytest.raises(SSPError, match=r"<ssv:Parameter name=.*control character " + re.escape(code)):
        load_system(_ssd(tmp_path, _param(escaped, "Real", "1")))


def test_a_time_series_header_is_quoted_and_formula_starts_neutralised(tmp_path):
    """Result.to_csv and the file written as the run goes share the one header writer."""
    from mbdcore.timeseries import TimeSeries

    names = ["time", "x\ny", "=1+1", "a,b", 'say "hi"', "@x", "\tx"]
    data = np.zeros(3, dtype=[(n, float) for n in names])
    data["time"] = [0.0, 0.5, 1.0]
    path = TimeSeries(data).to_csv(tmp_path / "ts.csv")
    header, *rows = _read_csv(path)
    assert header == ["time", "x\ny", "'=1+1", "a,b", 'say "hi"', "'@x", "'\tx"]
    assert len(rows) == 3 and all(len(r) == len(header) for r in rows)
