"""Physics of the two-link flexible arm (docs/benchmarks.md §1) and its integrators."""
import warnings

import numpy as np
import pytest
import scipy.linalg as sl

from mbdcore.multibody.beam_modes import ClampedBeamModes
from mbdcore.blocks import InputError, ModelRangeWarning, ParameterError, StepError
from mbdcore.models.manipulator import (FlexibleManipulator, FlexibleManipulatorBlock,
    bang_bang_torque)
from mbdcore.models.rigid_arm import RigidTwoLinkArm
from support.arm_reference import arm_eom_reference, arm_outputs_reference

EB_CLAMPED_FREE = np.array([3.516015, 22.034492, 61.697214])  # omega / sqrt(EI/(rho A l^4))


def locked_frequencies(model, coords):
    """Natural frequencies [Hz] with every coordinate outside ``coords`` locked, at q=0."""
    M = model.mass_matrix(np.zeros(model.n_dof))[np.ix_(coords, coords)]
    K = model.K[np.ix_(coords, coords)]
    return np.sqrt(sl.eigh(K, M, eigvals_only=True)) / (2 * np.pi)


# --- beam modes ------------------------------------------------------------------------
def test_clamped_free_wavenumbers_solve_the_characteristic_equation():
    modes = ClampedBeamModes.compute(5, 0.5, 0.2, 1.0)
    bl = modes.beta_l
    assert np.allclose((1 + np.cos(bl) * np.cosh(bl)) / np.cosh(bl), 0, atol=1e-9)
    assert np.allclose(bl[:3], [1.875104, 4.694091, 7.854757], atol=1e-6)
    # clamped at the root, unit tip deflection
    assert np.allclose(modes.shapes(0.0), 0) and np.allclose(modes.shapes(0.0, 1), 0)
    assert np.allclose(modes.shapes(0.5), 1.0)
    # free tip: no moment, no shear
    b = bl / 0.5
    assert np.all(np.abs(modes.shapes(0.5, 2)) / b**2 < 1e-9)
    assert np.all(np.abs(modes.shapes(0.5, 3)) / b**3 < 1e-9)


# --- modal limit -----------------------------------------------------------------------
def test_link1_alone_hub_locked_gives_euler_bernoulli_clamped_free_frequencies():
    """Nothing outboard of link 1: its locked-hub frequencies are the textbook
    3.516 and 22.03 sqrt(EI/(rho A l^4)) / 2 pi for every number of modes that holds them."""
    scale = np.sqrt(1.0 / (0.2 * 0.5**4)) / (2 * np.pi)
    for n in range(1, 6):
        arm = FlexibleManipulator(n_modes=n, mode_shapes="clamped-free", rho_a2=1e-12,
                                  m_h2=0.0, j_s=0.0, j_h2=0.0, m_p=0.0, j_p=0.0)
        f = locked_frequencies(arm, list(range(2, 2 + n)))
        k = min(n, 3)
        assert np.allclose(f[:k], EB_CLAMPED_FREE[:k] * scale, rtol=1e-5), (n, f)


def test_link1_with_outboard_load_converges_to_clamped_tip_mass_frequencies():
    """Link 2 made rigid (EI2 x 1e8), joints locked: link 1 carries a tip body (mass,
    inertia and first moment of everything outboard).  With clamped-free shapes the
    Rayleigh-Ritz frequencies fall monotonically onto the exact clamped-mass values as
    N grows; with the clamped-mass shapes they are exact at once."""
    base = FlexibleManipulator(ei2=1e8)
    exact = ClampedBeamModes.compute(2, 0.5, 0.2, 1.0, *base.tip_load_link1()).omega / (2 * np.pi)

    rel = []
    for n in range(1, 6):
        arm = FlexibleManipulator(n_modes=n, mode_shapes="clamped-free", ei2=1e8)
        f = locked_frequencies(arm, list(range(2, 2 + 2 * n)))
        rel.append(((f[0] - exact[0]) / exact[0],))
        if n >= 2:
            rel[-1] += ((f[1] - exact[1]) / exact[1],)
    first = np.array([r[0] for r in rel])
    second = np.array([r[1] for r in rel[1:]])
    for err in (first, second):
        assert np.all(err > 0)                          # Rayleigh-Ritz: from above
        assert np.all(np.diff(err) < 0)                 # monotone in N
    assert first[-1] < 0.4 * first[1] and first[-1] < 0.02
    assert second[-1] < 0.2

    for n in (1, 2, 3):
        arm = FlexibleManipulator(n_modes=n, mode_shapes="clamped-mass", ei2=1e8)
        f = locked_frequencies(arm, list(range(2, 2 + 2 * n)))[: min(n, 2)]
        assert np.allclose(f, exact[: min(n, 2)], rtol=1e-5)


