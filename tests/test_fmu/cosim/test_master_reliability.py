"""Reliability of the master with a misbehaving FMU (issue 5, "Reliability").

The FMU is the first-order lag in C (tests/support/c/lag.c): T x' = K u - x, exact step
x <- a x + K (1 - a) u with a = exp(-h/T); input u declared in [-100, 100], output x
in [-1e6, 1e6].  Every failure must stop the run with an error naming the FMU, the
variable and the time, keep the results so far, and never hang.
"""
from __future__ import annotations

import math
import signal
from contextlib import contextmanager

import numpy as np
import pytest

from fmu.cosim.components import BlockComponent
from fmu.cosim.errors import CosimError
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.master import Master, StepControl
from fmu.cosim.system import System

from support.blocks import Gain, Integrator
from support.fmi import ERROR, Instance





@contextmanager
def deadline(seconds: float):
    """Fail instead of hanging."""
    def hang(signum, frame):
        raise TimeoutError(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def loop(fmu, kp=3.0, name="plant", **params):
    """u = -kp x around the lag (kp < 0: positive feedback, unstable)."""
    params = {"T": 0.2, "K": 2.0, "x0": 1.0, **params}
    return System([FMUComponent(name, fmu, params), BlockComponent("ctrl", Gain(k=kp))],
                  {f"{name}.x": "ctrl.u", "ctrl.y": f"{name}.u"})


def closed_form(n, h=0.01, T=0.2, K=2.0, kp=3.0, x0=1.0):
    a = math.exp(-h / T)
    return x0 * (a - K * (1 - a) * kp) ** np.arange(n)


# ---------------------------------------------------------------------------------
# the FMU itself (driven through fmpy, no master)
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 150.0])
def test_fmu_rejects_a_bad_input_naming_it_and_keeps_its_state(lag_fmu, tmp_path, bad):
    from fmpy import extract, read_model_description

    md = read_model_description(str(lag_fmu))
    inst = Instance(md, extract(str(lag_fmu), tmp_path / "x"), x0=1.0)
    try:
        fmu, vr = inst.fmu, inst.vr
        fmu.setReal([vr["u"]], [0.5])
        fmu.doStep(0.0, 0.1)
        before = fmu.getReal([vr["x"], vr["u"]])
        with pytest.raises(Exception, match="fmi2SetReal failed with status 3"):
            fmu.setReal([vr["u"]], [bad])
        level, message = inst.messages[-1]
        assert level == ERROR and "'u'" in message
        assert ("not finite" if not math.isfinite(bad) else "outside its range") in message
        assert fmu.getReal([vr["x"], vr["u"]]) == before          # unchanged
        fmu.doStep(0.1, 0.1)                                      # and alive
        a = math.exp(-0.1 / 0.1)
        assert fmu.getReal([vr["x"]])[0] == pytest.approx(a * before[0] + (1 - a) * 0.5, rel=1e-15)
    finally:
        inst.fmu.terminate()
        inst.fmu.freeInstance()


def test_fmu_reports_a_step_that_overflows_and_keeps_its_state(lag_fmu, tmp_path):
    from fmpy import extract, read_model_description

    md = read_model_description(str(lag_fmu))
    inst = Instance(md, extract(str(lag_fmu), tmp_path / "x"), K=1e308, x0=1.0)
    try:
        inst.fmu.setReal([inst.vr["u"]], [100.0])          # K u overflows
        with pytest.raises(Exception, match="fmi2DoStep failed with status 3"):
            inst.fmu.doStep(0.0, 0.01)
        assert "state 'x' diverged" in inst.messages[-1][1]
        assert inst.fmu.getReal([inst.vr["x"]]) == [1.0]
    finally:
        inst.fmu.terminate()
        inst.fmu.freeInstance()


def test_invalid_parameter_names_parameter_value_and_range(lag_fmu):
    with pytest.raises(CosimError) as info:
        Master(loop(lag_fmu, T=-1.0), 0.01).run(0.1)
    err = info.value
    assert err.component == "plant" and err.variable == "T" and err.time == 0.0
    assert "'T' = -1 is invalid: accepted range (0, inf) s" in str(err)


# ---------------------------------------------------------------------------------
# failures under the master: named, partial results kept, never a hang
# ---------------------------------------------------------------------------------
def test_out_of_range_input_stops_with_fmu_variable_time_and_partial_csv(lag_fmu, tmp_path):
    # positive feedback: u = 30 x grows by (a + 60 (1 - a)) = 3.9 per step; |u| > 100 at k = 1
    csv = tmp_path / "partial.csv"
    with deadline(10):
        with pytest.raises(CosimError) as info:
            Master(loop(lag_fmu, kp=-30.0), 0.01).run(10.0, csv=csv)
    err = info.value
    assert (err.component, err.variable) == ("plant", "u")
    x = closed_form(3, kp=-30.0)
    k_fail = int(np.argmax(np.abs(30 * x) > 100))
    assert err.time == pytest.approx(0.01 * k_fail)
    assert f"t = {0.01 * k_fail:g} s" in str(err) and "plant.u" in str(err)
    assert "outside its declared range [-100, 100]" in str(err)
    assert len(err.result) == k_fail and err.csv == csv
    rows = np.genfromtxt(csv, delimiter=",", names=True, deletechars="")
    np.testing.assert_array_equal(np.atleast_1d(rows["plant.x"]), err.result["plant.x"])


