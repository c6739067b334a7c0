/* Batched constraint rows of a planar System (mbdcore/multibody/assembly.py).
 *
 * Every kinematic quantity the joints read is one of a few closed forms (rigid point,
 * point linear in q, orientation linear in q, ANCF slope angle); every row is one of
 * three forms (point difference, sine of an angle difference, sum of angles), or a
 * row quadratic in q (every row of the spatial engine's natural-coordinate bodies,
 * bars, ANCF cable nodes and their joints: g = q^T H q / 2 + b . q + c with constant
 * H, b, c), or a row of hinge angles (gears, angle drivers: each hinge's cosine and
 * sine a pair of quadratic scalars c, s, its angle sign atan2(s, c)).  The Python side
 * groups them once per topology into the flat index arrays of plan_t;
 * plan_evaluate fills g, gamma and the Jacobian's non-zeros in one call.  The offsets of
 * the angle-sum rows (driving motions, gear offsets) are Python callables and are
 * applied by the caller.
 */
#include <math.h>
#include <string.h>

#include "table_layout.h"

/* marks what Python and other kernels call (mbdcore.cbuild binds it) */
#ifndef PLAN_API
#define PLAN_API
#endif

/* The plan's table, declared once (mbdcore/native/table_layout.h; assembly.py fills it by
   name through this declaration, each array checked against its size):
   m rows of g;
   points: rigid (x, y, phi columns r_cols; local point r_local) then linear (N q[cols]
   + c: l_cols, l_N (n_linear, 2, lin_width), l_c);
   orientations: linear (k . q[cols] + c: a_idx, a_k, a_c) then ANCF slope angles
   (s_cols, s_colsy, s_S1 (n_slope, slope_width), s_theta0, s_t0 (n_slope, 2));
   Jacobian entries of the quantities: points (constants; the d/dphi entries of the rigid
   points at 4k+2, 4k+3 filled here), then orientations (constants; the slope entries
   from s_first on filled here);
   rows: point differences (p_row, p_a, p_b), sines of angle differences (sn_row, sn_a,
   sn_b, sn_angle), sums of angles (t_row, t_slot, t_coef);
   Jacobian non-zeros: value = entries[src] * mult (* cos d of a sine row), added to
   out[scatter] (a dense G's flat index, or a CSR matrix's data index; n_out values);
   quadratic rows: H entries (row, j, k, h): g[row] += h q_j q_k / 2, G[row][j] += h q_k,
   gamma[row] -= h v_j v_k; b entries (row, j, b): g[row] += b q_j, G[row][j] += b;
   constants (row, c); the G values added to out[Q_scatter] (H entries first, then b
   entries);
   hinge-angle rows: n_pair pairs of quadratic scalars (scalar 2p the cosine, 2p + 1 the
   sine of pair p; H entries (sr, sj, sk, sh), b entries (sbr, sbj, sbv), constants
   s_const) whose gradient entries are e = 0 .. n_sh + n_sb - 1 (H entries first: value
   sh q[sk] in column sj; then b entries), of scalar e_scalar[e] in column e_col[e];
   links k (a row's use of a scalar, two per pair: cosine, sine) with their weights
   d g_row / d scalar; gear rows: terms (at_row, at_pair, at_w = ratio times the hinge's
   sign, at_link the cosine's link) and constants (ac_row, ac_c); driver rows (ad_row,
   ad_pair, ad_link) with the prescribed angle, rate and acceleration times the hinge's
   sign (ad_f, ad_fd, ad_fdd, set per solve); Jacobian values weight[ge_link]
   e[ge_entry] added to out[A_scatter]; g_t of the driver rows written to a_gt (m
   values). */