def test_arm_lowest_mode_is_below_one_hertz():
    arm = FlexibleManipulator()
    f = locked_frequencies(arm, list(range(2, arm.n_dof)))
    assert f[0] < 1.0


# --- rigid limit -----------------------------------------------------------------------
def test_rigid_limit_matches_closed_form_two_link_arm():
    """EI x 1e6: on the slow manifold (deflections at their quasi-static values, where
    the modal accelerations vanish) the joint accelerations are those of the rigid arm
    with the same inertias, for random states and torques."""
    rng = np.random.default_rng(7)
    arm = FlexibleManipulator(ei1=1e6, ei2=1e6)
    rigid = RigidTwoLinkArm.from_flexible(**arm.params)
    n = arm.n_dof
    for _ in range(10):
        theta, omega = rng.uniform(-np.pi, np.pi, 2), rng.uniform(-2, 2, 2)
        tau = rng.uniform(-1, 1, 2)
        q, qd = np.zeros(n), np.zeros(n)
        q[:2], qd[:2] = theta, omega
        for _ in range(10):  # Newton on delta'' (delta) = 0
            a = arm.accelerations(q, qd, tau)
            jac = np.empty((n - 2, n - 2))
            for j in range(n - 2):
                qq = q.copy()
                qq[2 + j] += 1e-9
                jac[:, j] = (arm.accelerations(qq, qd, tau)[2:] - a[2:]) / 1e-9
            q[2:] -= np.linalg.solve(jac, a[2:])
        a = arm.accelerations(q, qd, tau)
        assert np.abs(a[2:]).max() < 1e-9
        expected = rigid.accelerations(theta, omega, tau)
        assert np.allclose(a[:2], expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())


def test_rigid_arm_inverse_dynamics_inverts_forward_dynamics():
    rigid = RigidTwoLinkArm.from_flexible()
    theta, omega, tau = np.array([0.3, -1.1]), np.array([0.7, 2.0]), np.array([0.4, -0.2])
    alpha = rigid.accelerations(theta, omega, tau)
    assert np.allclose(rigid.inverse_dynamics(theta, omega, alpha), tau, atol=1e-14)


# --- the compiled equations against the point-by-point reference -------------------------
@pytest.mark.parametrize("params", [{}, {"kinematics": "second-order"},
                                    {"n_modes": 3, "j_s": 0.02}, {"n_modes": 1}])
def test_compiled_equations_equal_the_point_by_point_reference(params):
    """arm.c sums each link's inertia once (mass, moments, modal couplings) and its exact
    kinematics take cos and sin by series; the numpy reference adds m J^T J and m J^T a_q
    point by point with numpy's cos and sin.  Both are the same sums of ~10^2 terms in
    another order, so they agree to a small multiple of eps times the sum of the terms'
    magnitudes (M_abs, hq_abs): 1e-13 is ~ 500 eps.  The states reach slopes beyond
    pi/4 (the series' range) at the largest amplitudes."""
    arm = FlexibleManipulator(**params)
    n, rng = arm.n_dof, np.random.default_rng(23)
    for amplitude in (0.0, 0.02, 0.1, 0.3):          # modal amplitudes [m]
        q = np.concatenate([rng.uniform(-3.0, 3.0, 2), rng.uniform(-amplitude, amplitude, n - 2)])
        qd = np.concatenate([rng.uniform(-3.0, 3.0, 2), rng.uniform(-1.0, 1.0, n - 2)])
        M, hq = arm.mass_matrix(q), arm.velocity_terms(q, qd)
        M_ref, hq_ref, M_abs, hq_abs = arm_eom_reference(arm.kernel.table, q, qd)
        assert np.all(np.abs(M - M_ref) <= 1e-13 * M_abs), amplitude
        assert np.all(np.abs(hq - hq_ref) <= 1e-13 * hq_abs), amplitude
        # the accelerations: the solve adds cond(M) eps relative to the largest force
        tau = (0.2, -0.05)
        force = -hq_ref - arm.K @ q - arm.D @ qd
        force[:2] += tau
        qdd_ref = np.linalg.solve(M_ref, force)
        scale = np.linalg.cond(M_ref) * np.abs(qdd_ref).max()
        assert np.abs(arm.accelerations(q, qd, tau) - qdd_ref).max() <= 1e-13 * scale


