"""The deployable ring truss, rigid part (issue 14 items 5-6, docs/ring_truss.md):
geometry and mobility, synchronous deployment with gears, asynchronous without, the
drive locking the truss at its aperture, energy conservation, bad input, the picture."""
import math

import numpy as np
import pytest

from mbdcore.blocks import ParameterError
from mbdcore.dae.index1 import assemble
from mbdcore.dae.simulate import simulate
from mbdcore.models.ring_truss import (
    DeploymentRateController,
    add_deployment_driver,
    plot_configuration,
    ring_truss,
    smooth_deployment_motion,
    write_animation,
)
from mbdcore.multibody.forces import TranslationalSpringDamper


def _spread(truss, result) -> float:
    th = np.array([truss.bay_angles(q) for q in result.q])
    return float(np.abs(th - th[:, :1]).max())


@pytest.mark.parametrize("n_bays", [4, 6])
def test_geometry_constraints_and_mobility(n_bays):
    """Deployed: the verticals on the designed circle (1e-12 m); every constraint holds
    folded and deployed; mobility 1 with gears, N - 3 without (N bay angles, 3
    loop-closure conditions), N - 1 at the deployed (singular) state without gears."""
    geared = ring_truss(n_bays=n_bays, drive=False, latch=False)
    free = ring_truss(n_bays=n_bays, gears=False, drive=False, latch=False)
    report = []
    for truss, expected in ((geared, 1), (free, n_bays - 3)):
        for theta in (truss.theta0, 1.1, math.pi / 2):
            q = truss.coordinates(theta)
            violation = np.abs(truss.system.all_constraints(0.0, q)).max()
            assert violation < 1e-10
            mobility = truss.structure_mobility(q)
            deployed = theta == math.pi / 2
            want = expected if (truss.gears or not deployed) else n_bays - 1
            assert mobility == want
            # the solvers' rows (dependent ones removed) keep full rank
            G = truss.system.constraint_jacobian(0.0, q)
            if truss.gears or not deployed:
                assert np.linalg.matrix_rank(G) == truss.system.m
            report.append(f"gears={truss.gears} theta={theta:.3f}: violation "
                          f"{violation:.1e}, mobility {mobility}")
    q = geared.coordinates(math.pi / 2)
    error = geared.aperture_error(q)
    print(f"N = {n_bays}: deployed aperture {geared.aperture_diameter(q):.15f} m, error "
          f"{error:.1e} m; rows {geared.system.m} of {len(geared.system.all_equation_names())}"
          "; " + "; ".join(report))
    assert error < 1e-12
    assert geared.deployment_ratio(q) == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(geared.bay_angles(q), math.pi / 2, atol=1e-12)
    # a synchronous fold: radius R sin(theta)
    q = geared.coordinates(0.8)
    assert geared.deployment_ratio(q) == pytest.approx(math.sin(0.8), abs=1e-12)
    assert np.allclose(geared.diagonal_lengths(geared.coordinates(math.pi / 2)),
                       geared.deployed_diagonal, atol=1e-12)


def test_gears_keep_the_bay_angles_equal_in_a_driven_deployment():
    """Six bays, one hinge driven from 0.9 rad to 1.5 rad in 1 s: every bay angle
    follows to 1e-8 rad, the driven one the prescribed motion."""
    truss = ring_truss(n_bays=6, drive=False, latch=False, folded_angle=0.9)
    motion = smooth_deployment_motion(0.9, 1.5, 1.0)
    add_deployment_driver(truss, motion)
    r = simulate(truss.system, 1.0, 0.02, "generalized-alpha", sparse=True)
    spread = _spread(truss, r)
    th = np.array([truss.bay_angles(q) for q in r.q])
    follow = np.abs(th[:, 0] - 0.9 - np.array([motion(t)[0] for t in r.t])).max()
    print(f"geared 6 bays, driven: bay-angle spread {spread:.2e} rad, driven bay off its "
          f"motion by {follow:.2e} rad, final {th[-1, 0]:.6f} rad")
    assert spread < 1e-8
    assert follow < 1e-8


