"""Bad input to the command line gives a one-line message naming the file, key or option
and exit code 2, never a traceback (issue 13 item 11)."""
from __future__ import annotations

import json
import shutil
import struct
import sys
import zipfile

import pytest

from flexcosim.cli import main


def _one_line(capsys, *words):
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, err
    return err


def test_build_a_missing_model_file(tmp_path, capsys):
    missing = tmp_path / "missing.json"
    assert main(["build", str(missing), "-o", str(tmp_path)]) == 2
    _one_line(capsys, "flexcosim build", "missing.json", "No such file")


def test_build_a_yaml_model_without_pyyaml(tmp_path, capsys, monkeypatch):
    path = tmp_path / "model.yaml"
    path.write_text("format: flexcosim-model\n")
    monkeypatch.setitem(sys.modules, "yaml", None)
    assert main(["build", str(path), "-o", str(tmp_path)]) == 2
    _one_line(capsys, "model.yaml", "PyYAML", 'pip install "flexcosim[yaml]"')


@pytest.mark.parametrize("text, words", [
    ('{"format": "flexcosim-model", "version": ' + "9" * 5000 + "}", ["big.json", "4300"]),
    ("[" * 100_000 + "]" * 100_000, ["big.json", "nested too deeply"]),
])
def test_build_a_pathological_json_model(tmp_path, capsys, text, words):
    path = tmp_path / "big.json"
    path.write_text(text)
    assert main(["build", str(path), "-o", str(tmp_path)]) == 2
    _one_line(capsys, *words)


@pytest.mark.parametrize("args, words", [
    (["--step", "-1"], ["--step -1.0", "finite time > 0"]),
    (["--stop", "0"], ["--stop 0.0", "finite time > 0"]),
    (["--stop", "nan"], ["--stop nan"]),
    (["--stop", "0.001", "--step", "0.01"], ["--step 0.01 is longer than --stop 0.001"]),
])
def test_demo_refuses_bad_times(tmp_path, capsys, args, words):
    assert main(["demo", "-o", str(tmp_path / "out"), *args]) == 2
    _one_line(capsys, "flexcosim demo", *words)
    assert not (tmp_path / "out").exists()


def _system(tmp_path, fmu):
    path = tmp_path / "system.json"
    path.write_text(json.dumps({"components": [{"name": "plant", "fmu": str(fmu)}],
                                "experiment": {"stop_time": 1.0, "step": 0.01}}))
    return path


def _rewrite(src, dst, edit):
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    edit(members)
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as z:
        for n, b in members.items():
            z.writestr(n, b)


def test_malformed_model_description_names_the_component(lag_fmu, tmp_path, capsys):
    fmu = tmp_path / "bad.fmu"
    _rewrite(lag_fmu, fmu, lambda m: m.update({"modelDescription.xml": b"<fmiModel x='2'"}))
    assert main(["cosim", str(_system(tmp_path, fmu))]) == 2
    err = _one_line(capsys, "components[0] ('plant')", "bad.fmu",
                    "cannot read its modelDescription.xml")
    assert "/tmp/" not in err.split("bad.fmu")[1]   # no temporary path


def test_zip_whose_sizes_lie(lag_fmu, tmp_path, capsys):
    fmu = tmp_path / "lie.fmu"
    _rewrite(lag_fmu, fmu, lambda m: None)
    data = bytearray(fmu.read_bytes())
    i = data.find(b"PK\x01\x02")
    while i != -1:   # central directory: modelDescription.xml claims 1 MB
        n = struct.unpack_from("<H", data, i + 28)[0]
        if data[i + 46:i + 46 + n] == b"modelDescription.xml":
            struct.pack_into("<II", data, i + 20, 10**6, 10**6)
        i = data.find(b"PK\x01\x02", i + 4)
    fmu.write_bytes(bytes(data))
    assert main(["cosim", str(_system(tmp_path, fmu))]) == 2
    _one_line(capsys, "components[0] ('plant')", "lie.fmu")


def test_huge_number_of_steps(lag_fmu, tmp_path, capsys):
    shutil.copy(lag_fmu, tmp_path / "lag.fmu")
    path = _system(tmp_path, tmp_path / "lag.fmu")
    assert main(["cosim", str(path), "--stop", "1e308", "--step", "1e-300"]) == 2
    _one_line(capsys, "1e+308", "1e-300", "at most 2**53 steps")


def test_a_demo_shorter_than_the_vibration_window_reports_instead_of_failing(tmp_path, capsys):
    """``demo --stop 1``: the record ends before the residual-vibration window [2, 3] s;
    the run used to end in a ValueError traceback after the whole simulation, with the
    plot unwritten.  Now it writes its results and says what it could not measure."""
    out = tmp_path / "out"
    assert main(["demo", "-q", "-o", str(out), "--stop", "1"]) == 0
    text = capsys.readouterr()
    assert "Traceback" not in text.err
    assert "residual end-effector vibration not measured" in text.out
    assert "ends at 1 s" in text.out
    assert (out / "results.csv").stat().st_size > 0
    assert (out / "closed_loop.png").stat().st_size > 0
