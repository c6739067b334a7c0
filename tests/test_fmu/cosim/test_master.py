"""Co-simulation master: exact discrete solutions of sampled loops, ordering, errors, output.

The blocks integrate exactly over a step with the input held (zero-order hold), so
every run below has a closed-form discrete solution that the master must reproduce
to rounding.
"""
from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
import textwrap
import time
import zipfile

import numpy as np
import pytest

from fmu.cosim.components import BlockComponent
from fmu.cosim.errors import AlgebraicLoopError, CosimError
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.master import Master
from fmu.cosim.recording import Result
from fmu.cosim.system import System

from support import TESTS
from support.blocks import Gain, Integrator, SmoothStep, Sleeper, Sqrt, Tracking



def feedback_loop(k=2.0, x0=1.0, **integrator):
    """Plant x' = u, controller u = -k x (direct feedthrough)."""
    return System([BlockComponent("plant", Integrator(x0=x0, **integrator)),
                   BlockComponent("ctrl", Gain(k=k))],
                  {"plant.x": "ctrl.u", "ctrl.y": "plant.u"})


def oscillator(h):
    """Two integrators x' = z, z' = -x coupled without feedthrough (harmonic oscillator)."""
    return System([BlockComponent("a", Integrator(gain=1.0, x0=1.0)),
                   BlockComponent("b", Integrator(gain=-1.0, x0=0.0))],
                  [("a.x", "b.u"), ("b.x", "a.u")])


# ---------------------------------------------------------------------------------
# physics of the sampled loops
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["gauss-seidel", "jacobi"])
def test_sampled_feedback_loop_is_the_exact_discrete_solution(method):
    k, h, x0 = 2.0, 0.01, 1.5
    r = Master(feedback_loop(k, x0), h, method).run(3.0)
    steps = np.arange(301)
    # u held over each step: x_{k+1} = x_k - k h x_k
    np.testing.assert_allclose(r["plant.x"], x0 * (1 - k * h) ** steps, rtol=1e-12, atol=0)
    # the controller sees the plant output of the same instant (feedthrough propagated first)
    np.testing.assert_array_equal(r["ctrl.u"], r["plant.x"])
    np.testing.assert_array_equal(r["ctrl.y"], -k * r["plant.x"])
    np.testing.assert_array_equal(r["plant.u"], r["ctrl.y"])
    np.testing.assert_array_equal(r.time, steps * h)
    assert r.names == ["time", "plant.x", "ctrl.y", "plant.u", "ctrl.u"]


