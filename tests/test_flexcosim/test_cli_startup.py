"""Fast start (issue 21 item 6): ``flexcosim --help``, ``--version``, a mistyped command or
model name and a bad option value are answered before any command's module is imported
-- no numpy, no models -- and a mistyped name gets "did you mean".  What is imported is
checked, never the wall time (``bench/startup.py`` prints that)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from flexcosim.arguments import unknown_name
from flexcosim.catalog import BUILD_MODELS, C_MODELS, COMMANDS, LOOKUPS, resolve
from flexcosim.cli import main
from flexcosim.demo import MODELS
from mbdcore.blocks import Block
from support import ROOT


#: What a command's module brings in and the parser must not
HEAVY = ("numpy", "scipy", "control", "matplotlib", "fmpy", "pythonfmu",
         "mbdcore", "fmu", "controllers", "flexcosim.demo", "flexcosim.commands")

#: Runs the command line's main in a fresh interpreter and says, on its last line of
#: stdout, which of HEAVY it imported
WRAPPER = f"""
import json, sys
from flexcosim.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
print("\\nIMPORTED " + json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
sys.exit(code)
"""


def run_cli(args, cwd):
    done = subprocess.run([sys.executable, "-c", WRAPPER, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    *out, last = done.stdout.rstrip("\n").splitlines()
    assert last.startswith("IMPORTED "), done.stdout + done.stderr
    return done.returncode, "\n".join(out), done.stderr, json.loads(last[len("IMPORTED "):])


@pytest.mark.parametrize("args, code, words", [
    (["--version"], 0, []),
    (["--help"], 0, []),
    (["build", "--help"], 0, []),
    (["demp"], 2, ["flexcosim: error: unknown command 'demp'", "did you mean 'demo'?"]),
    (["-q", "exprt-c", "pid"], 2, ["did you mean 'export-c'?"]),
    (["build", "manipulatr"], 2, ["flexcosim build: error: unknown model 'manipulatr'",
                                  "did you mean 'manipulator'?"]),
    (["export-c", "jont-pd"], 2, ["flexcosim export-c: error: unknown model 'jont-pd'",
                                  "did you mean 'joint-pd'?"]),
    (["demo", "--stop", "0"], 2, ["flexcosim demo: error: --stop 0.0"]),
    (["export-c", "statespace"], 2, ["statespace needs --from FILE"]),
    (["cosim", "x.ssp", "--stpo", "1"], 2, ["flexcosim cosim: error: unknown option '--stpo'; "
                                            "did you mean '--stop'"]),
    (["demo", "--stop", "ten"], 2, ["flexcosim demo: error: --stop 'ten': not a number"]),
])
def test_answered_without_importing_numpy_or_a_model(args, code, words, tmp_path):
    returncode, out, err, imported = run_cli(args, tmp_path)
    assert imported == [], f"flexcosim {' '.join(args)} imported {imported}"
    assert returncode == code, err
    if code == 0:
        assert err == "" and out.strip()
    else:
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert all(w in err for w in words), err


def test_a_command_that_runs_imports_its_module(tmp_path):
    """The other side, and that the check above sees an import: a command that passes
    the checks imports its module (and numpy with it) before it fails on the file."""
    returncode, _, err, imported = run_cli(["build", "missing.json"], tmp_path)
    assert returncode == 2 and "missing.json" in err
    assert {"numpy", "mbdcore", "flexcosim.commands"} <= set(imported)


def test_a_mistyped_command_in_process(capsys):
    assert main(["-v", "cosin", "system.ssp"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("flexcosim: error: unknown command 'cosin'; did you mean 'cosim'? "
                           "accepted commands: demo, build, export-c, cosim")


@pytest.mark.parametrize("argv, line", [
    (["build", "ring-trus"], "flexcosim build: error: unknown model 'ring-trus'; did you "
     "mean 'ring-truss'? accepted models: manipulator, joint-pd, trajectory, ring-truss, or "
     "a .json/.yaml model file"),
    (["build", "slider_crank.jsn"], "flexcosim build: error: unknown model "
     "'slider_crank.jsn'; accepted models: manipulator, joint-pd, trajectory, ring-truss, "
     "or a .json/.yaml model file"),
    (["export-c", "antenna-srvo"], "did you mean 'antenna-servo' or 'antenna-axis'?"),
])
def test_a_mistyped_model_name(argv, line, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and line in err, err


def test_a_name_close_to_none_lists_the_accepted_ones_only():
    assert unknown_name("model", "zzz", ["pid", "lqg"]) == (
        "unknown model 'zzz'; accepted models: pid, lqg")


def test_every_name_of_the_catalog_resolves_to_what_it_is():
    assert all(callable(resolve(ref)) for ref in COMMANDS.values())
    blocks = [m.block for m in BUILD_MODELS.values()]
    blocks += [m.block for m in C_MODELS.values() if m.block is not None]
    assert all(issubclass(resolve(ref), Block) for ref in blocks)
    assert all(hasattr(resolve(m.block), "c_model") for m in C_MODELS.values() if m.block)
    assert set(LOOKUPS) == set(COMMANDS.values()) | set(blocks)


def test_the_demo_builds_the_built_in_models():
    assert {name: block.__name__ for name, (block, _) in MODELS.items()} == {
        "manipulator": "FlexibleManipulatorBlock", "joint-pd": "JointPDController",
        "trajectory": "QuinticJointTrajectory"}


def test_only_the_catalog_names_are_looked_up():
    with pytest.raises(ValueError, match="not in flexcosim.catalog.LOOKUPS"):
        resolve("os:system")


@pytest.mark.parametrize("statement, absent", [
    # the packages themselves are names and a logger: nothing heavy until a module is used
    ("import flexcosim, mbdcore, fmu, controllers", ("numpy", "scipy", "control")),
    # running FMUs needs numpy only: fmpy is loaded with the first FMU
    ("import fmu.cosim", ("scipy", "control", "matplotlib", "fmpy")),
    # python-control (and the matplotlib.pyplot it loads) only for a law's linear forms
    ("import controllers.laws", ("control", "matplotlib")),
    ("import mbdcore.models", ("control", "matplotlib")),
    # the demo and the closed-loop evaluation it runs: no design tools (about 2 s of CPU)
    ("import flexcosim.commands.demo, controllers.evaluation",
     ("control", "controllers.design", "matplotlib")),
])
def test_the_library_imports_what_it_needs_only(statement, absent):
    code = f"import sys; {statement}; print([m for m in {absent!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    assert done.stdout.strip() == "[]", f"{statement} imported {done.stdout}"


def test_a_law_still_gives_its_linear_form():
    """python-control, no longer imported with the laws, is there when asked for."""
    code = ("from controllers.laws import pid_transfer_function; "
            "print(type(pid_transfer_function(1.0, 2.0, 0.0, 0.0, dt=0.01)).__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    assert done.stdout.strip() == "TransferFunction"


@pytest.mark.slow
def test_a_stale_kernel_is_one_line_saying_how_to_rebuild(tmp_path):
    """The packages copied with their compiled modules, and one C file edited after the
    build: the command refuses to run the kernel built from other sources, in one line
    that says how to rebuild (exit 1), not with a traceback."""
    for package in ("mbdcore", "fmu", "controllers", "flexcosim"):
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__", "_cfmu_*"))
    arm_c = tmp_path / "mbdcore" / "models" / "native" / "arm.c"
    arm_c.write_text(arm_c.read_text() + "\n/* edited after the build */\n")
    done = subprocess.run([sys.executable, "-m", "flexcosim", "demo", "--blocks", "--stop",
                           "0.01", "-o", str(tmp_path / "out")], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(tmp_path)),
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("flexcosim demo: error: the compiled kernel "
                                "mbdcore.models._arm")
    assert "pip install" in lines[-1] and "Traceback" not in done.stderr
