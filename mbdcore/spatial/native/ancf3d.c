/*
 * The elastic (and Kelvin-Voigt damping) forces of a spatial gradient-deficient ANCF
 * cable element and their exact tangents, element by element, in plain C99: the one
 * implementation behind mbdcore.spatial.ancf.ANCFCable (through ctypes).  The strain
 * measures and why they were chosen are in the docstring of ancf.py and docs/spatial.md:
 *
 *   eps = (a.a - 1) / 2,   k = (a x b) / |a|^3  (curvature vector, |k| = curvature),
 *   a = r_x, b = r_xx,     W = EA eps^2 / 2 + EI k.k / 2  per unit stress-free length,
 *
 * at G Gauss points per element; with damping the stresses are
 *   n = EA (eps + beta eps'),  m = EI (k + beta k')    (eps', k' the strain rates).
 *
 * Inputs: N elements, their stress-free lengths len (N) [m]; the G Gauss abscissae xi in
 * [0, 1] and weights w (summing to 1); the body's coordinates q (6 (N + 1)), node by node
 * (r, r_x), and rates v (or NULL); EA [N], EI [N m^2], beta [s].
 * Outputs: the generalised forces f = -dU/dq - Q_d (6 (N + 1)) [N], and, if k is not
 * NULL, the element blocks K_e = -df/dq (N x 12 x 12) and, if c is not NULL and there is
 * damping, C_e = -df/dv (N x 12 x 12) [N/m, N s/m].  No allocation.
 */
#include <math.h>
#include <string.h>

#ifndef ANCF3D_API
#define ANCF3D_API
#endif

static void cross3(const double *x, const double *y, double *out) {
    out[0] = x[1] * y[2] - x[2] * y[1];
    out[1] = x[2] * y[0] - x[0] * y[2];
    out[2] = x[0] * y[1] - x[1] * y[0];
}

static double dot3(const double *x, const double *y) {
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
}

/* S = [x]_cross, so S y = x cross y */
static void skew3(const double *x, double S[3][3]) {
    S[0][0] = 0.0;   S[0][1] = -x[2]; S[0][2] = x[1];
    S[1][0] = x[2];  S[1][1] = 0.0;   S[1][2] = -x[0];
    S[2][0] = -x[1]; S[2][1] = x[0];  S[2][2] = 0.0;
}

/* the x-derivatives of the cubic Hermite functions of an element of length l at xi:
 * coefficients of (r_A, r_x,A, r_B, r_x,B) in r_x (d1) and r_xx (d2) */
static void hermite_derivatives(double xi, double l, double d1[4], double d2[4]) {
    d1[0] = (-6.0 * xi + 6.0 * xi * xi) / l;
    d1[1] = 1.0 - 4.0 * xi + 3.0 * xi * xi;
    d1[2] = (6.0 * xi - 6.0 * xi * xi) / l;
    d1[3] = 3.0 * xi * xi - 2.0 * xi;
    d2[0] = (-6.0 + 12.0 * xi) / (l * l);
    d2[1] = (-4.0 + 6.0 * xi) / l;
    d2[2] = (6.0 - 12.0 * xi) / (l * l);
    d2[3] = (-2.0 + 6.0 * xi) / l;
}