#define PLAN_LAYOUT(X)                                                                     \
    X(INT, m, 1)                                                                           \
    X(INT, n_rigid, 1) X(INT, n_linear, 1) X(INT, lin_width, 1)                            \
    X(INTS, r_cols, 3 * n_rigid) X(ARRAY, r_local, 2 * n_rigid)                            \
    X(INTS, l_cols, n_linear * lin_width) X(ARRAY, l_N, 2 * n_linear * lin_width)          \
    X(ARRAY, l_c, 2 * n_linear)                                                            \
    X(INT, n_lin_ang, 1) X(INT, ang_width, 1)                                              \
    X(INTS, a_idx, n_lin_ang * ang_width) X(ARRAY, a_k, n_lin_ang * ang_width)             \
    X(ARRAY, a_c, n_lin_ang)                                                               \
    X(INT, n_slope, 1) X(INT, slope_width, 1)                                              \
    X(INTS, s_cols, n_slope * slope_width) X(INTS, s_colsy, n_slope * slope_width)         \
    X(ARRAY, s_S1, n_slope * slope_width) X(ARRAY, s_theta0, n_slope)                      \
    X(ARRAY, s_t0, 2 * n_slope)                                                            \
    X(INT, n_pt_ent, 1) X(INT, n_an_ent, 1) X(INT, s_first, 1)                             \
    X(ARRAY, pt_val, n_pt_ent) X(ARRAY, an_val, n_an_ent)                                  \
    X(INT, n_point_rows, 1)                                                                \
    X(INTS, p_row, n_point_rows) X(INTS, p_a, n_point_rows) X(INTS, p_b, n_point_rows)     \
    X(INT, n_sine_rows, 1)                                                                 \
    X(INTS, sn_row, n_sine_rows) X(INTS, sn_a, n_sine_rows) X(INTS, sn_b, n_sine_rows)     \
    X(ARRAY, sn_angle, n_sine_rows)                                                        \
    X(INT, n_terms, 1)                                                                     \
    X(INTS, t_row, n_terms) X(INTS, t_slot, n_terms) X(ARRAY, t_coef, n_terms)             \
    X(INT, n_G, 1) X(INT, n_out, 1)                                                        \
    X(INTS, G_src, n_G) X(INTS, G_sine_row, n_G) X(INTS, G_scatter, n_G)                   \
    X(ARRAY, G_mult, n_G)                                                                  \
    X(INT, n_qh, 1) X(INT, n_qb, 1) X(INT, n_qc, 1)                                        \
    X(INTS, qh_row, n_qh) X(INTS, qh_j, n_qh) X(INTS, qh_k, n_qh)                          \
    X(INTS, qb_row, n_qb) X(INTS, qb_j, n_qb) X(INTS, qc_row, n_qc)                        \
    X(INTS, Q_scatter, n_qh + n_qb)                                                        \
    X(ARRAY, qh_h, n_qh) X(ARRAY, qb_b, n_qb) X(ARRAY, qc_c, n_qc)                         \
    X(INT, n_pair, 1) X(INT, n_sh, 1) X(INT, n_sb, 1)                                      \
    X(INTS, sr, n_sh) X(INTS, sj, n_sh) X(INTS, sk, n_sh)                                  \
    X(INTS, sbr, n_sb) X(INTS, sbj, n_sb)                                                  \
    X(INTS, e_scalar, n_sh + n_sb) X(INTS, e_col, n_sh + n_sb)                             \
    X(ARRAY, sh, n_sh) X(ARRAY, sbv, n_sb) X(ARRAY, s_const, 2 * n_pair)                   \
    X(INT, n_at, 1) X(INT, n_ac, 1) X(INT, n_ad, 1) X(INT, n_ge, 1)                        \
    X(INTS, at_row, n_at) X(INTS, at_pair, n_at) X(INTS, at_link, n_at)                    \
    X(INTS, ac_row, n_ac)                                                                  \
    X(INTS, ad_row, n_ad) X(INTS, ad_pair, n_ad) X(INTS, ad_link, n_ad)                    \
    X(ARRAY, at_w, n_at) X(ARRAY, ac_c, n_ac)                                              \
    X(ARRAY, ad_f, n_ad) X(ARRAY, ad_fd, n_ad) X(ARRAY, ad_fdd, n_ad)                      \
    X(INTS, ge_link, n_ge) X(INTS, ge_entry, n_ge) X(INTS, A_scatter, n_ge)                \
    X(WORK, a_gt, m)

typedef struct {
    PLAN_LAYOUT(TABLE_MEMBER)
} plan_t;

/* The work buffer of plan_evaluate, laid out here once (plan_geometric reads what
   plan_evaluate left there): the points' positions and velocity-quadratic parts (2 P
   each), the quantities' Jacobian entries (n_pt_ent + n_an_ent), the orientations'
   angles, rates and quads (A each), the sine rows' cos d (n_sine_rows), one spare, then
   the part the hinge-angle rows use: the scalars' values, rates and quads (3 S), the
   gradient entries' values, the links' weights, and per pair (c, s, rho^2, raw angle,
   its rate, its quad); P = n_rigid + n_linear, A = n_lin_ang + n_slope. */
