/*
 * Kinematics of the points of an assumed-mode beam in its floating frame (the frame
 * clamped at the beam's root), in plain C99: the one implementation shared by the
 * engine's modal beam (mbdcore.multibody.flexible.ModalBeam, through ctypes) and the
 * two-link flexible arm (mbdcore/models/native/arm.c, compiled after this file, and its
 * C-source FMU).  The derivation is in docs/manipulator.md ("Exact kinematics").
 *
 * A point at distance x along the undeformed beam, modal amplitudes d (N) and rates dd,
 * sits in the frame at s(x) = (s_x, s_y):
 *   second order: s = (x - fs/2 d^T G(x) d, phi(x).d), G(x) = int_0^x phi' phi'^T
 *                 (foreshortening to second order in d; fs = 0 drops it);
 *   exact:        s = int_0^x (cos psi, sin psi) dxi, psi = phi'(xi).d (inextensible,
 *                 psi the slope angle), integrated segment by segment from the root:
 *                 points p = 0..P-1 are the ends of the segments [x_{p-1}, x_p] (x_{-1}
 *                 = 0), each with m Gauss nodes (weights wseg (P x m) [m], slopes phi' at
 *                 the nodes dseg (P x m x N) [1/m]).
 * For each point: s, its rate s', the velocity-quadratic part of s'' (what is left of
 * s'' when d'' = 0) and ds/d(delta_j).  Arrays are row-major: s, sd, quad (P x 2), ds
 * (P x 2 x N).  No allocation.
 */
#include <math.h>

#include "table_layout.h"

#ifndef BEAM_API
#define BEAM_API
#endif

/* Second order; phi (P x N) and G (P x N x N) at the points x (P). */
BEAM_API void beam_points_second_order(int P, int N, const double *x, const double *phi,
                                       const double *G, double fs, const double *d,
                                       const double *dd, double *s, double *sd, double *quad,
                                       double *ds) {
    int p, j, k;
    for (p = 0; p < P; p++) {
        const double *Gp = G + p * N * N;
        double u = 0.0, w = 0.0, ud = 0.0, wd = 0.0, q = 0.0;
        for (j = 0; j < N; j++) {
            double gd = 0.0, gdd = 0.0, ph = phi[p * N + j];
            for (k = 0; k < N; k++) {
                gd += Gp[j * N + k] * d[k];
                gdd += Gp[j * N + k] * dd[k];
            }
            gd *= fs;
            gdd *= fs;
            u -= 0.5 * d[j] * gd;
            ud -= gd * dd[j];
            q -= dd[j] * gdd;
            w += ph * d[j];
            wd += ph * dd[j];
            ds[(2 * p) * N + j] = -gd;
            ds[(2 * p + 1) * N + j] = ph;
        }
        s[2 * p] = x[p] + u;
        s[2 * p + 1] = w;
        sd[2 * p] = ud;
        sd[2 * p + 1] = wd;
        quad[2 * p] = q;
        quad[2 * p + 1] = 0.0;
    }
}

/* Inlined where called with constant sizes, their small loops unrolled (GCC, clang; a
   loop of 2 to 4 turns at -O2 otherwise spends half its instructions on its control). */
#if defined(__GNUC__)
#define BEAM_INLINE static inline __attribute__((always_inline))
#define BEAM_PRAGMA(x) _Pragma(#x)
#define BEAM_UNROLL BEAM_PRAGMA(GCC unroll 8)
#else
#define BEAM_INLINE static inline
#define BEAM_UNROLL
#endif

/* w cos x and w sin x of the slopes x[0..n-1] with weights w into wc and ws, cos and sin
   within an ulp of libm's: the exact kinematics take both at every segment node of every
   evaluation, and the slopes of a bent beam stay well inside |x| <= pi/4, where the
   Taylor series to x^16 and x^17 are exact to round-off (the next terms are below
   1e-17).  Over an array whose every slope is in that range the loop has no branch and
   no call, and takes the values in pairs, which a compiler can run as one (SSE2 at -O2
   with GCC 12: twice as fast, the same bits); otherwise libm, value by value. */
