"""The master's compiled fixed-step loop (fmu.cosim.compiled_loop, native/cosim_loop.c)
against its Python loop, the reference: the same rows bit for bit, and the same outcome
-- exception, message, partial rows, results file, termination -- where something
unusual happens, on systems of C FMUs (Gauss–Seidel and Jacobi, a feedthrough chain,
Integer and Boolean signals, a request to terminate)."""
from __future__ import annotations

import numpy as np
import pytest

from fmu.cosim.errors import CosimError, CosimInterrupted
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.master import Master
from fmu.cosim.system import System


def both(make_system, step, method="gauss-seidel", **run):
    """The run of a fresh system by the Python loop and by the compiled loop: (result or
    exception) of each."""
    outcomes = []
    for compiled in (False, True):
        try:
            outcomes.append(Master(make_system(), step, method, compiled=compiled).run(**run))
        except (CosimError, CosimInterrupted) as e:
            outcomes.append(e)
    return outcomes


def same_rows(a, b) -> None:
    assert a.data.dtype == b.data.dtype
    assert a.data.tobytes() == b.data.tobytes()


@pytest.fixture(scope="module")
def relay_fmu(tmp_path_factory):
    """support/c/relay.c: a Real, an Integer and a Boolean input, each its own output."""
    from support.c_fmus import build_relay_fmu
    return build_relay_fmu(tmp_path_factory.mktemp("relay_fmu"))


def mixed_system(lag, stair, relay, stop_at=None):
    """A loop through a feedthrough chain (lag1.x -> stair.y -> relay's Real -> lag1.u,
    and on through lag1.dx to lag2.u), an Integer output into a Real input, Real outputs
    into an Integer and a Boolean input (rounded half to even), Integer and Boolean
    outputs."""
    stair_params = {} if stop_at is None else {"stop_at": stop_at}
    comps = [FMUComponent("lag1", lag, {"T": 0.2, "K": 0.5, "x0": 1.0}),
             FMUComponent("stair", stair, stair_params),
             FMUComponent("relay", relay),
             FMUComponent("lag2", lag, {"T": 0.1, "K": 20.0})]
    return System(comps,
                  [("lag1.x", "stair.u"), ("stair.y", "relay.r"), ("relay.r_out", "lag1.u"),
                   ("lag1.dx", "lag2.u"), ("lag2.x", "relay.i"), ("lag1.dx", "relay.b")])


@pytest.mark.parametrize("method, stop_at", [("gauss-seidel", None), ("jacobi", None),
                                             ("gauss-seidel", 1.5), ("jacobi", 1.5),
                                             ("gauss-seidel", 1.234)])
def test_the_compiled_loop_gives_the_python_loops_rows_bit_for_bit(
        lag_fmu, stair_fmu, relay_fmu, tmp_path, method, stop_at):
    """stop_at 1.5: Stair asks to terminate having reached the end of a step (the others
    finish it, the row at 1.5 s is kept); 1.234: within a step (the run ends at 1.23 s)."""
    def make():
        return mixed_system(lag_fmu, stair_fmu, relay_fmu, stop_at)

    python, compiled = both(make, 0.01, method, stop_time=2.0, record_every=3,
                            csv=tmp_path / f"{method}.csv")
    python_csv = (tmp_path / f"{method}.csv").read_text()
    same_rows(python, compiled)
    assert (tmp_path / f"{method}.csv").read_text() == python_csv
    assert python.compiled_steps == 0
    assert compiled.compiled_steps > 0 and len(compiled.steps) == len(python.steps)
    if stop_at is None:
        assert python.termination is None and compiled.termination is None
        assert compiled.compiled_steps == 200 and compiled.time[-1] == 2.0
        assert len(set(compiled["relay.i_out"])) > 3            # rounded, varied
        assert set(compiled["relay.b_out"]) > {0.0, 1.0}        # as set: 2 is 2
    else:
        assert compiled.termination == python.termination
        end = 1.5 if stop_at == 1.5 else 1.23
        assert compiled.time[-1] == pytest.approx(end, abs=1e-12)


def lag_pair(lag, kp):
    """Two lags in a loop, u2 = x1 and u1 = kp x2 through the lags' gains (K = kp):
    growing for kp > 1; |u| passes the declared 100 after a few steps."""
    return System([FMUComponent("a", lag, {"T": 0.1, "K": kp, "x0": 1.0}),
                   FMUComponent("b", lag, {"T": 0.1, "K": kp})],
                  [("a.x", "b.u"), ("b.x", "a.u")])


def same_failure(python, compiled, compiled_steps=None) -> None:
    assert isinstance(python, CosimError) and type(compiled) is type(python)
    assert str(compiled) == str(python)
    assert (compiled.component, compiled.variable, compiled.time) == \
        (python.component, python.variable, python.time)
    same_rows(python.result, compiled.result)
    if compiled_steps is None:
        assert compiled.result.compiled_steps > 0
    else:
        assert compiled.result.compiled_steps == compiled_steps


@pytest.mark.parametrize("method", ["gauss-seidel", "jacobi"])
def test_an_input_out_of_its_range_stops_both_loops_alike(lag_fmu, method):
    python, compiled = both(lambda: lag_pair(lag_fmu, 10.0), 0.01, method, stop_time=1.0)
    same_failure(python, compiled)
    assert "outside its declared range [-100, 100]" in str(compiled)
    assert compiled.time > 0.05   # a few steps in: the compiled loop ran before