static long work_entries_at(const plan_t *p)
{
    return 4L * (p->n_rigid + p->n_linear);
}

static long work_angles_at(const plan_t *p)
{
    return work_entries_at(p) + p->n_pt_ent + p->n_an_ent;
}

static long work_cosd_at(const plan_t *p)
{
    return work_angles_at(p) + 3L * (p->n_lin_ang + p->n_slope);
}

static long angle_work_at(const plan_t *p)
{
    return work_cosd_at(p) + p->n_sine_rows + 1;
}

static double *work_entries(const plan_t *p, double *work) { return work + work_entries_at(p); }
static double *work_angles(const plan_t *p, double *work) { return work + work_angles_at(p); }
static double *work_cosd(const plan_t *p, double *work) { return work + work_cosd_at(p); }
static double *angle_work(const plan_t *p, double *work) { return work + angle_work_at(p); }

/* the length of the work buffer of plan_evaluate [doubles] */
PLAN_API long plan_work_length(const plan_t *p)
{
    return angle_work_at(p) + 12L * p->n_pair + p->n_sh + p->n_sb + 2L * (p->n_at + p->n_ad);
}

static void hinge_angle_rows(const plan_t *p, const double *q, const double *v, double *g,
                             double *gam, double *out, double *work)
{
    const int S = 2 * p->n_pair, E = p->n_sh + p->n_sb;
    double *val = angle_work(p, work), *rate = val + S, *quad = rate + S, *e = quad + S;
    double *weight = e + E, *pair = weight + 2 * (p->n_at + p->n_ad);
    int k;
    memcpy(val, p->s_const, (size_t)S * sizeof(double));
    memset(rate, 0, (size_t)2 * S * sizeof(double));
    for (k = 0; k < p->n_sh; ++k) {
        const double hq = p->sh[k] * q[p->sk[k]];
        val[p->sr[k]] += 0.5 * hq * q[p->sj[k]];
        quad[p->sr[k]] += p->sh[k] * v[p->sj[k]] * v[p->sk[k]];
        e[k] = hq;
    }
    for (k = 0; k < p->n_sb; ++k) {
        val[p->sbr[k]] += p->sbv[k] * q[p->sbj[k]];
        e[p->n_sh + k] = p->sbv[k];
    }
    for (k = 0; k < E; ++k) rate[p->e_scalar[k]] += e[k] * v[p->e_col[k]];
    for (k = 0; k < p->n_pair; ++k) {
        const double c = val[2 * k], s = val[2 * k + 1], cd = rate[2 * k], sd = rate[2 * k + 1];
        const double rho2 = c * c + s * s, raw_rate = (c * sd - s * cd) / rho2;
        double *x = pair + 6 * k;
        x[0] = c;
        x[1] = s;
        x[2] = rho2;
        x[3] = atan2(s, c);
        x[4] = raw_rate;
        x[5] = (c * quad[2 * k + 1] - s * quad[2 * k]) / rho2
               - 2.0 * raw_rate * (c * cd + s * sd) / rho2;
    }
    for (k = 0; k < p->n_ac; ++k) {
        g[p->ac_row[k]] = -p->ac_c[k];
        gam[p->ac_row[k]] = 0.0;
    }
    for (k = 0; k < p->n_at; ++k) {
        const double *x = pair + 6 * p->at_pair[k], w = p->at_w[k];
        g[p->at_row[k]] += w * x[3];
        gam[p->at_row[k]] -= w * x[5];
        weight[p->at_link[k]] = -w * x[1] / x[2];
        weight[p->at_link[k] + 1] = w * x[0] / x[2];
    }
    memset(p->a_gt, 0, (size_t)p->m * sizeof(double));
    for (k = 0; k < p->n_ad; ++k) {
        const int pp = p->ad_pair[k], row = p->ad_row[k];
        const double c = val[2 * pp], s = val[2 * pp + 1];
        const double cd = rate[2 * pp], sd = rate[2 * pp + 1];
        const double f = p->ad_f[k], fd = p->ad_fd[k], fdd = p->ad_fdd[k];
        const double cf = cos(f), sf = sin(f);
        const double along = s * sf + c * cf, across = s * cf - c * sf;
        g[row] = across;
        weight[p->ad_link[k]] = -sf;
        weight[p->ad_link[k] + 1] = cf;
        p->a_gt[row] = -fd * along;
        gam[row] = -(quad[2 * pp + 1] * cf - quad[2 * pp] * sf
                     - 2.0 * fd * (sd * sf + cd * cf) - fdd * along - fd * fd * across);
    }
    for (k = 0; k < p->n_ge; ++k)
        out[p->A_scatter[k]] += weight[p->ge_link[k]] * e[p->ge_entry[k]];
}

