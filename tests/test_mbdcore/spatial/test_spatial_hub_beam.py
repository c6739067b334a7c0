"""The hub-beam spin-up in 3D (issue 14, ANCF 3D acceptance): the spatial engine's
rigid hub on a hinge, its angle driver and an ANCF cable clamped to it
(``mbdcore.models.spatial_mechanisms.hub_beam_3d``) against the planar engine's ANCF
hub-beam (``mbdcore.models.mechanisms.hub_beam``) over the first seconds of the
Omega = 6 rad/s spin-up (Kane, Ryan & Banerjee 1987), same elements, step and method."""
import numpy as np
import pytest

from mbdcore.dae.simulate import simulate
from mbdcore.models.mechanisms import hub_beam
from mbdcore.models.spatial_mechanisms import hub_beam_3d
from mbdcore.multibody.ancf import ANCFBeam

T, H, N_EL = 2.0, 2.5e-3, 4


@pytest.fixture(scope="module")
def planar():
    s = hub_beam(lambda nm, L, ra, ei, ea: ANCFBeam(nm, (0.0, 0.0), (L, 0.0), N_EL, ra, ei,
                                                    ea), 6.0)
    r = simulate(s, T, H, "generalized-alpha", rho_inf=0.8)
    beam = s.body("beam")
    tips = np.array([s.view(q, np.zeros_like(q))[beam].point(beam.markers["tip"])[0]
                     for q in r.q])
    deflection = np.array([beam.tip_deflection(q[beam.index:beam.index + beam.n_coords])
                           for q in r.q])
    return r, tips, deflection


def _spatial(axis):
    s = hub_beam_3d(6.0, N_EL, axis=axis)
    r = simulate(s, T, H, "generalized-alpha", rho_inf=0.8)
    beam = s.body("beam")
    sl = slice(beam.index, beam.index + beam.n_coords)
    tips = np.array([s.view(q, np.zeros_like(q))[beam].point(beam.markers["tip"])[0]
                     for q in r.q])
    deflection = np.array([beam.tip_deflection(q[sl]) for q in r.q])
    return s, r, tips, deflection


def test_spin_up_about_z_is_the_planar_engines_to_1e_6_m(planar):
    r2, tips2, defl2 = planar
    s, r3, tips3, _ = _spatial((0.0, 0.0, 1.0))
    assert np.array_equal(r3.t, r2.t)
    assert np.ptp(defl2) > 0.1                     # the beam really bends (m)
    err = np.abs(tips3[:, :2] - tips2).max()
    print(f"3D vs planar tip, 0-{T:g} s: {err:.2e} m")
    assert err < 1e-6
    assert np.abs(tips3[:, 2]).max() < 1e-12       # it stays in its plane


def test_spin_up_about_a_tilted_axis_bends_as_the_planar_one(planar):
    """The hinge axis along (1, 1, 1): every coordinate moves; the transverse tip
    deflection (in the frame of the root) has the planar run's size, and stays normal
    to the axis, the constraint rows hold."""
    _, _, defl2 = planar
    axis = np.ones(3) / np.sqrt(3.0)
    s, r3, tips3, defl3 = _spatial(axis)
    size = np.linalg.norm(defl3, axis=1)
    err = np.abs(size - np.abs(defl2)).max()
    print(f"tilted axis: |tip deflection| vs planar {err:.2e} m; "
          f"axial part {np.abs(defl3 @ axis).max():.1e} m")
    assert err < 1e-6
    assert np.abs(defl3 @ axis).max() < 1e-9
    assert np.ptp(tips3, axis=0).min() > 1e-3       # the tip moves along x, y and z
    g = np.array([s.all_constraints(t, q) for t, q in zip(r3.t, r3.q)])
    assert np.abs(g).max() < 1e-9
