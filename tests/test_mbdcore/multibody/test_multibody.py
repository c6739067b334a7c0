"""General planar engine: benchmarks with closed-form or independent answers."""
import math

import numpy as np
import pytest

from mbdcore.blocks import ParameterError
from mbdcore.multibody.constraints import Revolute
from mbdcore.dae.index1 import (AssemblyError, SingularConfigurationError, assemble,
    augmented_accelerations)
from mbdcore.dae.simulate import reference_solution, simulate
from mbdcore.models.mechanisms import (four_bar, geared_bars, rigid_crank, slider_crank,
    slider_crank_with_contact)
from mbdcore.multibody.system import System


# --- rigid crank (docs/benchmarks.md §5) ------------------------------------------------
def test_rigid_crank_angle_is_half_alpha_t_squared():
    alpha = 62.0 / (1.4 * 0.75**2 / 3)
    assert alpha == pytest.approx(236.19, abs=5e-3)
    r = simulate(rigid_crank(), 0.5, 2.5e-4, "rk4", record_every=100)
    assert r["crank.phi"][-1] == pytest.approx(0.5 * alpha * 0.5**2, rel=1e-9)
    # the pivot carries the centripetal and tangential loads of the bar's centre
    omega = alpha * 0.5
    force = 1.4 * 0.375 * math.hypot(omega**2, alpha)
    lam = np.hypot(r["lambda(pivot.x)"][-1], r["lambda(pivot.y)"][-1])
    assert lam == pytest.approx(force, rel=1e-6)


# --- assembly and projections ---------------------------------------------------------------
def test_assembly_from_a_rough_guess_and_consistent_velocities():
    s = slider_crank()
    q, v = s.initial_state()
    rng = np.random.default_rng(0)
    q_rough = q + rng.normal(scale=0.02, size=q.size)
    v_rough = rng.normal(size=v.size)
    qa, va = assemble(s, 0.0, q_rough, v_rough)
    assert np.abs(s.constraints(0.0, qa)).max() < 1e-12
    assert np.abs(s.constraint_jacobian(0.0, qa) @ va).max() < 1e-12


def test_inconsistent_initial_condition_that_cannot_be_assembled_is_named():
    s = System()
    s.ground.add_marker("L", (0.0, 0.0))
    s.ground.add_marker("R", (3.0, 0.0))
    s.add_body("bar", mass=1.0, inertia=0.1, position=(0.5, 0.0),
               markers={"a": (-0.5, 0.0), "b": (0.5, 0.0)})
    s.add_joint(Revolute("ground.L", "bar.a", name="left"))
    s.add_joint(Revolute("ground.R", "bar.b", name="right"))
    with pytest.raises(AssemblyError, match="cannot be satisfied") as err:
        assemble(s)
    assert "right.x" in str(err.value) and "left.x" in str(err.value)


def test_redundant_constraints_are_a_singular_configuration():
    s = rigid_crank()
    s.add_joint(Revolute("ground.O", "crank.O", name="pivot_again"))
    with pytest.raises(SingularConfigurationError, match="pivot_again"):
        simulate(s, 0.01, 1e-3)


def test_massless_free_body_is_rejected_with_the_accepted_range():
    s = System()
    with pytest.raises(ParameterError, match=r"'blob'.*mass = 0.0.*> 0"):
        s.add_body("blob", mass=0.0, inertia=1.0)
    with pytest.raises(ParameterError, match="no marker 'X'"):
        rigid_crank().add_joint(Revolute("ground.X", "crank.O"))


# --- slider-crank -------------------------------------------------------------------------
def _reference(system, t_end):
    """Index-1 without Baumgarte, integrated by DOP853 at rtol 1e-11 (no projection)."""
    return reference_solution(system, t_end)


def test_energy_is_conserved_without_damping_and_constraints_hold_after_projection():
    s = slider_crank(damping=0.0)
    r = simulate(s, 1.0, 1e-3, "rk4")
    drift = np.abs(r.energy - r.energy[0]).max() / abs(r.energy[0])
    assert drift < 1e-6
    assert r.violation.max() < 1e-10


