"""substeps = 0, "auto" (``OdeBlock._controlled_advance``; in C ``fs_advance_auto``):
n and 2n substeps from the same start, doubled until they agree.  Every try starts at
the same state, so the first stage of RK4, Gill and Treanor, f(x0), is evaluated once
and handed to every try: the same numbers as each try evaluating it, one right-hand side
less per doubling round."""
import numpy as np
import pytest

from mbdcore.dae.ode_block import ode_stepper
from mbdcore.models.manipulator import FlexibleManipulatorBlock

H = 1e-3                      # communication step [s]
TOLERANCES = {"rtol": 1e-11, "atol": 1e-14}   # tight: several doubling rounds at H
TORQUES = {"tau1": 1.5, "tau2": -0.8}         # [N m]


class CountedArm(FlexibleManipulatorBlock):
    """The arm block stepping through its compiled right-hand side called from Python
    (no C loop), every call counted."""

    calls = 0

    def derivatives(self):
        kernel, args = super().derivatives()

        def counted(x, *a):
            CountedArm.calls += 1
            return kernel(x, *a)
        return counted, args


def bent(block):
    """The block from a bent, moving state (its stepper restarted there)."""
    x = block.initial_state()
    n = block.model.n_dof
    x[2:n] = 0.002 * np.arange(1, n - 1)          # modal amplitudes [m]
    x[n:] = 0.5                                  # rates [rad/s, m/s]
    block.x = x
    block.set_inputs(TORQUES)
    return block


def each_try_from_scratch(method, rhs, args, x0, rtol, atol):
    """The step doubling with every try evaluating its own first stage (the formulation
    before the reuse): the result, the right-hand sides evaluated, the doubling rounds."""
    calls = 0

    def counted(x, *a):
        nonlocal calls
        calls += 1
        return rhs(x, *a)

    def attempt(n):
        stepper = ode_stepper(method)
        stepper.start(0.0, x0)
        return stepper.step_autonomous(counted, args, H / n, n)

    n, rounds = 1, 0
    coarse = attempt(n)
    while True:
        fine = attempt(2 * n)
        rounds += 1
        scale = atol + rtol * np.maximum(np.abs(fine), np.abs(x0))
        if np.max(np.abs(fine - coarse) / scale) <= 1.0:
            return fine, calls, rounds
        coarse, n = fine, 2 * n


@pytest.mark.parametrize("method", ["rk4", "gill", "treanor"])
def test_auto_step_reuses_the_first_stage_and_changes_nothing_else(method):
    """The auto step equals the formulation where every try evaluates f(x0) bit for bit,
    in Python stepping and in the kernel's C loop, with one evaluation less per round
    (counted in the Python stepping; the stepper's nfev says the same for the C loop)."""
    counted = bent(CountedArm(method=method, **TOLERANCES))
    compiled = bent(FlexibleManipulatorBlock(method=method, **TOLERANCES))
    kernel, args = compiled.derivatives()
    x_old, calls_old, rounds = each_try_from_scratch(method, kernel, args, compiled.x,
                                                     **TOLERANCES)
    assert rounds >= 3                            # the case doubles several times

    CountedArm.calls = 0
    counted.do_step(0.0, H)
    before = compiled.integrator.nfev
    compiled.do_step(0.0, H)

    np.testing.assert_array_equal(counted.x, x_old)
    np.testing.assert_array_equal(compiled.x, x_old)
    assert CountedArm.calls == calls_old - rounds
    assert counted.integrator.nfev == CountedArm.calls
    assert compiled.integrator.nfev - before == calls_old - rounds
