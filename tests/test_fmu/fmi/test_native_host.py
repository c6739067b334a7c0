"""Our FMUs in a plain C host: no Python in the host, no RTLD_GLOBAL, no environment.

``tests/support/c/host.c`` is compiled here against the FMI 2.0 headers; it dlopens the
FMU's binary with RTLD_NOW | RTLD_LOCAL and runs command scripts (see its header).  It
runs in a subprocess whose environment holds nothing but ``PATH=/usr/bin:/bin``, where
``python3`` is the system's, not the one the FMU was built with.
"""
from __future__ import annotations

import math
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest

from support.blocks import DampedOscillator
from support.fmi import DISCARD, ERROR, OK, Instance, Unzipped, start
from fmu.fmi.build import build_fmu
from mbdcore.models.manipulator import ARM_OUTPUTS
from flexcosim.demo import ensure_fmu

pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("gcc") is None,
                                reason="the C host is compiled with gcc on Linux")

H = 0.01  # communication step of the oscillator [s]
ARM_H = 1e-3
OSC_OUTPUTS = ("position", "velocity", "acceleration")


@pytest.fixture(scope="module")
def osc(tmp_path_factory) -> Unzipped:
    folder = tmp_path_factory.mktemp("osc")
    return Unzipped(build_fmu(DampedOscillator, folder, model_name="Oscillator"), folder / "unzipped")


@pytest.fixture(scope="module")
def arm(tmp_path_factory) -> Unzipped:
    folder = tmp_path_factory.mktemp("arm")
    return Unzipped(ensure_fmu("manipulator", folder), folder / "unzipped")


def force_history(n):
    return [20.0 * math.sin(0.37 * k) + 3.0 for k in range(n)]


# -- the binary --------------------------------------------------------------------------

def test_binary_has_no_link_time_dependency_on_python(osc):
    dynamic = subprocess.run(["readelf", "-d", str(osc.binary)], capture_output=True, text=True).stdout
    assert "NEEDED" in dynamic and "libpython" not in dynamic
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(osc.binary)],
                               capture_output=True, text=True).stdout.split()
    assert not [s for s in undefined if s.startswith(("Py", "_Py"))]


def test_a_package_built_without_the_wrapper_keeps_pythonfmus_binary_with_a_warning(
        tmp_path, monkeypatch):
    import pythonfmu
    import fmu.fmi.build

    # as on a platform where setup.py builds no wrapper: nothing matches its file name
    monkeypatch.setattr(fmu.fmi.build, "_WRAPPER_GLOB", "_no_such_wrapper.*")
    with pytest.warns(UserWarning, match="native FMI wrapper was not built"):
        # a name no FMU loaded in this process has put on sys.path
        path = build_fmu(DampedOscillator, tmp_path, model_name="LegacyOscillator")
    with zipfile.ZipFile(path) as fmu_zip:
        binary = fmu_zip.read("binaries/linux64/LegacyOscillator.so")
    legacy = Path(pythonfmu.__file__).parent / "resources" / "binaries" / "linux64" / "libpythonfmu-export.so"
    assert binary == legacy.read_bytes()


# -- running -----------------------------------------------------------------------------

@pytest.mark.slow
def test_c_host_runs_the_arm_like_fmpy(host, arm, tmp_path):
    """1000 steps of known joint torques: same outputs as fmpy to 1e-12."""
    torques = [(0.5 * math.sin(0.01 * k), -0.2 * math.cos(0.013 * k)) for k in range(1000)]
    inputs = tmp_path / "torques.txt"
    inputs.write_text("".join(f"{t1!r} {t2!r}\n" for t1, t2 in torques))
    outputs = tmp_path / "outputs.csv"
    run = host(start(arm) +
               f"run 0 {ARM_H} 2 {arm.vrs('tau1', 'tau2')} {len(ARM_OUTPUTS)} {arm.vrs(*ARM_OUTPUTS)} "
               f"{inputs} {outputs}\nterminate 0\nfree 0\n")
    assert run.statuses("run") == [OK] and "run steps 1000" in run.lines
    in_c = np.loadtxt(outputs, delimiter=",")

    fmu = Instance(arm.md, str(arm.dir), step=ARM_H)
    in_fmpy = []
    for t1, t2 in torques:
        fmu.set("tau1", t1)
        fmu.set("tau2", t2)
        fmu.step()
        in_fmpy.append(fmu.get(*ARM_OUTPUTS))
    fmu.close()
    assert in_c.shape == (1000, len(ARM_OUTPUTS))
    np.testing.assert_allclose(in_c, in_fmpy, rtol=0, atol=1e-12)
    assert np.abs(in_c[:, 0]).max() > 1e-3  # the arm moved


