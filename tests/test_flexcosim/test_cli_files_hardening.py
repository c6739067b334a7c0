"""One line, not a traceback, for what files and outputs do to the command line (issue 22
item 8): stdout or the results file on a full disk or a file that refuses writes (before
and during the run), a zip whose sizes lie, a block parameter no model can be built from,
a deeply nested file, and Ctrl-C inside a Python FMU's step."""
from __future__ import annotations

import csv
import json
import resource
import signal
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from flexcosim.cli import main
from fmu.cosim.system_file import save_system, system_from_dict
from fmu.fmi.build import build_fmu
from support.blocks import Sleeper

FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full")


def _flexcosim(*args: str, stdout=subprocess.PIPE, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "flexcosim", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=600, env=env, cwd=cwd)


def _one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def _pid_system(folder: Path, suffix: str = ".json") -> Path:
    """A system of one project block (no FMU, no compiler needed): 101 rows."""
    system = system_from_dict({"components": [
        {"name": "pid", "block": "controllers.laws.pid:PIDController",
         "parameters": {"kp": 2.0}}]})
    return save_system(system, folder / f"pid{suffix}", stop_time=1.0, step=0.01)


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


@needs_dev_full
def test_stdout_on_a_full_disk_is_one_line_and_the_results_file_is_kept(tmp_path):
    system = _pid_system(tmp_path)
    out = tmp_path / "out.csv"
    with open(FULL, "w") as full:
        proc = _flexcosim("cosim", str(system), "-q", "-o", str(out), stdout=full)
    assert proc.returncode == 1
    assert _one_line(proc.stderr) == ("flexcosim cosim: error: cannot write the results to stdout: "
                                      "No space left on device")
    rows = _rows(out)
    assert len(rows) == 102 and rows[-1][0] == "1"      # every result is in the file


@needs_dev_full
@pytest.mark.parametrize("target, reason", [("/dev/full", "No space left on device"),
                                            ("/proc/self/status", "Invalid argument")])
def test_a_results_file_that_refuses_writes_is_one_line(tmp_path, target, reason):
    proc = _flexcosim("cosim", str(_pid_system(tmp_path)), "-q", "-o", target)
    assert proc.returncode != 0
    line = _one_line(proc.stderr)
    assert target in line and reason in line