/* work: plan_work_length(p) doubles, laid out as work_entries ... angle_work say. */
PLAN_API void plan_evaluate(const plan_t *p, const double *q, const double *v, double *g,
                   double *gam, double *out, double *work)
{
    const int P = p->n_rigid + p->n_linear, A = p->n_lin_ang + p->n_slope;
    double *r = work, *pquad = r + 2 * P, *ent = work_entries(p, work);
    double *th = work_angles(p, work), *thd = th + A, *aquad = thd + A;
    double *cosd = work_cosd(p, work);
    double *aent = ent + p->n_pt_ent;
    int k, j;

    memcpy(ent, p->pt_val, (size_t)p->n_pt_ent * sizeof(double));
    memcpy(aent, p->an_val, (size_t)p->n_an_ent * sizeof(double));
    memset(g, 0, (size_t)p->m * sizeof(double));
    memset(gam, 0, (size_t)p->m * sizeof(double));
    memset(out, 0, (size_t)p->n_out * sizeof(double));

    for (k = 0; k < p->n_rigid; ++k) {
        const int *c = p->r_cols + 3 * k;
        double phi = q[c[2]], w = v[c[2]], cs = cos(phi), sn = sin(phi);
        double sx = p->r_local[2 * k], sy = p->r_local[2 * k + 1];
        double ax = cs * sx - sn * sy, ay = sn * sx + cs * sy;
        r[2 * k] = q[c[0]] + ax;
        r[2 * k + 1] = q[c[1]] + ay;
        pquad[2 * k] = -w * w * ax;
        pquad[2 * k + 1] = -w * w * ay;
        ent[4 * k + 2] = -ay;
        ent[4 * k + 3] = ax;
    }
    for (k = 0; k < p->n_linear; ++k) {
        const int *c = p->l_cols + k * p->lin_width;
        const double *N = p->l_N + 2 * k * p->lin_width;
        double x = p->l_c[2 * k], y = p->l_c[2 * k + 1];
        for (j = 0; j < p->lin_width; ++j) {
            x += N[j] * q[c[j]];
            y += N[p->lin_width + j] * q[c[j]];
        }
        r[2 * (p->n_rigid + k)] = x;
        r[2 * (p->n_rigid + k) + 1] = y;
        pquad[2 * (p->n_rigid + k)] = 0.0;
        pquad[2 * (p->n_rigid + k) + 1] = 0.0;
    }
    for (k = 0; k < p->n_lin_ang; ++k) {
        const int *c = p->a_idx + k * p->ang_width;
        const double *kk = p->a_k + k * p->ang_width;
        double a = p->a_c[k], ad = 0.0;
        for (j = 0; j < p->ang_width; ++j) {
            a += kk[j] * q[c[j]];
            ad += kk[j] * v[c[j]];
        }
        th[k] = a;
        thd[k] = ad;
        aquad[k] = 0.0;
    }
    for (k = 0; k < p->n_slope; ++k) {
        const int w = p->slope_width;
        const int *cx = p->s_cols + k * w, *cy = p->s_colsy + k * w;
        const double *S1 = p->s_S1 + k * w;
        double ax = 0.0, ay = 0.0, adx = 0.0, ady = 0.0;
        double t0x = p->s_t0[2 * k], t0y = p->s_t0[2 * k + 1];
        double gg, dx, dy, rate;
        double *e = aent + p->s_first + 2 * w * k;
        for (j = 0; j < w; ++j) {
            ax += S1[j] * q[cx[j]];
            ay += S1[j] * q[cy[j]];
            adx += S1[j] * v[cx[j]];
            ady += S1[j] * v[cy[j]];
        }
        th[p->n_lin_ang + k] = p->s_theta0[k] + atan2(t0x * ay - t0y * ax, t0x * ax + t0y * ay);
        gg = ax * ax + ay * ay;
        dx = -ay / gg;
        dy = ax / gg;
        rate = dx * adx + dy * ady;
        thd[p->n_lin_ang + k] = rate;
        aquad[p->n_lin_ang + k] = -2.0 * (ax * adx + ay * ady) / gg * rate;
        for (j = 0; j < w; ++j) {
            e[j] = S1[j] * dx;
            e[w + j] = S1[j] * dy;
        }
    }
    for (k = 0; k < p->n_point_rows; ++k) {
        int row = p->p_row[k], a = p->p_a[k], b = p->p_b[k];
        g[row] = r[2 * a] - r[2 * b];
        g[row + 1] = r[2 * a + 1] - r[2 * b + 1];
        gam[row] = -(pquad[2 * a] - pquad[2 * b]);
        gam[row + 1] = -(pquad[2 * a + 1] - pquad[2 * b + 1]);
    }
    for (k = 0; k < p->n_sine_rows; ++k) {
        int a = p->sn_a[k], b = p->sn_b[k];
        double d = th[b] - th[a] - p->sn_angle[k], c = cos(d), s = sin(d), dd = thd[b] - thd[a];
        cosd[k] = c;
        g[p->sn_row[k]] = s;
        gam[p->sn_row[k]] = -(c * (aquad[b] - aquad[a]) - s * dd * dd);
    }
    for (k = 0; k < p->n_terms; ++k) {
        g[p->t_row[k]] += p->t_coef[k] * th[p->t_slot[k]];
        gam[p->t_row[k]] -= p->t_coef[k] * aquad[p->t_slot[k]];
    }
    for (k = 0; k < p->n_G; ++k) {
        double x = ent[p->G_src[k]] * p->G_mult[k];
        if (p->G_sine_row[k] >= 0) x *= cosd[p->G_sine_row[k]];
        out[p->G_scatter[k]] += x;
    }
    for (k = 0; k < p->n_qh; ++k) {
        const double hq = p->qh_h[k] * q[p->qh_k[k]];
        g[p->qh_row[k]] += 0.5 * hq * q[p->qh_j[k]];
        gam[p->qh_row[k]] -= p->qh_h[k] * v[p->qh_j[k]] * v[p->qh_k[k]];
        out[p->Q_scatter[k]] += hq;
    }
    for (k = 0; k < p->n_qb; ++k) {
        g[p->qb_row[k]] += p->qb_b[k] * q[p->qb_j[k]];
        out[p->Q_scatter[p->n_qh + k]] += p->qb_b[k];
    }
    for (k = 0; k < p->n_qc; ++k) g[p->qc_row[k]] += p->qc_c[k];
    if (p->n_pair) hinge_angle_rows(p, q, v, g, gam, out, work);
}

