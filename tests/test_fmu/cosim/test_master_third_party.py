"""The master with FMUs written elsewhere (issue 13, items 21-22: the Modelica Reference
FMUs, FMI 2.0 co-simulation).

The Reference FMUs are not available offline; tests/support/c/stair.c reproduces the two
traits that broke the master: a String input that an output depends on (item 21) and a
request to terminate, fmi2Discard with fmi2Terminated set, as the Reference FMU Stair
does (item 22).
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

from support.blocks import Gain


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
