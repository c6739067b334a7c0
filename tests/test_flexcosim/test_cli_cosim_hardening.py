"""``flexcosim cosim`` in the field (issue 13): the results CSV is written as the run
goes and survives failures, signals and timeouts; the real cause of a failure is
reported; the output path is checked before the run."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flexcosim.cli import main
from support import TESTS



def _csv_rows(path: Path) -> tuple[list[str], list[list[float]]]:
    """Header and rows; fails unless every line is complete and numeric."""
    with open(path, newline="") as f:
        lines = list(csv.reader(f))
    header, rows = lines[0], lines[1:]
    assert all(len(r) == len(header) for r in rows), "a truncated line"
    return header, [[float(x) for x in r] for r in rows]


def _system(tmp_path: Path, lag_fmu, plant_params=None, sleeper=None, stop=1.0) -> Path:
    comps = [{"name": "plant", "fmu": str(lag_fmu), "parameters": plant_params or {"T": 0.5}}]
    conns = []
    if sleeper is not None:
        comps.append({"name": "slow", "block": "support.blocks:Sleeper", "parameters": sleeper})
        conns = [["plant.x", "slow.u"], ["slow.y", "plant.u"]]
    path = tmp_path / "system.json"
    path.write_text(json.dumps({"components": comps, "connections": conns,
                                "experiment": {"stop_time": stop, "step": 0.01}}))
    return path


def test_failure_at_the_first_step_names_the_cause_and_writes_the_header(lag_fmu, tmp_path,
                                                                           capsys):
    # was: "cannot reshape array of size 0 ...", no log, no CSV
    system = _system(tmp_path, lag_fmu, plant_params={"T": -1.0})
    out = tmp_path / "out.csv"
    assert main(["cosim", str(system), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "reshape" not in err
    assert "component 'plant' failed in initialize at t = 0 s" in err
    assert "parameter 'T'" in err and "accepted range" in err      # the FMU's log
    assert f"written to {out}" in err
    header, rows = _csv_rows(out)
    assert header == ["time", "plant.x", "plant.dx", "plant.u"] and rows == []


def test_unwritable_output_is_refused_before_the_run(lag_fmu, tmp_path, capsys):
    system = _system(tmp_path, lag_fmu)
    out = tmp_path / "no" / "such" / "folder" / "out.csv"
    assert main(["cosim", str(system), "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert f"cannot write the results file {str(out)!r}" in captured.err
    assert "points" not in captured.out        # nothing was run
    assert main(["cosim", str(system), "-o", str(tmp_path)]) == 2   # a folder
    assert "is a directory" in capsys.readouterr().err


def test_step_timeout_stops_a_stuck_block_and_keeps_the_results(lag_fmu, tmp_path, capsys,
                                                                 monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    system = _system(tmp_path, lag_fmu, sleeper={"sleep": 1e6, "t_from": 0.05})
    out = tmp_path / "out.csv"
    assert main(["cosim", str(system), "-o", str(out), "--step-timeout", "0.3",
                 "--allow-python-blocks"]) == 1
    err = capsys.readouterr().err
    assert "component 'slow' did not return from do_step at t = 0.05 s" in err
    assert "step timeout of 0.3 s" in err
    _, rows = _csv_rows(out)
    assert rows[-1][0] == pytest.approx(0.05) and len(rows) == 6


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_run_with_a_valid_csv_and_no_temp_folders(lag_fmu, tmp_path, sig,
                                                                     code):
    system = _system(tmp_path, lag_fmu, sleeper={"sleep": 0.01}, stop=1000.0)
    out = tmp_path / "out.csv"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, PYTHONPATH=str(TESTS) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TMPDIR=str(tmp))
    proc = subprocess.Popen([sys.executable, "-m", "flexcosim.cli", "cosim", str(system),
                             "-o", str(out), "--allow-python-blocks"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):   # until a few rows are written (imports can take a while)
            if out.exists() and out.read_text().count("\n") >= 4:
                break
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        assert any(tmp.iterdir())          # the FMU is unpacked while it runs
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr
    assert "interrupted by the user at t = " in stderr
    assert "KeyboardInterrupt" not in stderr and "Traceback" not in stderr
    assert "failed" not in stderr
    header, rows = _csv_rows(out)
    assert header[0] == "time" and len(rows) >= 3
    t_stop = float(stderr.split("interrupted by the user at t = ")[1].split()[0].rstrip(";"))
    assert rows[-1][0] == pytest.approx(t_stop)
    assert list(tmp.iterdir()) == []       # extracted FMU folders removed


def test_the_results_csv_takes_chosen_and_renamed_columns(lag_fmu, tmp_path, capsys):
    """``--columns NAME[=NEW],... --no-prefix``: the CSV written as the run goes is the
    Result's ``to_csv(columns=..., prefix=False)``, byte for byte (issue 26)."""
    from fmu.cosim.simulate import cosimulate

    system = _system(tmp_path, lag_fmu)
    out = tmp_path / "out.csv"
    assert main(["-q", "cosim", str(system), "-o", str(out), "--columns",
                 "plant.u=command, plant.x", "--no-prefix"]) == 0
    columns = {"plant.u": "command", "plant.x": None}
    result = cosimulate(system)
    after = result.to_csv(tmp_path / "after.csv", columns=columns, prefix=False)
    assert out.read_text().splitlines()[0] == "time,command,x"
    assert out.read_bytes() == after.read_bytes()


def test_a_chosen_column_that_is_not_recorded_is_refused_before_the_run(lag_fmu, tmp_path,
                                                                       capsys):
    system = _system(tmp_path, lag_fmu)
    out = tmp_path / "out.csv"
    assert main(["cosim", str(system), "-o", str(out), "--columns", "plant.xx"]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "flexcosim cosim: error: --columns: no signal 'plant.xx'; did you mean 'plant.x', "
        "'plant.dx' or 'plant.u'? signals: time, plant.x, plant.dx, plant.u"]
    assert "points" not in captured.out and not out.exists()      # nothing was run
    assert main(["cosim", str(system), "--no-prefix"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "flexcosim cosim: error: --no-prefix chooses the columns of the results CSV; "
        "accepted: with -o FILE.csv"]
    assert main(["cosim", str(system), "-o", str(out), "--columns", "plant.x,,plant.u"]) == 2
    assert "an empty column name" in capsys.readouterr().err