@pytest.mark.slow
def test_the_arm_fmu_runs_from_fresh_folders_in_a_bare_environment_and_compiles_nothing(
        host, arm, tmp_path):
    """The Python arm FMU unzipped into three new folders in turn, each run by the C
    host with an empty environment (``env -i``: no PATH, so no compiler or linker could
    be found): it starts every time with the kernels it carries.  The third run has
    only HOME and XDG_CACHE_HOME, pointing into empty folders, which stay empty: no
    cache gains a file.  Before the kernels were compiled with the package, each new
    folder compiled the arm again (the cache key held the sources' path) and a bare
    environment failed in the linker ("cannot find 'ld'")."""
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    cache.mkdir()
    outputs = []
    for k in range(3):
        fresh = Unzipped(arm.fmu_file, tmp_path / f"unzip{k}")
        assert any(fresh.resources.glob("mbdcore/models/_arm.*")), "the FMU carries its kernel"
        script = (start(fresh) + f"set_real 0 {fresh.vr['tau1']} 0.5\n"
                  f"step 0 0 {ARM_H}\nget_real 0 {fresh.vrs('theta1', 'omega1')}\n"
                  "terminate 0\nfree 0\n")
        if k < 2:
            run = host(script, bare=True)
        else:
            run = host(script, env={"HOME": str(home), "XDG_CACHE_HOME": str(cache), "PATH": ""})
        assert run.instantiated() == [True], run.lines[-20:]
        assert run.statuses("step") == [OK]
        outputs.append(run.values()[0])
    # the same torque from rest: the same first step, and the arm started to turn
    assert outputs[0] == outputs[1] == outputs[2] and outputs[0][1] > 0.0
    assert not list(home.rglob("*")) and not list(cache.rglob("*"))


def test_every_file_uri_form_is_accepted(host, osc, tmp_path):
    spaced = osc.copy(tmp_path / "a dir with spaces")
    path = spaced.resources.as_posix()
    forms = [f"file://{quote(path)}", f"file:{quote(path)}", f"file://localhost{quote(path)}",
             f"FILE://LOCALHOST{quote(path)}/", "file://" + "".join(chr(b) if b == ord("/") else f"%{b:02X}" for b in path.encode())]
    script = f"load {osc.binary}\n" + "".join(  # the same binary, spaced resources
        f"instantiate {i} form{i} {osc.guid} {uri} 0\ninit {i} 0\nget_real {i} {osc.vr['position']}\nfree {i}\n"
        for i, uri in enumerate(forms))
    script += f"instantiate 7 remote {osc.guid} file://server{quote(path)} 0\n"
    run = host(script)
    assert run.instantiated() == [True] * len(forms) + [False]
    assert run.values() == [[0.1]] * len(forms)
    assert len(run.errors()) == 1 and "host 'server'" in run.errors()[0]


def test_broken_slave_module_gives_null_and_a_message_with_logging_off(host, osc, tmp_path):
    broken = osc.copy(tmp_path / "broken")
    (broken.resources / "slavemodule.txt").write_text("no_such_module\n")
    run = host(f"load {broken.binary}\ninstantiate 0 osc {osc.guid} {broken.uri()} 0\n")
    assert run.instantiated() == [False]
    assert any("slavemodule.txt" in m and "no_such_module" in m for m in run.errors())


def test_missing_python_environment_is_reported_and_can_be_overridden(host, osc, tmp_path):
    moved = osc.copy(tmp_path / "moved")
    record = moved.resources / "flexcosim_env.txt"
    lines = record.read_text().splitlines()
    record.write_text("\n".join(
        "libpython=/nonexistent/lib/libpython3.so" if line.startswith("libpython=") else
        "executable=/nonexistent/bin/python3" if line.startswith("executable=") else line
        for line in lines) + "\n")
    script = f"load {moved.binary}\ninstantiate 0 osc {osc.guid} {moved.uri()} 0\n"
    failed = host(script)
    assert failed.instantiated() == [False]
    [message] = failed.errors()
    assert "/nonexistent/lib/libpython3.so" in message and "FLEXCOSIM_PYTHONHOME" in message

    prefix = Path(sys.base_prefix)
    overridden = host(script + f"init 0 0\nget_real 0 {osc.vr['position']}\nfree 0\n",
                      env={"FLEXCOSIM_PYTHONHOME": str(prefix)})
    assert overridden.instantiated() == [True] and overridden.values() == [[0.1]]

    wrong_home = host(script, env={"FLEXCOSIM_PYTHONHOME": str(tmp_path / "no_python")})
    assert wrong_home.instantiated() == [False]
    assert any("FLEXCOSIM_PYTHONHOME" in m and "no_python" in m for m in wrong_home.errors())


