"""Whole generalized-alpha steps in C (issue 23, build item 1): ``alpha_step`` of
``mbdcore/dae/native/newton.c`` through :class:`mbdcore.dae.compiled_step.
CompiledAlphaStep` against the Python integrator (the reference) on the same problem,
method and Newton tolerance.  C builds the Newton matrix at every step where Python
keeps factors, so the two converge to the same solution within the tolerance, not
along the same iterations: positions and velocities are compared at a bound that the
tolerance (1e-12 relative) sets, multipliers and accelerations at that tolerance times
the step's c_a ~ 1/h^2 (they are c_a times the scaled unknowns the test bounds)."""
import numpy as np
import pytest

from mbdcore.dae.compiled_step import CompiledAlphaStep
from mbdcore.dae.index1 import assemble
from mbdcore.dae.index1 import consistent_accelerations
from mbdcore.dae.methods import make_method
from mbdcore.integrators.base import ConvergenceError
from mbdcore.models.mechanisms import four_bar, hub_beam, slider_crank, two_link_arm
from mbdcore.multibody.ancf import ANCFBeam

H, STEPS, TOL = 1e-3, 100, 1e-12


def ancf_hub():
    return hub_beam(lambda nm, L, ra, ei, ea: ANCFBeam(nm, (0.0, 0.0), (L, 0.0), 3, ra,
                                                       ei, ea), 6.0)


def ancf_arm():
    return two_link_arm(lambda nm, L, ra, ei, at: ANCFBeam(nm, at, (at[0] + L, at[1]), 2,
                                                           ra, ei, 1e4))


CASES = {"ANCF hub-beam, GGL": (ancf_hub, "ggl", False),
         "ANCF hub-beam, index 3": (ancf_hub, "index3", False),
         "four-bar, GGL": (four_bar, "ggl", False),
         "ANCF hub-beam, GGL, sparse": (ancf_hub, "ggl", True),
         "ANCF hub-beam, index 3, sparse": (ancf_hub, "index3", True)}


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_steps_equal_the_python_steps(name):
    """Dense and sparse (the Newton matrix in a pattern fixed per topology, factored by
    sparse_lu.c, its factors kept across steps) alike."""
    make, form, sparse = CASES[name]
    system = make()
    method = dict(rho_inf=0.8, tol=TOL, constraint_form=form, sparse=sparse)
    python = make_method("generalized-alpha", **method)
    compiled = CompiledAlphaStep(make_method("generalized-alpha", **method), system)
    q, v = assemble(system, 0.0)
    compiled.start(0.0, q, v)
    python.start(system, 0.0, q, v)
    for k in range(STEPS):
        q, v = python.step(system, k * H, q, v, H)
        compiled.step(k * H, H)
        assert 1 <= compiled.iterations <= 4
    scale_q, scale_v = max(1.0, np.max(np.abs(q))), max(1.0, np.max(np.abs(v)))
    assert np.max(np.abs(compiled.q - q)) <= 1e3 * TOL * scale_q
    assert np.max(np.abs(compiled.v - v)) <= 1e3 * TOL * scale_v / H
    # the multipliers and accelerations are c_a ~ 1/h^2 times the scaled unknowns the
    # convergence test bounds
    for c, p in ((compiled.lam, python.lam), (compiled.qdd, python.qdd)):
        assert np.max(np.abs(c - p)) <= TOL / H ** 2 * max(1.0, np.max(np.abs(p)))


def test_a_newton_failure_keeps_the_history_and_says_why():
    """An absurd input torque: the Newton solve diverges; ConvergenceError names the
    time, the step and why, and the state and history are as before the step."""
    system = ancf_arm()
    compiled = CompiledAlphaStep(make_method("generalized-alpha"), system)
    compiled.start(0.0, *assemble(system, 0.0))
    for k in range(3):
        compiled.step(k * H, H)
    system.inputs["tau1"] = 1e9
    before = [x.copy() for x in (compiled.q, compiled.v, compiled.a, compiled.qdd,
                                 compiled.lam, compiled.guess)]
    with pytest.raises(ConvergenceError, match=r"t = 0.004 s \(h = 0.001 s\).*diverging"):
        compiled.step(3 * H, H)
    after = (compiled.q, compiled.v, compiled.a, compiled.qdd, compiled.lam, compiled.guess)
    assert all(np.array_equal(a, b) for a, b in zip(before, after))
    system.inputs["tau1"] = 0.0
    compiled.step(3 * H, H)          # and it goes on from there


