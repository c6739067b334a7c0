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
 * A tension-only (slack) cable takes n = max(0, EA (eps + beta eps')): the axial force
 * (elastic and damping together) never pushes; the bending stays.  The kink at n = 0 is
 * exact (no smoothing): where n <= 0 every axial term of the forces and tangents is
 * zero, where n > 0 the cable is computed by the very same operations as without the
 * option (bit-identical).  Below the floor strain eps_f = (lam_f^2 - 1)/2 < 0 (lam_f the
 * smallest stretch |r'| a slack cable keeps) it resists again, n = min(0, EA (eps - eps_f
 * + beta eps')): the folded cord, which keeps the element's parametrisation regular
 * (k ~ |a|^-3).  So each Gauss point is in one of three states, 0 slack, 1 taut,
 * 2 at the floor; an implicit integrator's Newton iteration may freeze them (``state``,
 * N G values, or NULL: from the signs), so that the forces are smooth within that solve
 * (mbdcore.spatial.ancf, "active set").
 *
 * Inputs: N elements, their stress-free lengths len (N) [m]; the G Gauss abscissae xi in
 * [0, 1] and weights w (summing to 1); the body's coordinates q (6 (N + 1)), node by node
 * (r, r_x), and rates v (or NULL); EA [N], EI [N m^2], beta [s]; tension_only (0 or 1)
 * and, for a tension-only cable, the floor strain eps_f and the frozen states (N G) or
 * NULL.
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

/* The state of a tension-only cable at every Gauss point (N G, element by element): 1
 * taut (n = EA (eps + beta eps') > 0), 2 at the floor (n - EA eps_f < 0), 0 slack, by
 * the very operations of ancf3d_forces (v NULL or beta 0: the elastic part only). */
ANCF3D_API void ancf3d_axial_states(int N, const double *len, int G, const double *xi,
                                    const double *q, const double *v, double ea,
                                    double beta, double eps_floor, int *state) {
    const int damped = v != NULL && beta > 0.0;
    int el, g, i, p;
    for (el = 0; el < N; el++) {
        const double *e = q + 6 * el, *ed = v ? v + 6 * el : NULL;
        for (g = 0; g < G; g++) {
            double d1[4], d2[4], a[3] = {0.0}, ad[3] = {0.0}, n_ax;
            hermite_derivatives(xi[g], len[el], d1, d2);
            for (p = 0; p < 4; p++)
                for (i = 0; i < 3; i++) {
                    a[i] += d1[p] * e[3 * p + i];
                    if (damped) ad[i] += d1[p] * ed[3 * p + i];
                }
            n_ax = ea * (0.5 * (dot3(a, a) - 1.0));
            if (damped) n_ax += beta * ea * dot3(a, ad);
            state[el * G + g] = n_ax > 0.0 ? 1 : (n_ax - ea * eps_floor < 0.0 ? 2 : 0);
        }
    }
}

ANCF3D_API void ancf3d_forces(int N, const double *len, int G, const double *xi,
                              const double *w, const double *q, const double *v, double ea,
                              double ei, double beta, int tension_only, double eps_floor,
                              const int *state, double *f, double *k, double *c) {
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
            double ea_t = ea;       /* the axial stiffness acting here: 0 where slack */
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
            if (tension_only) {
                const double n_floor = n_ax - ea * eps_floor;
                const int at = state ? state[el * G + g]
                                     : (n_ax > 0.0 ? 1 : (n_floor < 0.0 ? 2 : 0));
                if (at == 0) {
                    /* slack: no axial force and none of its derivatives */
                    n_ax = 0.0;
                    ea_t = 0.0;
                } else if (at == 2) {
                    n_ax = n_floor;     /* the same derivatives as the two-way cable */
                }
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
                        P[i][j] = ei * s + (i < 3 && j < 3 ? ea_t * a[i] * a[j] : 0.0);
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
                            P[i][j] += beta * (ei * s + (i < 3 && j < 3 ? ea_t * a[i] * ad[j] : 0.0));
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

/* ------------------------------------------------------------------------------------
 * The fully parameterised beam (mbdcore.spatial.ancf.ANCFBeam3D): nodes carry r, r_x,
 * r_y, r_z (12 coordinates); r(x) is the cubic Hermite of (r, r_x), the directors
 * d2 = r_y and d3 = r_z are interpolated linearly.  Every strain is a quadratic form in
 * a few "slot" vectors u_s (each a 3-vector linear in the coordinates), or a triple
 * product of three:
 *
 *   s = sum_t c_t u_{i_t} . u_{j_t}  (or c_t u_{i_t} . (u_{j_t} x u_{k_t}))  + s0,
 *   energy density k s^2 / 2,
 *
 * given by a table (term count, slots, coefficients, offset, stiffness) built in Python.
 * Gauss strains use the slots (a = r_x, b = r_xx, d2, d2', d3, d3') at G points;
 * nodal strains the slots (r_x, r_y, r_z) at each end of the element, with the weight
 * l/2 (each node gets half of each adjacent element: its tributary length).
 * ------------------------------------------------------------------------------------ */
#define QS_MAX_SLOTS 6
#define QS_DIM (3 * QS_MAX_SLOTS)

/* the stress gradient sg = sum_k sigma_k ds_k/du (3 n_slots) and, if P, the tangent
 * P = d sg / du and Cp = d sg / du' (3 n_slots squared, row-major), for the strains of
 * one table at one point; sigma_k = k (s_k + beta s_k'). */
static void quadratic_strains(int n_slots, const double *u, const double *ud, int n_str,
                              const int *n_terms, const int *ti, const int *tj,
                              const int *tk, const double *tc, const double *s0,
                              const double *stiff, double beta, double *sg, double *P,
                              double *Cp) {
    const int dim = 3 * n_slots;
    int k, t, i, j, x, y;
    memset(sg, 0, sizeof(double) * dim);
    if (P) memset(P, 0, sizeof(double) * dim * dim);
    if (Cp) memset(Cp, 0, sizeof(double) * dim * dim);
    for (k = 0; k < n_str; k++) {
        double g[QS_DIM] = {0.0}, hud[QS_DIM] = {0.0}, s = s0[k], sd = 0.0, sigma;
        for (t = 0; t < n_terms[k]; t++) {
            const int a = ti[2 * k + t], b = tj[2 * k + t], m3 = tk[2 * k + t];
            const double c = tc[2 * k + t];
            if (m3 >= 0) {      /* c u_a . (u_b x u_m): gradient (u_b x u_m, u_m x u_a, u_a x u_b) */
                const double *ua = u + 3 * a, *ub = u + 3 * b, *um = u + 3 * m3;
                double bm[3], ma[3], ab[3];
                cross3(ub, um, bm);
                cross3(um, ua, ma);
                cross3(ua, ub, ab);
                s += c * dot3(ua, bm);
                for (x = 0; x < 3; x++) {
                    g[3 * a + x] += c * bm[x];
                    g[3 * b + x] += c * ma[x];
                    g[3 * m3 + x] += c * ab[x];
                }
                if (ud) {       /* H u' */
                    const double *va = ud + 3 * a, *vb = ud + 3 * b, *vm = ud + 3 * m3;
                    double t1[3], t2[3];
                    cross3(vb, um, t1); cross3(ub, vm, t2);
                    for (x = 0; x < 3; x++) hud[3 * a + x] += c * (t1[x] + t2[x]);
                    cross3(vm, ua, t1); cross3(um, va, t2);
                    for (x = 0; x < 3; x++) hud[3 * b + x] += c * (t1[x] + t2[x]);
                    cross3(va, ub, t1); cross3(ua, vb, t2);
                    for (x = 0; x < 3; x++) hud[3 * m3 + x] += c * (t1[x] + t2[x]);
                }
                continue;
            }
            s += c * dot3(u + 3 * a, u + 3 * b);
            for (x = 0; x < 3; x++) {
                g[3 * a + x] += c * u[3 * b + x];
                g[3 * b + x] += c * u[3 * a + x];
                if (ud) {                         /* H u' */
                    hud[3 * a + x] += c * ud[3 * b + x];
                    hud[3 * b + x] += c * ud[3 * a + x];
                }
            }
        }
        if (ud) for (i = 0; i < dim; i++) sd += g[i] * ud[i];
        sigma = stiff[k] * (s + beta * sd);
        for (i = 0; i < dim; i++) sg[i] += sigma * g[i];
        if (!P) continue;
        {
            /* the gradient lives on the strain's own slots (at most 6 of 18 entries) */
            int on[QS_DIM], n_on = 0, ii, jj;
            for (i = 0; i < dim; i++)
                if (g[i] != 0.0 || hud[i] != 0.0) on[n_on++] = i;
            for (ii = 0; ii < n_on; ii++)
                for (jj = 0; jj < n_on; jj++) {
                    i = on[ii];
                    j = on[jj];
                    P[i * dim + j] += stiff[k] * g[i] * (g[j] + beta * hud[j]);
                    if (Cp) Cp[i * dim + j] += beta * stiff[k] * g[i] * g[j];
                }
        }
        for (t = 0; t < n_terms[k]; t++) {       /* sigma times the Hessian of s */
            const int a = ti[2 * k + t], b = tj[2 * k + t], m3 = tk[2 * k + t];
            const double c = sigma * tc[2 * k + t];
            if (m3 >= 0) {
                /* d(u_b x u_m)/du_b = -[u_m]x, /du_m = [u_b]x, and cyclically: the
                 * block (p, q) of the pair (p, q) with r the third slot is -c [u_r]x for
                 * (p, q) in cyclic order (a b, b m, m a) and its transpose otherwise */
                const int order[3][3] = {{a, b, m3}, {b, m3, a}, {m3, a, b}};
                int o;
                for (o = 0; o < 3; o++) {
                    const int p = order[o][0], qq = order[o][1], r = order[o][2];
                    double S[3][3];
                    skew3(u + 3 * r, S);
                    for (x = 0; x < 3; x++)
                        for (y = 0; y < 3; y++) {
                            P[(3 * p + x) * dim + 3 * qq + y] -= c * S[x][y];
                            P[(3 * qq + x) * dim + 3 * p + y] -= c * S[y][x];
                        }
                }
                continue;
            }
            for (y = 0; y < 3; y++) {
                P[(3 * a + y) * dim + 3 * b + y] += c;
                P[(3 * b + y) * dim + 3 * a + y] += c;
            }
        }
    }
}

/* the slot coefficients at xi of an element of length l over its 8 nodal vectors
 * (r_A, r_x,A, r_y,A, r_z,A, r_B, r_x,B, r_y,B, r_z,B): Bs[slot][vector] */
static void beam_slots(double xi, double l, double Bs[6][8]) {
    double d1[4], d2[4];
    int s, v;
    hermite_derivatives(xi, l, d1, d2);
    for (s = 0; s < 6; s++)
        for (v = 0; v < 8; v++) Bs[s][v] = 0.0;
    Bs[0][0] = d1[0]; Bs[0][1] = d1[1]; Bs[0][4] = d1[2]; Bs[0][5] = d1[3];
    Bs[1][0] = d2[0]; Bs[1][1] = d2[1]; Bs[1][4] = d2[2]; Bs[1][5] = d2[3];
    Bs[2][2] = 1.0 - xi; Bs[2][6] = xi;
    Bs[3][2] = -1.0 / l; Bs[3][6] = 1.0 / l;
    Bs[4][3] = 1.0 - xi; Bs[4][7] = xi;
    Bs[5][3] = -1.0 / l; Bs[5][7] = 1.0 / l;
}

/* add w Bs^T sg to the element force (24) and w Bs^T P Bs to the element blocks: each
 * nodal vector feeds at most a few slots, so Y = P Bs is formed over those first */
static void scatter_slots(int n_slots, const double *Bs, double w, const double *sg,
                          const double *P, const double *Cp, double *fe, double *ke,
                          double *ce) {
    const int dim = 3 * n_slots;
    int feeds[8], slot[8][QS_MAX_SLOTS], s, t, v, vv, x, y, row;
    double coef[8][QS_MAX_SLOTS], Y[QS_DIM][24], Yc[QS_DIM][24];
    for (v = 0; v < 8; v++) {
        feeds[v] = 0;
        for (s = 0; s < n_slots; s++)
            if (Bs[s * 8 + v] != 0.0) {
                slot[v][feeds[v]] = s;
                coef[v][feeds[v]++] = Bs[s * 8 + v];
            }
    }
    for (v = 0; v < 8; v++)
        for (t = 0; t < feeds[v]; t++)
            for (x = 0; x < 3; x++)
                fe[3 * v + x] += w * coef[v][t] * sg[3 * slot[v][t] + x];
    if (!ke) return;
    for (row = 0; row < dim; row++)
        for (vv = 0; vv < 8; vv++)
            for (y = 0; y < 3; y++) {
                double acc = 0.0, accc = 0.0;
                for (t = 0; t < feeds[vv]; t++) {
                    acc += coef[vv][t] * P[row * dim + 3 * slot[vv][t] + y];
                    if (ce) accc += coef[vv][t] * Cp[row * dim + 3 * slot[vv][t] + y];
                }
                Y[row][3 * vv + y] = acc;
                Yc[row][3 * vv + y] = accc;
            }
    for (v = 0; v < 8; v++)
        for (t = 0; t < feeds[v]; t++) {
            const double c = w * coef[v][t];
            const int s0 = 3 * slot[v][t];
            for (x = 0; x < 3; x++) {
                double *krow = ke + (3 * v + x) * 24;
                const double *yrow = Y[s0 + x];
                for (y = 0; y < 24; y++) krow[y] += c * yrow[y];
                if (ce) {
                    double *crow = ce + (3 * v + x) * 24;
                    const double *ycrow = Yc[s0 + x];
                    for (y = 0; y < 24; y++) crow[y] += c * ycrow[y];
                }
            }
        }
}

/* Inputs: N elements of lengths len; G Gauss points xi, w (on [0, 1]); q (12 (N + 1)),
 * v (or NULL); the Gauss table (gs_n strains: gs_terms, gs_i, gs_j, gs_c (2 per strain),
 * gs_s0, gs_k) and the nodal table (ns_n, ns_terms, ns_i, ns_j, ns_c, ns_s0, ns_k);
 * beta [s].  Outputs: f (12 (N + 1)) = -dU/dq - Q_d [N]; k, c element blocks
 * (N x 24 x 24) or NULL.  A term's third slot (gs_m, ns_m) is -1 for a dot product.
 * No allocation. */
ANCF3D_API void ancf3d_beam_forces(int N, const double *len, int G, const double *xi,
                                   const double *w, const double *q, const double *v,
                                   int gs_n, const int *gs_terms, const int *gs_i,
                                   const int *gs_j, const int *gs_m, const double *gs_c,
                                   const double *gs_s0, const double *gs_k, int ns_n,
                                   const int *ns_terms, const int *ns_i, const int *ns_j,
                                   const int *ns_m, const double *ns_c, const double *ns_s0,
                                   const double *ns_k, double beta,
                                   double *f, double *k, double *c) {
    int el, g, s, vv, x, end;
    const int damped = v != NULL && beta > 0.0;
    memset(f, 0, sizeof(double) * 12 * (N + 1));
    for (el = 0; el < N; el++) {
        const double l = len[el];
        const double *e = q + 12 * el, *ed = damped ? v + 12 * el : NULL;
        double fe[24] = {0.0}, sg[QS_DIM], P[QS_DIM * QS_DIM], Cp[QS_DIM * QS_DIM];
        double *ke = k ? k + 576 * el : NULL, *ce = (k && c && damped) ? c + 576 * el : NULL;
        if (ke) memset(ke, 0, sizeof(double) * 576);
        if (ce) memset(ce, 0, sizeof(double) * 576);
        for (g = 0; g < G; g++) {
            double Bs[6][8], u[18] = {0.0}, ud[18] = {0.0};
            beam_slots(xi[g], l, Bs);
            for (s = 0; s < 6; s++)
                for (vv = 0; vv < 8; vv++) {
                    if (Bs[s][vv] == 0.0) continue;
                    for (x = 0; x < 3; x++) {
                        u[3 * s + x] += Bs[s][vv] * e[3 * vv + x];
                        if (damped) ud[3 * s + x] += Bs[s][vv] * ed[3 * vv + x];
                    }
                }
            quadratic_strains(6, u, damped ? ud : NULL, gs_n, gs_terms, gs_i, gs_j, gs_m,
                              gs_c, gs_s0, gs_k, beta, sg, ke ? P : NULL, ce ? Cp : NULL);
            scatter_slots(6, &Bs[0][0], w[g] * l, sg, P, Cp, fe, ke, ce);
        }
        for (end = 0; end < 2; end++) {     /* the nodal strains, weight l/2 at each end */
            double Bn[3][8] = {{0.0}};
            const int base = 4 * end;
            Bn[0][base + 1] = 1.0;
            Bn[1][base + 2] = 1.0;
            Bn[2][base + 3] = 1.0;
            quadratic_strains(3, e + 12 * end + 3, damped ? ed + 12 * end + 3 : NULL, ns_n,
                              ns_terms, ns_i, ns_j, ns_m, ns_c, ns_s0, ns_k, beta, sg,
                              ke ? P : NULL, ce ? Cp : NULL);
            scatter_slots(3, &Bn[0][0], 0.5 * l, sg, P, Cp, fe, ke, ce);
        }
        for (s = 0; s < 24; s++) f[12 * el + s] -= fe[s];
    }
}

/* The cable's and the beam's forces and tangents through the one signature of a body's
 * compiled force kernel (body_force_fn, body_tangent_fn of
 * mbdcore/multibody/native/system_terms.c), their parameters in one struct each; the
 * tangents' element blocks summed where neighbouring elements share a node (as
 * HermiteLineBody._assemble_dense), into K and C of leading dimension ld. */
static void add_element_blocks(int N, int ns, const double *k, const double *c, double *K,
                               double *C, int ld) {
    const int ne = 2 * ns;
    int el, i, j;
    for (el = 0; el < N; el++)
        for (i = 0; i < ne; i++)
            for (j = 0; j < ne; j++) {
                const size_t at = (size_t)(ns * el + i) * ld + ns * el + j;
                K[at] += k[(size_t)el * ne * ne + i * ne + j];
                if (c) C[at] += c[(size_t)el * ne * ne + i * ne + j];
            }
}

/* A tension-only cable's active set: ``state`` (N G: 0 slack, 1 taut, 2 at the floor)
 * holds while ``*frozen`` is non-zero (an implicit step's Newton solve freezes it, the
 * cable's owner writing both arrays in place between calls); otherwise, and for a cable
 * that is not tension-only (frozen NULL), the states follow the stresses' signs. */
typedef struct {
    int N, G;
    const double *len, *xi, *w;
    double ea, ei, beta;
    double *f, *k, *c;      /* scratch of the tangents: 6 (N + 1), 144 N, 144 N */
    int tension_only;
    double floor_strain;
    const int *state, *frozen;
} ancf3d_cable_t;

static const int *cable_states(const ancf3d_cable_t *p) {
    return p->tension_only && p->frozen && *p->frozen ? p->state : NULL;
}

ANCF3D_API void ancf3d_cable_body_forces(const void *params, const double *q,
                                         const double *v, double *f) {
    const ancf3d_cable_t *p = (const ancf3d_cable_t *)params;
    ancf3d_forces(p->N, p->len, p->G, p->xi, p->w, q, p->beta > 0.0 ? v : NULL, p->ea, p->ei,
                  p->beta, p->tension_only, p->floor_strain, cable_states(p), f, NULL, NULL);
}

ANCF3D_API void ancf3d_cable_body_tangents(const void *params, const double *q,
                                           const double *v, double *K, double *C, int ld) {
    const ancf3d_cable_t *p = (const ancf3d_cable_t *)params;
    const int damped = p->beta > 0.0;
    ancf3d_forces(p->N, p->len, p->G, p->xi, p->w, q, damped ? v : NULL, p->ea, p->ei,
                  p->beta, p->tension_only, p->floor_strain, cable_states(p), p->f, p->k,
                  damped ? p->c : NULL);
    add_element_blocks(p->N, 6, p->k, damped ? p->c : NULL, K, C, ld);
}

typedef struct {
    int N, G;
    const double *len, *xi, *w;
    int gs_n;
    const int *gs_terms, *gs_i, *gs_j, *gs_m;
    const double *gs_c, *gs_s0, *gs_k;
    int ns_n;
    const int *ns_terms, *ns_i, *ns_j, *ns_m;
    const double *ns_c, *ns_s0, *ns_k;
    double beta;
    double *f, *k, *c;      /* scratch of the tangents: 12 (N + 1), 576 N, 576 N */
} ancf3d_beam_t;

static void beam_call(const ancf3d_beam_t *p, const double *q, const double *v, double *f,
                      double *k, double *c) {
    ancf3d_beam_forces(p->N, p->len, p->G, p->xi, p->w, q, v, p->gs_n, p->gs_terms, p->gs_i,
                       p->gs_j, p->gs_m, p->gs_c, p->gs_s0, p->gs_k, p->ns_n, p->ns_terms,
                       p->ns_i, p->ns_j, p->ns_m, p->ns_c, p->ns_s0, p->ns_k, p->beta, f, k,
                       c);
}

ANCF3D_API void ancf3d_beam_body_forces(const void *params, const double *q,
                                        const double *v, double *f) {
    const ancf3d_beam_t *p = (const ancf3d_beam_t *)params;
    beam_call(p, q, p->beta > 0.0 ? v : NULL, f, NULL, NULL);
}

ANCF3D_API void ancf3d_beam_body_tangents(const void *params, const double *q,
                                          const double *v, double *K, double *C, int ld) {
    const ancf3d_beam_t *p = (const ancf3d_beam_t *)params;
    const int damped = p->beta > 0.0;
    beam_call(p, q, damped ? v : NULL, p->f, p->k, damped ? p->c : NULL);
    add_element_blocks(p->N, 12, p->k, damped ? p->c : NULL, K, C, ld);
}