/* The derivatives of the Jacobian non-zeros plan_evaluate fills: for each term i,
 * (k[i], c[i], val[i]) = (non-zero k, column c, d data_k / dq_c), from the work buffer
 * plan_evaluate left at the same q (entries, angles, cos d): (1) a rigid point's
 * d/dphi entries, (2) an ANCF slope angle's entries (the Hessian of atan2 through the
 * slope), (3) the -sin d factor of the sine rows; n_gr + n_gs + n_gc terms in that
 * order.  plan_entry_derivatives returns them (ConstraintPlan.geometric_terms scatters
 * them into sparse matrices); plan_geometric accumulates the geometric terms of the
 * Newton matrix, those and the quadratic rows' exact ones, into the values of K and H
 * through scatter maps fixed per topology (a dense matrix's flat index or a sparse
 * pattern's value index):
 *
 *   K(G_col[k], c) += lam[G_row[k]] val      d(G^T lam)/dq  (n x n)
 *   H(G_row[k], c) += v[G_col[k]] val        d(G v)/dq      (m x n)
 *   K(j, k) += lam[row] h,  H(row, k) += h v_j             (quadratic H entries)
 *
 * and the hinge-angle rows' exact terms, from the work buffer plan_evaluate left at the
 * same (q, v): a link's weight times its scalar's H (gl terms: K(sj, sk) += lam w sh,
 * H(row, sk) += w sh v[sj]), and for gear rows the second derivatives of atan2(s, c)
 * (d2/dc2 = 2cs/rho^4 = -d2/ds2, d2/dcds = (s^2 - c^2)/rho^4) times the gradients of c and
 * s (gp terms: entry pairs (a, b) of a term's pair, K(e_col[a], e_col[b]); gh terms:
 * entries b, H(row, e_col[b]) with the rates of c and s).  K_at holds total + n_qh +
 * n_gl + n_gp indices, H_at total + n_qh + n_gl + n_gh, in that order.
 *
 * Its table, declared once (assembly.py fills it by name): the plan (a plan_t, whose
 * slope angles, sine rows, quadratic H entries and hinge-angle rows it reads) and the
 * plan's work buffer (n_work doubles, as plan_evaluate left it: work_entries,
 * work_angles, work_cosd, angle_work); the non-zeros' rows and columns (nG, the plan's
 * n_G); the terms (1) (gr: non-zero, column, the other entry, its sign), (2) (gs:
 * non-zero, column, slope, which of the 4 second derivatives, coefficient) and (3) (gc:
 * the non-zeros k, k' of sine row i); table, 4 doubles per slope angle (n_slope, the
 * plan's); k_out, c_out, val_out the terms written; n_qh the plan's; the rows of the
 * links (n_link, two per gear term and driver row); the gl, gp and gh terms.
 */
