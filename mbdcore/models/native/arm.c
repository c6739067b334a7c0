/*
 * The two-link flexible arm of mbdcore.models.manipulator in plain C99: its equations of
 * motion, outputs and fixed-step stepping.  This file is the arm's one implementation:
 * Python calls it through ctypes (mbdcore.native), and the C-source FMU compiles it in.
 * The derivation is in docs/manipulator.md and the module docstring of manipulator.py;
 * the evaluation by each link's inertia sums (eom below) in its section "Evaluation".
 *
 * Everything numeric comes in one table `tab`, ARM_LAYOUT below (packed by name by
 * FlexibleManipulator through the same declaration, mbdcore/native/table_layout.h): the
 * counts, the physical constants, then for link 1 and link 2: x_q (nq, ascending),
 * m_q = rho_A w_q (nq), phi (nq x N), G (nq x N x N); then dphi1(l1) (N), G1(l1) (N x N),
 * dphi2(l2) (N), G2(l2) (N x N), K (n x n), D (n x n) (both zero in the rows and
 * columns of the joint angles); then, for the exact kinematics,
 * for link 1 and link 2: the weights (nq+1) x m and the slopes phi' (nq+1) x m x N at
 * Gauss nodes of the segments [0, x_1], [x_1, x_2], ..., [x_nq, l] (empty when m = 0)
 *
 * with n = 2 + 2N.  No allocation; arrays are sized for N <= ARM_MAX_MODES and
 * nq <= ARM_MAX_QUAD.
 *
 * Kinematics of a link point at x in its floating frame, s(x) = (s_x, s_y), second order
 * or exact (inextensible): mbdcore/multibody/native/beam_kinematics.c, compiled before
 * this file (the one implementation the engine's modal beam uses too; its BEAM_INLINE and
 * BEAM_UNROLL serve here too).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fixed_step.h"
#include "table_layout.h"

#define ARM_MAX_MODES 5
#define ARM_MAX_DOF (2 + 2 * ARM_MAX_MODES)
#define ARM_MAX_QUAD 64
#define ARM_MAX_SEG_NODES 8

#ifndef ARM_API
#define ARM_API
#endif

/* The arm's table: N modes, nq Gauss points per link, fs 1 to keep the foreshortening
   terms (0: drop them), exact 1 for the exact kinematics (0: second order), m_seg Gauss
   nodes per segment of the exact kinematics (0 for second order). */
#define ARM_LAYOUT(X)                                                                       \
    X(INT, nm, 1) X(INT, nq1, 1) X(INT, nq2, 1) X(REAL, fs, 1)                             \
    X(REAL, l1, 1) X(REAL, l2, 1) X(REAL, m_h2, 1) X(REAL, m_p, 1)                         \
    X(REAL, j_h1, 1) X(REAL, j_h2, 1) X(REAL, j_s, 1) X(REAL, j_p, 1)                      \
    X(INT, exact, 1) X(INT, m_seg, 1)                                                      \
    X(ARRAY, xq1, nq1) X(ARRAY, wq1, nq1) X(ARRAY, phi1, nq1 * nm)                         \
    X(ARRAY, g1, nq1 * nm * nm)                                                            \
    X(ARRAY, xq2, nq2) X(ARRAY, wq2, nq2) X(ARRAY, phi2, nq2 * nm)                         \
    X(ARRAY, g2, nq2 * nm * nm)                                                            \
    X(ARRAY, dphil1, nm) X(ARRAY, gl1, nm * nm) X(ARRAY, dphil2, nm) X(ARRAY, gl2, nm * nm) \
    X(ARRAY, K, (2 + 2 * nm) * (2 + 2 * nm)) X(ARRAY, D, (2 + 2 * nm) * (2 + 2 * nm))      \
    X(ARRAY, wseg1, (nq1 + 1) * m_seg) X(ARRAY, dseg1, (nq1 + 1) * m_seg * nm)             \
    X(ARRAY, wseg2, (nq2 + 1) * m_seg) X(ARRAY, dseg2, (nq2 + 1) * m_seg * nm)