def test_damper_dissipates_energy_monotonically():
    r = simulate(slider_crank(damping=5.0), 1.0, 1e-3, "rk4", record_every=10)
    assert np.all(np.diff(r.energy) < 1e-9) and r.energy[-1] < r.energy[0] - 0.1


@pytest.mark.parametrize("method", ["rk4", "gill"])
def test_index1_runge_kutta_converges_with_order_four(method):
    """The method's own order, on the index-1 ODE without Baumgarte and projections;
    with the projections the error is smaller still (pre-asymptotically even of
    higher apparent order, since the projection removes the drift component)."""
    s = slider_crank()
    ref = _reference(s, 0.4)
    errs, errs_projected = [], []
    for h in (5e-3, 2.5e-3, 1.25e-3):
        r = simulate(s, 0.4, h, method, alpha=0.0, beta=0.0, project=False, record_every=1000)
        errs.append(np.abs(np.concatenate([r.q[-1], r.v[-1]]) - ref).max())
        r = simulate(s, 0.4, h, method, record_every=1000)
        errs_projected.append(np.abs(np.concatenate([r.q[-1], r.v[-1]]) - ref).max())
    orders = np.log2(np.array(errs[:-1]) / errs[1:])
    assert np.all(np.abs(orders - 4) < 0.3), orders
    assert np.all(np.array(errs_projected) < np.array(errs))


@pytest.mark.parametrize("k, steps", [(1, (4e-3, 2e-3, 1e-3)), (2, (4e-3, 2e-3, 1e-3)),
                                      (3, (4e-3, 2e-3, 1e-3)), (4, (2e-3, 1e-3, 5e-4))])
def test_index1_bdf_converges_with_order_k(k, steps):
    s = slider_crank()
    ref = _reference(s, 0.4)
    errs = []
    for h in steps:
        # BDF4's error reaches 1e-7: the Newton tolerance must be tighter than that
        tol = dict(rtol=1e-12, atol=1e-13) if k == 4 else {}
        r = simulate(s, 0.4, h, f"bdf{k}", alpha=0.0, beta=0.0, project=False,
                     record_every=1000, **tol)
        errs.append(np.abs(np.concatenate([r.q[-1], r.v[-1]]) - ref).max())
    orders = np.log2(np.array(errs[:-1]) / errs[1:])
    assert np.all(np.abs(orders - k) < 0.3), orders


def test_bdf_keeps_its_history_through_the_projections():
    """With projections after every step the multistep history is updated, not
    restarted: only the k - 1 start-up steps use the one-step starter."""
    r = simulate(slider_crank(), 0.2, 2e-3, "bdf3")
    assert r.violation.max() < 1e-10
    # a restart at every step would cost a 3-stage Radau solve (>= 3 evaluations per
    # Newton iteration) each time; the multistep corrector costs about one per iteration
    assert r.stats["nfev"] < 6 * r.stats["nsteps"]


def test_input_torque_does_the_work_it_should():
    """A constant input torque on the crank: energy gained equals the work tau * dtheta."""
    s = slider_crank(damping=0.0)
    r = simulate(s, 0.5, 5e-4, "rk4", inputs=lambda t: {"tau": 0.7}, record_every=50)
    work = 0.7 * (r["crank.phi"][-1] - r["crank.phi"][0])
    assert r.energy[-1] - r.energy[0] == pytest.approx(work, rel=1e-6)


# --- contact ---------------------------------------------------------------------------
def _contact_events(method, h):
    s = slider_crank_with_contact(damping=0.0)
    contact = s.forces_list[-1]
    r = simulate(s, 0.6, h, method)
    pen = np.array([contact.penetration(q) for q in r.q])
    touching = pen > 0
    edges = np.nonzero(np.diff(touching.astype(int)))[0] + 1
    forces = []
    for q, v in zip(r.q, r.v):
        f = np.zeros(s.n)
        contact.apply(0.0, s.view(q, v), f, s.inputs)
        forces.append(contact.last_force)
    return r, r.t[edges], np.array(forces)


