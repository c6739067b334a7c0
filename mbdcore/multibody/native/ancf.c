/*
 * The elastic (and Kelvin-Voigt damping) forces of a planar gradient-deficient ANCF beam
 * and their tangents, element by element, in plain C99: the one implementation behind
 * mbdcore.multibody.ancf.ANCFBeam (through ctypes).  The strain measures and why they
 * were chosen are in the docstring of ancf.py:
 *
 *   eps = (a.a - 1) / 2,   kappa = (a x b) / |a|^3,   a = r', b = r''
 *
 * at G Gauss points per element.  Inputs: the element-independent matrices Bw (G x 4 x 8,
 * the maps from the 8 element coordinates to (a, b) at each point, times the point's
 * weight [m]) and B (the same unweighted); the beam's coordinates q (4 (N + 1)) and
 * rates v (or NULL), EA [N], EI [N m^2], the damping time beta [s].
 * Outputs: the generalised forces f = -dU/dq - Q_d (4 (N + 1)) [N], and, if k is not
 * NULL, the element blocks K_e = -df/dq (N x 8 x 8) and, if c is not NULL and beta > 0,
 * C_e = -df/dv (N x 8 x 8) [N/m, N s/m].  No allocation.
 */
#include <math.h>
#include <string.h>

#include "table_layout.h"

#ifndef ANCF_API
#define ANCF_API
#endif

/* 4 x 8 times an 8-vector */
static void map8(const double *B, const double *e, double *out) {
    int i, j;
    for (i = 0; i < 4; i++) {
        double s = 0.0;
        for (j = 0; j < 8; j++) s += B[i * 8 + j] * e[j];
        out[i] = s;
    }
}

ANCF_API void ancf_forces(int N, int G, const double *B, const double *Bw, const double *q,
                          const double *v, double ea, double ei, double beta, double *f,
                          double *k, double *c) {
    int el, g, i, j, l, m;
    memset(f, 0, sizeof(double) * 4 * (N + 1));
    for (el = 0; el < N; el++) {
        const double *e = q + 4 * el, *ed = v ? v + 4 * el : NULL;
        double fe[8] = {0.0};
        double *ke = k ? k + 64 * el : NULL, *ce = (c && beta > 0.0) ? c + 64 * el : NULL;
        if (ke) memset(ke, 0, sizeof(double) * 64);
        if (ce) memset(ce, 0, sizeof(double) * 64);
        for (g = 0; g < G; g++) {
            const double *Bg = B + 32 * g, *Bwg = Bw + 32 * g;
            double ab[4], abd[4] = {0.0, 0.0, 0.0, 0.0};
            double a0, a1, b0, b1, gg, eps, cr, g32, kappa, ka[2], kb[2], n_ax, m_b;
            double s[4], P[16], Cp[16];
            int damped = ed != NULL && beta > 0.0;
            map8(Bg, e, ab);
            if (damped) map8(Bg, ed, abd);
            a0 = ab[0]; a1 = ab[1]; b0 = ab[2]; b1 = ab[3];
            gg = a0 * a0 + a1 * a1;
            eps = 0.5 * (gg - 1.0);
            cr = a0 * b1 - a1 * b0;
            g32 = pow(gg, -1.5);
            kappa = cr * g32;
            /* d kappa / da = g^-3/2 (b1, -b0) - 3 kappa / g a;  d kappa / db = g^-3/2 (-a1, a0) */
            ka[0] = g32 * b1 - 3.0 * kappa / gg * a0;
            ka[1] = -g32 * b0 - 3.0 * kappa / gg * a1;
            kb[0] = -g32 * a1;
            kb[1] = g32 * a0;
            n_ax = ea * eps;
            m_b = ei * kappa;
            if (damped) {
                double eps_d = a0 * abd[0] + a1 * abd[1];
                double kap_d = ka[0] * abd[0] + ka[1] * abd[1] + kb[0] * abd[2] + kb[1] * abd[3];
                n_ax += beta * ea * eps_d;
                m_b += beta * ei * kap_d;
            }
            s[0] = n_ax * a0 + m_b * ka[0];
            s[1] = n_ax * a1 + m_b * ka[1];
            s[2] = m_b * kb[0];
            s[3] = m_b * kb[1];
            for (j = 0; j < 8; j++)
                fe[j] += Bwg[j] * s[0] + Bwg[8 + j] * s[1] + Bwg[16 + j] * s[2]
                         + Bwg[24 + j] * s[3];
            if (!ke) continue;
            {
                /* the Hessian of the energy density in (a, b): material + stress parts */
                const double g52 = pow(gg, -2.5);
                const double eb[2] = {b1, -b0}, ea_[2] = {-a1, a0}, av[2] = {a0, a1};
                double kaa[2][2], kab[2][2];
                for (i = 0; i < 2; i++)
                    for (j = 0; j < 2; j++) {
                        kaa[i][j] = 3.0 * g52 * (-eb[i] * av[j] - av[i] * eb[j])
                                    + 15.0 * kappa / (gg * gg) * av[i] * av[j]
                                    - (i == j ? 3.0 * kappa / gg : 0.0);
                        /* -g^-3/2 E - 3 g^-5/2 a (E a)^T, E = [[0, -1], [1, 0]] */
                        kab[i][j] = -g32 * (i == 0 ? (j == 1 ? -1.0 : 0.0) : (j == 0 ? 1.0 : 0.0))
                                    - 3.0 * g52 * av[i] * ea_[j];
                    }
                for (i = 0; i < 2; i++)
                    for (j = 0; j < 2; j++) {
                        double maa = ea * av[i] * av[j] + ei * ka[i] * ka[j];
                        double mab = ei * ka[i] * kb[j], mba = ei * kb[i] * ka[j];
                        double mbb = ei * kb[i] * kb[j];
                        P[i * 4 + j] = maa + (i == j ? n_ax : 0.0) + m_b * kaa[i][j];
                        P[i * 4 + 2 + j] = mab + m_b * kab[i][j];
                        P[(2 + i) * 4 + j] = mba + m_b * kab[j][i];
                        P[(2 + i) * 4 + 2 + j] = mbb;
                        Cp[i * 4 + j] = beta * maa;
                        Cp[i * 4 + 2 + j] = beta * mab;
                        Cp[(2 + i) * 4 + j] = beta * mba;
                        Cp[(2 + i) * 4 + 2 + j] = beta * mbb;
                    }
                if (damped) {
                    /* d(eps')/da = a', d(kappa')/d(a, b) = (k_aa a' + k_ab b', k_ab^T a') */
                    double kda[2], kdb[2];
                    for (i = 0; i < 2; i++) {
                        kda[i] = kaa[i][0] * abd[0] + kaa[i][1] * abd[1]
                                 + kab[i][0] * abd[2] + kab[i][1] * abd[3];
                        kdb[i] = kab[0][i] * abd[0] + kab[1][i] * abd[1];
                    }
                    for (i = 0; i < 2; i++)
                        for (j = 0; j < 2; j++) {
                            P[i * 4 + j] += beta * (ea * av[i] * abd[j] + ei * ka[i] * kda[j]);
                            P[i * 4 + 2 + j] += beta * ei * ka[i] * kdb[j];
                            P[(2 + i) * 4 + j] += beta * ei * kb[i] * kda[j];
                            P[(2 + i) * 4 + 2 + j] += beta * ei * kb[i] * kdb[j];
                        }
                }
                /* K_e += Bw^T P B, C_e += Bw^T Cp B */
                for (l = 0; l < 8; l++) {
                    double pb[4], cb[4];
                    for (i = 0; i < 4; i++) {
                        pb[i] = 0.0;
                        cb[i] = 0.0;
                        for (m = 0; m < 4; m++) {
                            pb[i] += P[i * 4 + m] * Bg[m * 8 + l];
                            cb[i] += Cp[i * 4 + m] * Bg[m * 8 + l];
                        }
                    }
                    for (j = 0; j < 8; j++) {
                        ke[j * 8 + l] += Bwg[j] * pb[0] + Bwg[8 + j] * pb[1] + Bwg[16 + j] * pb[2]
                                         + Bwg[24 + j] * pb[3];
                        if (ce)
                            ce[j * 8 + l] += Bwg[j] * cb[0] + Bwg[8 + j] * cb[1]
                                             + Bwg[16 + j] * cb[2] + Bwg[24 + j] * cb[3];
                    }
                }
            }
        }
        for (j = 0; j < 8; j++) f[4 * el + j] -= fe[j];
    }
}

