"""The checks every compiled element loop of the ANCF bodies, planar and spatial, must
pass: its forces and element blocks equal an independent numpy reference to round-off,
its tangents are the derivatives of its forces, its forces the gradient of its strain
energy; and the momenta of a free spatial body, conserved in a motion without loads.
Shared by the planar and spatial ANCF tests."""
import numpy as np

__all__ = ["assert_equals_reference", "assert_tangents_are_derivatives",
           "assert_forces_are_energy_gradient", "momenta"]


def assert_equals_reference(computed, reference, damped: bool, rel: float = 1e-12):
    """``computed`` and ``reference`` are (f, k_el, c_el): forces and element blocks of K
    and C.  Each equals the reference to ``rel`` of the reference's largest entry; without
    damping neither side has a C."""
    f, k_el, c_el = computed
    f_ref, k_ref, c_ref = reference
    np.testing.assert_allclose(f, f_ref, rtol=0, atol=rel * np.abs(f_ref).max())
    np.testing.assert_allclose(k_el, k_ref, rtol=0, atol=rel * np.abs(k_ref).max())
    if damped:
        np.testing.assert_allclose(c_el, c_ref, rtol=0, atol=rel * np.abs(c_ref).max())
    else:
        assert c_el is None and c_ref is None


def assert_tangents_are_derivatives(body, q, v, columns, damped: bool, rel: float,
                                    h: float = 1e-6):
    """The dense tangents K = -dF/dq and (if ``damped``) C = -dF/dv of ``body`` in the
    given ``columns`` equal central differences of its internal forces with step ``h``,
    to ``rel`` of the matrix's largest entry.  Returns (K, C)."""
    K, C = body.tangent_matrices(q, v, sparse=False)
    for j in columns:
        dq = np.zeros(q.size)
        dq[j] = h
        fd = -(body.internal_forces(q + dq, v) - body.internal_forces(q - dq, v)) / (2 * h)
        np.testing.assert_allclose(K[:, j], fd, rtol=0, atol=rel * np.abs(K).max())
        if damped:
            fd = -(body.internal_forces(q, v + dq) - body.internal_forces(q, v - dq)) / (2 * h)
            np.testing.assert_allclose(C[:, j], fd, rtol=0, atol=rel * np.abs(C).max())
    return K, C


def assert_forces_are_energy_gradient(body, q, rel: float = 1e-7, h: float = 1e-6):
    """The elastic forces of ``body`` at rest are minus the gradient of its strain
    energy (central differences, step ``h``), to ``rel`` of the largest entry."""
    grad = np.array([(body.strain_energy(q + h * e) - body.strain_energy(q - h * e)) / (2 * h)
                     for e in np.eye(q.size)])
    np.testing.assert_allclose(body.internal_forces(q), -grad, atol=rel * np.abs(grad).max())


def momenta(body, qs, vs):
    """Linear momentum p = sum over the positions of (M e')_k and angular momentum about
    the origin L = sum_kl m_kl e_k x e'_l over all the vectors of each state (qs[i],
    vs[i]) of a spatial ANCF body (its nodes 3-vectors, positions first; m the scalar
    mass of the vectors): arrays (n, 3) each [kg m/s, kg m^2/s]."""
    m = body.mass_matrix()[0::3, 0::3]
    stride = body.node_size // 3

    def one(q, v):
        e, ed = np.reshape(q, (-1, 3)), np.reshape(v, (-1, 3))
        return (m @ ed)[0::stride].sum(axis=0), np.cross(e, m @ ed).sum(axis=0)

    p, ang = zip(*(one(q, v) for q, v in zip(qs, vs)))
    return np.array(p), np.array(ang)