def _lie_about_sizes(path: Path, member: str) -> None:
    """Halve the uncompressed size the zip's headers give for ``member``."""
    data = bytearray(path.read_bytes())
    i = data.find(b"PK\x01\x02")
    while i >= 0:
        name_length = struct.unpack_from("<H", data, i + 28)[0]
        if data[i + 46:i + 46 + name_length].decode() == member:
            size = struct.unpack_from("<I", data, i + 24)[0]
            local = struct.unpack_from("<I", data, i + 42)[0]
            struct.pack_into("<I", data, i + 24, size // 2)
            struct.pack_into("<I", data, local + 22, size // 2)
        i = data.find(b"PK\x01\x02", i + 4)
    path.write_bytes(bytes(data))


def test_an_ssp_archive_whose_sizes_lie_is_one_line(tmp_path, capsys):
    path = _pid_system(tmp_path, ".ssp")
    _lie_about_sizes(path, "SystemStructure.ssd")
    assert main(["cosim", str(path), "-q"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{path}: member 'SystemStructure.ssd' does not unpack to what the archive's " \
        "headers say" in line


@pytest.mark.parametrize("prefix", ["modelDescription.xml", "binaries/"])
def test_an_fmu_whose_sizes_lie_is_refused_before_it_is_loaded(tmp_path, capsys,
                                                               sleeper_fmu, prefix):
    """Was: the modelDescription's BadZipFile, or "component failed in initialize" when
    another member's sizes lied (the archive was read only when fmpy unpacked it)."""
    path = tmp_path / "Liar.fmu"
    path.write_bytes(sleeper_fmu.read_bytes())
    with zipfile.ZipFile(path) as z:
        member = next(n for n in z.namelist() if n.startswith(prefix) and
                      z.getinfo(n).file_size > 100)
    _lie_about_sizes(path, member)
    assert main(["cosim", str(path), "-q", "--stop", "0.1", "--step", "0.01"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"member {member!r} does not unpack to what the archive's headers say" in line


def test_a_block_parameter_no_model_can_be_built_from_is_one_line(tmp_path, capsys):
    path = tmp_path / "arm.json"
    path.write_text(json.dumps({"components": [
        {"name": "arm", "block": "mbdcore.models.manipulator:FlexibleManipulatorBlock",
         "parameters": {"l1": 1e308}}], "experiment": {"stop_time": 0.01, "step": 0.001}}))
    assert main(["cosim", str(path), "-q"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "components[0] ('arm')" in line and "the modes of link 1" in line
    assert "l1 = 1e+308 m" in line and "RuntimeError" not in line


@pytest.mark.parametrize("model", ["statespace", "lqg"])
def test_export_c_from_a_deeply_nested_file_is_one_line(tmp_path, capsys, model):
    deep = tmp_path / "deep.json"
    deep.write_text('{"a": ' * 100_000 + "1" + "}" * 100_000)
    assert main(["export-c", model, "--from", str(deep), "-o", str(tmp_path)]) == 2
    assert "nested too deeply" in _one_line(capsys.readouterr().err)


@pytest.fixture(scope="module")
def sleeper_fmu(tmp_path_factory):
    """A Python FMU of a block that sleeps in its step (tests/support/blocks.py)."""
    return build_fmu(Sleeper, tmp_path_factory.mktemp("sleeper"), model_name="Sleeper")


def test_ctrl_c_inside_a_python_fmu_step_exits_130_with_one_line(tmp_path, sleeper_fmu):
    """Was: the KeyboardInterrupt raised inside the FMU's Python became fmi2Error, the run
    "failed" with exit code 1 and the FMU's traceback in its log."""
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"components": [
        {"name": "slow", "fmu": str(sleeper_fmu), "parameters": {"sleep": 0.05}}],
        "experiment": {"stop_time": 1000.0, "step": 0.01}}))
    out = tmp_path / "out.csv"
    proc = subprocess.Popen([sys.executable, "-m", "flexcosim", "cosim", str(system), "-q",
                             "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        for _ in range(2400):   # until a few rows are written (imports can take a while)
            if out.exists() and out.read_text().count("\n") >= 4 or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)     # the FMU sleeps in its step nearly all the time
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    line = _one_line(stderr)
    assert line.startswith("flexcosim cosim: error: interrupted by the user at t = ")
    assert f"written to {out}" in line
    rows = _rows(out)
    assert len(rows) >= 4 and all(len(r) == len(rows[0]) for r in rows)


def _file_size_limit(limit: int):
    def limit_files():   # writes beyond the limit fail with EFBIG instead of a signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limit_files


def test_a_results_file_that_fills_up_during_the_run_is_one_line_with_whole_rows(tmp_path):
    """Was: the writer's OSError became "component 'pid' failed in ..." (not its doing)
    and the last line was cut in the middle."""
    system, out = _pid_system(tmp_path), tmp_path / "out.csv"
    proc = subprocess.run([sys.executable, "-m", "flexcosim", "cosim", str(system), "-q",
                           "-o", str(out)], capture_output=True, text=True, timeout=600,
                          preexec_fn=_file_size_limit(1500))
    assert proc.returncode == 1
    line = _one_line(proc.stderr)
    assert line.startswith("flexcosim cosim: error: cannot write the results file "
                           f"{str(out)!r} "
                           "at t = ") and "File too large" in line
    assert "component" not in line
    text = out.read_text()
    assert text.endswith("\n") and 0 < len(text) <= 1500
    rows = _rows(out)
    assert len(rows) > 10 and all(len(r) == len(rows[0]) for r in rows)


@needs_dev_full
@pytest.mark.parametrize("args", [("--version",), ("--help",), ("cosim", "--help")])
def test_help_or_version_that_cannot_be_written_is_one_line_and_a_failure(args):
    """argparse drops a failed write of --help/--version and exits 0, as if the text had
    been printed: with stdout on a full disk the command said nothing and succeeded."""
    with FULL.open("w") as full:
        done = _flexcosim(*args, stdout=full)
    assert done.returncode == 1
    assert _one_line(done.stderr) == ("flexcosim: error: cannot write to stdout: No space left "
                                      "on device")
    assert _flexcosim(*args).returncode == 0     # where stdout takes it, as before