@pytest.mark.parametrize("kinematics", ["exact", "second-order"])
def test_outputs_from_the_tips_alone_equal_the_point_by_point_reference(kinematics):
    """arm_outputs sums only the tips' positions (beam_end_exact: the last point of the
    exact kinematics without every point's derivatives); the reference takes the tips
    from every point's kinematics with numpy's cos and sin.  Each tip is a sum of ~10^2
    terms of at most a segment's length: they agree to a small multiple of eps times the
    link length (1e-14 m for 0.5 m links is ~ 100 eps); slopes beyond pi/4 at 0.3 m."""
    arm = FlexibleManipulator(kinematics=kinematics)
    n, rng = arm.n_dof, np.random.default_rng(26)
    for amplitude in (0.0, 0.02, 0.1, 0.3):          # modal amplitudes [m]
        x = np.concatenate([rng.uniform(-3.0, 3.0, 2), rng.uniform(-amplitude, amplitude, n - 2),
                            rng.uniform(-1.0, 1.0, n)])
        got = np.array(list(arm.outputs(x).values()))
        np.testing.assert_allclose(got, arm_outputs_reference(arm.kernel.table, x), rtol=0,
                                   atol=1e-14)


# --- conservation ------------------------------------------------------------------------
def test_energy_is_conserved_without_input_and_damping():
    arm = FlexibleManipulator()
    x0 = arm.initial_state()
    x0[arm.n_dof:arm.n_dof + 4] = [1.5, -2.0, 0.05, -0.02]   # joint rates and mode rates
    _, x = arm.simulate(lambda t: (0.0, 0.0), 2.0, 1e-4, method="rk4", x0=x0)
    energy = np.array([arm.energy(xi) for xi in x[::200]])
    assert np.abs(energy - energy[0]).max() / energy[0] < 1e-8
    assert np.abs(x[:, 2:arm.n_dof]).max() > 1e-3           # the links really deformed


def test_exact_kinematics_conserve_energy_at_large_deflection():
    """The exact (inextensible) kinematics keep T + V exactly too: here with the links
    bent by a third of their length (far outside the second-order form's range)."""
    arm = FlexibleManipulator(kinematics="exact", n_modes=3)
    x0 = arm.initial_state()
    x0[arm.n_dof:arm.n_dof + 5] = [1.5, -2.0, 2.0, -1.0, 0.3]
    _, x = arm.simulate(lambda t: (0.0, 0.0), 1.0, 5e-5, method="rk4", x0=x0)
    energy = np.array([arm.energy(xi) for xi in x[::200]])
    assert np.abs(energy - energy[0]).max() / energy[0] < 1e-8
    w1 = np.array([arm.outputs(xi)["w1"] for xi in x[::200]])
    assert np.abs(w1).max() > 0.15                   # 30 % of the 0.5 m link


def test_exact_and_second_order_kinematics_agree_to_third_order_in_the_amplitude():
    """The second-order form is the exact one truncated: on the open-loop case their
    joint angles differ by a gap that shrinks as the cube of the torque scale."""
    def gap(scale):
        torque = lambda t: [scale * u for u in bang_bang_torque(t)]
        runs = [FlexibleManipulator(kinematics=k).simulate(torque, 1.2, 1e-4)[1]
                for k in ("second-order", "exact")]
        return np.abs(runs[0][:, :2] - runs[1][:, :2]).max()
    small, large = gap(0.1), gap(0.5)
    assert small < 1e-5                                  # rad, in the linear regime
    assert 60.0 < large / small < 200.0                  # ~ (0.5 / 0.1)^3 = 125