#define BEAM_PI_4 0.78539816339744831
#define BEAM_SIN(x, z)                                                                     \
    ((x) + (x) * (z) * (-1.0 / 6.0 + (z) * (1.0 / 120.0 + (z) * (-1.0 / 5040.0            \
     + (z) * (1.0 / 362880.0 + (z) * (-1.0 / 39916800.0 + (z) * (1.0 / 6227020800.0        \
     + (z) * (-1.0 / 1307674368000.0 + (z) * (1.0 / 355687428096000.0)))))))))
#define BEAM_COS(z)                                                                        \
    (1.0 + (z) * (-0.5 + (z) * (1.0 / 24.0 + (z) * (-1.0 / 720.0 + (z) * (1.0 / 40320.0   \
     + (z) * (-1.0 / 3628800.0 + (z) * (1.0 / 479001600.0 + (z) * (-1.0 / 87178291200.0    \
     + (z) * (1.0 / 20922789888000.0)))))))))
BEAM_INLINE void weighted_cos_sin(int n, const double *x, const double *w, double *wc,
                                  double *ws) {
    double largest = 0.0;
    int i;
    for (i = 0; i < n; i++) {
        const double a = fabs(x[i]);
        largest = a > largest ? a : largest;
    }
    if (!(largest <= BEAM_PI_4) || x[0] != x[0]) {   /* NaN: libm's, NaN again */
        for (i = 0; i < n; i++) {
            wc[i] = w[i] * cos(x[i]);
            ws[i] = w[i] * sin(x[i]);
        }
        return;
    }
    for (i = 0; i + 1 < n; i += 2) {
        const double x0 = x[i], x1 = x[i + 1], z0 = x0 * x0, z1 = x1 * x1;
        wc[i] = w[i] * BEAM_COS(z0);
        wc[i + 1] = w[i + 1] * BEAM_COS(z1);
        ws[i] = w[i] * BEAM_SIN(x0, z0);
        ws[i + 1] = w[i + 1] * BEAM_SIN(x1, z1);
    }
    if (i < n) {
        const double z = x[i] * x[i];
        wc[i] = w[i] * BEAM_COS(z);
        ws[i] = w[i] * BEAM_SIN(x[i], z);
    }
}

/* Segment nodes whose slopes are taken at once (weighted_cos_sin): whole segments, at
   most this many nodes per segment. */
#define BEAM_NODE_BLOCK 64

/* The body of beam_points_exact (below), inlined where N and m are constants. */
BEAM_INLINE void exact_points(int P, int N, int m, const double *wseg, const double *dseg,
                              const double *d, const double *dd, double *s, double *sd,
                              double *quad, double *ds) {
    double psi[BEAM_NODE_BLOCK], psid[BEAM_NODE_BLOCK], wc[BEAM_NODE_BLOCK],
        ws[BEAM_NODE_BLOCK];
    double sx = 0.0, sy = 0.0, sdx = 0.0, sdy = 0.0, qx = 0.0, qy = 0.0;
    const int per_block = BEAM_NODE_BLOCK / m;
    int p0, p, i, j, k, block;
    for (p0 = 0; p0 < P; p0 += per_block) {
        /* the slopes psi = phi'.d at the block's nodes and their rates, then w cos psi and
           w sin psi with the nodes' weights w */
        const double *wgt = wseg + p0 * m, *dblock = dseg + p0 * m * N;
        block = (P - p0 < per_block ? P - p0 : per_block) * m;
        for (k = 0; k < block; k++) {
            const double *dphi = dblock + k * N;
            double a = 0.0, b = 0.0;
            BEAM_UNROLL
            for (j = 0; j < N; j++) {
                a += dphi[j] * d[j];
                b += dphi[j] * dd[j];
            }
            psi[k] = a;
            psid[k] = b;
        }
        weighted_cos_sin(block, psi, wgt, wc, ws);
        for (p = p0, k = 0; k < block; p++) {
            /* segment p: the running integrals to its end, and ds/d(delta) of point p as
               point p - 1's plus the segment's own sum */
            double *dsx = ds + (2 * p) * N, *dsy = dsx + N;
            const double *dphi = dblock + k * N;
            BEAM_UNROLL
            for (j = 0; j < N; j++) {
                double ax = 0.0, ay = 0.0;
                BEAM_UNROLL
                for (i = 0; i < m; i++) {
                    ax += ws[k + i] * dphi[i * N + j];
                    ay += wc[k + i] * dphi[i * N + j];
                }
                dsx[j] = (p > 0 ? dsx[j - 2 * N] : 0.0) - ax;
                dsy[j] = (p > 0 ? dsy[j - 2 * N] : 0.0) + ay;
            }
            BEAM_UNROLL
            for (i = 0; i < m; i++, k++) {
                sx += wc[k];
                sy += ws[k];
                sdx -= ws[k] * psid[k];
                sdy += wc[k] * psid[k];
                qx -= wc[k] * psid[k] * psid[k];
                qy -= ws[k] * psid[k] * psid[k];
            }
            s[2 * p] = sx;
            s[2 * p + 1] = sy;
            sd[2 * p] = sdx;
            sd[2 * p + 1] = sdy;
            quad[2 * p] = qx;
            quad[2 * p + 1] = qy;
        }
    }
}