typedef struct {
    ARM_LAYOUT(TABLE_MEMBER)
    int n;      /* 2 + 2N coordinates */
} Arm;

TABLE_READER(ARM_LAYOUT, Arm, arm_read_table)

/* Read the table; returns its length in doubles, or 0 if it is not a valid table. */
static long arm_unpack(const double *tab, Arm *a) {
    long length = arm_read_table(tab, a);
    if (!length || a->nm < 1 || a->nm > ARM_MAX_MODES || a->nq1 < 1 || a->nq2 < 1
        || a->nq1 > ARM_MAX_QUAD || a->nq2 > ARM_MAX_QUAD || a->m_seg < 0
        || a->m_seg > ARM_MAX_SEG_NODES || (a->exact != 0 && a->exact != 1)
        || (a->exact && a->m_seg < 1))
        return 0;
    a->n = 2 + 2 * a->nm;
    return length;
}

ARM_API long arm_table_length(const double *tab) {
    Arm a;
    return arm_unpack(tab, &a);
}

/* The kinematics of every quadrature point of one link and of its tip (index nq), in the
   link's floating frame (beam_kinematics.c, compiled before this file): s, s', the
   velocity-quadratic part of s'' (x, y pairs) and ds/d(delta_j) (x row, y row per point). */
typedef struct {
    double s[2 * (ARM_MAX_QUAD + 1)], sd[2 * (ARM_MAX_QUAD + 1)], q[2 * (ARM_MAX_QUAD + 1)];
    double ds[2 * (ARM_MAX_QUAD + 1) * ARM_MAX_MODES];
} LinkPoints;

static void link_points(const Arm *A, int link, const double *d, const double *dd,
                        LinkPoints *L) {
    const int nm = A->nm, nq = link == 1 ? A->nq1 : A->nq2;
    if (!A->exact) {
        /* the quadrature points, then the tip (unit shapes: normalised tip deflection) */
        static const double ones[ARM_MAX_MODES] = {1.0, 1.0, 1.0, 1.0, 1.0};
        const double len = link == 1 ? A->l1 : A->l2;
        beam_points_second_order(nq, nm, link == 1 ? A->xq1 : A->xq2,
                                 link == 1 ? A->phi1 : A->phi2, link == 1 ? A->g1 : A->g2,
                                 A->fs, d, dd, L->s, L->sd, L->q, L->ds);
        beam_points_second_order(1, nm, &len, ones, link == 1 ? A->gl1 : A->gl2, A->fs, d,
                                 dd, L->s + 2 * nq, L->sd + 2 * nq, L->q + 2 * nq,
                                 L->ds + 2 * nq * nm);
        return;
    }
    beam_points_exact(nq + 1, nm, A->m_seg, link == 1 ? A->wseg1 : A->wseg2,
                      link == 1 ? A->dseg1 : A->dseg2, d, dd, L->s, L->sd, L->q, L->ds);
}

/* s of the tip of a link (the last point of link_points, the same numbers) for modal
   amplitudes d: the outputs need no more. */
static void link_tip(const Arm *A, int link, const double *d, double *s_tip) {
    const int nm = A->nm, nq = link == 1 ? A->nq1 : A->nq2;
    if (!A->exact) {
        static const double ones[ARM_MAX_MODES] = {1.0, 1.0, 1.0, 1.0, 1.0};
        const double len = link == 1 ? A->l1 : A->l2;
        double sd[2], q[2], ds[2 * ARM_MAX_MODES];
        beam_points_second_order(1, nm, &len, ones, link == 1 ? A->gl1 : A->gl2, A->fs, d,
                                 d, s_tip, sd, q, ds);
        return;
    }
    beam_end_exact(nq + 1, nm, A->m_seg, link == 1 ? A->wseg1 : A->wseg2,
                   link == 1 ? A->dseg1 : A->dseg2, d, s_tip);
}