def test_the_hosts_python_variables_do_not_reach_the_fmu(host, osc):
    """A host's PYTHONHOME/PYTHONPATH are for its own Python (pythonfmu died on them)."""
    run = host(start(osc) + f"get_real 0 {osc.vr['position']}\nfree 0\n",
               env={"PYTHONHOME": "/nonexistent", "PYTHONPATH": "/nonexistent"})
    assert run.instantiated() == [True] and run.values() == [[0.1]]


def test_nan_input_is_refused_by_name_and_the_state_is_kept(host, osc):
    force, outputs = osc.vr["force"], osc.vrs(*OSC_OUTPUTS)
    steps = "".join(f"step 0 {k * H!r} {H}\n" for k in range(10))
    run = host(start(osc) + f"set_real 0 {force} 5.0\n{steps}get_real 0 {outputs}\n"
               f"set_real 0 {force} nan\nstep 0 {10 * H!r} {H}\nget_real 0 {outputs}\n"
               f"set_real 0 {force} 5.0\nstep 0 {10 * H!r} {H}\nget_real 0 {outputs}\nfree 0\n")
    assert run.statuses("step") == [OK] * 10 + [DISCARD, OK]
    assert any("'force'" in m and "nan" in m for m in run.errors())
    assert any("step refused" in m and "'force'" in m for m in run.errors())
    before, after_nan, after = run.values()
    assert after_nan == before
    block = DampedOscillator()
    block.set_input("force", 5.0)
    for k in range(11):
        block.do_step(k * H, H)
    assert after == [block.outputs()[n] for n in OSC_OUTPUTS]


def _run_lines(fmu: Unzipped, slot: int, forces, k0: int) -> str:
    force, outputs = fmu.vr["force"], fmu.vrs(*OSC_OUTPUTS)
    return "".join(f"set_real {slot} {force} {f!r}\nstep {slot} {(k0 + k) * H!r} {H}\n"
                   f"get_real {slot} {outputs}\n" for k, f in enumerate(forces))


def test_state_get_set_and_serialization_continue_bit_for_bit(host, osc, tmp_path):
    forces = force_history(40)
    blob = tmp_path / "state.bin"
    run = host(start(osc) + _run_lines(osc, 0, forces[:17], 0) +
               f"get_state 0 0\nserialize 0 0 {blob}\n" +
               _run_lines(osc, 0, forces[17:], 17) +                    # first continuation
               "set_state 0 0\n" + _run_lines(osc, 0, forces[17:], 17) +  # rolled back
               f"instantiate 1 other {osc.guid} {osc.uri()} 0\ninit 1 0\nexit_init 1\n"
               f"deserialize 1 {blob} 1\nset_state 1 1\n" + _run_lines(osc, 1, forces[17:], 17) +
               "free_state 0 0\nfree_state 1 1\nfree 0\nfree 1\n")
    assert set(run.statuses("get_state") + run.statuses("set_state") + run.statuses("serialize")
               + run.statuses("deserialize") + run.statuses("free_state")) == {OK}
    values = run.values()[17:]
    first, rolled_back, restored = values[:23], values[23:46], values[46:]
    assert rolled_back == first and restored == first  # exact float equality


