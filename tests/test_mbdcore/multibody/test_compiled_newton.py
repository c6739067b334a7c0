"""Newton iterations in C (issue 12): a system whose parts all have compiled forms gives
its residual terms as C functions (``System.compiled_terms``,
``mbdcore.multibody.assembly.SystemTerms``, ``native/system_terms.c``) and the implicit
integrators iterate with kept factors in C (``mbdcore/dae/native/newton.c``).  The
terms equal the Python ones to rounding; the iterations are the Python loop's, so the
trajectories agree to rounding and the iteration counts match; a system with a part
without a compiled form is iterated in Python; failures are reported as in Python."""
import ctypes
import math

import numpy as np
import pytest

from mbdcore.dae.index3 import ConvergenceError
from mbdcore.dae.simulate import simulate
from mbdcore.models.mechanisms import (four_bar, geared_bars, hub_beam, slider_crank,
                                       two_link_arm)
from mbdcore.multibody.ancf import ANCFBeam, cantilever
from mbdcore.multibody.constraints import Revolute
from mbdcore.multibody.flexible import ModalBeam
from mbdcore.multibody.forces import JointTorque, TranslationalSpringDamper
from mbdcore.multibody.system import System


def ancf_hub(n_el=4):
    return hub_beam(lambda nm, L, ra, ei, ea: ANCFBeam(nm, (0.0, 0.0), (L, 0.0), n_el, ra,
                                                       ei, ea), 6.0)


def ancf_arm(n_el=4, damping=0.0):
    def link(nm, L, ra, ei, at):
        return ANCFBeam(nm, at, (at[0] + L, at[1]), n_el, ra, ei, 1e4, damping=damping)
    return two_link_arm(link)


SYSTEMS = {"ANCF hub-beam": ancf_hub, "ANCF arm (torque inputs)": ancf_arm,
           "damped ANCF arm": lambda: ancf_arm(damping=1e-3),
           "four-bar with gravity": four_bar, "geared bars (constant torque)": geared_bars}

_CONSTRAINTS = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 5)
_FORCES = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)


def compiled_terms_at(terms, t, q, v):
    """(g, G, g_t, F) from the compiled functions."""
    terms.prepare(t)
    g, G, gt, F = np.zeros(terms.m), np.zeros((terms.m, terms.n)), np.zeros(terms.m), \
        np.zeros(terms.n)
    _CONSTRAINTS(terms.constraints)(terms.context, q.ctypes.data, g.ctypes.data,
                                    G.ctypes.data, gt.ctypes.data)
    _FORCES(terms.forces)(terms.context, q.ctypes.data, v.ctypes.data, F.ctypes.data)
    return g, G, gt, F


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_compiled_terms_equal_the_python_terms(name):
    s = SYSTEMS[name]()
    s.inputs.update({"tau1": 0.7, "tau2": -0.3})
    terms = s.compiled_terms()
    assert terms is not None, "every part of these systems has a compiled form"
    np.testing.assert_array_equal(terms.mass_matrix(), s.mass_matrix())
    rng = np.random.default_rng(4)
    q0, v0 = s.initial_state()
    for t in (0.0, 0.41, 3.3):
        q = q0 + 0.05 * rng.standard_normal(q0.size)
        v = v0 + rng.standard_normal(v0.size)
        g, G, gt, F = compiled_terms_at(terms, t, q, v)
        g_ref, G_ref, gt_ref, _ = s.constraint_terms(t, q, np.zeros_like(q))
        F_ref = s.forces(t, q, v)
        for label, a, b in (("g", g, g_ref), ("G", G, G_ref), ("g_t", gt, gt_ref),
                            ("F", F, F_ref)):
            scale = max(1.0, float(np.abs(b).max()))
            assert np.abs(a - b).max() <= 1e-12 * scale, label


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_compiled_newton_matrix_blocks_equal_the_python_ones(name):
    """C_t = -dF/dv, K_t = -dF/dq + d(G^T lam)/dq and d(G v)/dq from C equal the
    system's force Jacobians and exact geometric terms (the Python reference)."""
    s = SYSTEMS[name]()
    s.inputs.update({"tau1": 0.7, "tau2": -0.3})
    terms = s.compiled_terms()
    assert terms.jacobian is not None
    rng = np.random.default_rng(7)
    q0, v0 = s.initial_state()
    for t in (0.0, 0.8):
        q = q0 + 0.05 * rng.standard_normal(q0.size)
        v = v0 + rng.standard_normal(v0.size)
        lam = rng.standard_normal(s.m)
        dFdq, dFdv = s.force_jacobians(t, q, v)
        Kg, Hg = s.geometric_stiffness_sparse(t, q, v, np.zeros(s.n), lam, dense=True)
        C, K, H = terms.jacobian(q, v, lam, True)
        for label, a, b in (("C_t", C, -dFdv), ("K_t", K, -dFdq + Kg), ("Hg", H, Hg)):
            assert np.abs(a - b).max() <= 1e-12 * max(1.0, float(np.abs(b).max())), label
        assert np.any(Kg != 0.0) or s.m == 0     # the curvature terms were exercised
        C0, K0, H0 = terms.jacobian(q, v, lam, False)
        np.testing.assert_array_equal(K0, -dFdq)
        assert not H0.any()


def _run(make, compiled, t_end, h, method="generalized-alpha", **options):
    s = make()
    s.compiled_residual = compiled
    return s, simulate(s, t_end, h, method, **options)


