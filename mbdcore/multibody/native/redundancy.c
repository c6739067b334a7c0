/*
 * Which rows of a sparse constraint Jacobian G (m x n, CSR, 0-based) depend on the rows
 * before them: a QR factorisation of G built row by row with Givens rotations (George &
 * Heath 1980, "Solution of sparse linear least squares problems using Givens
 * rotations", Linear Algebra Appl. 34), the triangular factor R kept as a band of width
 * w in a fill-reducing column order that Python chooses (reverse Cuthill-McKee of the
 * pattern of G^T G: R, the Cholesky factor of G^T G, stays in that matrix's band).
 *
 * Each row of G in turn is rotated into R: its leading entry against R's row of that
 * column, until it meets a column R has no row for, where it becomes R's row if that
 * entry exceeds tau (an entry at most tau is dropped and the next one tried).  A row left
 * with no entry above tau lies in the span of the rows kept before it, to within tau
 * times the square root of its length: it is dependent.  So the rows kept are the first
 * basis of G's row space in row order, whatever the round-off (no pivoting decided by
 * near-equal norms).  Written here, plain C99, libm only; no allocation: R, the work row
 * and the marks come from the caller (mbdcore.multibody.redundancy, docs/ring_truss.md
 * "Redundant rows").
 */
#include <float.h>
#include <math.h>

/* marks what Python calls (mbdcore.cbuild binds it) */
#ifndef RANK_API
#define RANK_API
#endif

enum { RANK_NONFINITE = -1, RANK_OUT_OF_BAND = -2 };

/* Rotate the work row x (entries from column k on) against R's row k, which zeroes
   x[k]; both are w wide from column k. */
static void rotate(double *Rk, double *xk, int w)
{
    double a = Rk[0], b = xk[0];
    double r = hypot(a, b), c = a / r, s = b / r;
    int j;
    Rk[0] = r;
    xk[0] = 0.0;
    for (j = 1; j < w; ++j) {
        double u = Rk[j], v = xk[j];
        Rk[j] = c * u + s * v;
        xk[j] = c * v - s * u;
    }
}

/* The rows of G kept (kept[i] = 1) or dependent (0), in row order; returns how many
   were kept, RANK_NONFINITE for a non-finite entry, RANK_OUT_OF_BAND for a row wider
   than the band.  position[j]: column j's place in the fill-reducing order; R: n * w
   zeros (row k holds columns k .. k + w - 1 of the ordered R); filled: n zeros; x:
   n + w zeros (left zero on return). */
RANK_API int rank_rows(int m, int n, int w, const int *Gp, const int *Gj, const double *Gx,
                       const int *position, double tau, double *R, int *filled, double *x,
                       int *kept)
{
    int i, count = 0;
    for (i = 0; i < m; ++i) {
        int p, k, lo = n, hi = 0;
        kept[i] = 0;
        for (p = Gp[i]; p < Gp[i + 1]; ++p) {
            int c = position[Gj[p]];
            if (!(fabs(Gx[p]) <= DBL_MAX))
                return RANK_NONFINITE;
            x[c] += Gx[p];
            if (c < lo) lo = c;
            if (c + 1 > hi) hi = c + 1;
        }
        if (hi - lo > w) {
            for (k = lo; k < hi; ++k) x[k] = 0.0;
            return RANK_OUT_OF_BAND;
        }
        for (k = lo; k < hi; ++k) {
            if (x[k] == 0.0)
                continue;
            if (filled[k]) {
                rotate(R + (long)k * w, x + k, w);
                if (k + w > hi) hi = k + w < n ? k + w : n;
            } else if (fabs(x[k]) > tau) {
                int j;
                for (j = 0; j < w && k + j < n; ++j) {
                    R[(long)k * w + j] = x[k + j];
                    x[k + j] = 0.0;
                }
                filled[k] = 1;
                kept[i] = 1;
                ++count;
                break;
            } else {
                x[k] = 0.0;
            }
        }
        for (k = lo; k < hi; ++k) x[k] = 0.0;
    }
    return count;
}
