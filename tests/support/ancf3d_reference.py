"""A numpy implementation of the spatial ANCF cable's elastic forces and tangents, the
reference the compiled element loop (mbdcore/spatial/native/ancf3d.c) must reproduce to
round-off.  It is written differently from the C on purpose: index notation with the
Levi-Civita symbol, the Hessian of every curvature component built as a tensor, and the
element matrices as B^T P B over all elements and Gauss points at once.  The formulas
are those of docs/spatial.md:

    eps = (a.a - 1)/2,  k_i = h c_i,  c_i = E_ijk a_j b_k,  h = (a.a)^(-3/2)
    n = EA (eps + beta eps'),  m = EI (k + beta k')

and for a tension-only cable n = max(0, EA (eps + beta eps')) above its floor strain
eps_f and min(0, EA (eps - eps_f + beta eps')) below: written here as a mask of the
points that carry an axial force multiplying every axial term, and a shift of the
strain at the floor.
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
    # the axial stiffness at each point: EA where the axial stress pulls, 0 where a
    # tension-only cable is slack
    if cable.tension_only:
        floor = n_ax - ea * cable.floor_strain < 0.0
        taut = (n_ax > 0.0) | floor
        n_ax = np.where(floor, n_ax - ea * cable.floor_strain, n_ax)
    else:
        taut = np.ones(n_ax.shape, bool)
    ea_t = np.where(taut, ea, 0.0)
    n_ax = np.where(taut, n_ax, 0.0)
    s = n_ax[..., None] * a0 + np.einsum("...ij,...i->...j", K, m)
    P = ea_t[..., None, None] * np.einsum("...i,...j->...ij", a0, a0) \
        + ei * np.einsum("...ri,...rj->...ij", K, K)
    Cp = beta * P if damped else None
    P = P + np.einsum("...i,...ijl->...jl", m, H)
    P[..., :3, :3] += n_ax[..., None, None] * np.eye(3)
    if damped:
        D = np.einsum("...rij,...j->...ri", H, xd)            # d k' / d(a, b)
        P = P + beta * (ea_t[..., None, None] * np.einsum("...i,...j->...ij", a0,
                                                          xd * (np.arange(6) < 3))
                        + ei * np.einsum("...ri,...rj->...ij", K, D))
    f_el = -np.einsum("eg,egij,egi->ej", wl, B, s)
    k_el = np.einsum("eg,egri,egrs,egsj->eij", wl, B, P, B)
    c_el = None if Cp is None else np.einsum("eg,egri,egrs,egsj->eij", wl, B, Cp, B)
    return f_el, k_el, c_el


def internal_forces(cable, qb, vb=None):
    """-dU/de - Q_d, shape (n_coords,) [N]."""
    return cable._assemble_vector(element_terms(cable, qb, vb)[0])


# --- the fully parameterised beam ---------------------------------------------------------
def beam_slot_maps(beam):
    """Bs (N, G, 6, 8): the Gauss slots (r_x, r_xx, d2, d2', d3, d3') as combinations of
    the element's 8 nodal vectors (r, r_x, r_y, r_z at A, then at B)."""
    xi = beam._gauss_xi
    out = np.zeros((beam.n_elements, xi.size, 6, 8))
    for e, length in enumerate(beam.element_lengths):
        d1, d2 = hermite_shape(xi, length, 1), hermite_shape(xi, length, 2)
        out[e, :, 0][:, [0, 1, 4, 5]] = d1
        out[e, :, 1][:, [0, 1, 4, 5]] = d2
        for slot, vec in ((2, 2), (4, 3)):
            out[e, :, slot, vec], out[e, :, slot, vec + 4] = 1.0 - xi, xi
            out[e, :, slot + 1, vec], out[e, :, slot + 1, vec + 4] = -1.0 / length, 1.0 / length
    return out