def test_jacobi_oscillator_gains_energy_by_one_plus_h_squared_per_step():
    h = 0.05
    r = Master(oscillator(h), h, "jacobi").run(5.0)
    n = np.arange(len(r))
    # both step from the same values: (x + i z)_{k+1} = (1 - i h) (x + i z)_k
    exact = (1 - 1j * h) ** n * (1.0 + 0j)
    np.testing.assert_allclose(r["a.x"], exact.real, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(r["b.x"], exact.imag, rtol=1e-12, atol=1e-13)
    energy = r["a.x"] ** 2 + r["b.x"] ** 2
    np.testing.assert_allclose(energy, (1 + h * h) ** n, rtol=1e-12)


def test_gauss_seidel_oscillator_is_symplectic_euler():
    h = 0.05
    master = Master(oscillator(h), h, "gauss-seidel")
    assert master.order == ["a", "b"]  # a cycle without feedthrough: system order
    r = master.run(5.0)
    x, z = 1.0, 0.0
    xs, zs = [x], [z]
    for _ in range(len(r) - 1):
        x = x + h * z          # a steps first with the old z
        z = z - h * x          # b already sees the new x
        xs.append(x)
        zs.append(z)
    np.testing.assert_allclose(r["a.x"], xs, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r["b.x"], zs, rtol=1e-12, atol=1e-14)
    # symplectic Euler conserves the modified energy x^2 + h x z + z^2 exactly
    modified = r["a.x"] ** 2 + h * r["a.x"] * r["b.x"] + r["b.x"] ** 2
    np.testing.assert_allclose(modified, 1.0, rtol=1e-12)


def test_gauss_seidel_order_can_be_given():
    h = 0.05
    r = Master(oscillator(h), h, "gauss-seidel", order=["b", "a"]).run(1.0)
    x, z = 1.0, 0.0
    for _ in range(len(r) - 1):
        z = z - h * x
        x = x + h * z
    assert r["a.x"][-1] == pytest.approx(x, rel=1e-12)
    assert r["b.x"][-1] == pytest.approx(z, rel=1e-12)
    with pytest.raises(ValueError, match="every component"):
        Master(oscillator(h), h, order=["a"])


def test_default_order_puts_sources_first_and_plants_before_feedthrough():
    loop = System([BlockComponent("ctrl", Gain(k=1.0)), BlockComponent("plant", Integrator())],
                  {"ctrl.y": "plant.u", "plant.x": "ctrl.u"})
    assert Master(loop, 0.1).order == ["plant", "ctrl"]
    chain = System([BlockComponent("c", Gain()), BlockComponent("b", Gain()),
                    BlockComponent("a", Integrator())], {"a.x": "b.u", "b.y": "c.u"})
    assert Master(chain, 0.1).order == ["a", "b", "c"]


def test_time_grid_has_no_drift_and_includes_both_ends():
    r = Master(feedback_loop(), 0.1, "jacobi").run(1000.0, start_time=2.0)
    assert len(r) == 9981
    np.testing.assert_array_equal(r.time, 2.0 + 0.1 * np.arange(9981))
    assert r.time[-1] == pytest.approx(1000.0, abs=1e-9)
    with pytest.raises(ValueError, match="whole number of steps"):
        Master(feedback_loop(), 0.1).run(1.05)


def test_master_overhead_is_small():
    master = Master(feedback_loop(), 0.001, "gauss-seidel")
    t = time.perf_counter()
    r = master.run(3.0)
    assert len(r) == 3001
    assert time.perf_counter() - t < 0.5


# ---------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------
def test_algebraic_loop_is_rejected_naming_the_loop():
    s = System([BlockComponent("plant", Integrator()), BlockComponent("k1", Gain()),
                BlockComponent("k2", Gain())],
               {"k1.y": "k2.u", "k2.y": ["k1.u", "plant.u"]})
    with pytest.raises(AlgebraicLoopError) as info:
        Master(s, 0.1)
    msg = str(info.value)
    assert "'k1', 'k2'" in msg or "'k2', 'k1'" in msg
    for name in ("k1.y", "k2.u", "k2.y", "k1.u"):
        assert name in msg
    assert "plant." not in msg
    assert info.value.loop[0] == info.value.loop[-1]
    assert isinstance(info.value, ValueError)


def test_self_loop_through_feedthrough_is_an_algebraic_loop():
    s = System([BlockComponent("k", Gain())], {"k.y": "k.u"})
    with pytest.raises(AlgebraicLoopError, match=r"k\.y -> k\.u -> k\.y"):
        Master(s, 0.1)


@pytest.mark.parametrize("connections, words", [
    ({"plnt.x": "ctrl.u"}, ["unknown component", "'plnt'"]),
    ({"plant.y": "ctrl.u"}, ["'y' is not an output", "'plant'", "outputs: x"]),
    ({"plant.x": "ctrl.v"}, ["'v' is not an input", "'ctrl'"]),
    ({"plant.u": "ctrl.u"}, ["'u' is not an output"]),
    ({"plant.x": "ctrl.y"}, ["'y' is not an input"]),
    ([("plant.x", "ctrl.u"), ("ctrl.y", "ctrl.u")], ["'ctrl.u' is connected twice",
                                                     "'plant.x'", "ctrl.y"]),
    ({"plantx": "ctrl.u"}, ["component.variable"]),
])
def test_bad_connections_are_rejected_by_name(connections, words):
    comps = [BlockComponent("plant", Integrator()), BlockComponent("ctrl", Gain())]
    with pytest.raises(ValueError) as info:
        System(comps, connections)
    for w in words:
        assert w in str(info.value)


def test_duplicate_component_names_are_rejected():
    with pytest.raises(ValueError, match="two components are named 'p'"):
        System([BlockComponent("p", Integrator()), BlockComponent("p", Gain())])


# ---------------------------------------------------------------------------------
# failures
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["gauss-seidel", "jacobi"])
def test_step_failure_stops_the_run_with_the_partial_result(method):
    k, h = 2.0, 0.1
    with pytest.raises(CosimError) as info:
        Master(feedback_loop(k, 1.0, fail_time=0.5), h, method).run(2.0)
    err = info.value
    assert err.component == "plant" and err.time == pytest.approx(0.5)
    assert "'plant'" in str(err) and "t = 0.5 s" in str(err) and "diverged" in str(err)
    r = err.result
    assert isinstance(r, Result) and len(r) == 6
    np.testing.assert_allclose(r.time, h * np.arange(6), atol=1e-15)
    np.testing.assert_allclose(r["plant.x"], (1 - k * h) ** np.arange(6), rtol=1e-12)


def test_nan_output_names_component_variable_and_time():
    ramp = Integrator(gain=-1.0, x0=1.0)   # x = 1 - t, negative after t = 1 s
    ramp.set_input("u", 1.0)              # unconnected inputs keep their value
    s = System([BlockComponent("ramp", ramp), BlockComponent("root", Sqrt())],
               {"ramp.x": "root.u"})
    with pytest.raises(CosimError) as info:
        Master(s, 0.25).run(2.0)
    err = info.value
    # the block refuses the step [1, 1.25] s whose output is NaN (issue 22)
    assert (err.component, err.variable) == ("root", "y")
    assert err.time == pytest.approx(1.0)
    assert "'y' = nan is not finite" in str(err) and "[1, 1.25]" in str(err)
    np.testing.assert_allclose(err.result["root.y"], np.sqrt(1 - 0.25 * np.arange(5)))