/* Exact (inextensible); m Gauss nodes per segment (module comment), m <= BEAM_NODE_BLOCK.
   The tables' m, SEGMENT_NODES = 4 (mbdcore.multibody.beam_modes), with N = 1 to 5 modes
   runs with both constant; any other m or N as given. */
#define BEAM_EXACT_CASE(n)                                                                 \
    case n: exact_points(P, n, 4, wseg, dseg, d, dd, s, sd, quad, ds); return;
BEAM_API void beam_points_exact(int P, int N, int m, const double *wseg, const double *dseg,
                                const double *d, const double *dd, double *s, double *sd,
                                double *quad, double *ds) {
    if (m == 4) switch (N) {
        BEAM_EXACT_CASE(1) BEAM_EXACT_CASE(2) BEAM_EXACT_CASE(3) BEAM_EXACT_CASE(4)
        BEAM_EXACT_CASE(5)
        default: break;
    }
    exact_points(P, N, m, wseg, dseg, d, dd, s, sd, quad, ds);
}

/* Exact: the last point's s only (s of point P - 1 of beam_points_exact, the same sums in
   the same order, bit for bit): what an output of the beam's end needs, without the
   derivatives and rates of every point. */
BEAM_INLINE void end_point(int P, int N, int m, const double *wseg, const double *dseg,
                           const double *d, double *s_end) {
    double psi[BEAM_NODE_BLOCK], wc[BEAM_NODE_BLOCK], ws[BEAM_NODE_BLOCK];
    double sx = 0.0, sy = 0.0;
    const int per_block = BEAM_NODE_BLOCK / m;
    int p0, j, k, block;
    for (p0 = 0; p0 < P; p0 += per_block) {
        const double *dblock = dseg + p0 * m * N;
        block = (P - p0 < per_block ? P - p0 : per_block) * m;
        for (k = 0; k < block; k++) {
            double a = 0.0;
            BEAM_UNROLL
            for (j = 0; j < N; j++) a += dblock[k * N + j] * d[j];
            psi[k] = a;
        }
        weighted_cos_sin(block, psi, wseg + p0 * m, wc, ws);
        for (k = 0; k < block; k++) {
            sx += wc[k];
            sy += ws[k];
        }
    }
    s_end[0] = sx;
    s_end[1] = sy;
}

#define BEAM_END_CASE(n) case n: end_point(P, n, m, wseg, dseg, d, s_end); return;
BEAM_API void beam_end_exact(int P, int N, int m, const double *wseg, const double *dseg,
                             const double *d, double *s_end) {
    switch (N) {           /* N constant where it is inlined, as for beam_points_exact */
        BEAM_END_CASE(1) BEAM_END_CASE(2) BEAM_END_CASE(3) BEAM_END_CASE(4) BEAM_END_CASE(5)
        default: end_point(P, N, m, wseg, dseg, d, s_end);
    }
}

/*
 * A set of points of a beam whose frame is free in the plane (the engine's modal beam):
 * its table, declared once (beam_modes.py packs it by name): N modes, fs the
 * foreshortening factor, then either (second order) n_x points at distances x [m] with
 * phi (n_x x N) and G (n_x x N x N) there, or (exact) n_seg points, the ends of segments
 * of m Gauss nodes, with wseg (n_seg x m) [m] and dseg (n_seg x m x N) [1/m]; the other
 * count 0.  Body coordinates qb = (x, y, theta, d_1..d_N) [m, m, rad, m] and rates vb.
 * Gives in the plane the positions r (P x 2), velocities rd (P x 2), the Jacobians
 * J = dr/dqb (P x 2 x (3 + N)) and the velocity-quadratic accelerations quad (P x 2),
 * P = n_x + n_seg; s-buffers: work (at least P x (6 + 2 N) doubles).
 */