/* The beam's forces through the one signature of a body's compiled force kernel
   (system_terms.c): f = -dU/dq - Q_d of the whole beam, its parameters in one struct
   (ancf.py fills it by name through this declaration): N elements, G Gauss points, B
   and Bw of ancf_forces, EA, EI, beta, and the scratch of ancf_body_tangents. */
#define ANCF_BODY_LAYOUT(X)                                                                \
    X(INT, N, 1) X(INT, G, 1) X(ARRAY, B, 32 * G) X(ARRAY, Bw, 32 * G)                     \
    X(REAL, ea, 1) X(REAL, ei, 1) X(REAL, beta, 1)                                         \
    X(WORK, f, 4 * (N + 1)) X(WORK, k, 64 * N) X(WORK, c, 64 * N)

typedef struct {
    ANCF_BODY_LAYOUT(TABLE_MEMBER)
} ancf_body_t;

ANCF_API void ancf_body_forces(const void *params, const double *q, const double *v,
                               double *f) {
    const ancf_body_t *p = (const ancf_body_t *)params;
    ancf_forces(p->N, p->G, p->B, p->Bw, q, p->beta > 0.0 ? v : NULL, p->ea, p->ei,
                p->beta, f, NULL, NULL);
}

/* Its tangents K_e = -df/dq, C_e = -df/dv added into the dense K and C (leading
   dimension ld) at the beam's diagonal block: the element blocks of ancf_forces summed
   where neighbouring elements share a node (as HermiteLineBody._assemble_dense). */
ANCF_API void ancf_body_tangents(const void *params, const double *q, const double *v,
                                 double *K, double *C, int ld) {
    const ancf_body_t *p = (const ancf_body_t *)params;
    const int damped = p->beta > 0.0;
    int el, i, j;
    ancf_forces(p->N, p->G, p->B, p->Bw, q, damped ? v : NULL, p->ea, p->ei, p->beta, p->f,
                p->k, damped ? p->c : NULL);
    for (el = 0; el < p->N; el++) {
        const double *ke = p->k + 64 * el, *ce = p->c + 64 * el;
        for (i = 0; i < 8; i++)
            for (j = 0; j < 8; j++) {
                const size_t at = (size_t)(4 * el + i) * ld + 4 * el + j;
                K[at] += ke[8 * i + j];
                if (damped) C[at] += ce[8 * i + j];
            }
    }
}
