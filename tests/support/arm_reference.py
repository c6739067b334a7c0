"""The two-link flexible arm's equations of motion in numpy, point by point, from the
arm's table: an independent check of arm.c, which sums each link's inertia once per
evaluation instead (docs/manipulator.md, "Evaluation").

Every mass point (the Gauss points of each link, the joint-2 hub at the tip of link 1,
the payload at the tip of link 2) adds m J^T J to M and m J^T a_q to hq, with J its
velocity Jacobian and a_q the velocity-quadratic part of its acceleration; the rotors add
J_r c c^T.  The link kinematics are written here from their definitions (cumulative
segment quadratures of cos and sin of the slope for the exact kinematics; the
foreshortening matrices for the second order), with numpy's cos and sin.
"""
from __future__ import annotations

import numpy as np

from mbdcore.models.manipulator import arm_layout

__all__ = ["arm_eom_reference", "arm_outputs_reference"]


def _perp(v):
    """E v: v turned by +90 degrees (rows of points)."""
    return np.stack([-v[..., 1], v[..., 0]], axis=-1)


def _link_points(f: dict, link: int, d, dd):
    """s, s', a_q (P x 2) and ds/d(delta) (P x 2 x N) in the link's frame at its Gauss
    points and its tip (the last row)."""
    nm, nq = f["nm"], f[f"nq{link}"]
    if f["exact"]:
        m = f["m_seg"]
        w = f[f"wseg{link}"].reshape(nq + 1, m)
        dphi = f[f"dseg{link}"].reshape(nq + 1, m, nm)
        psi, psid = dphi @ d, dphi @ dd
        wc, ws = w * np.cos(psi), w * np.sin(psi)
        s = np.cumsum(np.stack([wc.sum(1), ws.sum(1)], 1), 0)
        sd = np.cumsum(np.stack([-(ws * psid).sum(1), (wc * psid).sum(1)], 1), 0)
        quad = np.cumsum(np.stack([-(wc * psid**2).sum(1), -(ws * psid**2).sum(1)], 1), 0)
        ds = np.cumsum(np.stack([-np.einsum("pi,pij->pj", ws, dphi),
                                 np.einsum("pi,pij->pj", wc, dphi)], 1), 0)
        return s, sd, quad, ds
    x = np.append(f[f"xq{link}"], f[f"l{link}"])
    phi = np.vstack([f[f"phi{link}"].reshape(nq, nm), np.ones(nm)])   # unit tip shapes
    G = f["fs"] * np.concatenate([f[f"g{link}"].reshape(nq, nm, nm),
                                  f[f"gl{link}"].reshape(1, nm, nm)])
    Gd, Gdd = G @ d, G @ dd
    s = np.stack([x - 0.5 * Gd @ d, phi @ d], 1)
    sd = np.stack([-Gd @ dd, phi @ dd], 1)
    quad = np.stack([-Gdd @ dd, np.zeros_like(x)], 1)
    ds = np.stack([-Gd, phi], 1)
    return s, sd, quad, ds


def arm_eom_reference(table, q, qd):
    """M(q) [kg, kg m, kg m^2 by block], hq(q, q') and the sums of the magnitudes of
    their terms (M_abs, hq_abs: the scale of their round-off) of the arm of ``table``."""
    f = arm_layout().unpack(table)
    nm = f["nm"]
    n = 2 + 2 * nm
    q, qd = np.asarray(q, float), np.asarray(qd, float)
    M, hq, M_abs, hq_abs = np.zeros((n, n)), np.zeros(n), np.zeros((n, n)), np.zeros(n)

    def add(J, a, m):
        nonlocal M, hq, M_abs, hq_abs
        M += m * J.T @ J
        hq += m * J.T @ a
        M_abs += m * np.abs(J).T @ np.abs(J)
        hq_abs += m * np.abs(J).T @ np.abs(a)

    def points(link, frame_rate, masses, J_origin, a_origin, c, col):
        s, sd, quad, ds = _link_points(f, link, q[col:col + nm], qd[col:col + nm])
        for p, m in enumerate(masses):
            J = J_origin + np.outer(_perp(s[p]), c)
            J[:, col:col + nm] += ds[p]
            a = a_origin - frame_rate**2 * s[p] + 2.0 * frame_rate * _perp(sd[p]) + quad[p]
            add(J, a, m)
        return J, a          # of the tip

    c1 = np.zeros(n)
    c1[0] = 1.0
    J1, a1 = points(1, qd[0], np.append(f["wq1"], f["m_h2"]), np.zeros((2, n)),
                    np.zeros(2), c1, 2)
    beta = q[1] + f["dphil1"] @ q[2:2 + nm]
    to_frame2 = np.array([[np.cos(beta), np.sin(beta)], [-np.sin(beta), np.cos(beta)]])
    c2 = np.zeros(n)
    c2[:2] = 1.0
    c2[2:2 + nm] = f["dphil1"]
    points(2, qd[0] + qd[1] + f["dphil1"] @ qd[2:2 + nm], np.append(f["wq2"], f["m_p"]),
           to_frame2 @ J1, to_frame2 @ a1, c2, 2 + nm)

    # rotors: hub 1, stator 2 (turns with the tip slope of link 1), hub 2, payload
    c3 = np.copy(c1)
    c3[2:2 + nm] = f["dphil1"]
    c4 = np.copy(c2)
    c4[2 + nm:] = f["dphil2"]
    for j_r, c in ((f["j_h1"], c1), (f["j_s"], c3), (f["j_h2"], c2), (f["j_p"], c4)):
        M += j_r * np.outer(c, c)
        M_abs += j_r * np.abs(np.outer(c, c))
    return M, hq, M_abs, hq_abs


def arm_outputs_reference(table, x):
    """The arm's outputs (theta1, theta2, omega1, omega2 [rad, rad/s], the tip deflections
    w1, w2 in each link's frame and the end-effector x_tip, y_tip [m]) of state x, from
    every point's kinematics (the tips the last rows)."""
    f = arm_layout().unpack(table)
    nm = f["nm"]
    n = 2 + 2 * nm
    x = np.asarray(x, float)
    zeros = np.zeros(nm)
    s1 = _link_points(f, 1, x[2:2 + nm], zeros)[0][-1]
    s2 = _link_points(f, 2, x[2 + nm:n], zeros)[0][-1]
    phi1, phi2 = x[0], x[0] + x[1] + f["dphil1"] @ x[2:2 + nm]

    def turned(angle, v):
        return np.array([np.cos(angle) * v[0] - np.sin(angle) * v[1],
                         np.sin(angle) * v[0] + np.cos(angle) * v[1]])
    tip = turned(phi1, s1) + turned(phi2, s2)
    return np.array([x[0], x[1], x[n], x[n + 1], s1[1], s2[1], tip[0], tip[1]])