def test_rejected_input_names_the_input():
    class Bounded(Integrator):
        INPUTS = (Integrator.INPUTS[0].__class__("u", max=1.0),)

    s = System([BlockComponent("src", Integrator(gain=1.0, x0=0.5)),
                BlockComponent("dst", Bounded())], {"src.x": "dst.u"})
    s.components[0].block.set_input("u", 1.0)   # src.x = 0.5 + t exceeds 1 after 0.5 s
    with pytest.raises(CosimError) as info:
        Master(s, 0.25, "jacobi").run(1.0)
    assert (info.value.component, info.value.variable) == ("dst", "u")
    assert info.value.time == pytest.approx(0.75)
    assert "dst.u" in str(info.value)


# ---------------------------------------------------------------------------------
# output files
# ---------------------------------------------------------------------------------
def test_csv_round_trip_and_png(tmp_path):
    r = Master(feedback_loop(), 0.01).run(1.0)
    path = r.to_csv(tmp_path / "loop.csv")
    assert path.read_text().splitlines()[0] == "time,plant.x,ctrl.y,plant.u,ctrl.u"
    back = np.genfromtxt(path, delimiter=",", names=True, deletechars="")
    assert back.dtype.names == r.data.dtype.names
    for name in r.names:
        np.testing.assert_array_equal(back[name], r[name])
    fig = r.plot(tmp_path / "loop.png")
    png = tmp_path / "loop.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    # the outputs are dimensionless: one axis, a legend entry per output
    assert [ax.get_ylabel() for ax in fig.axes] == ["dimensionless [1]"]
    assert [line.get_label() for line in fig.axes[0].get_lines()] == r.outputs
    r.plot(tmp_path / "one.png", signals=["plant.x"])
    with pytest.raises(KeyError, match="nope"):
        r.plot(tmp_path / "bad.png", signals=["nope"])


def test_rerun_and_block_state_round_trip():
    master = Master(feedback_loop(), 0.01)
    first, second = master.run(1.0), master.run(1.0)
    np.testing.assert_array_equal(first.data, second.data)   # initialize() resets
    comp = master.system.by_name["plant"]
    saved, before = comp.get_state(), comp.get_outputs()
    comp.do_step(1.0, 0.5)
    assert comp.get_outputs() != before
    comp.set_state(saved)
    assert comp.get_outputs() == before


# ---------------------------------------------------------------------------------
# FMUs
# ---------------------------------------------------------------------------------
PYTHONFMU_INTEGRATOR = '''
import sys

from pythonfmu import Boolean, Fmi2Causality, Fmi2Slave, Fmi2Variability, Integer, Real
from pythonfmu.enums import Fmi2Status

# pythonfmu 0.7.0 re-executes this script at every fmi2Instantiate and then drops one
# reference too many to its namespace (see fmu.fmi.slave); one reference per execution
# keeps the namespace alive.
sys.__dict__.setdefault("_master_test_namespaces", []).append(globals())


class FmuIntegrator(Fmi2Slave):
    """x' = gain * u (or -gain * u if flip), u held over the step; fails at step n_fail,
    logs a warning at step n_warn."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.u, self.x = 0.0, 0.0
        self.gain, self.x0, self.n_fail, self.flip, self.n = 1.0, 0.0, 0, False, 0
        self.n_warn = 0
        self.register_variable(Real("u", causality=Fmi2Causality.input))
        self.register_variable(Real("x", causality=Fmi2Causality.output))
        fixed = dict(causality=Fmi2Causality.parameter, variability=Fmi2Variability.fixed)
        for var in (Real("gain", **fixed), Real("x0", **fixed), Integer("n_fail", **fixed),
                    Boolean("flip", **fixed), Integer("n_warn", **fixed)):
            self.register_variable(var)

    def exit_initialization_mode(self):
        self.x = self.x0

    def do_step(self, t, h):
        self.n += 1
        if self.n == self.n_fail:
            # Report, do not raise: an exception leaving a pythonfmu 0.7.0 callback is
            # fmi2Fatal and its clean-up releases the slave twice (memory corruption).
            self.log(f"integrator blew up at step {self.n}", Fmi2Status.error)
            return False
        if self.n == self.n_warn:
            self.log(f"x = {self.x:.6g} at step {self.n}", Fmi2Status.warning)
        self.x += (-self.gain if self.flip else self.gain) * h * self.u
        return True
'''