def test_out_of_range_output_is_reported(lag_fmu, tmp_path):
    # open loop u = 50, K = 1e5: x -> 5e6 (1 - exp(-t/T)) passes 1e6 between t = 0.02 and 0.03
    s = System([FMUComponent("plant", lag_fmu, {"T": 0.1, "K": 1e5, "u": 50.0})])
    with pytest.raises(CosimError) as info:
        Master(s, 0.01).run(1.0, csv=tmp_path / "r.csv")
    err = info.value
    assert (err.component, err.variable, err.time) == ("plant", "x", pytest.approx(0.03))
    assert "outside its declared range [-1e+06, 1e+06]" in str(err)
    np.testing.assert_allclose(err.result["plant.x"], 5e6 * (1 - np.exp(-np.arange(3) * 0.1)),
                               rtol=1e-12)
    assert len(np.genfromtxt(tmp_path / "r.csv", delimiter=",", skip_header=1)) == 3


def test_divergence_is_reported_not_hung(lag_fmu):
    # x_{k+1} = (1 + k h) x_k = 101 x_k: overflows to inf after ~154 steps
    s = System([BlockComponent("plant", Integrator(x0=1.0)), BlockComponent("ctrl", Gain(k=-1e3))],
               {"plant.x": "ctrl.u", "ctrl.y": "plant.u"})
    for control in (None, StepControl(min_step=0.01)):   # variable: retried down to min_step
        with deadline(10):
            with pytest.raises(CosimError) as info:
                Master(s, 0.1, step_control=control).run(1e6)
        err = info.value
        assert err.variable in ("x", "y", "u") and "not finite" in str(err)
        assert math.isfinite(err.time) and len(err.result) >= 1


def test_nan_from_a_python_block_never_reaches_the_fmu(lag_fmu):
    class Broken(Gain):
        def outputs(self):
            return {"y": math.nan if self.time >= 0.05 else -self.inputs["u"]}

    s = System([FMUComponent("plant", lag_fmu, {"x0": 1.0}), BlockComponent("ctrl", Broken())],
               {"plant.x": "ctrl.u", "ctrl.y": "plant.u"})
    with pytest.raises(CosimError) as info:
        Master(s, 0.01).run(1.0)
    assert (info.value.component, info.value.variable) == ("ctrl", "y")
    # the block refuses the step [0.04, 0.05] s that makes its output NaN (issue 22)
    assert info.value.time == pytest.approx(0.04)


# ---------------------------------------------------------------------------------
# determinism and instances
# ---------------------------------------------------------------------------------
def test_reruns_are_bit_identical(lag_fmu):
    control = StepControl(rtol=1e-4, atol=1e-6)
    master = Master(loop(lag_fmu), 0.01, extrapolation=1, step_control=control)
    first, second = master.run(1.0), master.run(1.0)
    third = Master(loop(lag_fmu), 0.01, extrapolation=1, step_control=control).run(1.0)
    np.testing.assert_array_equal(first.data, second.data)
    np.testing.assert_array_equal(first.data, third.data)
    np.testing.assert_array_equal(first.steps, third.steps)


def test_two_instances_in_one_process_are_independent(lag_fmu):
    s = System([FMUComponent("p1", lag_fmu, {"T": 0.2, "K": 2.0, "x0": 1.0}),
                BlockComponent("c1", Gain(k=3.0)),
                FMUComponent("p2", lag_fmu, {"T": 0.5, "K": 1.0, "x0": -2.0}),
                BlockComponent("c2", Gain(k=0.5))],
               {"p1.x": "c1.u", "c1.y": "p1.u", "p2.x": "c2.u", "c2.y": "p2.u"})
    r = Master(s, 0.01, "jacobi").run(1.0)
    np.testing.assert_allclose(r["p1.x"], closed_form(101), rtol=1e-12)
    np.testing.assert_allclose(r["p2.x"], closed_form(101, T=0.5, K=1.0, kp=0.5, x0=-2.0),
                               rtol=1e-12)


def test_reinstantiation_after_free_works(lag_fmu):
    comp = FMUComponent("plant", lag_fmu, {"x0": 3.0})
    for _ in range(3):
        comp.initialize(0.0)
        assert comp.get_outputs()["x"] == 3.0
        comp.set_inputs({"u": 1.0})
        comp.do_step(0.0, 0.1)
        comp.terminate()
        comp.terminate()                   # twice is harmless
    s = loop(lag_fmu)
    runs = [Master(s, 0.01).run(0.5).data for _ in range(3)]
    for data in runs[1:]:
        np.testing.assert_array_equal(data, runs[0])
    np.testing.assert_allclose(runs[0]["plant.x"], closed_form(51), rtol=1e-12)