@pytest.mark.slow
def test_contact_onset_and_release_agree_between_integrators_and_force_never_pulls():
    h = 1e-4
    r1, ev1, f1 = _contact_events("rk4", h)
    r2, ev2, f2 = _contact_events("gill", h)
    assert len(ev1) >= 2 and len(ev1) == len(ev2)
    assert np.abs(ev1 - ev2).max() <= h + 1e-12
    assert f1.min() >= 0.0 and f2.min() >= 0.0 and f1.max() > 10.0
    # the rod bounced: the crank stops far above its free swing (-1.40 rad)
    assert r1["crank.phi"].min() > -0.6


# --- four-bar: driving torque against inverse dynamics ----------------------------------------
def test_four_bar_driving_torque_equals_independent_inverse_dynamics():
    """Crank driven at constant rate omega: the power the driver delivers is
    d(T + V)/dt, so tau = (dE/dt) / omega, E from the simulated trajectory alone."""
    omega = 6.0
    s = four_bar(omega=omega)
    r = simulate(s, 1.0, 1e-3, "rk4")
    tau_driver = -r["lambda(drive.torque)"]         # G^T lambda is minus the applied torque
    energy = r.energy
    dE = np.gradient(energy, r.t, edge_order=2)
    inner = slice(5, -5)
    np.testing.assert_allclose(tau_driver[inner], dE[inner] / omega, atol=2e-4 * np.abs(tau_driver).max())
    # and the crank angle follows the prescribed motion
    np.testing.assert_allclose(r["crank.phi"], 0.3 + omega * r.t, atol=1e-10)


# --- synchronous gear ----------------------------------------------------------------------
@pytest.mark.parametrize("ratio", [1.0, -0.5])
def test_synchronous_gear_keeps_the_joint_angles_in_ratio(ratio):
    s = geared_bars(ratio=ratio)
    r = simulate(s, 1.0, 1e-3, "rk4")
    np.testing.assert_allclose(r["bar2.phi"], ratio * r["bar1.phi"], atol=1e-10)
    assert abs(r["bar1.phi"][-1]) > 0.1
    # and the shared motion has the combined inertia: I1 + ratio^2 I2 about the pivots
    i1, i2 = 1.0 * 0.5**2 / 3, 3.0 * 0.8**2 / 3
    alpha = 2.0 / (i1 + ratio**2 * i2)
    assert r["bar1.phi"][-1] == pytest.approx(0.5 * alpha, rel=1e-8)


def test_results_save_to_csv_and_plot(tmp_path):
    r = simulate(rigid_crank(), 0.1, 1e-3)
    path = r.to_csv(tmp_path / "crank.csv")
    data = np.genfromtxt(path, delimiter=",", names=True, deletechars="")
    np.testing.assert_array_equal(data["crank.phi"], r["crank.phi"])
    assert "lambda(pivot.x)" in data.dtype.names and "violation" in data.dtype.names
    fig = r.plot(tmp_path / "crank.png", ["crank.phi", "energy"])
    assert (tmp_path / "crank.png").stat().st_size > 5000
    assert [ax.get_ylabel() for ax in fig.axes] == ["crank.phi [rad]", "energy [J]"]
    assert fig.axes[-1].get_xlabel() == "time [s]"
    assert r.unit("d(crank.x)") == "m/s" and r.unit("lambda(pivot.x)") == "N"


def test_accelerations_solve_the_augmented_system():
    s = slider_crank()
    q, v = assemble(s, 0.0, None, np.array([0, 0, 3.0, 0, 0, 0, 0, 0, 0.0]))
    v = assemble(s, 0.0, q, v)[1]
    a, lam = augmented_accelerations(s, 0.0, q, v)
    G = s.constraint_jacobian(0.0, q)
    np.testing.assert_allclose(G @ a, s.gamma(0.0, q, v), atol=1e-12)
    np.testing.assert_allclose(s.mass_matrix(q) @ a + G.T @ lam, s.forces(0.0, q, v), atol=1e-12)
