/*
 * The stage formulas of Treanor's method (fixed_step.h) for the Python stepper
 * mbdcore.integrators.runge_kutta.Treanor, which evaluates a Python right-hand side
 * between them: so the Python steps and a C kernel's loop (fs_advance) are one
 * implementation.  Each function works on the stage table of fixed_step.h
 * (FS_TREANOR_ROWS rows of m doubles).  And the piecewise inputs' evaluation as the C
 * loops sample them (fs_piecewise_sample), for checks against the Python one.
 */
#include "fixed_step.h"

#ifndef FIXED_STEP_API
#define FIXED_STEP_API
#endif

/* The number of rows of the stage table (Python checks its names against it). */
FIXED_STEP_API int fixed_step_treanor_rows(void) { return FS_TREANOR_ROWS; }

/* The rates p (row FS_TP) from w2, w3, q2, q3. */
FIXED_STEP_API void fixed_step_treanor_rates(double *stages, int m) {
    fs_treanor_rates(stages, m);
}

/* w4 (row FS_TW4) from w1, q2, q3 and the rates. */
FIXED_STEP_API void fixed_step_treanor_fourth_point(double *stages, int m, double h) {
    fs_treanor_fourth_point(stages, m, h);
}

/* The new y (row FS_TY) from the four stages and the rates. */
FIXED_STEP_API void fixed_step_treanor_finish(double *stages, int m, double h) {
    fs_treanor_finish(stages, m, h);
}

/* The length of a piecewise-input table with this head, or 0 for a malformed head. */
FIXED_STEP_API long fixed_step_piecewise_length(const double *table) {
    return fs_piecewise_length(table);
}

/* The signals of a piecewise-input table at t [s] into u, as fs_run samples them; returns
   the piece of t. */
FIXED_STEP_API int fixed_step_piecewise_sample(const double *table, double t, double *u) {
    return fs_piecewise_sample(table, t, 0, u);
}
