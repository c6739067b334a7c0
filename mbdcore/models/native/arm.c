/*
 * The two-link flexible arm of mbdcore.models.manipulator in plain C99: its equations of
 * motion, outputs and fixed-step stepping.  This file is the arm's one implementation:
 * Python calls it through ctypes (mbdcore.native), and the C-source FMU compiles it in.
 * The derivation is in docs/manipulator.md and the module docstring of manipulator.py.
 *
 * Everything numeric comes in one table `tab` (packed by FlexibleManipulator.tables()):
 *
 *   [0] n_modes N  [1] n_quad1  [2] n_quad2  [3] fs (1: foreshortening kept, 0: dropped)
 *   [4..11] l1, l2, m_h2, m_p, j_h1, j_h2, j_s, j_p
 *   then for link 1 and link 2: x_q (nq), m_q = rho_A w_q (nq), phi (nq x N),
 *                               G (nq x N x N)
 *   then dphi1(l1) (N), G1(l1) (N x N), dphi2(l2) (N), G2(l2) (N x N), K (n x n), D (n x n)
 *
 * with n = 2 + 2N.  No allocation; arrays are sized for N <= ARM_MAX_MODES.
 */
#include <math.h>
#include <string.h>

#include "fixed_step.h"

#define ARM_MAX_MODES 5
#define ARM_MAX_DOF (2 + 2 * ARM_MAX_MODES)

#ifndef ARM_API
#define ARM_API
#endif

typedef struct {
    int nm, nq1, nq2, n;
    double fs, l1, l2, m_h2, m_p, j_h1, j_h2, j_s, j_p;
    const double *xq1, *wq1, *phi1, *g1, *xq2, *wq2, *phi2, *g2;
    const double *dphil1, *gl1, *dphil2, *gl2, *K, *D;
} Arm;

/* Read the table; returns its length in doubles, or 0 if it is not a valid table. */
static long arm_unpack(const double *tab, Arm *a) {
    const double *p = tab + 12;
    int nm = (int)tab[0], nq1 = (int)tab[1], nq2 = (int)tab[2], n;
    if (nm < 1 || nm > ARM_MAX_MODES || nq1 < 1 || nq2 < 1) return 0;
    n = 2 + 2 * nm;
    a->nm = nm; a->nq1 = nq1; a->nq2 = nq2; a->n = n;
    a->fs = tab[3]; a->l1 = tab[4]; a->l2 = tab[5]; a->m_h2 = tab[6]; a->m_p = tab[7];
    a->j_h1 = tab[8]; a->j_h2 = tab[9]; a->j_s = tab[10]; a->j_p = tab[11];
    a->xq1 = p; p += nq1;
    a->wq1 = p; p += nq1;
    a->phi1 = p; p += nq1 * nm;
    a->g1 = p; p += nq1 * nm * nm;
    a->xq2 = p; p += nq2;
    a->wq2 = p; p += nq2;
    a->phi2 = p; p += nq2 * nm;
    a->g2 = p; p += nq2 * nm * nm;
    a->dphil1 = p; p += nm;
    a->gl1 = p; p += nm * nm;
    a->dphil2 = p; p += nm;
    a->gl2 = p; p += nm * nm;
    a->K = p; p += n * n;
    a->D = p; p += n * n;
    return (long)(p - tab);
}

ARM_API long arm_table_length(const double *tab) {
    Arm a;
    return arm_unpack(tab, &a);
}

/* Floating-frame kinematics of one beam point (docs/manipulator.md): s = (x + u, w) with
   w = phi.d and u = -1/2 d^T G d (times fs); returns s, s' and the velocity-quadratic
   axial acceleration -dd^T G dd; dS (row-major 2 x ld, columns col..col+N-1) gets
   ds/d(delta_j) = (-(G d)_j, phi_j). */
