/* Batched constraint rows of a planar System (mbdcore/multibody/assembly.py).
 *
 * Every kinematic quantity the joints read is one of a few closed forms (rigid point,
 * point linear in q, orientation linear in q, ANCF slope angle); every row is one of
 * three forms (point difference, sine of an angle difference, sum of angles), or a
 * row quadratic in q (every row of the spatial engine's natural-coordinate bodies,
 * bars, ANCF cable nodes and their joints: g = q^T H q / 2 + b . q + c with constant
 * H, b, c).  The Python side groups them once per topology into the flat index arrays
 * of plan_t;
 * plan_evaluate fills g, gamma and the Jacobian's non-zeros in one call.  The offsets of
 * the angle-sum rows (driving motions, gear offsets) are Python callables and are
 * applied by the caller.
 */
#include <math.h>
#include <string.h>

/* marks what Python and other kernels call (mbdcore.cbuild binds it) */
#ifndef PLAN_API
#define PLAN_API
#endif

typedef struct {
    int m;                       /* rows of g */
    /* points: rigid (x, y, phi columns; local point) then linear (N q[cols] + c) */
    int n_rigid, n_linear, lin_width;
    const int *r_cols;           /* (n_rigid, 3) */
    const double *r_local;       /* (n_rigid, 2) */
    const int *l_cols;           /* (n_linear, lin_width) */
    const double *l_N;           /* (n_linear, 2, lin_width) */
    const double *l_c;           /* (n_linear, 2) */
    /* orientations: linear (k . q[cols] + c) then ANCF slope angles */
    int n_lin_ang, ang_width;
    const int *a_idx;            /* (n_lin_ang, ang_width) */
    const double *a_k;           /* (n_lin_ang, ang_width) */
    const double *a_c;           /* (n_lin_ang) */
    int n_slope, slope_width;
    const int *s_cols, *s_colsy; /* (n_slope, slope_width) */
    const double *s_S1;          /* (n_slope, slope_width) */
    const double *s_theta0;      /* (n_slope) */
    const double *s_t0;          /* (n_slope, 2) */
    /* Jacobian entries of the quantities: points (constants; the d/dphi entries of the
       rigid points at 4k+2, 4k+3 filled here), then orientations (constants; the slope
       entries from s_first on filled here) */
    int n_pt_ent, n_an_ent, s_first;
    const double *pt_val, *an_val;
    /* rows */
    int n_point_rows;
    const int *p_row, *p_a, *p_b;
    int n_sine_rows;
    const int *sn_row, *sn_a, *sn_b;
    const double *sn_angle;
    int n_terms;
    const int *t_row, *t_slot;
    const double *t_coef;
    /* Jacobian non-zeros: value = entries[src] * mult (* cos d of a sine row), added
       to out[scatter] (a dense G's flat index, or a CSR matrix's data index) */
    int n_G, n_out;
    const int *G_src, *G_sine_row, *G_scatter;
    const double *G_mult;
    /* quadratic rows: H entries (row, j, k, h): g[row] += h q_j q_k / 2,
       G[row][j] += h q_k, gamma[row] -= h v_j v_k; b entries (row, j, b): g[row] += b q_j,
       G[row][j] += b; constants (row, c); the G values added to out[Q_scatter] (H
       entries first, then b entries) */
    int n_qh, n_qb, n_qc;
    const int *qh_row, *qh_j, *qh_k, *qb_row, *qb_j, *qc_row, *Q_scatter;
    const double *qh_h, *qb_b, *qc_c;
} plan_t;

/* work: 4 P + n_pt_ent + 3 A + n_an_ent + n_sine_rows doubles,
   P = n_rigid + n_linear points, A = n_lin_ang + n_slope orientations. */
