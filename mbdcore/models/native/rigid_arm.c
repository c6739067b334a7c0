/*
 * The rigid two-link arm of mbdcore.models.rigid_arm (horizontal plane, no gravity) in
 * plain C99: M(theta) and the Coriolis/centrifugal torques c(theta, theta'), and the
 * inverse dynamics tau = M alpha + c.  One implementation: RigidTwoLinkArm calls it through
 * ctypes, the feedforward of the joint controllers calls it in C (and in their C FMUs).
 *
 * p = (l1 [m], i_a [kg m^2], m_b [kg], s_b [kg m], i_b [kg m^2]) as in rigid_arm.py.
 */
#include <math.h>

#ifndef RIGID_API
#define RIGID_API
#endif

/* M (row-major 2 x 2) [kg m^2] and c (2) [N m]. */
RIGID_API void rigid_arm_terms(const double *p, const double *theta, const double *omega,
                               double *M, double *c) {
    const double l1 = p[0], i_a = p[1], m_b = p[2], s_b = p[3], i_b = p[4];
    const double co = s_b * l1 * cos(theta[1]), si = s_b * l1 * sin(theta[1]);
    M[0] = i_a + i_b + m_b * l1 * l1 + 2.0 * co;
    M[1] = i_b + co;
    M[2] = i_b + co;
    M[3] = i_b;
    c[0] = -si * (2.0 * omega[0] * omega[1] + omega[1] * omega[1]);
    c[1] = si * omega[0] * omega[0];
}

/* Joint torques [N m] that give the accelerations alpha [rad/s^2]. */
RIGID_API void rigid_arm_inverse_dynamics(const double *p, const double *theta,
                                          const double *omega, const double *alpha,
                                          double *tau) {
    double M[4], c[2];
    rigid_arm_terms(p, theta, omega, M, c);
    tau[0] = M[0] * alpha[0] + M[1] * alpha[1] + c[0];
    tau[1] = M[2] * alpha[0] + M[3] * alpha[1] + c[1];
}