static void frame_point(double x, const double *phi, const double *G, const double *d,
                        const double *dd, double fs, int nm, double *dS, int ld, int col,
                        double *sx, double *sy, double *sdx, double *sdy, double *udd) {
    double u = 0.0, w = 0.0, ud = 0.0, wd = 0.0, q = 0.0;
    int j, k;
    for (j = 0; j < nm; j++) {
        double gd = 0.0, gdd = 0.0;
        for (k = 0; k < nm; k++) {
            gd += G[j * nm + k] * d[k];
            gdd += G[j * nm + k] * dd[k];
        }
        gd *= fs;
        gdd *= fs;
        u -= 0.5 * d[j] * gd;
        ud -= gd * dd[j];
        q -= dd[j] * gdd;
        w += phi[j] * d[j];
        wd += phi[j] * dd[j];
        dS[col + j] = -gd;
        dS[ld + col + j] = phi[j];
    }
    *sx = x + u; *sy = w; *sdx = ud; *sdy = wd; *udd = q;
}

/* M += m J^T J and hq += m J^T a for one mass point (J row-major 2 x n; upper triangle). */
static void add_point(double *M, double *hq, const double *J, double ax, double ay, double m, int n) {
    int a, b;
    for (a = 0; a < n; a++) {
        double ja0 = m * J[a], ja1 = m * J[n + a];
        hq[a] += ja0 * ax + ja1 * ay;
        for (b = a; b < n; b++) M[a * n + b] += ja0 * J[b] + ja1 * J[n + b];
    }
}

static void add_rotor(double *M, const double *c, double jr, int n) {
    int a, b;
    for (a = 0; a < n; a++)
        if (c[a] != 0.0)
            for (b = a; b < n; b++) M[a * n + b] += jr * c[a] * c[b];
}

/* Mass matrix M (n x n, full) and velocity terms hq of M q'' = Q - hq - K q - D q'. */
static void eom(const Arm *A, const double *q, const double *qd, double *M, double *hq) {
    const int nm = A->nm, n = A->n;
    double J[2 * ARM_MAX_DOF], J1l[2 * ARM_MAX_DOF], Jo[2 * ARM_MAX_DOF], c[ARM_MAX_DOF];
    double cphi2[ARM_MAX_DOF], ones[ARM_MAX_MODES];
    const double *d1 = q + 2, *dd1 = qd + 2, *d2 = q + 2 + nm, *dd2 = qd + 2 + nm;
    double th1d = qd[0], sx, sy, sdx, sdy, qx, ax, ay, a1x, a1y;
    double alpha = 0.0, alphad = 0.0, beta, cb, sb, ph2d, aox, aoy, m;
    int p, a, b, j;

    memset(M, 0, sizeof(double) * n * n);
    memset(hq, 0, sizeof(double) * n);
    for (j = 0; j < nm; j++) ones[j] = 1.0;

    /* link 1 (frame 1 components) */
    for (p = 0; p < A->nq1; p++) {
        memset(J, 0, sizeof(double) * 2 * n);
        frame_point(A->xq1[p], A->phi1 + p * nm, A->g1 + p * nm * nm, d1, dd1, A->fs, nm,
                    J, n, 2, &sx, &sy, &sdx, &sdy, &qx);
        J[0] = -sy;
        J[n] = sx;
        ax = -th1d * th1d * sx - 2.0 * th1d * sdy + qx;
        ay = -th1d * th1d * sy + 2.0 * th1d * sdx;
        add_point(M, hq, J, ax, ay, A->wq1[p], n);
    }

    /* tip of link 1 = origin of link 2 (and the joint-2 hub mass) */
    memset(J1l, 0, sizeof(double) * 2 * n);
    frame_point(A->l1, ones, A->gl1, d1, dd1, A->fs, nm, J1l, n, 2, &sx, &sy, &sdx, &sdy, &qx);
    J1l[0] = -sy;
    J1l[n] = sx;
    a1x = -th1d * th1d * sx - 2.0 * th1d * sdy + qx;
    a1y = -th1d * th1d * sy + 2.0 * th1d * sdx;
    add_point(M, hq, J1l, a1x, a1y, A->m_h2, n);

    /* link 2 (frame 2 components) */
    for (j = 0; j < nm; j++) {
        alpha += A->dphil1[j] * d1[j];
        alphad += A->dphil1[j] * dd1[j];
    }
    beta = q[1] + alpha;
    cb = cos(beta);
    sb = sin(beta);
    ph2d = th1d + qd[1] + alphad;
    /* base Jacobian and base quadratic acceleration rotated into frame 2: R(-beta) */
    for (a = 0; a < n; a++) {
        Jo[a] = cb * J1l[a] + sb * J1l[n + a];
        Jo[n + a] = -sb * J1l[a] + cb * J1l[n + a];
    }
    aox = cb * a1x + sb * a1y;
    aoy = -sb * a1x + cb * a1y;
    memset(cphi2, 0, sizeof(double) * n);   /* d(phi_2')/d(q') */
    cphi2[0] = 1.0;
    cphi2[1] = 1.0;
    for (j = 0; j < nm; j++) cphi2[2 + j] = A->dphil1[j];

    for (p = 0; p <= A->nq2; p++) {
        memset(J, 0, sizeof(double) * 2 * n);
        if (p < A->nq2) {
            frame_point(A->xq2[p], A->phi2 + p * nm, A->g2 + p * nm * nm, d2, dd2, A->fs, nm,
                        J, n, 2 + nm, &sx, &sy, &sdx, &sdy, &qx);
            m = A->wq2[p];
        } else {   /* payload at the tip */
            frame_point(A->l2, ones, A->gl2, d2, dd2, A->fs, nm, J, n, 2 + nm,
                        &sx, &sy, &sdx, &sdy, &qx);
            m = A->m_p;
        }
        for (a = 0; a < n; a++) {
            J[a] += Jo[a] - sy * cphi2[a];
            J[n + a] += Jo[n + a] + sx * cphi2[a];
        }
        ax = aox - ph2d * ph2d * sx - 2.0 * ph2d * sdy + qx;
        ay = aoy - ph2d * ph2d * sy + 2.0 * ph2d * sdx;
        add_point(M, hq, J, ax, ay, m, n);
    }

    /* rotary inertias (angles linear in q: no velocity terms) */
    memset(c, 0, sizeof(double) * n);
    c[0] = 1.0;
    add_rotor(M, c, A->j_h1, n);
    for (j = 0; j < nm; j++) c[2 + j] = A->dphil1[j];
    add_rotor(M, c, A->j_s, n);
    c[1] = 1.0;
    add_rotor(M, c, A->j_h2, n);
    for (j = 0; j < nm; j++) c[2 + nm + j] = A->dphil2[j];
    add_rotor(M, c, A->j_p, n);

    for (a = 0; a < n; a++)
        for (b = 0; b < a; b++) M[a * n + b] = M[b * n + a];
}