ANCF3D_API void ancf3d_forces(int N, const double *len, int G, const double *xi,
                              const double *w, const double *q, const double *v, double ea,
                              double ei, double beta, double *f, double *k, double *c) {
    int el, g, i, j, p, r;
    const int damped = v != NULL && beta > 0.0;
    memset(f, 0, sizeof(double) * 6 * (N + 1));
    for (el = 0; el < N; el++) {
        const double l = len[el];
        const double *e = q + 6 * el, *ed = v ? v + 6 * el : NULL;
        double fe[12] = {0.0};
        double *ke = k ? k + 144 * el : NULL, *ce = (k && c && damped) ? c + 144 * el : NULL;
        if (ke) memset(ke, 0, sizeof(double) * 144);
        if (ce) memset(ce, 0, sizeof(double) * 144);
        for (g = 0; g < G; g++) {
            double d1[4], d2[4], a[3] = {0.0}, b[3] = {0.0}, ad[3] = {0.0}, bd[3] = {0.0};
            double gg, h, g52, g72, cv[3], kv[3], eps, n_ax, m[3], sa[3], sb[3], bm[3], ma[3];
            double cd[3] = {0.0}, ada = 0.0, hd = 0.0, wl = w[g] * l, cm;
            hermite_derivatives(xi[g], l, d1, d2);
            for (p = 0; p < 4; p++)
                for (i = 0; i < 3; i++) {
                    a[i] += d1[p] * e[3 * p + i];
                    b[i] += d2[p] * e[3 * p + i];
                    if (damped) {
                        ad[i] += d1[p] * ed[3 * p + i];
                        bd[i] += d2[p] * ed[3 * p + i];
                    }
                }
            gg = dot3(a, a);
            h = pow(gg, -1.5);
            g52 = h / gg;
            g72 = g52 / gg;
            cross3(a, b, cv);
            for (i = 0; i < 3; i++) kv[i] = h * cv[i];
            eps = 0.5 * (gg - 1.0);
            n_ax = ea * eps;
            for (i = 0; i < 3; i++) m[i] = ei * kv[i];
            if (damped) {
                double t1[3], t2[3];
                ada = dot3(a, ad);
                cross3(ad, b, t1);
                cross3(a, bd, t2);
                for (i = 0; i < 3; i++) cd[i] = t1[i] + t2[i];
                hd = -3.0 * g52 * ada;
                n_ax += beta * ea * ada;
                for (i = 0; i < 3; i++) m[i] += beta * ei * (hd * cv[i] + h * cd[i]);
            }
            /* dW = n da.a + m.dk:  s_a = n a + h b x m - 3 g^-5/2 (c.m) a,  s_b = h m x a */
            cross3(b, m, bm);
            cross3(m, a, ma);
            cm = dot3(cv, m);
            for (i = 0; i < 3; i++) {
                sa[i] = n_ax * a[i] + h * bm[i] - 3.0 * g52 * cm * a[i];
                sb[i] = h * ma[i];
            }
            for (p = 0; p < 4; p++)
                for (i = 0; i < 3; i++) fe[3 * p + i] += wl * (d1[p] * sa[i] + d2[p] * sb[i]);
            if (!ke) continue;
            {
                /* P: the Hessian of the energy density in (a, b) (6 x 6), material part
                 * EA a a^T + EI K^T K (K = dk/d(a, b)) plus the stress part n I + m.d2k */
                double P[6][6], Cp[6][6], K[3][6], Sb[3][3], Sa[3][3], Sm[3][3], u[3];
                double ma2[3];
                skew3(b, Sb);
                skew3(a, Sa);
                skew3(m, Sm);
                for (i = 0; i < 3; i++)
                    for (j = 0; j < 3; j++) {
                        K[i][j] = -h * Sb[i][j] - 3.0 * g52 * cv[i] * a[j];
                        K[i][3 + j] = h * Sa[i][j];
                    }
                for (i = 0; i < 6; i++)
                    for (j = 0; j < 6; j++) {
                        double s = 0.0;
                        for (r = 0; r < 3; r++) s += K[r][i] * K[r][j];
                        P[i][j] = ei * s + (i < 3 && j < 3 ? ea * a[i] * a[j] : 0.0);
                        Cp[i][j] = beta * P[i][j];
                    }
                /* m.d2k: aa = (c.m)(15 g^-7/2 a a^T - 3 g^-5/2 I) - 3 g^-5/2 (a u^T + u a^T),
                 * u = b x m;  ab = -h [m]x - 3 g^-5/2 a (m x a)^T;  bb = 0 */
                for (i = 0; i < 3; i++) u[i] = bm[i];
                for (i = 0; i < 3; i++) ma2[i] = ma[i];
                for (i = 0; i < 3; i++)
                    for (j = 0; j < 3; j++) {
                        double paa = cm * (15.0 * g72 * a[i] * a[j] - (i == j ? 3.0 * g52 : 0.0))
                                     - 3.0 * g52 * (a[i] * u[j] + u[i] * a[j])
                                     + (i == j ? n_ax : 0.0);
                        double pab = -h * Sm[i][j] - 3.0 * g52 * a[i] * ma2[j];
                        P[i][j] += paa;
                        P[i][3 + j] += pab;
                        P[3 + j][i] += pab;
                    }
                if (damped) {
                    /* the rates' own dependence on q: d(n_d)/da = beta EA a'^T, and
                     * d(m_d)/d(a, b) = beta EI D, D = d k'/d(a, b) at fixed rates */
                    double D[3][6], Sbd[3][3], Sad[3][3];
                    skew3(bd, Sbd);
                    skew3(ad, Sad);
                    for (i = 0; i < 3; i++)
                        for (j = 0; j < 3; j++) {
                            D[i][j] = cv[i] * (15.0 * g72 * ada * a[j] - 3.0 * g52 * ad[j])
                                      - hd * Sb[i][j] - h * Sbd[i][j] - 3.0 * g52 * cd[i] * a[j];
                            D[i][3 + j] = hd * Sa[i][j] + h * Sad[i][j];
                        }
                    for (i = 0; i < 6; i++)
                        for (j = 0; j < 6; j++) {
                            double s = 0.0;
                            for (r = 0; r < 3; r++) s += K[r][i] * D[r][j];
                            P[i][j] += beta * (ei * s + (i < 3 && j < 3 ? ea * a[i] * ad[j] : 0.0));
                        }
                }
                /* K_e += wl B^T P B with B = (d1 (x) I3 ; d2 (x) I3), block by block */
                for (p = 0; p < 4; p++)
                    for (r = 0; r < 4; r++) {
                        const double caa = wl * d1[p] * d1[r], cab = wl * d1[p] * d2[r];
                        const double cba = wl * d2[p] * d1[r], cbb = wl * d2[p] * d2[r];
                        for (i = 0; i < 3; i++)
                            for (j = 0; j < 3; j++) {
                                const int at = (3 * p + i) * 12 + 3 * r + j;
                                ke[at] += caa * P[i][j] + cab * P[i][3 + j]
                                          + cba * P[3 + i][j] + cbb * P[3 + i][3 + j];
                                if (ce)
                                    ce[at] += caa * Cp[i][j] + cab * Cp[i][3 + j]
                                              + cba * Cp[3 + i][j] + cbb * Cp[3 + i][3 + j];
                            }
                    }
            }
        }
        for (j = 0; j < 12; j++) f[6 * el + j] -= fe[j];
    }
}