def _set_dependencies(fmu, deps: str) -> None:
    """Write dependencies="..." on every output Unknown (pythonfmu omits the attribute)."""
    with zipfile.ZipFile(fmu) as z:
        files = {n: z.read(n) for n in z.namelist()}
    xml = files["modelDescription.xml"].decode()
    files["modelDescription.xml"] = xml.replace(
        '<Unknown index="2"/>', f'<Unknown index="2" dependencies="{deps}"/>').encode()
    with zipfile.ZipFile(fmu, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in files.items():
            z.writestr(n, data)


@pytest.fixture(scope="module")
def integrator_fmu(tmp_path_factory):
    pythonfmu = pytest.importorskip("pythonfmu")
    d = tmp_path_factory.mktemp("fmu")
    script = d / "fmuintegrator.py"
    script.write_text(textwrap.dedent(PYTHONFMU_INTEGRATOR))
    fmu = pythonfmu.FmuBuilder.build_FMU(script, dest=d)
    _set_dependencies(fmu, "")  # x is a state: no direct feedthrough from u
    return fmu


def fmu_loop(fmu, k=2.0, x0=1.0, **params):
    return System([FMUComponent("plant", fmu, parameters={"x0": x0, **params}),
                   BlockComponent("ctrl", Gain(k=k))],
                  {"plant.x": "ctrl.u", "ctrl.y": "plant.u"})


@pytest.mark.parametrize("method", ["gauss-seidel", "jacobi"])
def test_fmu_plant_gives_the_same_loop_as_the_block(integrator_fmu, method):
    k, h = 2.0, 0.01
    comp = FMUComponent("plant", integrator_fmu)
    assert comp.inputs == ("u",) and comp.outputs == ("x",) and comp.feedthrough == {"x": ()}
    via_fmu = Master(fmu_loop(integrator_fmu, k, 1.5), h, method).run(2.0)
    via_block = Master(feedback_loop(k, 1.5), h, method).run(2.0)
    np.testing.assert_allclose(via_fmu.data.view(float), via_block.data.view(float),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(via_fmu["plant.x"], 1.5 * (1 - k * h) ** np.arange(201),
                               rtol=1e-12)


def test_fmu_parameters_are_set_by_type(integrator_fmu):
    # flip (Boolean) turns the loop unstable: x_{k+1} = (1 + k h) x_k
    r = Master(fmu_loop(integrator_fmu, 2.0, 1.0, flip=True, gain=1, n_fail=0), 0.1).run(1.0)
    np.testing.assert_allclose(r["plant.x"], 1.2 ** np.arange(11), rtol=1e-12)
    with pytest.raises(ValueError, match="no settable variable 'gian'"):
        FMUComponent("plant", integrator_fmu, parameters={"gian": 1.0})
    with pytest.raises(ValueError, match="not an integer"):
        FMUComponent("plant", integrator_fmu, parameters={"n_fail": 2.5})


def test_fmu_failure_reports_component_time_and_fmu_log(integrator_fmu):
    with pytest.raises(CosimError) as info:
        Master(fmu_loop(integrator_fmu, n_fail=4), 0.1).run(1.0)
    err = info.value
    assert err.component == "plant" and err.time == pytest.approx(0.3)
    assert "fmi2DoStep failed with status 2 (discard)" in str(err)
    assert "blew up at step 4" in str(err)
    assert any("blew up" in line for line in err.log)
    assert len(err.result) == 4


def test_fmu_messages_reach_logging_as_they_arrive_with_component_and_level(integrator_fmu,
                                                                            caplog):
    """An FMU's warning and error reach the logger ``fmu.cosim.master.<component>`` at
    WARNING and ERROR, with the component on the record, in the order logged (the
    component's own log and the error's keep them too); before, they only went into
    Component.log."""
    system = fmu_loop(integrator_fmu, n_warn=2, n_fail=4)
    with caplog.at_level(logging.INFO, logger="fmu.cosim.master"), \
            pytest.raises(CosimError) as info:
        Master(system, 0.1).run(1.0)
    records = [r for r in caplog.records if r.name == "fmu.cosim.master.plant"]
    assert [(r.levelno, r.component, r.fmi_status) for r in records] == [
        (logging.WARNING, "plant", "WARNING"), (logging.ERROR, "plant", "ERROR")]
    # x = (1 - k h)^(n - 1) x0 = 0.8 when step n = 2 starts
    assert records[0].getMessage() == "plant: x = 0.8 at step 2"
    assert records[1].getMessage() == "plant: integrator blew up at step 4"
    assert [line.split("] ", 1)[1] for line in system.components[0].log] == [
        "logStatusWarning: x = 0.8 at step 2", "logStatusError: integrator blew up at step 4"]
    assert "blew up at step 4" in str(info.value)
    # a level above the messages' filters them out at the logger
    caplog.clear()
    with caplog.at_level(logging.CRITICAL, logger="fmu.cosim.master"), pytest.raises(CosimError):
        Master(fmu_loop(integrator_fmu, n_warn=2, n_fail=4), 0.1).run(1.0)
    assert not [r for r in caplog.records if r.name.startswith("fmu.cosim.master")]


def test_the_library_prints_nothing_when_logging_is_not_configured(integrator_fmu, tmp_path):
    """A run whose FMU logs a warning and whose real-time pacing overruns, in a fresh
    Python without logging set up: nothing on stdout or stderr (``fmu``'s NullHandler
    keeps logging's last-resort handler quiet); before, the overrun warnings were printed
    on stderr."""
    script = f"""
from fmu.cosim.components import BlockComponent
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.master import Master
from fmu.cosim.system import System
from support.blocks import Gain
import time

class Slow(Gain):
    def do_step(self, t, h):
        time.sleep(0.03)
        super().do_step(t, h)

system = System([FMUComponent("plant", {str(integrator_fmu)!r}, parameters={{"n_warn": 2}}),
                 BlockComponent("ctrl", Slow(k=2.0))],
                {{"plant.x": "ctrl.u", "ctrl.y": "plant.u"}})
r = Master(system, 0.01).run(0.1, realtime=True)
assert r.realtime.overruns > 0 and any("at step 2" in line for line in system.components[0].log)
# pythonfmu's own binary (this FMU is built by pythonfmu alone, not by flexcosim's
# builder with its native wrapper) reads freed memory in its library destructor at
# process exit (finalizePythonInterpreter; valgrind shows it on every run, a crash
# "corrupted double-linked list" in about one CI run): leave without exit handlers,
# after flushing what was printed, which is what this test checks
import os, sys
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (done.stdout, done.stderr) == ("", "")


def test_fmu_without_declared_dependencies_is_taken_as_feedthrough(integrator_fmu, tmp_path):
    # FMI 2.0: an output Unknown without "dependencies" depends on every input
    conservative = tmp_path / "conservative.fmu"
    conservative.write_bytes(integrator_fmu.read_bytes())
    with zipfile.ZipFile(conservative) as z:
        files = {n: z.read(n) for n in z.namelist()}
    files["modelDescription.xml"] = files["modelDescription.xml"].replace(b' dependencies=""', b"")
    with zipfile.ZipFile(conservative, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
    assert FMUComponent("p", conservative).feedthrough == {"x": ("u",)}
    with pytest.raises(AlgebraicLoopError, match="plant.x -> ctrl.u -> ctrl.y -> plant.u"):
        Master(fmu_loop(conservative), 0.1)
    # the user may state what the model description leaves out
    s = System([FMUComponent("plant", conservative, {"x0": 1.0}, feedthrough={"x": ()}),
                BlockComponent("ctrl", Gain(k=2.0))], {"plant.x": "ctrl.u", "ctrl.y": "plant.u"})
    assert Master(s, 0.1).run(0.5)["plant.x"][-1] == pytest.approx(0.8 ** 5, rel=1e-12)


BUILD_AND_RUN = '''
import json, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[2])
from fmu.fmi.build import build_fmu
from fmu.cosim.components import BlockComponent
from fmu.cosim.errors import CosimError
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.master import Master
from fmu.cosim.system import System
from support.blocks import Gain, Integrator

out = Path(sys.argv[1])
plant = build_fmu(Integrator, out, model_name="MasterTestIntegrator")
ctrl = build_fmu(Gain, out, model_name="MasterTestGain")
failing = build_fmu(Integrator, out, model_name="MasterTestFailing")
loop = {"plant.x": "ctrl.u", "ctrl.y": "plant.u"}
comps = [FMUComponent("plant", plant, {"x0": 1.5}), FMUComponent("ctrl", ctrl, {"k": 2.0})]
info = {"feedthrough": [c.feedthrough for c in comps]}
np.save(out / "fmu.npy", Master(System(comps, loop), 0.01, sys.argv[3]).run(2.0).data)
try:
    Master(System([FMUComponent("plant", failing, {"x0": 1.0, "fail_time": 0.5}),
                   BlockComponent("ctrl", Gain(k=2.0))], loop), 0.1).run(1.0)
except CosimError as err:
    info.update(component=err.component, time=err.time, message=str(err), rows=len(err.result))
(out / "info.json").write_text(json.dumps(info))
'''


def test_block_exported_by_build_fmu_runs_identically(tmp_path):
    """The same loop with plant and controller replaced by their FMUs (fmu.fmi.build)."""
    pytest.importorskip("fmu.fmi.build")
    import json
    import subprocess
    import sys

    # A fresh interpreter: an FMU built by fmu.fmi.build is instantiated once per process
    # here, since a second instance of the same model crashed the interpreter.
    script = tmp_path / "build_and_run.py"
    script.write_text(BUILD_AND_RUN)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path),
                           str(TESTS), "gauss-seidel"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    via_fmu = np.load(tmp_path / "fmu.npy")
    via_block = Master(feedback_loop(2.0, 1.5), 0.01, "gauss-seidel").run(2.0).data
    assert via_fmu.dtype.names == via_block.dtype.names
    for name in via_block.dtype.names:
        np.testing.assert_allclose(via_fmu[name], via_block[name], rtol=1e-12, atol=1e-15)
    info = json.loads((tmp_path / "info.json").read_text())
    assert info["feedthrough"] == [{"x": []}, {"y": ["u"]}]
    assert info["component"] == "plant" and info["time"] == pytest.approx(0.5)
    assert "diverged at t = 0.5" in info["message"] and info["rows"] == 6


# ---------------------------------------------------------------------------------
# a non-Python FMU: first-order lag in C (tests/support/c/lag.c), compiled here with gcc
# ---------------------------------------------------------------------------------
from fmu.cosim.master import StepControl  # noqa: E402




def lag_loop(fmu, T=0.2, K=2.0, kp=3.0, x0=1.0):
    """C plant T x' = K u - x under the Python controller u = -kp x."""
    return System([FMUComponent("plant", fmu, {"T": T, "K": K, "x0": x0}),
                   BlockComponent("ctrl", Gain(k=kp))],
                  {"plant.x": "ctrl.u", "ctrl.y": "plant.u"})


def test_c_fmu_is_standard_clean(lag_fmu):
    from fmpy.validation import validate_fmu

    assert validate_fmu(str(lag_fmu)) == []
    comp = FMUComponent("plant", lag_fmu)
    assert comp.inputs == ("u",) and comp.outputs == ("x", "dx")
    assert comp.feedthrough == {"x": (), "dx": ("u",)}   # read from ModelStructure


@pytest.mark.parametrize("method", ["gauss-seidel", "jacobi"])
def test_c_fmu_under_python_controller_is_the_closed_form_discrete_loop(lag_fmu, method):
    T, K, kp, x0, h = 0.2, 2.0, 3.0, 1.0, 0.01
    r = Master(lag_loop(lag_fmu, T, K, kp, x0), h, method).run(2.0)
    # x_{k+1} = a x_k + K (1 - a) u_k with u_k = -kp x_k: x_k = x0 lambda^k
    a = math.exp(-h / T)
    lam = a - K * (1 - a) * kp
    k = np.arange(len(r))
    np.testing.assert_allclose(r["plant.x"], x0 * lam ** k, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(r["plant.dx"], (K * r["plant.u"] - r["plant.x"]) / T, rtol=1e-12)
    np.testing.assert_array_equal(r["plant.u"], -kp * r["plant.x"])


def test_c_fmu_declared_feedthrough_makes_an_algebraic_loop(lag_fmu):
    s = System([FMUComponent("plant", lag_fmu), BlockComponent("ctrl", Gain())],
               {"plant.dx": "ctrl.u", "ctrl.y": "plant.u"})
    with pytest.raises(AlgebraicLoopError, match=r"plant\.dx -> ctrl\.u -> ctrl\.y -> plant\.u"):
        Master(s, 0.01)


def test_c_fmu_state_round_trip_continues_bit_for_bit(lag_fmu):
    comp = FMUComponent("plant", lag_fmu, {"T": 0.3, "x0": 2.0})
    comp.initialize(0.0, 1.0)
    try:
        comp.set_inputs({"u": 0.7})
        comp.do_step(0.0, 0.1)
        saved = comp.get_state()                # serialized bytes
        assert isinstance(saved, bytes)
        comp.do_step(0.1, 0.1)
        first = comp.get_outputs()
        comp.set_inputs({"u": -5.0})
        comp.do_step(0.2, 0.1)
        comp.set_state(saved)
        comp.do_step(0.1, 0.1)
        assert comp.get_outputs() == first      # the input was part of the state too
    finally:
        comp.terminate()


# ---------------------------------------------------------------------------------
# input extrapolation
# ---------------------------------------------------------------------------------
def test_first_order_extrapolation_couples_integrators_as_adams_bashforth_2():
    h = 0.05
    r = Master(oscillator(h), h, "jacobi", extrapolation="first").run(5.0)
    # inputs hold z_k + (z_k - z_{k-1})/2 over the step: AB2 (Euler on the first step)
    x, z = [1.0, 1.0], [0.0, -h]
    for _ in range(len(r) - 2):
        x.append(x[-1] + h * (1.5 * z[-1] - 0.5 * z[-2]))
        z.append(z[-1] - h * (1.5 * x[-2] - 0.5 * x[-3]))
    np.testing.assert_allclose(r["a.x"], x, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r["b.x"], z, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("extrapolation, order", [(0, 1), (1, 2)])
def test_jacobi_coupling_error_has_the_order_of_the_extrapolation(extrapolation, order):
    errors = []
    for h in (0.02, 0.01):
        r = Master(oscillator(h), h, "jacobi", extrapolation=extrapolation).run(2.0)
        errors.append(abs(r["a.x"][-1] - math.cos(2.0)) + abs(r["b.x"][-1] + math.sin(2.0)))
    assert math.log2(errors[0] / errors[1]) == pytest.approx(order, abs=0.15)


# ---------------------------------------------------------------------------------
# variable communication step
# ---------------------------------------------------------------------------------
def tracking_system(fmu):
    """Fast start (x0 = 1, closed-loop time constant 0.1 s), rest, a reference move
    at t = 2 s lasting ~0.05 s, rest."""
    return System([BlockComponent("ref", SmoothStep(r1=1.0, t_switch=2.0, tau=0.02)),
                   BlockComponent("ctrl", Tracking(kp=4.0)),
                   FMUComponent("plant", fmu, {"T": 0.5, "K": 1.0, "x0": 1.0})],
                  {"ref.r": "ctrl.r", "plant.x": "ctrl.x", "ctrl.u": "plant.u"})


@pytest.fixture(scope="module")
def tracking_reference(lag_fmu):
    """The coupled solution to ~1e-8: first-order extrapolation at a 1e-4 s step."""
    return Master(tracking_system(lag_fmu), 1e-4, "jacobi", extrapolation=1).run(4.0)


@pytest.mark.parametrize("extrapolation", [0, 1])
def test_variable_step_follows_the_transients_within_tolerance(lag_fmu, tracking_reference,
                                                               extrapolation):
    ctrl = StepControl(rtol=1e-3, atol=1e-3, max_step=0.2)
    master = Master(tracking_system(lag_fmu), 1e-3, "jacobi", extrapolation=extrapolation,
                    step_control=ctrl)
    r = master.run(4.0)
    step_at = lambda t: r.steps[np.searchsorted(r.time, t) - 1]  # noqa: E731
    assert step_at(0.01) < step_at(1.5) / 20           # short in the fast start, grows at rest
    assert step_at(2.0) < step_at(1.5) / 20            # shrinks for the reference move
    assert step_at(3.9) > step_at(2.0) * 20            # and grows again
    assert r.rejected                                   # it had to retry some
    assert r.forced_steps == 0
    assert r.time[-1] == 4.0 and len(r.steps) == len(r) - 1
    np.testing.assert_array_equal(r.time[1:], r.time[:-1] + r.steps)   # t_{k+1} = t_k + h_k
    fine = tracking_reference
    error = np.abs(r["plant.x"] - np.interp(r.time, fine.time, fine["plant.x"]))
    assert error.max() < ctrl.atol + ctrl.rtol * np.abs(fine["plant.x"]).max()


@pytest.mark.parametrize("method", ["jacobi", "gauss-seidel"])
def test_rolled_back_steps_leave_no_trace(lag_fmu, method):
    ctrl = StepControl(rtol=1e-4, atol=1e-4, max_step=0.2)
    varied = Master(tracking_system(lag_fmu), 0.01, method, extrapolation=1,
                    step_control=ctrl).run(3.0)
    assert len(varied.rejected) >= 3
    replay = Master(tracking_system(lag_fmu), 0.01, method, extrapolation=1).run(
        3.0, steps=varied.steps)
    assert replay.rejected == []
    np.testing.assert_array_equal(replay.data, varied.data)   # bit for bit


def test_variable_step_retries_a_step_a_component_cannot_take():
    class Fragile(Integrator):
        """Refuses steps longer than 0.05 s (as an FMU returns fmi2Discard)."""

        def do_step(self, t, h):
            if h > 0.05 + 1e-15:
                raise Exception(f"step {h} s too long")  # noqa: TRY002
            super().do_step(t, h)

    s = System([BlockComponent("plant", Fragile(x0=1.0)), BlockComponent("ctrl", Gain(k=1.0))],
               {"plant.x": "ctrl.u", "ctrl.y": "plant.u"})
    r = Master(s, 0.2, step_control=StepControl(rtol=0.5, atol=0.5)).run(1.0)
    assert r.steps.max() <= 0.05 + 1e-15
    assert any(e == math.inf for _, _, e in r.rejected)
    x = 1.0
    for h in r.steps:                               # still the exact discrete solution
        x *= 1 - h
    assert r["plant.x"][-1] == pytest.approx(x, rel=1e-12)


def test_variable_step_needs_state_rollback(lag_fmu, tmp_path):
    stateless = tmp_path / "stateless.fmu"
    with zipfile.ZipFile(lag_fmu) as z, zipfile.ZipFile(stateless, "w") as out:
        for n in z.namelist():
            data = z.read(n)
            if n == "modelDescription.xml":
                data = data.replace(b'canGetAndSetFMUstate="true"', b'canGetAndSetFMUstate="false"')
            out.writestr(n, data)
    s = lag_loop(stateless)
    with pytest.raises(ValueError, match="'plant' .*cannot be rolled back"):
        Master(s, 0.01, step_control=StepControl()).run(1.0)
    assert len(Master(s, 0.01).run(0.1)) == 11      # a fixed step needs no state
    with pytest.raises(ValueError, match="rtol and atol"):
        StepControl(rtol=0, atol=0)


# ---------------------------------------------------------------------------------
# real time and progress
# ---------------------------------------------------------------------------------
def test_realtime_run_is_paced_to_the_wall_clock():
    """Pacing happens: the run takes at least the simulated time (no upper bound on wall
    time: a loaded machine may be slower, which the stats report, not the test)."""
    t = time.perf_counter()
    r = Master(feedback_loop(), 0.01).run(0.3, realtime=True)   # may overrun: logged only
    assert time.perf_counter() - t >= 0.3
    rt = r.realtime
    assert rt.steps == 30 and rt.wall_time >= 0.3 - 1e-9
    assert 0 <= rt.overruns <= rt.steps
    np.testing.assert_array_equal(r.data, Master(feedback_loop(), 0.01).run(0.3).data)
    t = time.perf_counter()
    Master(feedback_loop(), 0.01).run(0.3, realtime=True, speed=3.0)
    assert time.perf_counter() - t >= 0.1


def _overrun_messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "fmu.cosim.master" and r.levelno == logging.WARNING]


def test_realtime_overruns_are_reported(caplog):
    s = System([BlockComponent("plant", Integrator(x0=1.0)),
                BlockComponent("slow", Sleeper(sleep=0.05, t_from=0.1, t_to=0.11))],
               {"plant.x": "slow.u", "slow.y": "plant.u"})
    with caplog.at_level(logging.WARNING, logger="fmu.cosim.master"):
        rt = Master(s, 0.01).run(0.3, realtime=True).realtime
    seen = _overrun_messages(caplog)
    # one at the first overrun, one summary at the end (a loaded machine may overrun
    # before t = 0.1: the first one is not pinned to it)
    assert len(seen) == 2
    assert seen[0].startswith("real-time overrun at t = ")
    assert "ms late" in seen[0]
    assert rt.overruns >= 1
    assert rt.worst_lateness >= 0.04            # the 0.05 s sleep in a 0.01 s step
    assert 0 < rt.lateness_mean <= rt.worst_lateness
    assert rt.min_slack == pytest.approx(-rt.worst_lateness)
    assert f"{rt.overruns} of 30 steps late" in seen[1]
    assert "overruns" in str(rt) and "late by" in str(rt)
    assert Master(feedback_loop(), 0.01).run(0.1).realtime is None


def test_a_run_slower_than_real_time_reports_its_lateness_not_jitter(caplog):
    """Every step sleeps twice its simulated length: all 20 steps are late, by more and
    more (the run falls behind), and the report says so instead of a 'jitter'."""
    s = System([BlockComponent("plant", Integrator(x0=1.0)),
                BlockComponent("slow", Sleeper(sleep=0.02))],
               {"plant.x": "slow.u", "slow.y": "plant.u"})
    with caplog.at_level(logging.WARNING, logger="fmu.cosim.master"):
        rt = Master(s, 0.01).run(0.2, realtime=True).realtime
    assert rt.steps == rt.overruns == 20 and rt.overrun_fraction == 1.0
    # step k (1..20) ends after at least 0.02 k s of wall time, due at 0.01 k s
    assert rt.worst_lateness >= 0.2 - 1e-3
    assert rt.lateness_mean >= 0.105 - 1e-3
    assert (rt.jitter_mean, rt.jitter_max) == (0.0, 0.0)   # no step was on time
    text = str(rt)
    assert "20 overruns (100.0 % of the steps): results late by" in text
    assert "jitter" not in text
    summary = _overrun_messages(caplog)[-1]
    assert "20 of 20 steps late (100.0 %)" in summary and "ms on average" in summary


def test_progress_callback_sees_every_communication_point_up_to_the_stop_time(capsys):
    """With no wall-clock spacing the callback is told every communication point, in
    order, ending at the stop time, also for a variable step; the master prints nothing
    itself (it drew a bar on stderr before)."""
    seen = []
    r = Master(feedback_loop(), 0.01).run(1.0, progress=lambda t, stop: seen.append((t, stop)),
                                          progress_interval=0.0)
    assert [t for t, _ in seen] == list(r.time) and len(seen) == 101
    assert {stop for _, stop in seen} == {1.0} and seen[-1][0] == pytest.approx(1.0, abs=1e-12)
    seen.clear()
    r = Master(oscillator(0.05), 0.05, step_control=StepControl(rtol=1e-4, atol=1e-6)).run(
        2.0, progress=lambda t, stop: seen.append(t), progress_interval=0.0)
    assert seen == list(r.time) and np.all(np.diff(seen) > 0) and seen[-1] == pytest.approx(2.0)
    seen.clear()
    # spaced by wall clock: the first and the last point at least, increasing
    Master(feedback_loop(), 0.01).run(1.0, progress=lambda t, stop: seen.append(t))
    assert seen[0] == 0.0 and seen[-1] == pytest.approx(1.0) and np.all(np.diff(seen) > 0)
    assert capsys.readouterr() == ("", "")
    with pytest.raises(TypeError, match="progress must be a callable"):
        Master(feedback_loop(), 0.01).run(1.0, progress=True)


def test_a_failing_progress_callback_is_named_not_a_component():
    def broken(t, stop):
        if t > 0.5:
            raise RuntimeError("display gone")
    with pytest.raises(CosimError, match=r"the progress callback failed at t = 0\.51 s: "
                                         "display gone"):
        Master(feedback_loop(), 0.01).run(1.0, progress=broken, progress_interval=0.0)


def test_record_every_keeps_the_last_point():
    full = Master(feedback_loop(), 0.01).run(1.0)
    thin = Master(feedback_loop(), 0.01).run(1.0, record_every=30)
    np.testing.assert_array_equal(thin.data, full.data[[0, 30, 60, 90, 100]])
