"""One command-line voice (issue 26 item 6): every mistake is one line on stderr,
``flexcosim <command>: error: <what>; <what is accepted>`` -- argparse's own errors
included, with no usage text --, a mistyped name of a command, model, option, choice or
parameter answered with the closest names, exit code 2 for a usage error and 1 for a
run that fails, never a traceback.  Each command is given a bad number, a missing file
and a bad file.  The real ``main`` runs (in process: the parsing is under test; that the
answers come without numpy is ``test_cli_startup.py``'s)."""
from __future__ import annotations

import re

import pytest

from flexcosim.cli import main
from flexcosim.console import error_line

#: The one form: the command (none before one is known), "error:", one line
FORM = re.compile(r"flexcosim( (demo|build|export-c|cosim))?: error: \S[^\n]*")


def _files(folder):
    bad = folder / "bad.json"
    bad.write_text('{"components": [')
    return {"MISSING": str(folder / "missing.json"), "BAD": str(bad),
            "OUT": str(folder / "out")}


#: argv (MISSING, BAD: a missing file and one that is not JSON), exit code, and what the
#: line says
MISTAKES = [
    # the command
    ([], 2, "missing COMMAND; accepted commands: demo, build, export-c, cosim"),
    (["demp"], 2, "unknown command 'demp'; did you mean 'demo'? accepted commands: demo, "
     "build, export-c, cosim"),
    (["-q", "expot-c", "pid"], 2, "unknown command 'expot-c'; did you mean 'export-c'?"),
    # arguments and options: argparse's own errors in the same form
    (["build"], 2, "missing MODEL; accepted: manipulator, joint-pd, trajectory, ring-truss, "
     "or a .json/.yaml model file"),
    (["cosim", "MISSING", "--stpo", "1"], 2, "unknown option '--stpo'; did you mean '--stop'"),
    (["demo", "--stpo", "1"], 2, "unknown option '--stpo'; did you mean '--stop'"),
    (["build", "manipulator", "extra"], 2, "unexpected argument 'extra'"),
    (["demo", "--method", "gauss-seidl"], 2, "unknown --method value 'gauss-seidl'; did you mean "
     "'gauss-seidel'? accepted --method values: gauss-seidel, jacobi"),
    (["export-c", "pid", "--fmi", "4"], 2, "unknown --fmi value '4'; accepted --fmi values: 2, 3"),
    (["demo", "-o"], 2, "--out needs a value"),
    (["demo", "--blocks", "--c-fmus"], 2, "--c-fmus cannot be combined with --blocks"),
    (["cosim", "MISSING", "--st", "1"], 2, "ambiguous option '--st'; accepted: one of --start"),
    (["--stpo", "1"], 2, "unknown option '--stpo'"),
    # models and parameters
    (["build", "manipulater"], 2, "unknown model 'manipulater'; did you mean 'manipulator'?"),
    (["export-c", "trajectry"], 2, "unknown model 'trajectry'; did you mean 'trajectory'"),
    (["export-c", "pid", "--set", "kpp=1"], 2, "--set kpp: unknown parameter 'kpp'; did you "
     "mean 'kp'? accepted parameters: kp, ki"),
    (["build", "manipulator", "--bays", "6"], 2, "--bays is for ring-truss, not 'manipulator'"),
    # a bad number, per command
    (["demo", "--stop", "ten"], 2, "--stop 'ten': not a number; accepted: a number"),
    (["demo", "--stop", "-1"], 2, "--stop -1.0; accepted: a finite time > 0 s"),
    (["build", "ring-truss", "--bays", "six"], 2, "--bays 'six': not a whole number"),
    (["export-c", "pid", "--set", "kp=abc"], 2, "--set kp=abc: not a number; accepted: a "
     "finite number"),
    (["cosim", "MISSING", "--step", "1e-3s"], 2, "--step '1e-3s': not a number"),
    # a missing file, per command (the demo's is a folder it cannot make: a run failure)
    (["build", "MISSING"], 2, "missing.json"),
    (["export-c", "statespace", "--from", "MISSING"], 2, "missing.json: not a readable "
     "state-space file"),
    (["cosim", "MISSING"], 2, "missing.json: No such file or directory"),
    (["demo", "-o", "/proc/flexcosim/out", "--stop", "0.01"], 1,
     "/proc/flexcosim: No such file or directory"),
    # a run that fails: the arm's step of 0.5 s does not converge
    (["demo", "--blocks", "-o", "OUT", "--stop", "1", "--step", "0.5"], 1,
     "component 'arm' failed in do_step at t = 0.5 s"),
    # a bad file, per command that reads one
    (["build", "BAD"], 2, "bad.json"),
    (["export-c", "statespace", "--from", "BAD"], 2, "bad.json"),
    (["cosim", "BAD"], 2, "bad.json"),
]


@pytest.mark.parametrize("argv, code, said", MISTAKES, ids=lambda v: " ".join(v)
                         if isinstance(v, list) else None)
def test_a_mistake_is_one_line_in_the_one_form(argv, code, said, tmp_path, capsys):
    files = _files(tmp_path)
    argv = [files.get(word, word) for word in argv]
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    line, = err.splitlines()
    assert FORM.fullmatch(line), line
    command = next((w for w in argv if w in ("demo", "build", "export-c", "cosim")), None)
    assert line.startswith(error_line(command, "")) and said in line, line


def test_an_option_of_a_command_given_before_it(capsys):
    """argparse takes the option's value for the command: the option is the mistake."""
    assert main(["--stop", "1", "demo"]) == 2
    assert capsys.readouterr().err == (
        "flexcosim: error: --stop is an option of demo and cosim, given before the command; "
        "accepted: 'flexcosim demo --stop ...'\n")


def test_the_form_is_one_line_whatever_the_message():
    assert error_line("cosim", "a\nmessage  over\n lines") == (
        "flexcosim cosim: error: a message over lines")
    assert error_line(None, "x") == "flexcosim: error: x"


def test_help_and_version_still_answer(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("flexcosim ")
    assert main(["cosim", "--help"]) == 0
    assert "--stop" in capsys.readouterr().out
