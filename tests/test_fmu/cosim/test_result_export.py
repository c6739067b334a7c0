"""A co-simulation Result taken away (issue 26 item 3): the CSV written as the run goes
equals the one written after it; the component prefixes dropped on request, refused
where two components' signals would share a name; the plot has one axis per unit."""
from __future__ import annotations

import numpy as np
import pytest

from fmu.cosim.components import BlockComponent
from fmu.cosim.master import Master
from fmu.cosim.system import System

from support.blocks import DampedOscillator, Gain

STEP, STOP = 0.05, 1.0


def damped_loop() -> System:
    """A mass-spring-damper (m, m/s, m/s2 out; N in) under a position feedback gain,
    with a second gain reading the velocity (y = -u): two components with an output ``y``."""
    return System([BlockComponent("osc", DampedOscillator()),
                   BlockComponent("ctrl", Gain(k=20.0)),
                   BlockComponent("probe", Gain(k=1.0))],
                  {"osc.position": "ctrl.u", "ctrl.y": "osc.force", "osc.velocity": "probe.u"})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The loop's Result and the CSV the master wrote as it ran."""
    live = tmp_path_factory.mktemp("result_export") / "live.csv"
    return Master(damped_loop(), STEP).run(STOP, csv=live), live


def test_the_csv_written_after_the_run_is_the_one_written_as_it_went(run, tmp_path):
    result, live = run
    after = result.to_csv(tmp_path / "after.csv")
    assert after.read_bytes() == live.read_bytes()
    assert live.read_text().splitlines()[0] == ",".join(result.names)
    assert result.names[1:4] == ["osc.position", "osc.velocity", "osc.acceleration"]


def test_prefixes_dropped_where_unambiguous_refused_where_two_components_collide(run, tmp_path):
    result, _ = run
    with pytest.raises(ValueError, match=r"columns 'ctrl.y' and 'probe.y' would both be named "
                                         r"'y' without their prefixes"):
        result.to_csv(tmp_path / "clash.csv", columns=result.outputs, prefix=False)
    assert not (tmp_path / "clash.csv").exists()
    with pytest.raises(ValueError, match="'ctrl.u' and 'probe.u'"):
        result.to_structured(result.inputs, prefix=False)
    chosen = ["osc.position", "osc.acceleration", "ctrl.y", "osc.force"]
    path = result.to_csv(tmp_path / "short.csv", columns=chosen, prefix=False)
    assert path.read_text().splitlines()[0] == "time,position,acceleration,y,force"
    back = np.genfromtxt(path, delimiter=",", names=True)
    for column, name in zip(chosen, ["position", "acceleration", "y", "force"]):
        np.testing.assert_array_equal(back[name], result[column])
    # the loop closes: the force is the gain's output, recorded on both sides
    np.testing.assert_array_equal(back["force"], back["y"])
    arr = result.to_structured({"ctrl.y": "force_command", "probe.y": "speed"})
    assert arr.dtype.names == ("time", "force_command", "speed")
    np.testing.assert_array_equal(arr["speed"], -result["osc.velocity"])   # y = -k u, k = 1


def test_plot_of_the_outputs_has_one_axis_per_unit(run):
    result, _ = run
    fig = result.plot()
    assert [ax.get_ylabel() for ax in fig.axes] == [
        "osc.position [m]", "osc.velocity [m/s]", "osc.acceleration [m/s²]",
        "dimensionless [1]"]
    assert [line.get_label() for line in fig.axes[-1].get_lines()] == ["ctrl.y", "probe.y"]
    fig = result.plot(signals=["osc.acceleration", "osc.force"], prefix=False)
    assert [ax.get_ylabel() for ax in fig.axes] == ["acceleration [m/s²]", "force [N]"]
    with pytest.raises(ValueError, match="'ctrl.y' and 'probe.y'"):
        result.plot(prefix=False)


def test_the_csv_written_as_it_goes_takes_the_chosen_columns_of_to_csv(run, tmp_path):
    """``Master.run(csv_columns=..., csv_prefix=False)`` writes, as the run goes, the file
    ``Result.to_csv(columns=..., prefix=False)`` writes after it, byte for byte: the one
    rule of chosen columns (a name renamed, a name not renamed -- a list's or a
    mapping's ``None`` -- losing its component)."""
    result, _ = run
    for columns in (["osc.velocity", "ctrl.y", "osc.force"],
                    {"osc.velocity": None, "ctrl.y": "force_command", "probe.y": "speed"}):
        live = tmp_path / "live.csv"
        again = Master(damped_loop(), STEP).run(STOP, csv=live, csv_columns=columns,
                                                csv_prefix=False)
        after = again.to_csv(tmp_path / "after.csv", columns=columns, prefix=False)
        assert live.read_bytes() == after.read_bytes()
        np.testing.assert_array_equal(again.data, result.data)    # every column recorded
    assert live.read_text().splitlines()[0] == "time,velocity,force_command,speed"


def test_a_column_not_recorded_is_refused_before_the_run(run, tmp_path):
    """Refused with the closest names before any component starts and before the file
    is opened (an earlier file of that name is left as it was)."""
    live = tmp_path / "live.csv"
    live.write_text("earlier results\n")
    master = Master(damped_loop(), STEP)
    with pytest.raises(ValueError, match=r"csv_columns: no signal 'osc.positon'; did you mean "
                                         r"'osc.position'.*\? signals: time, osc.position"):
        master.run(STOP, csv=live, csv_columns=["osc.positon"])
    with pytest.raises(ValueError, match=r"csv_columns: columns 'ctrl.y' and 'probe.y' would "
                                         r"both be named 'y'"):
        master.run(STOP, csv=live, csv_columns=["ctrl.y", "probe.y"], csv_prefix=False)
    with pytest.raises(ValueError, match="without a results file"):
        master.run(STOP, csv_columns=["osc.position"])
    with pytest.raises(TypeError, match="csv_prefix = 'no'"):
        master.run(STOP, csv=live, csv_prefix="no")
    assert live.read_text() == "earlier results\n"