#define BEAM_POINTS_LAYOUT(X)                                                              \
    X(INT, N, 1) X(REAL, fs, 1)                                                            \
    X(INT, n_x, 1) X(ARRAY, x, n_x) X(ARRAY, phi, n_x * N) X(ARRAY, G, n_x * N * N)        \
    X(INT, n_seg, 1) X(INT, m, 1) X(ARRAY, wseg, n_seg * m) X(ARRAY, dseg, n_seg * m * N)

typedef struct {
    BEAM_POINTS_LAYOUT(TABLE_MEMBER)
} beam_points_t;

TABLE_READER(BEAM_POINTS_LAYOUT, beam_points_t, beam_points_read)

/* the table's length in doubles, or -1 if it is no table of points: no mode, both or
   neither of the point sets, or a segment of no Gauss node or more than a block's */
BEAM_API long beam_table_length(const double *T) {
    beam_points_t b;
    const long length = beam_points_read(T, &b);
    if (!length || b.N < 1 || (b.n_x > 0) == (b.n_seg > 0) || b.n_x < 0 || b.n_seg < 0
        || (b.n_seg > 0 && (b.m < 1 || b.m > BEAM_NODE_BLOCK)))
        return -1;
    return length;
}

BEAM_API void beam_points(const double *T, const double *qb, const double *vb, double *r,
                          double *rd, double *J, double *quad, double *work) {
    beam_points_t b;
    int P, N, n, p, j;
    double *s, *sd, *q, *ds;
    const double c = cos(qb[2]), sn = sin(qb[2]), thd = vb[2];
    if (!beam_points_read(T, &b)) return;   /* beam_table_length checked it before */
    P = b.n_x + b.n_seg;
    N = b.N;
    n = 3 + N;
    s = work;
    sd = s + 2 * P;
    q = sd + 2 * P;
    ds = q + 2 * P;
    if (b.n_seg > 0)
        beam_points_exact(P, N, b.m, b.wseg, b.dseg, qb + 3, vb + 3, s, sd, q, ds);
    else
        beam_points_second_order(P, N, b.x, b.phi, b.G, b.fs, qb + 3, vb + 3, s, sd, q, ds);
    for (p = 0; p < P; p++) {
        /* A s, A s' and the frame's rotation: r = p + A s, r' = v + theta' E A s + A s' */
        const double asx = c * s[2 * p] - sn * s[2 * p + 1];
        const double asy = sn * s[2 * p] + c * s[2 * p + 1];
        const double asdx = c * sd[2 * p] - sn * sd[2 * p + 1];
        const double asdy = sn * sd[2 * p] + c * sd[2 * p + 1];
        double *Jx = J + (2 * p) * n, *Jy = J + (2 * p + 1) * n;
        r[2 * p] = qb[0] + asx;
        r[2 * p + 1] = qb[1] + asy;
        rd[2 * p] = vb[0] - thd * asy + asdx;
        rd[2 * p + 1] = vb[1] + thd * asx + asdy;
        Jx[0] = 1.0; Jx[1] = 0.0; Jx[2] = -asy;
        Jy[0] = 0.0; Jy[1] = 1.0; Jy[2] = asx;
        for (j = 0; j < N; j++) {
            const double dx = ds[(2 * p) * N + j], dy = ds[(2 * p + 1) * N + j];
            Jx[3 + j] = c * dx - sn * dy;
            Jy[3 + j] = sn * dx + c * dy;
        }
        /* -theta'^2 A s + 2 theta' E A s' + A quad_local */
        quad[2 * p] = -thd * thd * asx - 2.0 * thd * asdy + c * q[2 * p] - sn * q[2 * p + 1];
        quad[2 * p + 1] = -thd * thd * asy + 2.0 * thd * asdx + sn * q[2 * p] + c * q[2 * p + 1];
    }
}