def test_damping_dissipates_energy():
    arm = FlexibleManipulator(damping=1e-2)
    x0 = arm.initial_state()
    x0[arm.n_dof + 2] = 0.1
    _, x = arm.simulate(lambda t: (0.0, 0.0), 1.0, 1e-4, x0=x0)
    energy = np.array([arm.energy(xi) for xi in x[::100]])
    assert np.all(np.diff(energy) <= 1e-15) and energy[-1] < 0.99 * energy[0]


def test_geometric_stiffening_raises_bending_frequency_of_a_spinning_link():
    """Link spinning at Omega about its hub: small bending oscillations about the steady
    state are stiffer with the foreshortening terms (Southwell: f^2 = f0^2 + k Omega^2)
    and softer without them (spin softening only)."""
    def bending_period(stiffening, omega_spin):
        arm = FlexibleManipulator(n_modes=1, mode_shapes="clamped-free", rho_a2=1e-3,
                                  m_h2=0, j_s=0, j_h2=0, m_p=0, j_p=0, j_h1=100.0,
                                  geometric_stiffening=stiffening, kinematics="second-order")
        x0 = arm.initial_state()
        x0[arm.n_dof] = omega_spin
        x0[2] = 1e-4
        t, x = arm.simulate(lambda t: (0.0, 0.0), 3.0, 1e-3, x0=x0)
        d = x[:, 2] - x[:, 2].mean()
        crossings = t[1:][np.sign(d[1:]) > np.sign(d[:-1])]
        return np.diff(crossings).mean()

    f0 = 1 / bending_period(1, 0.0)
    f_stiff = 1 / bending_period(1, 10.0)
    f_soft = 1 / bending_period(0, 10.0)
    assert f_stiff > f0 > f_soft


# --- integrators on the arm ------------------------------------------------------------
def _open_loop_final(method, h, t_end=0.3):
    arm = FlexibleManipulator()
    _, x = arm.simulate(bang_bang_torque, t_end, h, method=method)
    return x[-1]


@pytest.mark.parametrize("method", ["rk4", "gill"])
def test_runge_kutta_order_four_on_the_arm(method):
    ref = _open_loop_final("rk4", 1.25e-4)
    errs = [np.abs(_open_loop_final(method, h) - ref).max() for h in (4e-3, 2e-3, 1e-3)]
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(np.abs(orders - 4) < 0.3), orders


def test_treanor_agrees_with_rk4_on_the_open_loop_case():
    a = _open_loop_final("treanor", 1e-4, t_end=1.2)
    b = _open_loop_final("rk4", 1e-4, t_end=1.2)
    assert np.allclose(a[:2], b[:2], atol=1e-7)
    assert np.allclose(a, b, atol=1e-6)


def test_adaptive_scipy_solver_agrees_with_rk4():
    a = _open_loop_final("dop853", 1e-2)
    b = _open_loop_final("rk4", 1e-4)
    assert np.allclose(a, b, atol=1e-8)


# --- the block ---------------------------------------------------------------------------
def test_block_reproduces_in_process_simulation_and_keeps_state_on_bad_input():
    blk = FlexibleManipulatorBlock(substeps=10)
    arm = FlexibleManipulator()
    _, x = arm.simulate(bang_bang_torque, 0.05, 1e-4)
    for k in range(50):
        tau = bang_bang_torque(k * 1e-3)
        blk.set_inputs({"tau1": tau[0], "tau2": tau[1]})
        blk.do_step(k * 1e-3, 1e-3)
    assert np.abs(blk.x - x[-1]).max() < 1e-12
    before = blk.get_state()
    with pytest.raises(InputError, match="tau1"):
        blk.set_input("tau1", float("nan"))
    assert blk.inputs == before["inputs"]
    np.testing.assert_array_equal(blk.x, before["internal"]["x"])


def test_block_reports_divergence_and_keeps_last_good_state():
    blk = FlexibleManipulatorBlock(substeps=1)
    blk.set_inputs({"tau1": 1e30, "tau2": -1e30})
    x_before = blk.x.copy()
    with pytest.raises(StepError, match="failed"):
        for k in range(100):
            blk.do_step(k * 1e-2, 1e-2)
    assert np.all(np.isfinite(blk.x))
    assert blk.time < 1.0
    assert np.all(np.isfinite(list(blk.outputs().values())))
    del x_before