/* The inertia of one link's mass points (its quadrature points and its tip mass) in its
   floating frame, summed once per evaluation so that the mass matrix costs O(n^2) per link
   instead of O(n^2) per point.  A point's velocity is J q' with J = Jo + (E s) c^T + Ds,
   Jo the Jacobian of the frame's origin and c = d(phi_i')/d(q') (both in frame
   components, the same for every point of the link), E s = (-s_y, s_x), Ds = ds/d(delta)
   in the link's own modal columns; its acceleration's velocity-quadratic part is
   ao + al with ao the origin's and al = -phi' ^2 s - 2 phi' E s' + quad the local one. */
typedef struct {
    double m, S[2], I;                     /* sum m [kg], sum m s [kg m], sum m |s|^2 */
    double B[2 * ARM_MAX_MODES];           /* sum m ds_j (x row, then y row) */
    double Q[ARM_MAX_MODES];               /* sum m (E s).ds_j */
    double G[ARM_MAX_MODES * ARM_MAX_MODES];   /* sum m ds_j.ds_k */
    double A[2], Ea, Da[ARM_MAX_MODES];    /* sum m al, sum m (E s).al, sum m ds_j.al */
} LinkInertia;

/* The sums of LinkInertia over points 0..nq of L (masses w[0..nq-1], then m_tip), the
   frame turning at phid [rad/s]; the local acceleration of the tip point into a_tip.  One
   pass over the points, each sum in a local (no store-to-load chain through K); inlined
   with nm constant (link_inertia below), the modal sums stay in registers. */
BEAM_INLINE void link_sums(const LinkPoints *L, int nq, int nm, const double *w, double m_tip,
                           double phid, LinkInertia *K, double *a_tip) {
    double m_sum = 0.0, Sx = 0.0, Sy = 0.0, I = 0.0, Ax = 0.0, Ay = 0.0, Ea = 0.0;
    double Bx[ARM_MAX_MODES], By[ARM_MAX_MODES], Q[ARM_MAX_MODES], Da[ARM_MAX_MODES];
    double G[ARM_MAX_MODES * ARM_MAX_MODES];
    double alx = 0.0, aly = 0.0;
    int p, j, k;
    BEAM_UNROLL
    for (j = 0; j < nm; j++) {
        Bx[j] = By[j] = Q[j] = Da[j] = 0.0;
        BEAM_UNROLL
        for (k = j; k < nm; k++) G[j * nm + k] = 0.0;
    }
    for (p = 0; p <= nq; p++) {
        const double m = p < nq ? w[p] : m_tip, sx = L->s[2 * p], sy = L->s[2 * p + 1];
        const double msx = m * sx, msy = m * sy;
        const double *dsx = L->ds + (2 * p) * nm, *dsy = dsx + nm;
        double malx, maly;
        alx = -phid * phid * sx - 2.0 * phid * L->sd[2 * p + 1] + L->q[2 * p];
        aly = -phid * phid * sy + 2.0 * phid * L->sd[2 * p] + L->q[2 * p + 1];
        malx = m * alx;
        maly = m * aly;
        m_sum += m;
        Sx += msx;
        Sy += msy;
        I += msx * sx + msy * sy;
        Ax += malx;
        Ay += maly;
        Ea += sx * maly - sy * malx;
        BEAM_UNROLL
        for (j = 0; j < nm; j++) {
            const double mdx = m * dsx[j], mdy = m * dsy[j];
            Bx[j] += mdx;
            By[j] += mdy;
            Q[j] += sx * mdy - sy * mdx;
            Da[j] += mdx * alx + mdy * aly;
            BEAM_UNROLL
            for (k = j; k < nm; k++)
                G[j * nm + k] += m * dsx[j] * dsx[k] + m * dsy[j] * dsy[k];
        }
    }
    K->m = m_sum;
    K->S[0] = Sx;
    K->S[1] = Sy;
    K->I = I;
    K->A[0] = Ax;
    K->A[1] = Ay;
    K->Ea = Ea;
    for (j = 0; j < nm; j++) {
        K->B[j] = Bx[j];
        K->B[nm + j] = By[j];
        K->Q[j] = Q[j];
        K->Da[j] = Da[j];
        for (k = j; k < nm; k++) K->G[j * nm + k] = G[j * nm + k];
    }
    a_tip[0] = alx;                /* the last point's: the tip */
    a_tip[1] = aly;
}