/* Solve M x = f in place (Gaussian elimination, partial pivoting); 1 if M is singular. */
static int solve(double *M, double *f, int n) {
    int i, j, k;
    for (k = 0; k < n; k++) {
        int piv = k;
        double big = fabs(M[k * n + k]);
        for (i = k + 1; i < n; i++)
            if (fabs(M[i * n + k]) > big) { big = fabs(M[i * n + k]); piv = i; }
        if (!(big > 0.0)) return 1;
        if (piv != k) {
            for (j = 0; j < n; j++) { double t = M[k * n + j]; M[k * n + j] = M[piv * n + j]; M[piv * n + j] = t; }
            { double t = f[k]; f[k] = f[piv]; f[piv] = t; }
        }
        for (i = k + 1; i < n; i++) {
            double l = M[i * n + k] / M[k * n + k];
            if (l == 0.0) continue;
            for (j = k; j < n; j++) M[i * n + j] -= l * M[k * n + j];
            f[i] -= l * f[k];
        }
    }
    for (i = n - 1; i >= 0; i--) {
        double s = f[i];
        for (j = i + 1; j < n; j++) s -= M[i * n + j] * f[j];
        f[i] = s / M[i * n + i];
    }
    return 0;
}

static int accel(const Arm *A, const double *q, const double *qd, double tau1, double tau2,
                 double *qdd) {
    double M[ARM_MAX_DOF * ARM_MAX_DOF], hq[ARM_MAX_DOF];
    const int n = A->n;
    int a, b;
    eom(A, q, qd, M, hq);
    for (a = 0; a < n; a++) {
        double f = -hq[a];
        for (b = 0; b < n; b++) f -= A->K[a * n + b] * q[b] + A->D[a * n + b] * qd[b];
        qdd[a] = f;
    }
    qdd[0] += tau1;
    qdd[1] += tau2;
    return solve(M, qdd, n);
}

/* ---- the API (Python through ctypes, the C FMU through model.c) ---- */