def test_only_compiled_problems_and_alpha_schemes_are_taken():
    with pytest.raises(ValueError, match="without a compiled form"):
        CompiledAlphaStep(make_method("generalized-alpha"), slider_crank())
    with pytest.raises(TypeError, match="GeneralizedAlphaScheme"):
        CompiledAlphaStep(make_method("bathe"), four_bar())


def test_the_history_started_in_c_equals_consistent_accelerations():
    """alpha_start (the C FMU's start, and its restart where an input jumps) gives the
    accelerations and multipliers of index1.consistent_accelerations at a moving state
    (gamma = -d(G v)/dq v from the compiled blocks, rows independent of time), to the
    rounding of the solves of the augmented matrix."""
    system = ancf_arm()
    system.inputs.update({"tau1": 0.3, "tau2": -0.1})
    compiled = CompiledAlphaStep(make_method("generalized-alpha"), system)
    compiled.start(0.0, *assemble(system, 0.0))
    for k in range(5):
        compiled.step(k * H, H)
    q, v = compiled.q.copy(), compiled.v.copy()
    assert np.max(np.abs(v)) > 1e-3
    qdd, lam = consistent_accelerations(system, 5 * H, q, v)
    compiled.start(5 * H, q, v, in_c=True)
    assert np.max(np.abs(compiled.qdd - qdd)) <= 1e-9 * np.max(np.abs(qdd))
    assert np.max(np.abs(compiled.lam - lam)) <= 1e-9 * np.max(np.abs(lam))
    assert np.array_equal(compiled.a, compiled.qdd) and not np.any(compiled.guess)


def test_sparse_steps_keep_factors_and_a_state_set_elsewhere_continues_bit_for_bit():
    """On the sparse path the factors are kept across steps (fewer factorisations than
    steps) and where they were made is part of the guess: a second stepper (other
    memory, other factors) given the state and history continues with the same bits,
    as a C FMU's saved state in a fresh instance."""
    system = ancf_hub()
    method = dict(rho_inf=0.8, tol=TOL, sparse=True)
    first = CompiledAlphaStep(make_method("generalized-alpha", **method), system)
    first.start(0.0, *assemble(system, 0.0))
    factorizations = 0
    for k in range(20):
        first.step(k * H, H)
        factorizations += first.factorizations
    assert factorizations < 10
    second = CompiledAlphaStep(make_method("generalized-alpha", **method), system)
    second.start(0.0, *assemble(system, 0.0))
    for name in ("q", "v", "a", "qdd", "lam"):
        setattr(second, name, getattr(first, name).copy())
    second.guess[:] = first.guess
    for k in range(20, 30):
        first.step(k * H, H)
        second.step(k * H, H)
    for name in ("q", "v", "lam", "guess"):
        assert np.array_equal(getattr(first, name), getattr(second, name)), name


def test_sparse_and_dense_starts_in_c_agree():
    """alpha_start on the sparse path ([[M, G^T], [G, 0]] in its own fixed pattern)
    gives the dense path's accelerations and multipliers to the rounding of the two
    factorisations."""
    system = ancf_arm()
    system.inputs.update({"tau1": 0.3, "tau2": -0.1})
    q, v = assemble(system, 0.0)
    v = v + 0.1
    out = []
    for sparse in (False, True):
        compiled = CompiledAlphaStep(make_method("generalized-alpha", sparse=sparse), system)
        compiled.start(0.0, q, v, in_c=True)
        out.append((compiled.qdd, compiled.lam))
    for d, s in zip(*out):
        assert np.max(np.abs(d - s)) <= 1e-9 * np.max(np.abs(d))
