/*
 * The LQG/LQI state feedback of controllers/laws/arm_lqg.py in plain C99: one
 * implementation, called by ArmLQGController through ctypes and compiled into its
 * C-source FMU.  The law, its two references and the anti-windup are in the docstring of
 * arm_lqg.py; the feedforward of reference "rigid" is the rigid arm's inverse dynamics
 * (mbdcore/models/native/rigid_arm.c, included before this file).
 *
 * The design comes as one table T (built by arm_lqg.lqg_table):
 *   T[0..4]  n states, m = 2 inputs, p measured outputs, ni integrated outputs,
 *            dt sample time [s]
 *   then Ad (n x n), Bd (n x 2), C (p x n), K (2 x n), L (n x p), x_lin (n), y_lin (p),
 *   Ki (2 x ni), the integrated rows of C (ni), for each measured output its index in
 *   the block's input vector u (p), the state indices of theta1, theta2, omega1, omega2
 *   (4); matrices row-major, indices as doubles.
 * g = (tau_max1, tau_max2 [N m], feedforward 0/1, reference 0 rigid / 1 model).
 * s = (xh (n), r (n), z (ni)): the estimate, the model reference, the integrators.
 * u = the block's inputs: theta1_ref, theta2_ref, omega1_ref, omega2_ref, alpha1_ref,
 *     alpha2_ref, theta1, theta2, omega1, omega2, w1, w2, tau1_ff, tau2_ff.
 */
#include <math.h>

#ifndef LAWS_API
#define LAWS_API
#endif

/* Largest state, measurement and integrator counts (stack scratch, no allocation). */
#define LQG_MAX 64
#define LQG_INPUTS 14

typedef struct {
    int n, p, ni;
    double dt;
    const double *Ad, *Bd, *C, *K, *L, *x_lin, *y_lin, *Ki, *int_rows, *measured, *joint;
} LqgTable;

static LqgTable lqg_view(const double *T) {
    LqgTable d;
    const double *q = T + 5;
    d.n = (int)T[0];
    d.p = (int)T[2];
    d.ni = (int)T[3];
    d.dt = T[4];
    d.Ad = q; q += d.n * d.n;
    d.Bd = q; q += d.n * 2;
    d.C = q; q += d.p * d.n;
    d.K = q; q += 2 * d.n;
    d.L = q; q += d.n * d.p;
    d.x_lin = q; q += d.n;
    d.y_lin = q; q += d.p;
    d.Ki = q; q += 2 * d.ni;
    d.int_rows = q; q += d.ni;
    d.measured = q; q += d.p;
    d.joint = q;
    return d;
}

/* Length the table must have given its header; -1 if the header is out of range. */
LAWS_API long lqg_table_length(const double *T) {
    double n = T[0], m = T[1], p = T[2], ni = T[3];
    if (!(n >= 1 && n <= LQG_MAX && m == 2 && p >= 1 && p <= LQG_MAX && ni >= 0 && ni <= p
          && T[4] > 0.0))
        return -1;
    return (long)(5 + n * n + 2 * n + p * n + 2 * n + n * p + n + p + 2 * ni + ni + p + 4);
}

static double clip(double v, double lim) { return v < -lim ? -lim : (v > lim ? lim : v); }

/* The state reference as a deviation from x_lin (dx_ref, n) and the feedforward [N m]. */
static void lqg_reference(const LqgTable *d, const double *g, const double *rigid,
                          const double *s, const double *u, double *dx_ref, double *ff) {
    int i;
    if (g[3] != 0.0) {                         /* "model": r, driven by tau_ff */
        for (i = 0; i < d->n; i++) dx_ref[i] = s[d->n + i];
        ff[0] = u[12];
        ff[1] = u[13];
        return;
    }
    for (i = 0; i < d->n; i++) dx_ref[i] = 0.0;
    for (i = 0; i < 4; i++) dx_ref[(int)d->joint[i]] = u[i];
    for (i = 0; i < d->n; i++) dx_ref[i] -= d->x_lin[i];
    ff[0] = ff[1] = 0.0;
    if (g[2] != 0.0) rigid_arm_inverse_dynamics(rigid, u, u + 2, u + 4, ff);
}

