/*
 * Joint-space laws of controllers.laws in plain C99: the rest-to-rest quintic reference
 * (trajectory.py) and the joint PD law with rigid-model feedforward and torque limits
 * (joint_pd.py).  One implementation: the Python blocks call it through ctypes and their
 * C-source FMUs compile it in.  The feedforward is the rigid arm's inverse dynamics
 * (mbdcore/models/native/rigid_arm.c, included before this file).
 */
#include <math.h>

#include "table_layout.h"

#ifndef LAWS_API
#define LAWS_API
#endif

/* The joint PD law's gains g (joint_pd.py packs them by name through this declaration):
   Kp [N m/rad], Kd [N m s/rad] and the torque limit [N m] of each joint, feedforward 1
   for the rigid-model feedforward (0: off). */
#define PD_LAYOUT(X)                                                                       \
    X(REAL, kp1, 1) X(REAL, kd1, 1) X(REAL, kp2, 1) X(REAL, kd2, 1)                        \
    X(REAL, tau_max1, 1) X(REAL, tau_max2, 1) X(INT, feedforward, 1)
/* g's indices, PD_kp1, ..., from the layout */
#define PD_INDEX(kind, name, size) TABLE_INDEX_##kind(PD_##name)
enum { PD_LAYOUT(PD_INDEX) PD_N_GAINS };

/* Position, rate and acceleration of the quintic from start to end in duration [s] at t
   [s] (s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5: rest to rest). */
LAWS_API void quintic(double t, double start, double end, double duration, double *out) {
    double tau, d, s, ds, dds;
    if (t <= 0.0) { out[0] = start; out[1] = 0.0; out[2] = 0.0; return; }
    if (t >= duration) { out[0] = end; out[1] = 0.0; out[2] = 0.0; return; }
    tau = t / duration;
    d = end - start;
    s = tau * tau * tau * (10.0 - 15.0 * tau + 6.0 * tau * tau);
    ds = 30.0 * tau * tau * (1.0 - tau) * (1.0 - tau) / duration;
    dds = 60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau) / (duration * duration);
    out[0] = start + d * s;
    out[1] = d * ds;
    out[2] = d * dds;
}

/* tau = clip(tau_ff + Kp (theta_ref - theta) + Kd (omega_ref - omega), +-tau_max).
   g: PD_LAYOUT; rigid: the rigid arm's p of rigid_arm.c; ref = (theta1, theta2, omega1, omega2, alpha1, alpha2) references;
   meas = (theta1, theta2, omega1, omega2) measured. */
LAWS_API void joint_pd_torques(const double *g, const double *rigid, const double *ref,
                               const double *meas, double *tau) {
    const double kps[2] = {g[PD_kp1], g[PD_kp2]}, kds[2] = {g[PD_kd1], g[PD_kd2]};
    const double lims[2] = {g[PD_tau_max1], g[PD_tau_max2]};
    double ff[2] = {0.0, 0.0};
    int i;
    if (g[PD_feedforward] != 0.0) rigid_arm_inverse_dynamics(rigid, ref, ref + 2, ref + 4, ff);
    for (i = 0; i < 2; i++) {
        double kp = kps[i], kd = kds[i], lim = lims[i];
        double t = kp * (ref[i] - meas[i]) + kd * (ref[2 + i] - meas[2 + i]);
        t = t + ff[i];
        tau[i] = t < -lim ? -lim : (t > lim ? lim : t);
    }
}

/* The quintic convolved with an input shaper of n impulses (amplitudes a, times ti [s]):
   sum_k a_k quintic(t - ti_k) for position, rate and acceleration. */
LAWS_API void shaped_quintic(int n, const double *a, const double *ti, double t, double start,
                             double end, double duration, double *out) {
    double one[3];
    int k;
    out[0] = out[1] = out[2] = 0.0;
    for (k = 0; k < n; k++) {
        quintic(t - ti[k], start, end, duration, one);
        out[0] += a[k] * one[0];
        out[1] += a[k] * one[1];
        out[2] += a[k] * one[2];
    }
}