def strain_derivatives(table, u):
    """Values s (..., K), gradients g (..., K, S, 3) and Hessians H (..., K, S, 3, S, 3) of
    a StrainTable at slot vectors u (..., S, 3), written with the Levi-Civita symbol."""
    n_slots = u.shape[-2]
    lead = u.shape[:-2]
    K = len(table.names)
    s = np.zeros(lead + (K,))
    g = np.zeros(lead + (K, n_slots, 3))
    H = np.zeros(lead + (K, n_slots, 3, n_slots, 3))
    eye = np.eye(3)
    for k in range(K):
        s[..., k] = table.offset[k]
        for t in range(table.n_terms[k]):
            i, j, m = table.slot_i[2 * k + t], table.slot_j[2 * k + t], table.slot_k[2 * k + t]
            c = table.coefficient[2 * k + t]
            if m < 0:
                s[..., k] += c * np.einsum("...x,...x->...", u[..., i, :], u[..., j, :])
                g[..., k, i, :] += c * u[..., j, :]
                g[..., k, j, :] += c * u[..., i, :]
                H[..., k, i, :, j, :] += c * eye
                H[..., k, j, :, i, :] += c * eye
            else:
                ui, uj, um = u[..., i, :], u[..., j, :], u[..., m, :]
                s[..., k] += c * np.einsum("xyz,...x,...y,...z->...", LEVI, ui, uj, um)
                g[..., k, i, :] += c * np.einsum("xyz,...y,...z->...x", LEVI, uj, um)
                g[..., k, j, :] += c * np.einsum("xyz,...x,...z->...y", LEVI, ui, um)
                g[..., k, m, :] += c * np.einsum("xyz,...x,...y->...z", LEVI, ui, uj)
                for p, q, r in ((i, j, m), (j, i, m), (i, m, j), (m, i, j), (j, m, i),
                                (m, j, i)):
                    # d2/du_p du_q of E_xyz u_i^x u_j^y u_m^z, r the remaining slot
                    order = {i: "x", j: "y", m: "z"}
                    spec = f"xyz,...{order[r]}->...{order[p]}{order[q]}"
                    H[..., k, p, :, q, :] += c * np.einsum(spec, LEVI, u[..., r, :])
    return s, g, H


def beam_element_terms(beam, qb, vb):
    """Element forces (N, 24) and tangents K_e, C_e (N, 24, 24) of the beam."""
    beta = beam.damping
    damped = beta > 0.0 and vb is not None
    e = beam.element_coordinates(qb).reshape(beam.n_elements, 8, 3)
    ed = beam.element_coordinates(vb).reshape(beam.n_elements, 8, 3) if damped else None
    f_el = np.zeros((beam.n_elements, 24))
    k_el = np.zeros((beam.n_elements, 24, 24))
    c_el = np.zeros((beam.n_elements, 24, 24)) if damped else None

    def add(table, Bs, weight, u, ud):
        s, g, H = strain_derivatives(table, u)
        lead = u.shape[:-2]
        S = u.shape[-2]
        g = g.reshape(lead + (len(table.names), 3 * S))
        H = H.reshape(lead + (len(table.names), 3 * S, 3 * S))
        k = table.stiffness
        sd = np.einsum("...kx,...x->...k", g, ud.reshape(lead + (3 * S,))) if damped else 0.0
        sigma = k * (s + beta * sd)
        sg = np.einsum("...k,...kx->...x", sigma, g)
        P = np.einsum("k,...kx,...ky->...xy", k, g, g) + np.einsum("...k,...kxy->...xy", sigma, H)
        Cp = None
        if damped:
            hud = np.einsum("...kxy,...y->...kx", H, ud.reshape(lead + (3 * S,)))
            P = P + beta * np.einsum("k,...kx,...ky->...xy", k, g, hud)
            Cp = beta * np.einsum("k,...kx,...ky->...xy", k, g, g)
        B = np.einsum("...sv,xy->...sxvy", Bs, np.eye(3)).reshape(Bs.shape[:-2] + (3 * S, 24))
        f = np.einsum("...,...xi,...x->...i", weight, B, sg)
        kk = np.einsum("...,...xi,...xy,...yj->...ij", weight, B, P, B)
        cc = None if Cp is None else np.einsum("...,...xi,...xy,...yj->...ij", weight, B, Cp, B)
        return f, kk, cc

    Bs = beam_slot_maps(beam)
    wl = np.outer(beam.element_lengths, beam._gauss_w)
    u = np.einsum("egsv,evx->egsx", Bs, e)
    ud = np.einsum("egsv,evx->egsx", Bs, ed) if damped else None
    f, kk, cc = add(beam.gauss_strains, Bs, wl, u, ud)
    f_el += f.sum(axis=1)
    k_el += kk.sum(axis=1)
    if damped:
        c_el += cc.sum(axis=1)
    for end in range(2):
        Bn = np.zeros((beam.n_elements, 3, 8))
        for slot in range(3):
            Bn[:, slot, 4 * end + 1 + slot] = 1.0
        un = e[:, 4 * end + 1:4 * end + 4]
        udn = ed[:, 4 * end + 1:4 * end + 4] if damped else None
        f, kk, cc = add(beam.nodal_strains, Bn, 0.5 * beam.element_lengths, un, udn)
        f_el += f
        k_el += kk
        if damped:
            c_el += cc
    return -f_el, k_el, c_el