#define ARM_LINK_CASE(n) case n: link_sums(L, nq, n, w, m_tip, phid, K, a_tip); return;
static void link_inertia(const LinkPoints *L, int nq, int nm, const double *w, double m_tip,
                         double phid, LinkInertia *K, double *a_tip) {
    switch (nm) {
        ARM_LINK_CASE(1) ARM_LINK_CASE(2) ARM_LINK_CASE(3) ARM_LINK_CASE(4) ARM_LINK_CASE(5)
        default: link_sums(L, nq, nm, w, m_tip, phid, K, a_tip);
    }
}

/* M += sum m J^T J and hq += sum m J^T (ao + al) of one link (upper triangle of M;
   LinkInertia's comment), its modal columns from col; Jo row-major 2 x n, or NULL for a
   frame fixed at the origin (then ao is not read). */
static void add_link(double *M, double *hq, const LinkInertia *K, const double *Jo,
                     const double *ao, const double *c, int col, int nm, int n) {
    double u[ARM_MAX_DOF], Ax = K->A[0], Ay = K->A[1], Ea = K->Ea;
    int a, b, j, k;
    if (Jo) {
        /* u = Jo^T E S; the origin's acceleration in the sums of m a */
        Ax += K->m * ao[0];
        Ay += K->m * ao[1];
        Ea += K->S[0] * ao[1] - K->S[1] * ao[0];
        for (a = 0; a < n; a++) u[a] = K->S[0] * Jo[n + a] - K->S[1] * Jo[a];
        for (a = 0; a < n; a++) {
            const double jx = Jo[a], jy = Jo[n + a];
            hq[a] += jx * Ax + jy * Ay;
            for (b = a; b < n; b++)
                M[a * n + b] += K->m * (jx * Jo[b] + jy * Jo[n + b]) + u[a] * c[b] + c[a] * u[b];
            for (j = 0; j < nm; j++) {
                /* Jo^T Ds: the pair (a, col + j) and its mirror (col + j, a) */
                const double v = jx * K->B[j] + jy * K->B[nm + j];
                if (col + j >= a) M[a * n + col + j] += v;
                if (col + j <= a) M[(col + j) * n + a] += v;
            }
        }
    }
    for (a = 0; a < n; a++) {
        if (c[a] == 0.0) continue;
        hq[a] += c[a] * Ea;
        for (b = a; b < n; b++) M[a * n + b] += K->I * c[a] * c[b];
        for (j = 0; j < nm; j++) {
            /* (E s)^T Ds between c and the modal columns, and its mirror */
            const double v = c[a] * K->Q[j];
            if (col + j >= a) M[a * n + col + j] += v;
            if (col + j <= a) M[(col + j) * n + a] += v;
        }
    }
    for (j = 0; j < nm; j++) {
        double da = K->Da[j];
        if (Jo) da += K->B[j] * ao[0] + K->B[nm + j] * ao[1];
        hq[col + j] += da;
        for (k = j; k < nm; k++) M[(col + j) * n + col + k] += K->G[j * nm + k];
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
    double J1l[2 * ARM_MAX_DOF], Jo[2 * ARM_MAX_DOF], c[ARM_MAX_DOF], a1[2], ao[2], a2[2];
    const double *d1 = q + 2, *dd1 = qd + 2, *d2 = q + 2 + nm, *dd2 = qd + 2 + nm;
    double alpha = 0.0, alphad = 0.0, beta, cb, sb, ph2d;
    LinkPoints L;
    LinkInertia K;
    int a, b, j, tip;

    memset(M, 0, sizeof(double) * n * n);
    memset(hq, 0, sizeof(double) * n);

    /* link 1 (frame 1 components, frame fixed at the origin turning at theta1'); its
       tip (p = nq1) is the origin of link 2 and carries the joint-2 hub mass */
    link_points(A, 1, d1, dd1, &L);
    tip = A->nq1;
    link_inertia(&L, tip, nm, A->wq1, A->m_h2, qd[0], &K, a1);
    memset(c, 0, sizeof(double) * n);
    c[0] = 1.0;
    add_link(M, hq, &K, NULL, NULL, c, 2, nm, n);
    /* the Jacobian of the tip of link 1: (E s) c^T + Ds */
    memset(J1l, 0, sizeof(double) * 2 * n);
    J1l[0] = -L.s[2 * tip + 1];
    J1l[n] = L.s[2 * tip];
    for (j = 0; j < nm; j++) {
        J1l[2 + j] = L.ds[(2 * tip) * nm + j];
        J1l[n + 2 + j] = L.ds[(2 * tip + 1) * nm + j];
    }

    /* link 2 (frame 2 components) */
    for (j = 0; j < nm; j++) {
        alpha += A->dphil1[j] * d1[j];
        alphad += A->dphil1[j] * dd1[j];
    }
    beta = q[1] + alpha;
    cb = cos(beta);
    sb = sin(beta);
    ph2d = qd[0] + qd[1] + alphad;
    /* base Jacobian and base quadratic acceleration rotated into frame 2: R(-beta) */
    for (a = 0; a < n; a++) {
        Jo[a] = cb * J1l[a] + sb * J1l[n + a];
        Jo[n + a] = -sb * J1l[a] + cb * J1l[n + a];
    }
    ao[0] = cb * a1[0] + sb * a1[1];
    ao[1] = -sb * a1[0] + cb * a1[1];
    c[1] = 1.0;                               /* d(phi_2')/d(q') */
    for (j = 0; j < nm; j++) c[2 + j] = A->dphil1[j];
    link_points(A, 2, d2, dd2, &L);
    link_inertia(&L, A->nq2, nm, A->wq2, A->m_p, ph2d, &K, a2);   /* tip: the payload */
    add_link(M, hq, &K, Jo, ao, c, 2 + nm, nm, n);

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

/* Solve M x = f in place for the symmetric positive definite mass matrix M (n x n, full,
   overwritten): Cholesky, M = L L^T, half the work of a pivoted LU and no pivot search
   (a mass matrix needs none: its pivots are the kinetic energies of the coordinates
   with the earlier ones held).  1 if M is not positive definite (singular). */
static int solve(double *M, double *f, int n) {
    int i, j, k;
    for (j = 0; j < n; j++) {
        double d = M[j * n + j];
        for (k = 0; k < j; k++) d -= M[j * n + k] * M[j * n + k];
        if (!(d > 0.0)) return 1;
        d = sqrt(d);
        M[j * n + j] = d;
        for (i = j + 1; i < n; i++) {
            double v = M[i * n + j];
            for (k = 0; k < j; k++) v -= M[i * n + k] * M[j * n + k];
            M[i * n + j] = v / d;
        }
    }
    for (i = 0; i < n; i++) {              /* L y = f */
        double v = f[i];
        for (k = 0; k < i; k++) v -= M[i * n + k] * f[k];
        f[i] = v / M[i * n + i];
    }
    for (i = n - 1; i >= 0; i--) {         /* L^T x = y */
        double v = f[i];
        for (k = i + 1; k < n; k++) v -= M[k * n + i] * f[k];
        f[i] = v / M[i * n + i];
    }
    return 0;
}

static int accel(const Arm *A, const double *q, const double *qd, double tau1, double tau2,
                 double *qdd) {
    double M[ARM_MAX_DOF * ARM_MAX_DOF], hq[ARM_MAX_DOF];
    const int n = A->n;
    int a, b;
    eom(A, q, qd, M, hq);
    /* K and D act on the modal coordinates only (their joint rows and columns are zero:
       FlexibleManipulator builds them so) */
    for (a = 0; a < n; a++) {
        double f = -hq[a];
        if (a >= 2)
            for (b = 2; b < n; b++) f -= A->K[a * n + b] * q[b] + A->D[a * n + b] * qd[b];
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

static int derivatives(const Arm *A, const double *x, double tau1, double tau2, double *dx) {
    int i;
    for (i = 0; i < A->n; i++) dx[i] = x[A->n + i];
    return accel(A, x, x + A->n, tau1, tau2, dx + A->n);
}

/* x' = f(x) with x = (q, q') and the joint torques held; 0, or 1 if M is singular. */
ARM_API int arm_rhs(const double *tab, const double *x, double tau1, double tau2, double *dx) {
    Arm A;
    if (!arm_unpack(tab, &A)) return 1;
    return derivatives(&A, x, tau1, tau2, dx);
}

/* The arm's table read once for a whole advance or run, and the torques held. */
typedef struct { Arm A; double tau1, tau2; } ArmInputs;

static int arm_rhs_held(void *ctx, const double *x, double *dx) {
    const ArmInputs *in = (const ArmInputs *)ctx;
    return derivatives(&in->A, x, in->tau1, in->tau2, dx);
}

/* n steps of h [s] with the torques held: method 0 classical RK4, 1 Runge-Kutta-Gill with
   its round-off register gq carried, 2 Treanor (fixed_step.h, as mbdcore's steppers);
   first: x' at x, the first stage, or NULL (fs_advance).
   Returns 0, or 1 if a step met a singular mass matrix or a non-finite state (x and gq
   are then unchanged). */
ARM_API int arm_advance(const double *tab, double *x, double *gq, double tau1, double tau2,
                        double h, int n, int method, const double *first) {
    double work[FS_WORK_PER_STATE * 2 * ARM_MAX_DOF];
    ArmInputs in;
    if (!arm_unpack(tab, &in.A)) return 1;
    in.tau1 = tau1; in.tau2 = tau2;
    return fs_advance(arm_rhs_held, &in, x, gq, 2 * in.A.n, h, n, method, first, work) != 0;
}

static void arm_hold(void *ctx, const double *u) {
    ArmInputs *in = (ArmInputs *)ctx;
    in->tau1 = u[0];
    in->tau2 = u[1];
}

/* A whole run in one call (fs_run in fixed_step.h): n_steps steps of h [s] from t0 [s],
   each with the torques tau1, tau2 [N m] of the piecewise table `inputs` sampled at its
   start and held over its substeps steps of the method; every record_every-th state into
   record.  Returns fs_run's status (FS_RUN_BAD_INPUTS also for a bad arm table or a
   table of other than two signals) and the steps taken in *done. */
ARM_API int arm_run(const double *tab, const double *inputs, double *x, double *gq, double t0,
                    double h, int substeps, int n_steps, int method, int record_every,
                    double *record, int *done) {
    double work[FS_RUN_WORK_PER_STATE * 2 * ARM_MAX_DOF];
    ArmInputs in;
    *done = 0;
    if (!arm_unpack(tab, &in.A) || inputs[0] != 2.0) return FS_RUN_BAD_INPUTS;
    in.tau1 = 0.0; in.tau2 = 0.0;
    return fs_run(arm_rhs_held, arm_hold, &in, inputs, x, gq, 2 * in.A.n, t0, h, substeps,
                  n_steps, method, record_every, record, done, work);
}

/* The arm's outputs from x: theta1, theta2 [rad], omega1, omega2 [rad/s], w1, w2 [m] tip
   deflections in each link's frame, x_tip, y_tip [m] end-effector position. */
ARM_API int arm_outputs(const double *tab, const double *x, double *out) {
    Arm A;
    double s1[2], s2[2], s1x, s1y, s2x, s2y, phi2, c1, n1, c2, n2;
    int j, nm;
    if (!arm_unpack(tab, &A)) return 1;
    nm = A.nm;
    link_tip(&A, 1, x + 2, s1);
    link_tip(&A, 2, x + 2 + nm, s2);
    s1x = s1[0];
    s1y = s1[1];
    s2x = s2[0];
    s2y = s2[1];
    phi2 = x[0] + x[1];
    for (j = 0; j < nm; j++) phi2 += A.dphil1[j] * x[2 + j];
    c1 = cos(x[0]); n1 = sin(x[0]); c2 = cos(phi2); n2 = sin(phi2);
    out[0] = x[0];
    out[1] = x[1];
    out[2] = x[A.n];
    out[3] = x[A.n + 1];
    out[4] = s1y;
    out[5] = s2y;
    out[6] = c1 * s1x - n1 * s1y + c2 * s2x - n2 * s2y;
    out[7] = n1 * s1x + c1 * s1y + n2 * s2x + c2 * s2y;
    return 0;
}

/* The first link (1 or 2) whose tip deflection y[3 + link] exceeds `limit` times its
   length (a NaN too where nan_beyond), or 0; its ratio in *ratio. */
static int link_beyond(const Arm *A, const double *y, double limit, int nan_beyond,
                       double *ratio) {
    const double length[2] = {A->l1, A->l2};
    int i;
    for (i = 0; i < 2; i++) {
        *ratio = fabs(y[4 + i]) / length[i];
        if (*ratio > limit || (nan_beyond && *ratio != *ratio)) return i + 1;
    }
    return 0;
}

/* Why the outputs y leave the range where the kinematics are accurate (`limit`, a
   fraction of the length); 1 with the message, or 0. */
static int range_message(const Arm *A, const double *y, double limit, char *msg, size_t n) {
    double ratio;
    const int link = link_beyond(A, y, limit, 0, &ratio);   /* a NaN: the hard limit's */
    if (!link) return 0;
    snprintf(msg, n, "link %d tip deflection %.4g m is %.0f %% of its length, beyond "
             "the %.0f %% where the %s kinematics are accurate (docs/manipulator.md)%s",
             link, y[3 + link], 100.0 * ratio, 100.0 * limit,
             A->exact ? "exact" : "second-order",
             A->exact ? "" : "; kinematics = 'exact' extends it");
    return 1;
}

/* Why the outputs y are beyond the hard limit `limit`; 1 with the message, or 0. */
static int limit_message(const Arm *A, const double *y, double limit, char *msg, size_t n) {
    double ratio;
    const int link = link_beyond(A, y, limit, 1, &ratio);
    if (!link) return 0;
    snprintf(msg, n, "link %d tip deflection %.4g m is %.0f %% of its length, beyond "
             "max_tip_deflection = %g: no arm bends so far (torques far beyond the "
             "arm's range?); the step is refused", link, y[3 + link], 100.0 * ratio, limit);
    return 1;
}

/* 0 while both tip deflections stay within `limit` times their link's length (the range
   where the kinematics of the table are accurate, docs/manipulator.md); else 1 with why
   in msg.  The one check behind the warning of the Python block and of the C FMU. */
ARM_API int arm_range(const double *tab, const double *x, double limit, char *msg, size_t n) {
    double y[8];
    Arm A;
    if (!arm_unpack(tab, &A) || arm_outputs(tab, x, y)) return 0;
    return range_message(&A, y, limit, msg, n);
}

/* 0 while both tip deflections stay within `limit` times their link's length; else 1
   with why in msg: the hard limit of the block's max_tip_deflection, beyond which a
   step is refused (Python block: StepError; C FMU: fmi2Discard). */
ARM_API int arm_limit(const double *tab, const double *x, double limit, char *msg, size_t n) {
    double y[8];
    Arm A;
    if (!arm_unpack(tab, &A) || arm_outputs(tab, x, y)) return 0;
    return limit_message(&A, y, limit, msg, n);
}

/* Both checks from one evaluation of the outputs (the C FMU's model_validity, after every
   step): 2 beyond the hard limit `limit` (arm_limit's message), 1 beyond the range
   `range` of the kinematics (arm_range's), else 0. */
ARM_API int arm_validity(const double *tab, const double *x, double limit, double range,
                         char *msg, size_t n) {
    double y[8];
    Arm A;
    if (!arm_unpack(tab, &A) || arm_outputs(tab, x, y)) return 0;
    if (limit_message(&A, y, limit, msg, n)) return 2;
    return range_message(&A, y, range, msg, n);
}
