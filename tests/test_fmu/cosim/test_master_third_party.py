"""The master with FMUs written elsewhere (issue 13, items 21-22: the Modelica Reference
FMUs, FMI 2.0 co-simulation).

The Reference FMUs are not part of this repository; tests/support/c/stair.c, our own,
reproduces the two traits that broke the master: a String input that an output depends
on (item 21) and a request to terminate, fmi2Discard with fmi2Terminated set, as the
Reference FMU Stair does (item 22); stair3.c is its FMI 3.0 twin (terminateSimulation,
saved states).
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from flexcosim.cli import main
from fmu.cosim.components import BlockComponent
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.master import Master
from fmu.cosim.system import System

from support.blocks import Gain, Integrator


def stair_system(fmu, **params):
    """Stair's y = u + len(label) fed to a gain g.y = -2 g.u; Stair's u unconnected (0)."""
    return System([FMUComponent("stair", fmu, parameters=params), BlockComponent("g", Gain(k=2.0))],
                  {"stair.y": "g.u"})


# ---------------------------------------------------------------------------------
# item 21: String variables
# ---------------------------------------------------------------------------------
def test_a_string_input_in_the_dependencies_is_dropped_not_a_crash(stair_fmu):
    c = FMUComponent("stair", stair_fmu, parameters={"label": "abcd"})
    assert c.inputs == ("u",) and c.outputs == ("counter", "y")
    assert c.feedthrough == {"counter": (), "y": ("u",)}   # 'label' is no input here
    r = Master(stair_system(stair_fmu, label="abcd"), 0.25).run(1.0)
    np.testing.assert_array_equal(r["stair.y"], 4.0)        # the String was set: len 4
    np.testing.assert_array_equal(r["g.y"], -8.0)
    np.testing.assert_array_equal(r["stair.counter"], [0, 0, 0, 0, 1])


def test_connecting_a_string_variable_is_refused_with_a_reason(stair_fmu):
    c = FMUComponent("stair", stair_fmu)
    with pytest.raises(ValueError, match=r"'stair\.label' is a String input of 'stair': String "
                                         r"variables are not connectable"):
        System([c, BlockComponent("g", Gain())], {"g.y": "stair.label"})


# ---------------------------------------------------------------------------------
# item 22: an FMU asking to terminate (fmi2Discard with fmi2Terminated)
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("method, order", [("gauss-seidel", None), ("gauss-seidel", ["g", "stair"]),
                                           ("jacobi", None)])
@pytest.mark.parametrize("record_every", [1, 3])
def test_an_fmu_asking_to_terminate_ends_the_run_normally(stair_fmu, tmp_path, method, order,
                                                          record_every):
    csv = tmp_path / "r.csv"
    # the step 0.4 -> 0.6 crosses stop_at = 0.5: Stair returns fmi2Discard, Terminated set
    r = Master(stair_system(stair_fmu, stop_at=0.5), 0.2, method, order=order).run(
        2.0, csv=csv, record_every=record_every)
    expected = [0.0, 0.2, 0.4] if record_every == 1 else [0.0, 0.4]   # 0.4 recorded anyway
    np.testing.assert_array_equal(r.time, expected)
    np.testing.assert_array_equal(r["stair.y"], 2.0)       # u = 0, len("ab") = 2
    np.testing.assert_array_equal(r["g.y"], -4.0)          # consistent with it, also under
    assert list(r.steps) == [0.2, 0.2]                     # Gauss-Seidel with g first
    t = r.termination
    assert (t.component, t.time, t.reached) == ("stair", 0.4, 0.5)
    assert str(t) == ("component 'stair' asked to terminate the simulation in the step from "
                      "t = 0.4 s (fmi2DoStep returned fmi2Discard with fmi2Terminated set: the "
                      "FMU asked to terminate the simulation; it reached t = 0.5 s): the run "
                      "ended at t = 0.4 s, results kept")
    assert "terminated by 'stair'" in repr(r)
    lines = csv.read_text().splitlines()
    assert len(lines) == 1 + len(expected) and lines[-1].startswith("0.40000000000000002,")


def stair_into_integrator(fmu, **params):
    """Stair's y (= len("ab") = 2) integrated by a block: w.x = 2 t where w stepped to t."""
    return System([FMUComponent("stair", fmu, parameters=params),
                   BlockComponent("w", Integrator())], {"stair.y": "w.u"})


@pytest.mark.parametrize("method, order", [("gauss-seidel", None), ("gauss-seidel", ["w", "stair"]),
                                           ("jacobi", None)])
