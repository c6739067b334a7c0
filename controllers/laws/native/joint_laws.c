/*
 * Joint-space laws of controllers.laws in plain C99: the rest-to-rest quintic reference
 * (trajectory.py) and the joint PD law with rigid-model feedforward and torque limits
 * (joint_pd.py).  One implementation: the Python blocks call it through ctypes and their
 * C-source FMUs compile it in.  The feedforward is the rigid arm's inverse dynamics
 * (mbdcore/models/native/rigid_arm.c, included before this file).
 */
#include <math.h>

#ifndef LAWS_API
#define LAWS_API
#endif

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
   g = (kp1, kd1, kp2, kd2, tau_max1, tau_max2, feedforward 0/1); rigid: the rigid arm's
   p of rigid_arm.c; ref = (theta1, theta2, omega1, omega2, alpha1, alpha2) references;
   meas = (theta1, theta2, omega1, omega2) measured. */
LAWS_API void joint_pd_torques(const double *g, const double *rigid, const double *ref,
                               const double *meas, double *tau) {
    double ff[2] = {0.0, 0.0};
    int i;
    if (g[6] != 0.0) rigid_arm_inverse_dynamics(rigid, ref, ref + 2, ref + 4, ff);
    for (i = 0; i < 2; i++) {
        double kp = g[2 * i], kd = g[2 * i + 1], lim = g[4 + i];
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
