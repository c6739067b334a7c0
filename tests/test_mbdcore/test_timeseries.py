"""The one result type, as a user takes it away (issue 26 item 3): units written as on
SI axes, columns chosen and renamed one way for CSV, numpy, fmpy and pandas, and a plot
with one axis per unit."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from mbdcore.timeseries import TimeSeries, axis_label, format_unit

#: unit strings as they come (FMI notation, and as people type them) -> as an axis shows them
UNITS = {
    "rad/s2": "rad/s²", "m/s2": "m/s²", "m/s^2": "m/s²", "rad/s": "rad/s", "rad": "rad",
    "N.m": "N·m", "N m": "N·m", "N*m": "N·m", "Nm": "N·m", "N.m.s/rad": "N·m·s/rad",
    "kg.m2": "kg·m²", "N m^2": "N·m²", "m**2": "m²", "kg/m3": "kg/m³", "s-1": "s⁻¹",
    "m^-1": "m⁻¹", "1/s": "1/s", "rad / s": "rad/s", "W/(m2.K)": "W/(m²·K)",
    "V.s/rad": "V·s/rad", "urad": "µrad", "um": "µm", "Ohm": "Ω", "uOhm": "µΩ", "deg": "°",
    "degC": "°C", "V": "V", "A": "A", "cases": "cases", "dB": "dB", "1": "1", "": "",
}


def test_units_are_written_as_on_si_axes():
    assert {unit: format_unit(unit) for unit in UNITS} == UNITS
    # what is written for people stays as it is (plot formats a formatted unit again)
    assert {shown: format_unit(shown) for shown in UNITS.values()} == {
        shown: shown for shown in UNITS.values()}
    assert axis_label("joint torque", "N.m") == "joint torque [N·m]"
    # dimensionless, declared or not, is [1]
    assert axis_label("deployment ratio", "") == axis_label("deployment ratio", "1") \
        == "deployment ratio [1]"


@pytest.fixture(scope="module")
def arm_like():
    """A series with the arm's kinds of units, some written two ways."""
    t = np.linspace(0.0, 1.0, 11)
    columns = {"time": t, "q1": np.sin(t), "q2": np.cos(t), "dq1": np.cos(t),
               "ddq1": -np.sin(t), "tau1": 2.0 * t, "tau2": -t, "ratio": t / 2.0,
               "count": t ** 2}
    units = {"q1": "rad", "q2": "rad", "dq1": "rad/s", "ddq1": "rad/s2", "tau1": "N.m",
             "tau2": "N m", "ratio": "1"}          # count: no unit given, dimensionless
    return TimeSeries.from_columns(columns, units)


def test_structured_array_round_trip_keeps_values_names_and_units(arm_like):
    ts = arm_like
    arr = ts.to_structured()
    assert arr.dtype.names == tuple(ts.names) and arr.dtype.names[0] == "time"
    assert all(arr.dtype[name] == np.float64 for name in arr.dtype.names)
    for name in ts.names:
        np.testing.assert_array_equal(arr[name], ts[name])
    arr["q1"][:] = 0.0                       # a copy: the series is unchanged
    assert ts["q1"][1] == np.sin(0.1)
    # chosen and renamed: time first, the order asked, the units follow the new names
    picked = ts.select({"tau2": "motor torque", "q1": "angle"})
    assert picked.names == ["time", "motor torque", "angle"]
    assert picked.units == {"time": "s", "motor torque": "N m", "angle": "rad"}
    back = TimeSeries(picked.to_structured(), picked.units)
    np.testing.assert_array_equal(back["motor torque"], ts["tau2"])
    assert back.unit("angle") == "rad"
    assert ts.to_structured(["ddq1"]).dtype.names == ("time", "ddq1")


def test_fmpy_reads_and_writes_our_results_as_its_own(arm_like, tmp_path):
    """fmpy's CSV reader takes our CSV, its writer our structured array, and its result
    check finds our array equal to what it read."""
    from fmpy.util import read_csv, validate_result, write_csv

    ts = arm_like
    ours = ts.to_structured()
    theirs = read_csv(ts.to_csv(tmp_path / "ours.csv"))
    assert theirs.dtype.names == ours.dtype.names
    for name in ours.dtype.names:
        np.testing.assert_array_equal(theirs[name], ours[name])
    write_csv(tmp_path / "by_fmpy.csv", ours, columns=["q1", "tau1"])
    again = np.genfromtxt(tmp_path / "by_fmpy.csv", delimiter=",", names=True)
    assert again.dtype.names == ("time", "q1", "tau1")
    np.testing.assert_array_equal(again["tau1"], ts["tau1"])
    assert validate_result(ours, theirs) == 0