def _pushed(gears: bool):
    """Six bays pushed open by near-constant forces along the diagonals (soft springs
    compressed by 1 m), the push in bay 0 20 % larger."""
    truss = ring_truss(n_bays=6, gears=gears, drive=False, latch=False, folded_angle=1.0)
    lengths = truss.diagonal_lengths(truss.coordinates(1.0))
    for k in range(6):
        a, b = truss.diagonal_ends(k)
        truss.system.add_force(TranslationalSpringDamper(
            f"vertical{k}.{a}", f"vertical{(k + 1) % 6}.{b}", (1.2 if k == 0 else 1.0) * 20.0,
            rest_length=lengths[k] + 1.0, name=f"push{k}"))
    return truss


def test_without_gears_an_asymmetric_push_deploys_asynchronously():
    """The same asymmetric push (bay 0's 20 % stronger) over 0.6 s: with gears the bay
    angles stay equal (1e-8 rad); without them they part measurably (measured 0.24 rad;
    asserted > 1e-3 rad)."""
    spreads = {}
    for gears in (True, False):
        truss = _pushed(gears)
        r = simulate(truss.system, 0.6, 0.02, "generalized-alpha", sparse=True)
        spreads[gears] = _spread(truss, r)
        assert max(np.abs(truss.system.all_constraints(0.0, q)).max() for q in r.q) < 1e-10
    print(f"asymmetric push, 0.6 s: bay-angle spread {spreads[True]:.2e} rad with gears, "
          f"{spreads[False]:.2e} rad without")
    assert spreads[True] < 1e-8
    assert spreads[False] > 1e-3


def test_drive_deploys_and_the_latches_lock_the_designed_aperture():
    """Four bays from 1.52 rad, the motors under the deployment-rate PI: every diagonal
    latches, the motors are switched off, and after settling the aperture is the
    designed one to 1e-6 m (measured 2e-9 m: the latch, 1e7 N/m, holds the residual
    screw push; 1e-6 m is the diagonal's deflection under 10 N, the Coulomb friction
    torque of a motor reflected through the screw, 0.02 N m / 5e-4 m/rad = 40 N, with
    margin for its geometric amplification)."""
    truss = ring_truss(n_bays=4, folded_angle=1.52)
    control = DeploymentRateController(truss, rate=0.05, kp=2000.0, ki=2.0e4)
    # without the geometric terms of the Newton matrix (differenced per joint, 80 % of a
    # step here): the same iterations per step at a quarter of the cost
    r = simulate(truss.system, 1.2, 0.02, "generalized-alpha", sparse=True, feedback=control,
                 rho_inf=0.6, iteration="newton", geometric_stiffness=False)
    latches = [f for f in truss.system.forces_list if f.kind == "latch"]
    times = [f.latch_time for f in latches]
    error = truss.aperture_error(r.q[-1])
    currents = np.array([truss.motor_currents(v) for v in r.v])
    print(f"latched at {times} s; aperture error {error:.2e} m; deployment ratio "
          f"{truss.deployment_ratio(r.q[-1]):.9f}; peak current {np.abs(currents).max():.3f} A")
    assert all(t is not None for t in times)
    assert error < 1e-6
    assert _spread(truss, r) < 1e-8


def test_free_deployment_conserves_energy_to_second_order():
    """No drive, no damping, no gravity: the geared truss opened at 0.5 rad/s coasts
    (its kinetic energy is its only energy).  Generalized-alpha (rho_inf = 1) at two
    steps: the energy error falls at the method's second order (measured 1.8e-4 at
    40 ms, 4.6e-5 at 20 ms: factor 4.0)."""
    drifts = []
    for h in (0.04, 0.02):
        truss = ring_truss(n_bays=4, drive=False, latch=False, folded_angle=0.8)
        v0 = truss.coordinate_rates(0.8, 0.5)
        r = simulate(truss.system, 0.8, h, "generalized-alpha", rho_inf=1.0,
                     v0=v0, sparse=True)
        E = np.array([truss.system.energy(t, q, v) for t, q, v in zip(r.t, r.q, r.v)])
        drifts.append(np.abs(E - E[0]).max() / E[0])
        opened = truss.bay_angles(r.q[-1])[0]
    print(f"free deployment: relative energy drift {drifts[0]:.2e} (h = 40 ms), "
          f"{drifts[1]:.2e} (h = 20 ms); bay angle 0.8 -> {opened:.3f} rad")
    assert opened > 1.0
    assert drifts[1] < 1e-4
    assert drifts[1] < 1e-12 or math.log2(drifts[0] / drifts[1]) > 1.8