@pytest.mark.parametrize("method, options", [
    ("generalized-alpha", {"rho_inf": 0.8}),
    ("generalized-alpha", {"rho_inf": 0.8, "constraint_form": "index3"}),
    ("hht", {}),
    ("bathe", {}),
])
def test_hub_beam_iterated_in_c_follows_the_python_iteration(method, options):
    """The same iterations in C and in Python: the Newton paths agree (same counts of
    iterations and factorisations over 0.5 s of the spin-up) and the trajectories to
    rounding."""
    runs = [_run(ancf_hub, compiled, 0.5, 2.5e-3, method, **options)[1]
            for compiled in (True, False)]
    for key in ("newton_iterations", "factorizations", "jacobian_evaluations"):
        assert runs[0].stats[key] == runs[1].stats[key], key
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=0, atol=1e-11)
    assert math.isfinite(runs[0].q[-1, 0])


def test_arm_with_torque_steps_iterated_in_c_follows_the_python_iteration():
    """Held torque inputs that jump (the integrator restarts there) enter the compiled
    forces at every solve: the arm's trajectory and Newton path equal the Python
    iteration's."""
    def torques(t):
        return {"tau1": 0.2 if t < 0.03 else -0.2, "tau2": 0.05 if t < 0.05 else 0.0}
    torques.breakpoints = (0.03, 0.05)
    runs = [_run(ancf_arm, compiled, 0.08, 2.5e-4, rho_inf=0.8, inputs=torques)[1]
            for compiled in (True, False)]
    assert runs[0].stats["newton_iterations"] == runs[1].stats["newton_iterations"]
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=0, atol=1e-11)
    # the torques did something: the hub turned
    assert abs(runs[0]["hub1.phi"][-1]) > 1e-4


def test_a_part_without_a_compiled_form_is_iterated_in_python():
    assert ancf_hub().compiled_terms() is not None
    off = ancf_hub()
    off.compiled_residual = False
    assert off.compiled_terms() is None
    # a force element that depends on the state has a compiled form where its points
    # do (tests/test_mbdcore/multibody/test_compiled_force_elements.py)
    s = ancf_hub()
    s.ground.add_marker("far", (2.0, 0.0))
    s.add_force(TranslationalSpringDamper("ground.far", "hub.axis", 10.0))
    assert s.compiled_terms() is not None
    assert slider_crank().compiled_terms() is None     # its prismatic rail
    # a torque on a beam's slope depends on the state (a measure element on the slope
    # angle, test_compiled_force_elements.py); on rigid bodies it does not
    s = ancf_hub()
    s.add_force(JointTorque("hub", "beam.tip", "tau"))
    assert s.compiled_terms() is not None
    s = ancf_hub()
    s.add_force(JointTorque("ground", "hub", "tau"))
    assert s.compiled_terms() is not None
    # a body without compiled forces (a modal beam)
    s = hub_beam(lambda nm, L, ra, ei, ea: ModalBeam(nm, length=L, rho_a=ra, ei=ei,
                                                     n_modes=2), 6.0)
    assert s.compiled_terms() is None
    # rows removed as redundant (a bar pinned twice at one end) are left out of the
    # compiled terms, which see the kept rows only
    s = System(redundant="remove")
    s.ground.add_marker("A", (0.0, 0.0))
    s.ground.add_marker("B", (1.0, 0.0))
    s.add_body("bar", mass=1.0, inertia=0.1, position=(0.5, 0.0),
               markers={"a": (-0.5, 0.0), "b": (0.5, 0.0)})
    s.add_joint(Revolute("ground.A", "bar.a"))
    s.add_joint(Revolute("ground.B", "bar.b"))
    s.add_joint(Revolute("ground.B", "bar.b", name="again"))
    assert s.m < 6 and s.compiled_terms().m == s.m


def test_parameters_changed_between_runs_are_seen():
    """The compiled terms are made from the parts at each start: a stiffer beam after a
    first run gives the run of a beam built stiff."""
    s = ancf_hub()
    simulate(s, 0.05, 2.5e-3, "generalized-alpha")
    s.body("beam").ei *= 4.0
    changed = simulate(s, 0.3, 2.5e-3, "generalized-alpha")
    built = ancf_hub()
    built.body("beam").ei *= 4.0
    fresh = simulate(built, 0.3, 2.5e-3, "generalized-alpha")
    np.testing.assert_allclose(changed.q, fresh.q, rtol=0, atol=1e-12)


@pytest.mark.parametrize("max_iterations, why", [(2, "iteration limit"),
                                                 (4, "diverging")])
def test_a_solve_that_fails_is_reported_as_in_python(max_iterations, why):
    """Newton that cannot converge (the arm under 20 N m with a 20 ms step, no halving
    of the step) fails in the compiled iteration where the Python one does, with its
    message and reason."""
    messages = []
    for compiled in (True, False):
        with pytest.raises(ConvergenceError) as err:
            _run(ancf_arm, compiled, 0.5, 0.02, max_iterations=max_iterations,
                 max_halvings=0, inputs=lambda t: {"tau1": 20.0, "tau2": -10.0})
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert f"({why})" in messages[0]


def test_blocks_rebuilt_after_a_slow_refactorisation_in_c_as_in_python():
    """Index 3 keeps factors within a step only; when a fresh G does not restore the
    contraction the blocks are rebuilt at the iterate (step 31 of this falling
    cantilever).  The compiled iteration must rebuild them too, not go on with the old
    factors: same iterations, factorisations and block builds as the Python loop."""
    runs = []
    for compiled in (True, False):
        s = cantilever(n_elements=20, ea=1e5, gravity=(0.0, -9.81))
        s.compiled_residual = compiled
        runs.append(simulate(s, 0.05, 1e-3, "generalized-alpha", formulation="index3",
                             rho_inf=0.8, sparse=False))
    assert runs[0].stats["jacobian_evaluations"] >= 2     # the rebuild happened
    for key in ("newton_iterations", "factorizations", "jacobian_evaluations"):
        assert runs[0].stats[key] == runs[1].stats[key], key
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=0, atol=1e-10)