/* tau_u = ff + K (dx_ref - xh) - Ki z, unsaturated [N m]. */
static void lqg_unsaturated(const LqgTable *d, const double *g, const double *rigid,
                            const double *s, const double *u, double *tau_u, double *dx_ref) {
    double ff[2];
    int i, j;
    lqg_reference(d, g, rigid, s, u, dx_ref, ff);
    for (i = 0; i < 2; i++) {
        double acc = 0.0;
        for (j = 0; j < d->n; j++) acc += d->K[i * d->n + j] * (dx_ref[j] - s[j]);
        tau_u[i] = ff[i] + acc;
        acc = 0.0;
        for (j = 0; j < d->ni; j++) acc += d->Ki[i * d->ni + j] * s[2 * d->n + j];
        tau_u[i] -= acc;
    }
}

/* The applied torques tau = sat(tau_u) [N m] (tau_u returned too). */
LAWS_API void lqg_torques(const double *T, const double *g, const double *rigid,
                          const double *s, const double *u, double *tau_u, double *tau) {
    LqgTable d = lqg_view(T);
    double dx_ref[LQG_MAX];
    lqg_unsaturated(&d, g, rigid, s, u, tau_u, dx_ref);
    tau[0] = clip(tau_u[0], g[0]);
    tau[1] = clip(tau_u[1], g[1]);
}

/* One sample: the integrators (unless they wind up), the estimate and the model
   reference advance over dt with the inputs u of the sample. */
LAWS_API void lqg_update(const double *T, const double *g, const double *rigid, double *s,
                         const double *u) {
    LqgTable d = lqg_view(T);
    double dx_ref[LQG_MAX], innovation[LQG_MAX], next[LQG_MAX], tau_u[2], tau[2];
    const double lim[2] = {g[0], g[1]};
    int i, j, n = d.n;
    lqg_unsaturated(&d, g, rigid, s, u, tau_u, dx_ref);
    for (i = 0; i < 2; i++) tau[i] = clip(tau_u[i], lim[i]);
    if (d.ni > 0) {
        double dz[LQG_MAX];
        int winding = 0;
        for (j = 0; j < d.ni; j++) {
            int row = (int)d.int_rows[j];
            double e = u[(int)d.measured[row]] - d.y_lin[row], cx = 0.0;
            for (i = 0; i < n; i++) cx += d.C[row * n + i] * dx_ref[i];
            dz[j] = d.dt * (e - cx);
        }
        for (i = 0; i < 2; i++) {
            double push = 0.0;
            for (j = 0; j < d.ni; j++) push -= d.Ki[i * d.ni + j] * dz[j];
            if (fabs(tau_u[i]) > lim[i] && push * tau_u[i] > 0.0) winding = 1;
        }
        if (!winding)
            for (j = 0; j < d.ni; j++) s[2 * n + j] += dz[j];
    }
    for (i = 0; i < d.p; i++) {
        double cx = 0.0;
        for (j = 0; j < n; j++) cx += d.C[i * n + j] * s[j];
        innovation[i] = u[(int)d.measured[i]] - d.y_lin[i] - cx;
    }
    for (i = 0; i < n; i++) {
        double acc = 0.0;
        for (j = 0; j < n; j++) acc += d.Ad[i * n + j] * s[j];
        acc += d.Bd[2 * i] * tau[0] + d.Bd[2 * i + 1] * tau[1];
        for (j = 0; j < d.p; j++) acc += d.L[i * d.p + j] * innovation[j];
        next[i] = acc;
    }
    if (g[3] != 0.0) {
        double *r = s + n, rn[LQG_MAX];
        for (i = 0; i < n; i++) {
            double acc = 0.0;
            for (j = 0; j < n; j++) acc += d.Ad[i * n + j] * r[j];
            rn[i] = acc + d.Bd[2 * i] * u[12] + d.Bd[2 * i + 1] * u[13];
        }
        for (i = 0; i < n; i++) r[i] = rn[i];
    }
    for (i = 0; i < n; i++) s[i] = next[i];
}
