"""The numpy implementation of the ANCF beam's elastic forces and tangents, as it was
before they moved to C (mbdcore/multibody/native/ancf.c): kept here, in the tests only,
as the reference the compiled kernel must reproduce to round-off.  Each function takes
the beam (``self``) as its first argument; the formulas are those of ancf.py's
docstring."""
import numpy as np



def kinematics(self, qb):
    """a = r', b = r'' at every Gauss point, shape (N, G, 2) each."""
    ab = (self._elements(qb) @ self._B_flat_t).reshape(self.n_elements, -1, 4)
    return ab[..., :2], ab[..., 2:]


def strains(a, b):
    """eps, kappa and their gradients with respect to a and b (see module doc)."""
    g = np.einsum("...i,...i->...", a, a)
    eps = 0.5 * (g - 1.0)
    c = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    g32 = g ** -1.5
    kappa = c * g32
    eb = np.stack((b[..., 1], -b[..., 0]), axis=-1)        # -E b = d(a x b)/da
    ea_ = np.stack((-a[..., 1], a[..., 0]), axis=-1)       #  E a = d(a x b)/db
    k_a = g32[..., None] * eb - (3.0 * kappa / g)[..., None] * a
    k_b = g32[..., None] * ea_
    return g, eps, c, kappa, eb, ea_, k_a, k_b


def stress_vectors(self, qb, vb):
    """Energy-density gradients (with damping) with respect to (a, b), (N, G, 4)."""
    a, b = kinematics(self, qb)
    _, eps, _, kappa, _, _, k_a, k_b = strains(a, b)
    n_ax = self.ea * eps                     # axial force [N]
    m_b = self.ei * kappa                    # bending moment [N m]
    if self.damping and vb is not None:
        ad, bd = kinematics(self, vb)
        eps_d = np.einsum("...i,...i->...", a, ad)
        kap_d = np.einsum("...i,...i->...", k_a, ad) + np.einsum("...i,...i->...", k_b, bd)
        n_ax = n_ax + self.damping * self.ea * eps_d
        m_b = m_b + self.damping * self.ei * kap_d
    return np.concatenate((n_ax[..., None] * a + m_b[..., None] * k_a,
                           m_b[..., None] * k_b), axis=-1)


def internal_forces(self, qb, vb=None):
    """Elastic (and damping) generalised forces -dU/de - Q_d, shape (n_coords,) [N]."""
    s = stress_vectors(self, qb, vb)
    return -self._assemble_vector(s.reshape(self.n_elements, -1) @ self._Bw.reshape(-1, 8))


def element_tangents(self, qb, vb):
    """Element blocks of -dF/dq (K) and -dF/dv (C), each (N, 8, 8)."""
    a, b = kinematics(self, qb)
    g, eps, c, kappa, eb, ea_, k_a, k_b = strains(a, b)
    shape = a.shape[:-1]
    eye = np.eye(2)
    E = np.array([[0.0, -1.0], [1.0, 0.0]])
    outer = np.einsum
    # second derivatives of kappa (kappa_bb = 0)
    g52 = g ** -2.5
    k_aa = (3.0 * g52)[..., None, None] * (outer("...i,...j->...ij", -eb, a)
                                         + outer("...i,...j->...ij", a, -eb)) \
        + (15.0 * kappa / g**2)[..., None, None] * outer("...i,...j->...ij", a, a) \
        - (3.0 * kappa / g)[..., None, None] * eye
    k_ab = -(g ** -1.5)[..., None, None] * E \
        - (3.0 * g52)[..., None, None] * outer("...i,...j->...ij", a, ea_)
    n_ax = self.ea * eps
    m_b = self.ei * kappa
    ad = bd = None
    if self.damping and vb is not None:
        ad, bd = kinematics(self, vb)
        eps_d = np.einsum("...i,...i->...", a, ad)
        kap_d = np.einsum("...i,...i->...", k_a, ad) + np.einsum("...i,...i->...", k_b, bd)
        n_ax = n_ax + self.damping * self.ea * eps_d
        m_b = m_b + self.damping * self.ei * kap_d
    # Hessian of the energy density (Gauss-Newton part + stress part), 4 x 4 per point
    P = np.zeros(shape + (4, 4))
    mat_aa = self.ea * outer("...i,...j->...ij", a, a) \
        + self.ei * outer("...i,...j->...ij", k_a, k_a)
    mat_ab = self.ei * outer("...i,...j->...ij", k_a, k_b)
    mat_bb = self.ei * outer("...i,...j->...ij", k_b, k_b)
    P[..., :2, :2] = mat_aa + n_ax[..., None, None] * eye + m_b[..., None, None] * k_aa
    P[..., :2, 2:] = mat_ab + m_b[..., None, None] * k_ab
    P[..., 2:, :2] = np.swapaxes(mat_ab, -1, -2) \
        + m_b[..., None, None] * np.swapaxes(k_ab, -1, -2)
    P[..., 2:, 2:] = mat_bb
    Cp = None
    if ad is not None:
        beta = self.damping
        # d(eps')/da = a', d(kappa')/d(a, b) = (k_aa a' + k_ab b', k_ba a')
        kd_a = np.einsum("...ij,...j->...i", k_aa, ad) + np.einsum("...ij,...j->...i",
                                                                   k_ab, bd)
        kd_b = np.einsum("...ji,...j->...i", k_ab, ad)
        P[..., :2, :2] += beta * (self.ea * outer("...i,...j->...ij", a, ad)
                                  + self.ei * outer("...i,...j->...ij", k_a, kd_a))
        P[..., :2, 2:] += beta * self.ei * outer("...i,...j->...ij", k_a, kd_b)
        P[..., 2:, :2] += beta * self.ei * outer("...i,...j->...ij", k_b, kd_a)
        P[..., 2:, 2:] += beta * self.ei * outer("...i,...j->...ij", k_b, kd_b)
        Cp = np.zeros(shape + (4, 4))
        Cp[..., :2, :2] = mat_aa
        Cp[..., :2, 2:] = mat_ab
        Cp[..., 2:, :2] = np.swapaxes(mat_ab, -1, -2)
        Cp[..., 2:, 2:] = mat_bb
        Cp *= beta
    # element matrices: sum_g w_g B_g^T P B_g
    n_el = self.n_elements
    W = np.einsum("gik,gjl->gijkl", self._Bw, self._B).reshape(-1, 64)
    k_el = (P.reshape(n_el, -1) @ W).reshape(n_el, 8, 8)
    c_el = None if Cp is None else (Cp.reshape(n_el, -1) @ W).reshape(n_el, 8, 8)
    return k_el, c_el