def test_the_step_that_reaches_the_terminating_event_is_recorded(stair_fmu, tmp_path, method,
                                                                  order):
    """Issue 25, defect 2: the Reference FMU Stair asks to stop in the step that reaches
    t = 9 s, at a valid state there (fmi2LastSuccessfulTime = 9 s); fmpy records that row.
    The run now ends at 9 s too, with the other components stepped to 9 s, in every order
    (before: the results ended at 8.8 s while the message said it reached 9 s)."""
    csv = tmp_path / "r.csv"
    r = Master(stair_into_integrator(stair_fmu, stop_at=9.0), 0.2, method, order=order).run(
        10.0, csv=csv)
    assert len(r) == 46 and r.time[-1] == pytest.approx(9.0, abs=1e-12)
    assert r["stair.counter"][-1] == 9                      # the state at the event
    np.testing.assert_allclose(r["w.x"], 2.0 * r.time, atol=1e-12)   # w took the last step
    t = r.termination
    assert t.component == "stair" and t.time == pytest.approx(9.0) and t.reached == 9.0
    assert str(t).endswith("the run ended at t = 9 s, results kept")
    assert "in the step from t = 8.8 s" in str(t)
    assert len(csv.read_text().splitlines()) == 1 + 46       # the CSV has the row too


def test_the_recorded_end_equals_fmpys(stair_fmu):
    """The same FMU alone under fmpy's simulate_fmu: the same times, the same counter."""
    fmpy = pytest.importorskip("fmpy")
    ref = fmpy.simulate_fmu(str(stair_fmu), stop_time=10.0, output_interval=0.2,
                            start_values={"stop_at": 9.0}, output=["counter"])
    r = Master(System([FMUComponent("stair", stair_fmu, parameters={"stop_at": 9.0})]),
               0.2).run(10.0)
    np.testing.assert_allclose(r.time, ref["time"], atol=1e-12)
    np.testing.assert_array_equal(r["stair.counter"], ref["counter"])


def test_a_run_that_reaches_its_stop_time_has_no_termination(stair_fmu):
    assert Master(stair_system(stair_fmu), 0.2).run(1.0).termination is None


def test_the_command_line_reports_the_termination_and_succeeds(stair_fmu, tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "components": [{"name": "stair", "fmu": str(stair_fmu), "parameters": {"stop_at": 0.5}}],
        "experiment": {"stop_time": 2.0, "step": 0.2}}))
    assert main(["cosim", str(path)]) == 0
    out = capsys.readouterr().out
    assert "3 points, t = 0 .. 0.4 s" in out
    assert "component 'stair' asked to terminate the simulation in the step from t = 0.4 s" in out


def test_a_replayed_run_ends_at_the_termination_with_the_steps_taken(stair_fmu):
    r = Master(stair_system(stair_fmu, stop_at=0.5), 0.2).run(1.0, steps=[0.1, 0.3, 0.2, 0.4])
    np.testing.assert_allclose(r.time, [0.0, 0.1, 0.4])
    assert list(r.steps) == [0.1, 0.3]
    assert r.termination.component == "stair" and r.termination.time == pytest.approx(0.4)


