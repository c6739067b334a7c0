/*
 * The LQG/LQI state feedback of controllers/laws/arm_lqg.py in plain C99: one
 * implementation, called by ArmLQGController through ctypes and compiled into its
 * C-source FMU.  The law, its two references and the anti-windup are in the docstring of
 * arm_lqg.py; the feedforward of reference "rigid" is the rigid arm's inverse dynamics
 * (mbdcore/models/native/rigid_arm.c, included before this file).
 *
 * The design comes as one table T, LQG_LAYOUT below (arm_lqg.lqg_table packs it by name
 * through the same declaration): n states, m = 2 inputs, p measured outputs, ni
 * integrated outputs, dt sample time [s], then Ad (n x n), Bd (n x 2), C (p x n),
 * K (2 x n), L (n x p), x_lin (n), y_lin (p), Ki (2 x ni), the integrated rows of C (ni),
 * for each measured output its index in the block's input vector u (p), the state
 * indices of theta1, theta2, omega1, omega2 (4); matrices row-major, indices as doubles.
 * g: LQG_SETTINGS_LAYOUT, the torque limits [N m], feedforward 0/1, reference 0 rigid /
 * 1 model.
 * s = (xh (n), r (n), z (ni)): the estimate, the model reference, the integrators.
 * u = the block's inputs, LQG_INPUT_LAYOUT below (ArmLQGController packs them by name
 *     through the same declaration).
 */
#include <math.h>

#include "table_layout.h"

#ifndef LAWS_API
#define LAWS_API
#endif

/* Largest state, measurement and integrator counts (stack scratch, no allocation). */
#define LQG_MAX 64

/* The law's inputs u: the joints' reference angles [rad], rates [rad/s] and
   accelerations [rad/s^2], the measured angles, rates and tip deflections [m], the
   feedforward torques [N m]; their indices LQG_IN_theta1_ref, ... from the layout. */
#define LQG_INPUT_LAYOUT(X)                                                                \
    X(REAL, theta1_ref, 1) X(REAL, theta2_ref, 1) X(REAL, omega1_ref, 1)                   \
    X(REAL, omega2_ref, 1) X(REAL, alpha1_ref, 1) X(REAL, alpha2_ref, 1)                   \
    X(REAL, theta1, 1) X(REAL, theta2, 1) X(REAL, omega1, 1) X(REAL, omega2, 1)            \
    X(REAL, w1, 1) X(REAL, w2, 1) X(REAL, tau1_ff, 1) X(REAL, tau2_ff, 1)
#define LQG_INPUT_INDEX(kind, name, size) TABLE_INDEX_##kind(LQG_IN_##name)
enum { LQG_INPUT_LAYOUT(LQG_INPUT_INDEX) LQG_INPUTS };
/* the rigid arm's inverse dynamics reads the references' angles, rates and
   accelerations as pairs: a declaration that breaks a pair does not compile */
typedef char lqg_reference_pairs[(LQG_IN_theta2_ref == LQG_IN_theta1_ref + 1
                                  && LQG_IN_omega2_ref == LQG_IN_omega1_ref + 1
                                  && LQG_IN_alpha2_ref == LQG_IN_alpha1_ref + 1) ? 1 : -1];

#define LQG_LAYOUT(X)                                                                      \
    X(INT, n, 1) X(INT, m, 1) X(INT, p, 1) X(INT, ni, 1) X(REAL, dt, 1)                    \
    X(ARRAY, Ad, n * n) X(ARRAY, Bd, n * m) X(ARRAY, C, p * n) X(ARRAY, K, m * n)          \
    X(ARRAY, L, n * p) X(ARRAY, x_lin, n) X(ARRAY, y_lin, p) X(ARRAY, Ki, m * ni)          \
    X(ARRAY, int_rows, ni) X(ARRAY, measured, p) X(ARRAY, joint, 4)

typedef struct {
    LQG_LAYOUT(TABLE_MEMBER)
} LqgTable;