def test_a_non_finite_output_stops_both_loops_alike(lag_fmu, stair_fmu):
    """b's dx = (K u - x) / T overflows when Stair's counter, its input u, reaches 18
    (K u > 1.8e308) while its state stays in range (T = 1e300): read after u is set."""
    def make():
        return System([FMUComponent("stair", stair_fmu),
                       FMUComponent("b", lag_fmu, {"K": 1e307, "T": 1e300})],
                      [("stair.counter", "b.u")])

    python, compiled = both(make, 0.5, stop_time=20.0)
    same_failure(python, compiled)
    assert "output 'dx' = inf is not finite" in str(compiled) and compiled.time == 18.0


def test_an_output_out_of_its_range_stops_both_loops_alike(lag_fmu):
    def make():
        return System([FMUComponent("plant", lag_fmu, {"T": 0.1, "K": 1e5, "u": 50.0})])

    same_failure(*both(make, 0.01, stop_time=1.0))


def test_an_interruption_between_chunks_keeps_the_rows_so_far(lag_fmu):
    """Ctrl-C (here from the progress callback, called at every point with interval 0)
    ends both loops at the same point with the same rows."""
    def interrupt(t, stop):
        if t >= 0.25:
            raise KeyboardInterrupt

    python, compiled = both(lambda: lag_pair(lag_fmu, 0.5), 0.01, stop_time=1.0,
                            progress=interrupt, progress_interval=0.0)
    assert isinstance(compiled, CosimInterrupted) and str(compiled) == str(python)
    same_rows(python.result, compiled.result)
    assert compiled.result.compiled_steps == 25


def test_progress_is_reported_between_chunks_and_at_the_end(lag_fmu):
    seen = []
    r = Master(lag_pair(lag_fmu, 0.5), 0.001).run(2.0, progress=lambda t, s: seen.append(t),
                                                  progress_interval=0.0005)
    assert r.compiled_steps == 2000
    assert seen[0] == 0.0 and seen[-1] == 2.0 and seen == sorted(seen) and len(seen) > 2


def test_a_python_fmu_runs_in_the_compiled_loop_as_in_the_python_loop(arm_fmu, lag_fmu):
    """The compiled loop only calls fmi2 functions: a pythonfmu FMU (the arm, its
    Python inside) runs in it as in the Python loop, feeding a C FMU."""
    def make():
        return System([FMUComponent("arm", arm_fmu, {"tau1": 0.5, "tau2": -0.2}),
                       FMUComponent("lag", lag_fmu, {"T": 0.05})], [("arm.theta1", "lag.u")])

    python, compiled = both(make, 0.01, method="jacobi", stop_time=0.05)
    same_rows(python, compiled)
    assert compiled.compiled_steps == 5 and compiled["lag.x"][-1] != 0.0


def test_what_the_compiled_loop_cannot_take_runs_in_the_python_loop(lag_fmu):
    """A Python block, extrapolation, a step timeout, variable steps, a subclass that
    steps its own way: the Python loop, said by why_not_compiled."""
    from fmu.cosim.compiled_loop import why_not_compiled
    from fmu.cosim.components import BlockComponent
    from fmu.cosim.master import StepControl
    from fmu.cosim.plan import plan_run
    from support.blocks import Gain

    class Logged(FMUComponent):
        def do_step(self, t, h):
            super().do_step(t, h)

    def why(system, step_control=None, extrapolation=0, **run):
        master = Master(system, 0.01, extrapolation=extrapolation, step_control=step_control)
        return why_not_compiled(master, plan_run(0.01, step_control is not None, 0.1, **run))

    fmus = lag_pair(lag_fmu, 0.5)
    assert why(fmus) is None
    assert why(System([FMUComponent("a", lag_fmu), BlockComponent("g", Gain(k=1.0))],
                      [("a.x", "g.u")])) == "component 'g' is no FMU"
    assert why(fmus, extrapolation=1) == "input extrapolation"
    assert why(fmus, step_timeout=1.0) == "a step timeout"
    assert why(fmus, step_control=StepControl()) == "variable steps"
    assert why(System([Logged("a", lag_fmu)])) == "component 'a' overrides do_step"
    r = Master(System([Logged("a", lag_fmu, {"u": 1.0})]), 0.01).run(0.1)
    assert r.compiled_steps == 0 and len(r) == 11


@pytest.fixture(scope="module")
def integrator_block_fmu(tmp_path_factory):
    """support.blocks.Integrator as a Python FMU: a step at or after fail_time raises
    StepError, which the slave logs as an error and answers with fmi2Discard."""
    from fmu.fmi.build import build_fmu
    from support.blocks import Integrator
    return build_fmu(Integrator, tmp_path_factory.mktemp("integrator"))


def test_a_step_discarded_with_an_error_stops_both_loops_alike(integrator_block_fmu, lag_fmu):
    """fmi2Discard from fmi2DoStep at step 5, with the FMU's error message logged: a
    failure (not a request to terminate), the same message and log, the rows before."""
    def make():
        return System([FMUComponent("lag", lag_fmu, {"u": 1.0}),
                       FMUComponent("integ", integrator_block_fmu, {"fail_time": 0.05})],
                      [("lag.x", "integ.u")])

    python, compiled = both(make, 0.01, stop_time=0.2)
    same_failure(python, compiled)
    assert "fmi2DoStep failed with status 2 (discard)" in str(compiled)
    assert "integrator diverged at t = 0.05 s" in str(compiled) and compiled.time == 0.05
    assert compiled.log == python.log
