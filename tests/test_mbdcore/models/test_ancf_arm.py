"""The two-link arm with ANCF links (general engine) against the minimal-coordinate model."""
import numpy as np
import pytest

from mbdcore.multibody.ancf import ANCFBeam
from mbdcore.dae.simulate import simulate
from mbdcore.models.manipulator import FlexibleManipulator, bang_bang_torque
from mbdcore.multibody.modal import modal_analysis
from mbdcore.models.mechanisms import two_link_arm


def ancf_arm(n_elements=2, ea=1e4):
    return two_link_arm(lambda n, L, ra, ei, at: ANCFBeam(
        n, at, (at[0] + L, at[1]), n_elements, ra, ei, ea))


def joint_angle_gap(scale, t_end=1.2):
    """max |theta_ANCF - theta_minimal| [rad] over the bang-bang case with torques x scale,
    for the minimal model with the second-order kinematics."""
    torque = lambda t: [scale * u for u in bang_bang_torque(t)]
    r = simulate(ancf_arm(), t_end, 4e-4, "rk4", record_every=25,
                 inputs=lambda t: dict(zip(("tau1", "tau2"), torque(t))))
    _, x = FlexibleManipulator(n_modes=4, kinematics="second-order").simulate(torque, t_end,
                                                                              1e-4)
    gap1 = np.abs(r["hub1.phi"] - x[::100, 0]).max()
    gap2 = np.abs(r["rotor.phi"] - r["stator.phi"] - x[::100, 1]).max()
    return max(gap1, gap2), np.abs(x[:, 0]).max()


def test_ancf_arm_has_the_frequencies_of_the_minimal_model():
    arm = FlexibleManipulator(n_modes=4)
    M = arm.mass_matrix(np.zeros(arm.n_dof))
    w2 = np.sort(np.linalg.eigvals(np.linalg.solve(M, arm.K)).real)
    expected = np.sqrt(np.abs(w2[2:5])) / (2 * np.pi)          # first three flexible modes
    f = modal_analysis(ancf_arm(n_elements=4), n_modes=5).frequencies[2:5]
    np.testing.assert_allclose(f, expected, rtol=1e-5)


@pytest.mark.slow
def test_ancf_arm_matches_the_minimal_model_and_the_gap_is_geometric_nonlinearity():
    """In the linear regime (torques x 0.1) the joint angles agree to 1e-5 rad.  At the
    open-loop torques of docs/benchmarks.md §1 (load case 1a) link 1 bends by 6 cm (12 %
    of its length) and the models differ by about 3e-3 rad after 1.2 s: the gap grows as
    the cube of the amplitude, the order of the terms the assumed-mode model leaves out
    (it keeps the kinetic energy to second order in the deflection, with linear
    curvature and slope, where ANCF is exact) -- a modelling difference, not a
    discretisation error (the ANCF result does not change from 2 to 4 elements per
    link)."""
    small, amp_small = joint_angle_gap(0.1)
    assert small < 1e-5 * 1.0 and amp_small > 0.01
    half, _ = joint_angle_gap(0.5)
    full, _ = joint_angle_gap(1.0)
    assert 5.0 < full / half < 11.0 and 60.0 < half / small < 200.0   # ~2^3 and ~5^3
    assert full < 5e-3


@pytest.mark.slow
def test_exact_kinematics_close_the_gap_to_the_ancf_arm():
    """At the open-loop torques (load case 1a, link 1 bent by 6 cm) the ANCF arm
    (4 elements per link, generalized-alpha at h = 2.5e-4 s; 8 elements give the same to
    1e-5 rad) and the minimal-coordinate arm with exact inextensible kinematics agree to
    3e-4 rad in both joint angles over 1.2 s, and the gap converges in the number of
    modes; the second-order kinematics stay about 4e-3 rad off."""
    torque = lambda t: list(bang_bang_torque(t))
    r = simulate(ancf_arm(n_elements=4), 1.2, 2.5e-4, "generalized-alpha", record_every=40,
                 inputs=lambda t: dict(zip(("tau1", "tau2"), torque(t))))
    ancf = np.column_stack([r["hub1.phi"], r["rotor.phi"] - r["stator.phi"]])

    def gap(kinematics, n_modes):
        _, x = FlexibleManipulator(n_modes=n_modes, kinematics=kinematics).simulate(
            torque, 1.2, 1e-4)
        return np.abs(x[::100, :2] - ancf).max()

    exact = [gap("exact", n) for n in (2, 3, 4)]
    assert exact[-1] < 3e-4
    assert abs(exact[2] - exact[1]) < 0.1 * abs(exact[1] - exact[0])   # converged in modes
    assert gap("second-order", 4) > 10 * exact[-1]


@pytest.mark.slow
def test_declared_torque_jumps_let_the_ancf_arm_converge_in_the_elements():
    """Open loop, generalized-alpha at h = 4 ms, joint angles every 20 ms against 16
    elements per link at the same h (so what is left is the spatial error; about 30 s).
    With the jumps of the bang-bang torques declared (``breakpoints``: the integrator
    restarted there) the error falls from 1.4e-5 rad (4 elements) to 3.6e-7 rad (8);
    without them generalized-alpha carries its pre-jump acceleration across 0.3 s and
    0.6 s and the error is 2e-3 rad, O(h), whatever the elements (bench/breakpoints.py)."""
    def angles(n_elements, declared):
        r = simulate(ancf_arm(n_elements), 1.2, 4e-3, "generalized-alpha", record_every=5,
                     sparse=False,
                     inputs=lambda t: dict(zip(("tau1", "tau2"), bang_bang_torque(t))),
                     breakpoints=bang_bang_torque.breakpoints if declared else None)
        return np.column_stack([r["hub1.phi"], r["rotor.phi"] - r["stator.phi"]])
    ref = angles(16, True)
    coarse, fine = (np.abs(angles(n, True) - ref).max() for n in (4, 8))
    assert fine < 1e-6 and coarse > 20 * fine
    assert np.abs(angles(8, False) - ref).max() > 1e-3