#define PLAN_GEOMETRIC_LAYOUT(X)                                                           \
    X(ADDRESS, plan, 1) X(INT, n_work, 1) X(WORK, work, n_work)                            \
    X(INT, nG, 1) X(INTS, G_row, nG) X(INTS, G_col, nG)                                    \
    X(INT, n_gr, 1)                                                                        \
    X(INTS, gr_k, n_gr) X(INTS, gr_col, n_gr) X(INTS, gr_other, n_gr)                      \
    X(ARRAY, gr_sign, n_gr)                                                                \
    X(INT, n_gs, 1)                                                                        \
    X(INTS, gs_k, n_gs) X(INTS, gs_col, n_gs) X(INTS, gs_slot, n_gs)                       \
    X(INTS, gs_kind, n_gs) X(ARRAY, gs_coef, n_gs)                                         \
    X(INT, n_gc, 1) X(INTS, gc_k, n_gc) X(INTS, gc_kp, n_gc) X(INTS, gc_i, n_gc)           \
    X(INT, n_slope, 1) X(WORK, table, 4 * n_slope)                                         \
    X(IWORK, k_out, n_gr + n_gs + n_gc) X(IWORK, c_out, n_gr + n_gs + n_gc)                \
    X(WORK, val_out, n_gr + n_gs + n_gc)                                                   \
    X(INT, n_qh, 1) X(INT, n_link, 1) X(INTS, link_row, n_link)                            \
    X(INT, n_gl, 1) X(INTS, gl_link, n_gl) X(INTS, gl_h, n_gl)                             \
    X(INT, n_gp, 1) X(INTS, gp_term, n_gp) X(INTS, gp_a, n_gp) X(INTS, gp_b, n_gp)         \
    X(INT, n_gh, 1) X(INTS, gh_term, n_gh) X(INTS, gh_b, n_gh)                             \
    X(INTS, K_at, n_gr + n_gs + n_gc + n_qh + n_gl + n_gp)                                 \
    X(INTS, H_at, n_gr + n_gs + n_gc + n_qh + n_gl + n_gh)

typedef struct {
    PLAN_GEOMETRIC_LAYOUT(TABLE_MEMBER)
} plan_geometric_t;

/* d2 atan2(s, c) / d(a) d(b), a, b in {0: c, 1: s}, of a pair's (c, s, rho^2) */
static double atan2_second(const double *x, int a, int b)
{
    const double r4 = x[2] * x[2];
    if (a != b) return (x[1] * x[1] - x[0] * x[0]) / r4;
    return (a == 0 ? 2.0 : -2.0) * x[0] * x[1] / r4;
}

/* the cos d factor of the Jacobian non-zero k of the plan a (1 outside sine rows) */
static double entry_factor(const plan_t *a, const double *cosd, int k)
{
    return a->G_sine_row[k] >= 0 ? cosd[a->G_sine_row[k]] : 1.0;
}

