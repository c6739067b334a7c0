/*
 * The rigid two-link arm of mbdcore.models.rigid_arm (horizontal plane, no gravity) in
 * plain C99: M(theta) and the Coriolis/centrifugal torques c(theta, theta'), and the
 * inverse dynamics tau = M alpha + c.  One implementation: RigidTwoLinkArm calls it through
 * ctypes, the feedforward of the joint controllers calls it in C (and in their C FMUs).
 *
 * The parameters p, RIGID_LAYOUT below (rigid_arm.py packs them by name through the same
 * declaration): l1 [m], i_a [kg m^2], m_b [kg], s_b [kg m], i_b [kg m^2], the symbols
 * of rigid_arm.py.
 */
#include <math.h>

#include "table_layout.h"

#define RIGID_LAYOUT(X) X(REAL, l1, 1) X(REAL, i_a, 1) X(REAL, m_b, 1) X(REAL, s_b, 1) X(REAL, i_b, 1)
/* p's indices, RIGID_l1, ..., from the layout */
#define RIGID_INDEX(kind, name, size) TABLE_INDEX_##kind(RIGID_##name)
enum { RIGID_LAYOUT(RIGID_INDEX) RIGID_N_PARAMETERS };

#ifndef RIGID_API
#define RIGID_API
#endif

/* M (row-major 2 x 2) [kg m^2] and c (2) [N m]. */
RIGID_API void rigid_arm_terms(const double *p, const double *theta, const double *omega,
                               double *M, double *c) {
    const double l1 = p[RIGID_l1], i_a = p[RIGID_i_a], m_b = p[RIGID_m_b], s_b = p[RIGID_s_b];
    const double i_b = p[RIGID_i_b];
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