/* M(q) and hq(q, q'): 0, or 1 for a bad table. */
ARM_API int arm_eom(const double *tab, const double *q, const double *qd, double *M, double *hq) {
    Arm A;
    if (!arm_unpack(tab, &A)) return 1;
    eom(&A, q, qd, M, hq);
    return 0;
}

/* x' = f(x) with x = (q, q') and the joint torques held; 0, or 1 if M is singular. */
ARM_API int arm_rhs(const double *tab, const double *x, double tau1, double tau2, double *dx) {
    Arm A;
    int i;
    if (!arm_unpack(tab, &A)) return 1;
    for (i = 0; i < A.n; i++) dx[i] = x[A.n + i];
    return accel(&A, x, x + A.n, tau1, tau2, dx + A.n);
}

typedef struct { const double *tab; double tau1, tau2; } ArmInputs;

static int arm_rhs_held(void *ctx, const double *x, double *dx) {
    const ArmInputs *in = (const ArmInputs *)ctx;
    return arm_rhs(in->tab, x, in->tau1, in->tau2, dx);
}

/* n steps of h [s] with the torques held: method 0 classical RK4, 1 Runge-Kutta-Gill with
   its round-off register gq carried (fixed_step.h, as mbdcore's steppers sum them).
   Returns 0, or 1 if a step met a singular mass matrix or a non-finite state (x and gq
   are then unchanged). */
ARM_API int arm_advance(const double *tab, double *x, double *gq, double tau1, double tau2,
                        double h, int n, int method) {
    double y[2 * ARM_MAX_DOF], q[2 * ARM_MAX_DOF], scratch[10 * ARM_MAX_DOF];
    ArmInputs in;
    Arm A;
    int s, i, m;
    if (!arm_unpack(tab, &A)) return 1;
    m = 2 * A.n;
    in.tab = tab; in.tau1 = tau1; in.tau2 = tau2;
    memcpy(y, x, sizeof(double) * m);
    memcpy(q, gq, sizeof(double) * m);
    for (s = 0; s < n; s++)
        if (method == 1 ? fs_gill_step(arm_rhs_held, &in, y, q, m, h, scratch)
                        : fs_rk4_step(arm_rhs_held, &in, y, m, h, scratch)) return 1;
    for (i = 0; i < m; i++) if (!isfinite(y[i])) return 1;
    memcpy(x, y, sizeof(double) * m);
    memcpy(gq, q, sizeof(double) * m);
    return 0;
}

/* The arm's outputs from x: theta1, theta2 [rad], omega1, omega2 [rad/s], w1, w2 [m] tip
   deflections in each link's frame, x_tip, y_tip [m] end-effector position. */
ARM_API int arm_outputs(const double *tab, const double *x, double *out) {
    Arm A;
    const double *q;
    double w1 = 0.0, w2 = 0.0, u1 = 0.0, u2 = 0.0, phi2, s1x, s2x, c1, n1, c2, n2;
    int j, k, nm;
    if (!arm_unpack(tab, &A)) return 1;
    nm = A.nm;
    q = x;
    for (j = 0; j < nm; j++) {
        w1 += q[2 + j];
        w2 += q[2 + nm + j];
        for (k = 0; k < nm; k++) {
            u1 += q[2 + j] * A.gl1[j * nm + k] * q[2 + k];
            u2 += q[2 + nm + j] * A.gl2[j * nm + k] * q[2 + nm + k];
        }
    }
    s1x = A.l1 - 0.5 * A.fs * u1;
    s2x = A.l2 - 0.5 * A.fs * u2;
    phi2 = q[0] + q[1];
    for (j = 0; j < nm; j++) phi2 += A.dphil1[j] * q[2 + j];
    c1 = cos(q[0]); n1 = sin(q[0]); c2 = cos(phi2); n2 = sin(phi2);
    out[0] = q[0];
    out[1] = q[1];
    out[2] = x[A.n];
    out[3] = x[A.n + 1];
    out[4] = w1;
    out[5] = w2;
    out[6] = c1 * s1x - n1 * w1 + c2 * s2x - n2 * w2;
    out[7] = n1 * s1x + c1 * w1 + n2 * s2x + c2 * w2;
    return 0;
}