def test_two_instances_in_one_process_are_independent(host, osc):
    forces = force_history(50)
    force, outputs = osc.vr["force"], osc.vrs(*OSC_OUTPUTS)
    mass = f"set_real 1 {osc.vr['mass']} 4.0\n"
    script = (start(osc, 0, "a") + f"instantiate 1 b {osc.guid} {osc.uri()} 0\ninit 1 0\n{mass}exit_init 1\n")
    for k, f in enumerate(forces):
        script += (f"set_real 0 {force} {f!r}\nset_real 1 {force} {-f!r}\n"
                   f"step 0 {k * H!r} {H}\nstep 1 {k * H!r} {H}\n")
    run = host(script + f"get_real 0 {outputs}\nget_real 1 {outputs}\nfree 0\nfree 1\n")
    a, b = DampedOscillator(), DampedOscillator(mass=4.0)
    for k, f in enumerate(forces):
        a.set_input("force", f)
        b.set_input("force", -f)
        a.do_step(k * H, H)
        b.do_step(k * H, H)
    assert run.values() == [[a.outputs()[n] for n in OSC_OUTPUTS], [b.outputs()[n] for n in OSC_OUTPUTS]]


def test_reset_starts_over(host, osc):
    script = start(osc) + _run_lines(osc, 0, force_history(5), 0)
    script += "reset 0\ninit 0 0\nexit_init 0\n" + _run_lines(osc, 0, force_history(5), 0) + "free 0\n"
    run = host(script)
    assert run.statuses("reset") == [OK]
    assert run.values()[:5] == run.values()[5:]


def test_python_exception_is_an_error_with_the_traceback_and_the_instance_lives(host, osc, tmp_path):
    raising = osc.copy(tmp_path / "raising")
    (raising.resources / "Raising.py").write_text(
        "from Oscillator import Oscillator\n\n\n"
        "class Raising(Oscillator):\n"
        "    def do_step(self, t, h):\n"
        "        if t >= 0.02:\n"
        "            raise RuntimeError('long ' * 1000 + '100% broken # on purpose')\n"
        "        return super().do_step(t, h)\n")
    (raising.resources / "slavemodule.txt").write_text("Raising")
    # the fourth step retries the third (the FMU stays at t = 0.02 s)
    steps = "".join(f"step 0 {k * H!r} {H}\n" for k in (0, 1, 2, 2))
    run = host(start(raising) + steps + f"get_real 0 {osc.vr['position']}\ncall_unsupported 0\nfree 0\n")
    assert run.statuses("step") == [OK, OK, ERROR, ERROR]
    tracebacks = [m for m in run.errors() if "Traceback" in m]
    # the logger reads the message as a printf format ('%' arrives as written) and, as
    # FMI 2.0 asks, '#' (which would start a variable reference) arrives as '##'
    # (a long traceback arrives whole, with the exception at its end)
    assert len(tracebacks) == 2 and tracebacks[0].endswith("long 100% broken ## on purpose")
    assert "RuntimeError: long long" in tracebacks[0]
    assert run.statuses("get_real") == [OK] and math.isfinite(run.values()[0][0])
    assert run.statuses("cancel_step") == [ERROR] == run.statuses("directional_derivative")
    assert any("fmi2CancelStep is not supported" in m for m in run.errors())


# -- field hardening (issue 13, items 12-20) ---------------------------------------------------

def test_concurrent_first_instantiations_all_succeed(host, osc):
    """Four threads instantiate at once in a fresh process: none sees a half-imported
    slave module."""
    run = host(f"load {osc.binary}\ninstantiate_threads 4 t {osc.guid} {osc.uri()}\n" + "".join(
        f"init {i} 0\nexit_init {i}\nget_real {i} {osc.vr['position']}\nfree {i}\n" for i in range(4)))
    assert run.instantiated() == [True] * 4, run.errors()
    assert run.values() == [[0.1]] * 4 and not run.errors()


def test_non_finite_or_inconsistent_communication_points_are_refused(host, osc):
    outputs = osc.vrs(*OSC_OUTPUTS)
    run = host(start(osc) + f"step 0 0 {H}\nstep 0 nan {H}\nstep 0 inf {H}\nstep 0 0.5 {H}\n"
               f"step 0 0 {H}\nstep 0 {H!r} {H}\nget_real 0 {outputs}\n"
               f"instantiate 1 b {osc.guid} {osc.uri()} 0\nsetup 1 nan\nsetup 1 0 -1\nsetup 1 0 1\n"
               "free 0\nfree 1\n")
    assert run.statuses("step") == [OK, ERROR, ERROR, ERROR, ERROR, OK]
    errors = run.errors()
    for t in ("nan", "inf", "0.5", "0"):
        assert any(f"currentCommunicationPoint = {t} s refused" in m and "0.01" in m for m in errors), t
    block = DampedOscillator()
    block.do_step(0.0, H)
    block.do_step(H, H)
    assert run.values() == [[block.outputs()[n] for n in OSC_OUTPUTS]]  # the refused steps left no trace
    assert run.statuses("setup") == [OK, ERROR, ERROR, OK]
    assert any("startTime = nan" in m for m in errors)
    assert any("stopTime = -1" in m for m in errors)