TABLE_READER(LQG_LAYOUT, LqgTable, lqg_read_table)

/* The law's settings g. */
#define LQG_SETTINGS_LAYOUT(X)                                                             \
    X(REAL, tau_max1, 1) X(REAL, tau_max2, 1) X(INT, feedforward, 1) X(INT, reference, 1)
/* g's indices, LQG_tau_max1, ..., from the layout */
#define LQG_INDEX(kind, name, size) TABLE_INDEX_##kind(LQG_##name)
enum { LQG_SETTINGS_LAYOUT(LQG_INDEX) LQG_N_SETTINGS };

static LqgTable lqg_view(const double *T) {
    LqgTable d;
    lqg_read_table(T, &d);
    return d;
}

/* The table's length; -1 if it cannot be read or its sizes are out of range. */
LAWS_API long lqg_table_length(const double *T) {
    LqgTable d;
    long length = lqg_read_table(T, &d);
    if (!(length && d.n >= 1 && d.n <= LQG_MAX && d.m == 2 && d.p >= 1 && d.p <= LQG_MAX
          && d.ni >= 0 && d.ni <= d.p && d.dt > 0.0))
        return -1;
    return length;
}

static double clip(double v, double lim) { return v < -lim ? -lim : (v > lim ? lim : v); }

/* the inputs of the references of theta1, theta2, omega1, omega2 (the table's joint) */
static const int joint_reference[4] = {LQG_IN_theta1_ref, LQG_IN_theta2_ref,
                                       LQG_IN_omega1_ref, LQG_IN_omega2_ref};

/* The state reference as a deviation from x_lin (dx_ref, n) and the feedforward [N m]. */
static void lqg_reference(const LqgTable *d, const double *g, const double *rigid,
                          const double *s, const double *u, double *dx_ref, double *ff) {
    int i;
    if (g[LQG_reference] != 0.0) {             /* "model": r, driven by tau_ff */
        for (i = 0; i < d->n; i++) dx_ref[i] = s[d->n + i];
        ff[0] = u[LQG_IN_tau1_ff];
        ff[1] = u[LQG_IN_tau2_ff];
        return;
    }
    for (i = 0; i < d->n; i++) dx_ref[i] = 0.0;
    for (i = 0; i < 4; i++) dx_ref[(int)d->joint[i]] = u[joint_reference[i]];
    for (i = 0; i < d->n; i++) dx_ref[i] -= d->x_lin[i];
    ff[0] = ff[1] = 0.0;
    if (g[LQG_feedforward] != 0.0)
        rigid_arm_inverse_dynamics(rigid, u + LQG_IN_theta1_ref, u + LQG_IN_omega1_ref,
                                   u + LQG_IN_alpha1_ref, ff);
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
    tau[0] = clip(tau_u[0], g[LQG_tau_max1]);
    tau[1] = clip(tau_u[1], g[LQG_tau_max2]);
}

/* One sample: the integrators (unless they wind up), the estimate and the model
   reference advance over dt with the inputs u of the sample. */
LAWS_API void lqg_update(const double *T, const double *g, const double *rigid, double *s,
                         const double *u) {
    LqgTable d = lqg_view(T);
    double dx_ref[LQG_MAX], innovation[LQG_MAX], next[LQG_MAX], tau_u[2], tau[2];
    const double lim[2] = {g[LQG_tau_max1], g[LQG_tau_max2]};
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
    if (g[LQG_reference] != 0.0) {
        double *r = s + n, rn[LQG_MAX];
        for (i = 0; i < n; i++) {
            double acc = 0.0;
            for (j = 0; j < n; j++) acc += d.Ad[i * n + j] * r[j];
            rn[i] = acc + d.Bd[2 * i] * u[LQG_IN_tau1_ff] + d.Bd[2 * i + 1] * u[LQG_IN_tau2_ff];
        }
        for (i = 0; i < n; i++) r[i] = rn[i];
    }
    for (i = 0; i < n; i++) s[i] = next[i];
}