PLAN_API void plan_entry_derivatives(const plan_geometric_t *p, const double *q, int *ks, int *cs,
                            double *vals)
{
    const plan_t *a = (const plan_t *)p->plan;
    const double *ent = work_entries(a, p->work), *th = work_angles(a, p->work);
    const double *cosd = work_cosd(a, p->work);
    int i, j, s, t = 0;
    for (i = 0; i < p->n_gr; ++i, ++t) {
        const int k = p->gr_k[i];
        ks[t] = k;
        cs[t] = p->gr_col[i];
        vals[t] = a->G_mult[k] * entry_factor(a, cosd, k) * p->gr_sign[i] * ent[p->gr_other[i]];
    }
    if (p->n_gs) {
        for (s = 0; s < p->n_slope; ++s) {
            const int w = a->slope_width;
            double ax = 0.0, ay = 0.0, gg2, cross, diff;
            for (j = 0; j < w; ++j) {
                ax += a->s_S1[s * w + j] * q[a->s_cols[s * w + j]];
                ay += a->s_S1[s * w + j] * q[a->s_colsy[s * w + j]];
            }
            gg2 = (ax * ax + ay * ay) * (ax * ax + ay * ay);
            cross = 2.0 * ax * ay / gg2;
            diff = (ay * ay - ax * ax) / gg2;
            p->table[4 * s] = cross;
            p->table[4 * s + 1] = diff;
            p->table[4 * s + 2] = diff;
            p->table[4 * s + 3] = -cross;
        }
        for (i = 0; i < p->n_gs; ++i, ++t) {
            const int k = p->gs_k[i];
            ks[t] = k;
            cs[t] = p->gs_col[i];
            vals[t] = a->G_mult[k] * entry_factor(a, cosd, k) * p->gs_coef[i]
                      * p->table[4 * p->gs_slot[i] + p->gs_kind[i]];
        }
    }
    for (i = 0; i < p->n_gc; ++i, ++t) {
        const int k = p->gc_k[i], kp = p->gc_kp[i], r = p->gc_i[i];
        const double d = th[a->sn_b[r]] - th[a->sn_a[r]] - a->sn_angle[r];
        ks[t] = k;
        cs[t] = p->G_col[kp];
        vals[t] = -a->G_mult[k] * ent[a->G_src[k]] * sin(d)
                  * a->G_mult[kp] * ent[a->G_src[kp]];
    }
}

PLAN_API void plan_geometric(const plan_geometric_t *p, const double *q, const double *v,
                    const double *lam, double *K, double *H)
{
    const plan_t *a = (const plan_t *)p->plan;
    const int total = p->n_gr + p->n_gs + p->n_gc;
    int i;
    plan_entry_derivatives(p, q, p->k_out, p->c_out, p->val_out);
    for (i = 0; i < total; ++i) {
        const int k = p->k_out[i], row = p->G_row[k], col = p->G_col[k];
        K[p->K_at[i]] += lam[row] * p->val_out[i];
        H[p->H_at[i]] += v[col] * p->val_out[i];
    }
    for (i = 0; i < p->n_qh; ++i) {
        K[p->K_at[total + i]] += lam[a->qh_row[i]] * a->qh_h[i];
        H[p->H_at[total + i]] += a->qh_h[i] * v[a->qh_j[i]];
    }
    if (a->n_pair) {
        const int S = 2 * a->n_pair, E = a->n_sh + a->n_sb;
        const double *angle = angle_work(a, p->work);
        const double *rate = angle + S, *e = angle + 3 * S, *weight = e + E;
        const double *pair = weight + 2 * (a->n_at + a->n_ad);
        const int kq = total + p->n_qh, kp = kq + p->n_gl;
        for (i = 0; i < p->n_gl; ++i) {
            const int h = p->gl_h[i], k = p->gl_link[i], row = p->link_row[k];
            K[p->K_at[kq + i]] += lam[row] * weight[k] * a->sh[h];
            H[p->H_at[kq + i]] += weight[k] * a->sh[h] * v[a->sj[h]];
        }
        for (i = 0; i < p->n_gp; ++i) {
            const int t = p->gp_term[i], ea = p->gp_a[i], eb = p->gp_b[i];
            const double *x = pair + 6 * a->at_pair[t];
            K[p->K_at[kp + i]] += lam[a->at_row[t]] * a->at_w[t]
                                  * atan2_second(x, a->e_scalar[ea] & 1, a->e_scalar[eb] & 1)
                                  * e[ea] * e[eb];
        }
        for (i = 0; i < p->n_gh; ++i) {
            const int t = p->gh_term[i], eb = p->gh_b[i], pp = a->at_pair[t];
            const int kb = a->e_scalar[eb] & 1;
            const double *x = pair + 6 * pp;
            H[p->H_at[kp + i]] += a->at_w[t] * e[eb]
                                  * (atan2_second(x, 0, kb) * rate[2 * pp]
                                     + atan2_second(x, 1, kb) * rate[2 * pp + 1]);
        }
    }
}
