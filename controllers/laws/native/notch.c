/*
 * The notch filter of controllers/laws/notch.py in plain C99: its coefficients (the
 * prewarped bilinear transform of the continuous notch, docstring of notch.py) and the
 * biquad in transposed direct form II.  One implementation: NotchFilter calls it through
 * ctypes and its C-source FMU compiles it in, so every parameter stays settable there.
 *
 * The parameters p, NOTCH_LAYOUT below (notch.py packs them by name through the same
 * declaration): frequency [Hz], zeta_zero, zeta_pole, dt [s]; coefficients c = (b0, b1,
 * b2, a1, a2) (a0 = 1); state s = (s1, s2).
 */
#include <math.h>
#include <stdio.h>

#include "table_layout.h"

#ifndef LAWS_API
#define LAWS_API
#endif

#define NOTCH_LAYOUT(X) X(REAL, frequency, 1) X(REAL, zeta_zero, 1) X(REAL, zeta_pole, 1) X(REAL, dt, 1)
/* p's indices, NOTCH_frequency, ..., from the layout */
#define NOTCH_INDEX(kind, name, size) TABLE_INDEX_##kind(NOTCH_##name)
enum { NOTCH_LAYOUT(NOTCH_INDEX) NOTCH_N_PARAMS };

/* The coefficients c of the notch p; 0, or 1 with a message naming the parameter when
   the frequency is not below the Nyquist frequency of dt. */
LAWS_API int notch_coefficients(const double *p, double *c, char *msg, size_t n) {
    const double pi = 3.14159265358979323846;
    double f = p[NOTCH_frequency], dt = p[NOTCH_dt], w0, k, num[3], den[3];
    int i;
    if (!(f > 0.0 && f < 0.5 / dt)) {
        snprintf(msg, n, "notch frequency = %g Hz must lie in (0, %g) Hz, below the "
                 "Nyquist frequency of dt = %g s", f, 0.5 / dt, dt);
        return 1;
    }
    w0 = 2.0 * pi * f;
    k = w0 / tan(w0 * dt / 2.0);               /* prewarped bilinear constant */
    /* k^2 (z-1)^2 + 2 zeta w0 k (z^2-1) + w0^2 (z+1)^2, for the zeros and the poles */
    num[0] = k * k + 2 * p[NOTCH_zeta_zero] * w0 * k + w0 * w0;
    num[1] = 2 * (w0 * w0 - k * k);
    num[2] = k * k - 2 * p[NOTCH_zeta_zero] * w0 * k + w0 * w0;
    den[0] = k * k + 2 * p[NOTCH_zeta_pole] * w0 * k + w0 * w0;
    den[1] = 2 * (w0 * w0 - k * k);
    den[2] = k * k - 2 * p[NOTCH_zeta_pole] * w0 * k + w0 * w0;
    for (i = 0; i < 3; i++) c[i] = num[i] / den[0];
    c[3] = den[1] / den[0];
    c[4] = den[2] / den[0];
    return 0;
}

/* y = b0 u + s1 (the output depends directly on the input). */
LAWS_API double notch_output(const double *c, const double *s, double u) {
    return c[0] * u + s[0];
}

/* The state after the sample u. */
LAWS_API void notch_update(const double *c, double *s, double u) {
    double y = c[0] * u + s[0];
    double s1 = c[1] * u - c[3] * y + s[1];
    s[1] = c[2] * u - c[4] * y;
    s[0] = s1;
}