def test_exact_kinematics_always_stiffen_and_refuse_dropping_it():
    with pytest.raises(ParameterError, match="geometric_stiffening = 0.*kinematics = "
                                             "'second-order'"):
        FlexibleManipulator(geometric_stiffening=0)
    FlexibleManipulator(geometric_stiffening=0, kinematics="second-order")


def test_bad_parameters_name_the_parameter_and_range():
    with pytest.raises(ParameterError, match=r"'ei1' = -1.0.*\(0.0, inf\)"):
        FlexibleManipulator(ei1=-1.0)
    with pytest.raises(ParameterError, match="n_modes"):
        FlexibleManipulator(n_modes=9)
    with pytest.raises(ParameterError, match="method"):
        FlexibleManipulatorBlock(method="euler")


def test_block_warns_once_when_a_link_leaves_the_range_of_its_kinematics():
    """Second-order kinematics at the open-loop torques: link 1 bends past 5 % of its
    length; the block warns once (not every step), naming the link and the remedy."""
    block = FlexibleManipulatorBlock(kinematics="second-order")
    with pytest.warns(ModelRangeWarning) as seen:
        for k in range(600):
            block.set_inputs(dict(zip(("tau1", "tau2"), bang_bang_torque(k * 1e-3))))
            block.do_step(k * 1e-3, 1e-3)
    assert len(seen) == 1
    message = str(seen[0].message)
    assert message.startswith("link 1 tip deflection") and "beyond the 5 %" in message
    assert "kinematics = 'exact' extends it" in message
    quiet = FlexibleManipulatorBlock()                 # exact: 12 % is inside its 30 %
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelRangeWarning)
        for k in range(600):
            quiet.set_inputs(dict(zip(("tau1", "tau2"), bang_bang_torque(k * 1e-3))))
            quiet.do_step(k * 1e-3, 1e-3)


def test_a_step_beyond_the_hard_deflection_limit_is_refused_and_the_state_kept():
    """100 times the benchmark's torque: with the second-order kinematics link 1's
    deflection grows past the link's own length within 0.3 s (no arm does that; it
    once reached 11 lengths with fmi2OK); the block refuses the step that crosses
    max_tip_deflection (default 1.0 of the length), naming the link, its deflection and
    the limit, and keeps the state.  With the exact kinematics a link cannot bend
    further than its length; a tighter limit (0.2) refuses there too.  The benchmark's
    own torques never reach it."""
    def run(block, torque, t_end):
        block.set_inputs({"tau1": torque, "tau2": 0.0})
        block.largest = 0.0          # the largest |w1| / l1 reached
        for k in range(int(round(t_end / 1e-3))):
            block.do_step(k * 1e-3, 1e-3)
            block.largest = max(block.largest, abs(block.outputs()["w1"]) / 0.5)
        return block

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelRangeWarning)
        arm = FlexibleManipulatorBlock(kinematics="second-order")
        with pytest.raises(StepError, match=r"link 1 tip deflection -?[0-9.]+ m is 1\d\d % of its "
                                            r"length, beyond max_tip_deflection = 1"):
            run(arm, 20.0, 0.3)
        kept = arm.x.copy()
        assert abs(arm.outputs()["w1"]) <= 0.5        # the last accepted state, within 1 x l1
        with pytest.raises(StepError):
            arm.do_step(arm.time, 1e-3)
        np.testing.assert_array_equal(arm.x, kept)
        exact = run(FlexibleManipulatorBlock(), 20.0, 0.3)      # bent, not refused
        assert 0.3 < exact.largest < 1.0
        tight = FlexibleManipulatorBlock(max_tip_deflection=0.2)
        with pytest.raises(StepError, match="max_tip_deflection = 0.2"):
            run(tight, 20.0, 0.3)
        assert tight.time < 0.3
    calm = run(FlexibleManipulatorBlock(), 0.2, 0.3)     # the benchmark torque: no refusal
    assert 0.0 < calm.largest < 0.2