def test_csv_with_chosen_and_renamed_columns_reads_back(arm_like, tmp_path):
    ts = arm_like
    path = ts.to_csv(tmp_path / "renamed.csv", columns={"q2": "theta2", "tau1": "torque1"})
    assert path.read_text().splitlines()[0] == "time,theta2,torque1"
    back = np.genfromtxt(path, delimiter=",", names=True, deletechars="")
    np.testing.assert_array_equal(back["time"], ts.time)
    np.testing.assert_array_equal(back["theta2"], ts["q2"])
    np.testing.assert_array_equal(back["torque1"], ts["tau1"])
    path = ts.to_csv(tmp_path / "chosen.csv", columns=["dq1", "time"])
    assert path.read_text().splitlines()[0] == "time,dq1"


@pytest.mark.parametrize("columns, error, match", [
    (["q1", "nope"], KeyError, "no signal 'nope'; signals: time, q1"),
    (["q1", "q1"], ValueError, "'q1' chosen twice"),
    ({"q1": "a", "q2": "a"}, ValueError, "columns 'q1' and 'q2' would both be named 'a'"),
    ({"q1": "q2", "q2": "x"}, ValueError, None),          # renames may swap names ...
    ({"q1": "q2", "q2": "q2b", "dq1": "q2"}, ValueError, "would both be named 'q2'"),
    ({"time": "t"}, ValueError, "keeps its name 'time'"),
    ({"q1": "time"}, ValueError, "'q1' cannot be named 'time'"),
    ({"q1": ""}, ValueError, "'q1' cannot be named ''"),
    ("q1", TypeError, "not the string 'q1'"),
    ([1], TypeError, "1 is not a column name"),
])
def test_bad_column_choices_are_refused_by_name(arm_like, columns, error, match, tmp_path):
    if match is None:                                     # ... as long as none collide
        assert arm_like.select(columns).names == ["time", "q2", "x"]
        return
    with pytest.raises(error, match=match):
        arm_like.to_csv(tmp_path / "refused.csv", columns=columns)
    assert not (tmp_path / "refused.csv").exists()


def test_pandas_is_optional_and_its_absence_says_how_to_get_it(arm_like, monkeypatch):
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "pandas", None)            # as where pandas is missing
        with pytest.raises(ImportError, match="pip install pandas"):
            arm_like.to_pandas()
    pandas = pytest.importorskip("pandas")
    frame = arm_like.to_pandas({"q1": "angle", "tau1": "torque"})
    assert isinstance(frame, pandas.DataFrame) and frame.index.name == "time"
    assert list(frame.columns) == ["angle", "torque"]
    np.testing.assert_array_equal(frame.index.to_numpy(), arm_like.time)
    np.testing.assert_array_equal(frame["torque"].to_numpy(), arm_like["tau1"])
    assert frame.attrs["units"] == {"time": "s", "angle": "rad", "torque": "N.m"}


def test_plot_draws_one_axis_per_unit_with_a_legend_per_signal(arm_like, tmp_path):
    fig = arm_like.plot(tmp_path / "units.png")
    assert (tmp_path / "units.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # rad, rad/s, rad/s2, N.m (both spellings), dimensionless ("1" and none)
    axes = fig.axes
    assert len(axes) == 5
    lines = [[line.get_label() for line in ax.get_lines()] for ax in axes]
    assert lines == [["q1", "q2"], ["dq1"], ["ddq1"], ["tau1", "tau2"], ["ratio", "count"]]
    legends = [[t.get_text() for t in ax.get_legend().get_texts()] for ax in axes]
    assert legends == lines
    assert [ax.get_ylabel() for ax in axes] == [
        "angle [rad]", "dq1 [rad/s]", "ddq1 [rad/s²]", "torque [N·m]", "dimensionless [1]"]
    for ax, names in zip(axes, lines):     # the lines are the signals, against time
        for line, name in zip(ax.get_lines(), names):
            np.testing.assert_array_equal(line.get_xdata(), arm_like.time)
            np.testing.assert_array_equal(line.get_ydata(), arm_like[name])
    assert axes[-1].get_xlabel() == "time [s]"


def test_plot_chooses_signals_and_limits_the_axes(arm_like):
    fig = arm_like.plot(signals={"tau1": "shoulder", "tau2": "elbow", "q1": "q1"},
                        max_axes=2)
    assert [ax.get_ylabel() for ax in fig.axes] == ["torque [N·m]", "q1 [rad]"]
    assert [line.get_label() for line in fig.axes[0].get_lines()] == ["shoulder", "elbow"]
    with pytest.raises(ValueError, match=r"5 units \(rad, rad/s, rad/s², N·m, 1\), more "
                                         r"than max_axes=4"):
        arm_like.plot(max_axes=4)
    with pytest.raises(ValueError, match="max_axes must be an integer >= 1"):
        arm_like.plot(max_axes=0)
    with pytest.raises(KeyError, match="nope"):
        arm_like.plot(signals=["nope"])


def test_plot_draws_into_a_subfigure_beside_other_panels(arm_like):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subfigures(1, 2)
    left.subplots()
    assert arm_like.plot(signals=["q1", "dq1"], figure=right) is right
    assert len(right.axes) == 2 and len(fig.axes) == 3