@pytest.mark.parametrize("params, match", [
    ({"n_bays": 5}, "'n_bays' = 5 .*even integers in \\[4, 100\\]"),
    ({"n_bays": 2}, "'n_bays' = 2 .*\\[4, 100\\]"),
    ({"aperture": 0.0}, "'aperture' = 0.0 .*\\(0.0, inf\\)"),
    ({"height": -1.0}, "'height' = -1.0 .*\\(0.0, inf\\)"),
    ({"folded_angle": 2.0}, "'folded_angle' = 2.0"),
    ({"wall": 0.02}, "'wall' = 0.02 .*tube_diameter/2"),
    ({"density": -3}, "'density'"),
    ({"bays": 6}, "unknown ring truss parameter"),
])
def test_bad_input_names_the_parameter_and_its_range(params, match):
    with pytest.raises(ParameterError, match=match):
        ring_truss(**params)


def test_folded_angle_below_what_the_diagonal_holds_is_refused():
    with pytest.raises(ParameterError, match="'folded_angle' = 0.01 .*accepted values are in"):
        ring_truss(n_bays=48, folded_angle=0.01)


def test_picture_draws_every_member_and_the_animation_is_a_gif(tmp_path):
    """plot_configuration: one line per member (a vertical, two horizontals, two
    diagonal tubes per bay) ending at the members' points; write_animation: a GIF."""
    truss = ring_truss(n_bays=4, drive=False, latch=False)
    q = truss.coordinates(1.2)
    ax = plot_configuration(truss, q)
    lines = ax.get_lines()
    assert len(lines) == 5 * truss.n_bays
    for line, (a, b) in zip(lines, truss.bars(q)):
        x, y, z = line.get_data_3d()
        assert np.allclose([x[0], y[0], z[0]], a) and np.allclose([x[1], y[1], z[1]], b)
    assert ax.get_xlabel() == "x [m]" and ax.get_zlabel() == "z [m]"
    path = tmp_path / "truss.gif"
    pytest.importorskip("PIL")
    assert write_animation(truss, [0.0, 1.0], [q, truss.coordinates(1.5)], path, fps=2)
    assert path.read_bytes()[:4] == b"GIF8"


def test_pictures_in_a_row_keep_their_z_labels_in_view():
    """Three pictures side by side, as the deployment example draws them: every z label
    lies inside the figure and on no other picture (it was cut by the next picture and,
    for the last, by the figure's edge)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    truss = ring_truss(n_bays=4, drive=False, latch=False)
    fig = Figure(figsize=(13, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, 3, i + 1, projection="3d") for i in range(3)]
    for ax, angle in zip(axes, (1.2, 1.4, 1.5)):
        plot_configuration(truss, truss.coordinates(angle), ax)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in axes:
        label = ax.zaxis.label.get_window_extent(renderer)
        assert ax.get_zlabel() == "z [m]" and label.width > 0
        assert fig.bbox.x0 <= label.x0 and label.x1 <= fig.bbox.x1
        assert fig.bbox.y0 <= label.y0 and label.y1 <= fig.bbox.y1
        others = [b.get_window_extent(renderer) for b in axes if b is not ax]
        assert not any(label.overlaps(box) for box in others)


def test_consistent_initial_conditions_from_a_rough_folded_guess():
    """The DAE drivers' assembly (least-squares position projection, then velocities)
    takes a perturbed folded configuration onto the constraints: the geared truss
    comes out synchronous, near the guessed bay angle."""
    truss = ring_truss(n_bays=6, drive=False, latch=False, folded_angle=0.7)
    s = truss.system
    rng = np.random.default_rng(5)
    q, v = assemble(s, 0.0, truss.coordinates(0.7) + rng.normal(scale=1e-3, size=s.n),
                    rng.normal(scale=0.1, size=s.n))
    th = truss.bay_angles(q)
    assert np.abs(s.all_constraints(0.0, q)).max() < 1e-10
    assert np.abs(s.constraint_jacobian(0.0, q) @ v).max() < 1e-10
    assert np.ptp(th) < 1e-8 and abs(th[0] - 0.7) < 1e-2