PLAN_API void plan_evaluate(const plan_t *p, const double *q, const double *v, double *g,
                   double *gam, double *out, double *work)
{
    const int P = p->n_rigid + p->n_linear, A = p->n_lin_ang + p->n_slope;
    double *r = work, *pquad = r + 2 * P, *ent = pquad + 2 * P;
    double *th = ent + p->n_pt_ent + p->n_an_ent, *thd = th + A, *aquad = thd + A;
    double *cosd = aquad + A;
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
 */
typedef struct {
    int n, nG;
    const int *G_row, *G_col, *G_src, *g_sine;   /* g_sine: sine row of entry k or -1 */
    const double *G_mult;
    const double *ent, *th, *cosd;              /* into the plan's work buffer */
    int n_gr;
    const int *gr_k, *gr_col, *gr_other;
    const double *gr_sign;
    int n_slope, s_width;
    const int *s_cols, *s_colsy;
    const double *s_S1;
    int n_gs;
    const int *gs_k, *gs_col, *gs_slot, *gs_kind;
    const double *gs_coef;
    const int *s_a, *s_b;                       /* per sine row: orientation slots */
    const double *s_angle;
    int n_gc;
    const int *gc_k, *gc_kp, *gc_i;
    double *table;                              /* 4 n_slope doubles */
    int *k_out, *c_out;                         /* n_gr + n_gs + n_gc each */
    double *val_out;
    int n_qh;                                   /* quadratic H entries (plan_t's) */
    const int *qh_row, *qh_j, *qh_k;
    const double *qh_h;
    const int *K_at, *H_at;                     /* n_gr + n_gs + n_gc + n_qh each */
} plan_geometric_t;

static double entry_factor(const plan_geometric_t *p, int k)
{
    return p->g_sine[k] >= 0 ? p->cosd[p->g_sine[k]] : 1.0;
}

PLAN_API void plan_entry_derivatives(const plan_geometric_t *p, const double *q, int *ks, int *cs,
                            double *vals)
{
    int i, j, s, t = 0;
    for (i = 0; i < p->n_gr; ++i, ++t) {
        const int k = p->gr_k[i];
        ks[t] = k;
        cs[t] = p->gr_col[i];
        vals[t] = p->G_mult[k] * entry_factor(p, k) * p->gr_sign[i] * p->ent[p->gr_other[i]];
    }
    if (p->n_gs) {
        for (s = 0; s < p->n_slope; ++s) {
            const int w = p->s_width;
            double ax = 0.0, ay = 0.0, gg2, cross, diff;
            for (j = 0; j < w; ++j) {
                ax += p->s_S1[s * w + j] * q[p->s_cols[s * w + j]];
                ay += p->s_S1[s * w + j] * q[p->s_colsy[s * w + j]];
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
            vals[t] = p->G_mult[k] * entry_factor(p, k) * p->gs_coef[i]
                      * p->table[4 * p->gs_slot[i] + p->gs_kind[i]];
        }
    }
    for (i = 0; i < p->n_gc; ++i, ++t) {
        const int k = p->gc_k[i], kp = p->gc_kp[i], r = p->gc_i[i];
        const double d = p->th[p->s_b[r]] - p->th[p->s_a[r]] - p->s_angle[r];
        ks[t] = k;
        cs[t] = p->G_col[kp];
        vals[t] = -p->G_mult[k] * p->ent[p->G_src[k]] * sin(d)
                  * p->G_mult[kp] * p->ent[p->G_src[kp]];
    }
}

PLAN_API void plan_geometric(const plan_geometric_t *p, const double *q, const double *v,
                    const double *lam, double *K, double *H)
{
    const int total = p->n_gr + p->n_gs + p->n_gc;
    int i;
    plan_entry_derivatives(p, q, p->k_out, p->c_out, p->val_out);
    for (i = 0; i < total; ++i) {
        const int k = p->k_out[i], row = p->G_row[k], col = p->G_col[k];
        K[p->K_at[i]] += lam[row] * p->val_out[i];
        H[p->H_at[i]] += v[col] * p->val_out[i];
    }
    for (i = 0; i < p->n_qh; ++i) {
        K[p->K_at[total + i]] += lam[p->qh_row[i]] * p->qh_h[i];
        H[p->H_at[total + i]] += p->qh_h[i] * v[p->qh_j[i]];
    }
}
