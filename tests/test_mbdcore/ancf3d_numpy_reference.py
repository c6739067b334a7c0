"""A numpy implementation of the spatial ANCF cable's elastic forces and tangents, the
reference the compiled element loop (mbdcore/spatial/native/ancf3d.c) must reproduce to
round-off.  It is written differently from the C on purpose: index notation with the
Levi-Civita symbol, the Hessian of every curvature component built as a tensor, and the
element matrices as B^T P B over all elements and Gauss points at once.  The formulas
are those of docs/spatial.md:

    eps = (a.a - 1)/2,  k_i = h c_i,  c_i = E_ijk a_j b_k,  h = (a.a)^(-3/2)
    n = EA (eps + beta eps'),  m = EI (k + beta k')
"""
import numpy as np

from mbdcore.multibody.ancf import hermite_shape

LEVI = np.zeros((3, 3, 3))
LEVI[0, 1, 2] = LEVI[1, 2, 0] = LEVI[2, 0, 1] = 1.0
LEVI[0, 2, 1] = LEVI[2, 1, 0] = LEVI[1, 0, 2] = -1.0


def strain_maps(cable):
    """B (N, G, 6, 12): the element coordinates to (a, b) at each Gauss point, and the
    weights w_g l_e (N, G) [m]."""
    xi, w = cable._gauss_xi, cable._gauss_w
    B = []
    for length in cable.element_lengths:
        d1 = hermite_shape(xi, length, 1)
        d2 = hermite_shape(xi, length, 2)
        B.append(np.concatenate([np.einsum("gk,ij->gikj", d1, np.eye(3)),
                                 np.einsum("gk,ij->gikj", d2, np.eye(3))],
                                axis=1).reshape(xi.size, 6, 12))
    return np.array(B), np.outer(cable.element_lengths, w)


def curvature_derivatives(a, b):
    """k (..., 3), its gradient K = dk/d(a, b) (..., 3, 6) and Hessians H (..., 3, 6, 6)."""
    g = np.einsum("...i,...i->...", a, a)
    h = g ** -1.5
    c = np.einsum("ijk,...j,...k->...i", LEVI, a, b)
    k = h[..., None] * c
    hj = -3.0 * g[..., None] ** -2.5 * a                                # dh/da
    hjl = 15.0 * g[..., None, None] ** -3.5 * np.einsum("...j,...l->...jl", a, a) \
        - 3.0 * g[..., None, None] ** -2.5 * np.eye(3)                   # d2h/da2
    dc_da = np.einsum("ijk,...k->...ij", LEVI, b)                       # E_ijk b_k
    dc_db = np.einsum("ijk,...j->...ik", LEVI, a)                       # E_ijk a_j
    K = np.concatenate([h[..., None, None] * dc_da + np.einsum("...i,...j->...ij", c, hj),
                        h[..., None, None] * dc_db], axis=-1)
    H = np.zeros(a.shape[:-1] + (3, 6, 6))
    H[..., :3, :3] = np.einsum("...i,...jl->...ijl", c, hjl) \
        + np.einsum("...il,...j->...ijl", dc_da, hj) + np.einsum("...ij,...l->...ijl", dc_da, hj)
    H_ab = np.einsum("...l,ijk,...j->...ilk", hj, LEVI, a) + h[..., None, None, None] * LEVI
    H[..., :3, 3:] = H_ab
    H[..., 3:, :3] = np.swapaxes(H_ab, -1, -2)
    return k, K, H


def element_terms(cable, qb, vb):
    """Element forces -dU/de - Q_d (N, 12) and element tangents K_e, C_e (N, 12, 12)
    (C_e None without damping or rates)."""
    B, wl = strain_maps(cable)
    e = cable.element_coordinates(qb)
    x = np.einsum("egij,ej->egi", B, e)                 # (a, b) at every point
    a, b = x[..., :3], x[..., 3:]
    k, K, H = curvature_derivatives(a, b)
    g = np.einsum("...i,...i->...", a, a)
    eps = 0.5 * (g - 1.0)
    ea, ei, beta = cable.ea, cable.ei, cable.damping
    damped = beta > 0.0 and vb is not None
    a0 = np.concatenate([a, np.zeros_like(a)], axis=-1)       # d eps / d(a, b)
    n_ax, m = ea * eps, ei * k
    if damped:
        xd = np.einsum("egij,ej->egi", B, cable.element_coordinates(vb))
        n_ax = n_ax + beta * ea * np.einsum("...i,...i->...", a0, xd)
        m = m + beta * ei * np.einsum("...ij,...j->...i", K, xd)
    s = n_ax[..., None] * a0 + np.einsum("...ij,...i->...j", K, m)
    P = ea * np.einsum("...i,...j->...ij", a0, a0) + ei * np.einsum("...ri,...rj->...ij", K, K)
    Cp = beta * P if damped else None
    P = P + np.einsum("...i,...ijl->...jl", m, H)
    P[..., :3, :3] += n_ax[..., None, None] * np.eye(3)
    if damped:
        D = np.einsum("...rij,...j->...ri", H, xd)            # d k' / d(a, b)
        P = P + beta * (ea * np.einsum("...i,...j->...ij", a0, xd * (np.arange(6) < 3))
                        + ei * np.einsum("...ri,...rj->...ij", K, D))
    f_el = -np.einsum("eg,egij,egi->ej", wl, B, s)
    k_el = np.einsum("eg,egri,egrs,egsj->eij", wl, B, P, B)
    c_el = None if Cp is None else np.einsum("eg,egri,egrs,egsj->eij", wl, B, Cp, B)
    return f_el, k_el, c_el


def internal_forces(cable, qb, vb=None):
    """-dU/de - Q_d, shape (n_coords,) [N]."""
    return cable._assemble_vector(element_terms(cable, qb, vb)[0])