def test_calls_follow_the_fmi2_state_machine(host, osc):
    position = osc.vr["position"]
    run = host(f"load {osc.binary}\ninstantiate 0 a {osc.guid} {osc.uri()} 0\n"
               f"step 0 0 {H}\nexit_init 0\nget_real 0 {position}\n"        # instantiated
               f"init 0 0\nsetup 0 0\nstep 0 0 {H}\nexit_init 0\n"           # initialization mode
               f"step 0 0 {H}\nterminate 0\n"                                  # step complete
               f"step 0 {H!r} {H}\nexit_init 0\nset_real 0 {osc.vr['force']} 1.0\nterminate 0\n"
               f"get_real 0 {position}\nget_state 0 0\nfree_state 0 0\n"      # terminated
               f"reset 0\ninit 0 0\nexit_init 0\nstep 0 0 {H}\nterminate 0\nfree 0\n")
    assert run.statuses("step") == [ERROR, ERROR, OK, ERROR, OK]
    assert run.statuses("exit_init") == [ERROR, OK, ERROR, OK]
    assert run.statuses("get_real") == [ERROR, OK]
    assert run.statuses("setup") == [OK, ERROR, OK]
    assert run.statuses("set_real") == [ERROR]
    assert run.statuses("terminate") == [OK, ERROR, OK]
    assert run.statuses("reset") == [OK] and run.statuses("get_state") == [OK]
    errors = run.errors()
    for call, state in (("fmi2DoStep", "instantiated"), ("fmi2ExitInitializationMode", "instantiated"),
                        ("fmi2GetReal", "instantiated"), ("fmi2SetupExperiment", "initialization mode"),
                        ("fmi2DoStep", "initialization mode"), ("fmi2DoStep", "terminated"),
                        ("fmi2ExitInitializationMode", "terminated"), ("fmi2SetReal", "terminated"),
                        ("fmi2Terminate", "terminated")):
        assert any(m.startswith(f'{call} is not allowed in state "{state}"') for m in errors), (call, state)


def test_arm_parameters_that_cannot_make_a_model_fail_initialization_by_name(host, arm):
    """In-range extremes: fmi2ExitInitializationMode fails naming them; numpy's warnings
    reach the logger, not the host's stderr (the host fixture asserts it is empty)."""
    lines = "".join(f"set_real 0 {arm.vr[name]} {value}\n" for name, value in (("l1", "1e308"),
                                                                            ("rho_a1", "1e-300")))
    run = host(start(arm, logging=1, params=lines) + f"step 0 0 {ARM_H}\nfree 0\n")
    assert run.statuses("set_real") == [OK, OK]
    assert run.statuses("exit_init") == [ERROR]
    assert any("cannot be built" in m and "l1 = 1e+308" in m and "rho_a1 = 1e-300" in m
               for m in run.errors()), run.errors()
    assert run.statuses("step") == [ERROR]


def test_a_venv_without_numpy_is_found_and_the_message_says_what_the_fmu_needs(host, osc, tmp_path):
    """FLEXCOSIM_PYTHONHOME=<venv> alone, the recorded base Python gone: the venv's
    pyvenv.cfg leads to its base Python; the venv lacks numpy, and the message says so."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True)
    moved = osc.copy(tmp_path / "moved")
    record = moved.resources / "flexcosim_env.txt"
    record.write_text("".join(
        "libpython=/nonexistent/lib/libpython3.so\n" if line.startswith("libpython=") else
        "executable=/nonexistent/bin/python3\n" if line.startswith("executable=") else line + "\n"
        for line in record.read_text().splitlines()))
    run = host(f"load {moved.binary}\ninstantiate 0 osc {osc.guid} {moved.uri()} 0\n",
               env={"FLEXCOSIM_PYTHONHOME": str(venv)})
    assert run.instantiated() == [False]
    [message] = run.errors()
    assert "needs the Python package 'numpy'" in message and "numpy>=" in message
    assert str(venv) in message and "set FLEXCOSIM_PYTHONHOME" not in message