# ---------------------------------------------------------------------------------
# issue 25, defect 3: FMUs without a default experiment (the Reference FMUs Feedthrough
# and Resource give none) run as fmpy.simulate_fmu runs them
# ---------------------------------------------------------------------------------
def _without_default_experiment(fmu, out):
    """A copy of ``fmu`` whose modelDescription.xml has no DefaultExperiment."""
    import re
    import zipfile
    with zipfile.ZipFile(fmu) as z:
        members = {n: z.read(n) for n in z.namelist()}
    xml = members["modelDescription.xml"].decode()
    members["modelDescription.xml"] = re.sub(r"\s*<DefaultExperiment[^>]*/>", "", xml).encode()
    assert b"DefaultExperiment" not in members["modelDescription.xml"]
    with zipfile.ZipFile(out, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    return out


def test_an_fmu_without_experiment_runs_with_fmpys_stop_and_step(lag_fmu, tmp_path, capsys):
    """Before: "has no default for --stop and --step", exit 2.  Now 1 s in 500 steps,
    the grid fmpy.simulate_fmu uses for it, and a line saying what was chosen."""
    fmpy = pytest.importorskip("fmpy")
    bare = _without_default_experiment(lag_fmu, tmp_path / "Bare.fmu")
    csv = tmp_path / "r.csv"
    assert main(["cosim", str(bare), "--out", str(csv)]) == 0
    captured = capsys.readouterr()
    assert "501 points, t = 0 .. 1 s" in captured.out
    assert ("neither given nor in the system's default experiment, as fmpy.simulate_fmu "
            "chooses them: stop time 1 s (start + 1 s) and step 0.002 s (500 steps)"
            in captured.err)
    ref = fmpy.simulate_fmu(str(bare))
    ours = np.genfromtxt(csv, delimiter=",", names=True)
    np.testing.assert_allclose(ours["time"], ref["time"], atol=1e-12)
    # a stop time given alone: the step divides it as fmpy's does
    assert main(["cosim", str(bare), "--stop", "10"]) == 0
    assert "501 points, t = 0 .. 10 s" in capsys.readouterr().out


# ---------------------------------------------------------------------------------
# FMI 3.0 co-simulation FMUs (issue 25, item 2: the master runs them, through fmpy's
# FMU3Slave): Stair as an FMI 3.0 FMU (support/c/stair3.c, our own)
# ---------------------------------------------------------------------------------
def test_an_fmi3_fmu_ending_its_step_with_terminate_is_recorded_as_in_fmpy(stair3_fmu):
    """The FMI 3.0 Stair asks to end the simulation in the step that reaches t = 9 s
    (terminateSimulation with a completed step): the run ends there with that row, as
    fmpy records it, counter 10."""
    fmpy = pytest.importorskip("fmpy")
    from fmu.cosim.simulate import cosimulate
    stair = FMUComponent("Stair", stair3_fmu, parameters={"stop_at": 9.0})
    ours = cosimulate(System([stair]), stop_time=10.0, step_size=0.2)
    ref = fmpy.simulate_fmu(str(stair3_fmu), start_values={"stop_at": 9.0})
    np.testing.assert_allclose(ours.time, ref["time"], atol=1e-12)
    for n in ("counter", "y"):
        np.testing.assert_array_equal(ours[f"Stair.{n}"], np.asarray(ref[n], dtype=float))
    assert ours.termination is not None and ours.time[-1] == 9.0 == ref["time"][-1]
    assert "fmi3DoStep set terminateSimulation" in str(ours.termination)
    assert ours["Stair.counter"][-1] == 10


@pytest.mark.parametrize("experiment, stop, step", [
    ('<DefaultExperiment startTime="0" stopTime="2"/>', 2.0, 0.004),   # no step size
    ("", 1.0, 0.002)])                                                 # no experiment
def test_an_fmi3_fmu_without_a_step_runs_with_fmpys_stop_and_step(tmp_path, capsys,
                                                                   experiment, stop, step):
    """Stop and step where the FMU gives none: fmpy's, stop/500 (the Reference FMU
    Feedthrough gives a stop time only, Resource nothing)."""
    fmpy = pytest.importorskip("fmpy")
    from support.c_fmus import build_stair3_fmu, stair3_description
    fmu = build_stair3_fmu(tmp_path, stair3_description(experiment))
    csv = tmp_path / "r.csv"
    assert main(["cosim", str(fmu), "-o", str(csv)]) == 0
    assert f"step {step:g} s (500 steps)" in capsys.readouterr().err
    ours = np.genfromtxt(csv, delimiter=",", names=True, deletechars="")
    ref = fmpy.simulate_fmu(str(fmu))
    np.testing.assert_allclose(ours["time"], ref["time"], atol=1e-12)
    assert ours["time"][-1] == pytest.approx(stop, abs=1e-12)
    np.testing.assert_array_equal(ours["Stair.counter"], np.asarray(ref["counter"], dtype=float))


def test_an_fmi3_fmus_state_is_saved_and_restored(stair3_fmu):
    """fmi3GetFMUState / fmi3SerializeFMUState and back: a run continued from a state
    saved at t = 3 s equals the run that went on from there."""
    c = FMUComponent("stair", stair3_fmu)
    c.initialize(0.0, 10.0)
    try:
        outputs = [c.outputs.index("counter")]
        counter = lambda: [c.get_output_values()[k] for k in outputs]     # noqa: E731
        for k in range(15):
            c.do_step(0.2 * k, 0.2)
        saved = c.get_state()
        assert isinstance(saved, bytes)
        straight = []
        for k in range(15, 25):
            c.do_step(0.2 * k, 0.2)
            straight.append(counter())
        c.set_state(saved)
        assert counter() == [3.0 + 1.0]          # counter 4 at t = 3 s (starts at 1)
        again = []
        for k in range(15, 25):
            c.do_step(0.2 * k, 0.2)
            again.append(counter())
        assert again == straight and straight[-1] == [6.0]
        snap = c.snapshot()
        c.do_step(5.0, 0.2)
        c.restore(snap)
        assert counter() == [6.0]
        with pytest.raises(Exception):           # a state of another size is refused
            c.set_state(saved[:-1])
        assert any("fmi3DeserializeFMUState: wrong size" in line for line in c.log)
    finally:
        c.terminate()
