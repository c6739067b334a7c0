/*
 * The sparse LU of mbdcore/dae/native/sparse_lu.c used from C alone, as a C-source FMU
 * would: every array static, sized before any number is seen (the A^T A ordering's
 * count bounds L and U), no allocation.  A 4 x 4 saddle point [[K, g], [g^T, 0]]
 * (K tridiagonal 4, 1; g = (1, 0, 1)) is analysed, factored and solved for b = (1, 2,
 * 3, 4), then refactored with every entry doubled and solved again; prints the room
 * bound and both solutions (%.17g), or the failing return code.
 * Compiled with sparse_lu.c: cc -std=c99 sparse_lu_driver.c sparse_lu.c -lm
 */
#include <stdio.h>

long slu_analyse_size(int n, long nnz);
long slu_analyse(int n, const int *Ap, const int *Ai, int normal, int *Q, int *work);
int slu_factor(int n, const int *Ap, const int *Ai, const double *Ax, const int *Q,
               double tol, int *Lp, int *Li, double *Lx, int lroom, int *Up, int *Ui,
               double *Ux, int uroom, double *Udiag, int *prow, int *iwork, double *x,
               int *info);
int slu_refactor(int n, const int *Ap, const int *Ai, const double *Ax, const int *Q,
                 double tol, const int *Lp, const int *Li, double *Lx, const int *Up,
                 const int *Ui, double *Ux, double *Udiag, const int *prow, double *x,
                 int *info);
void slu_solve(int n, const int *Q, const int *Lp, const int *Li, const double *Lx,
               const int *Up, const int *Ui, const double *Ux, const double *Udiag,
               const int *prow, double *b, int nrhs, double *work);

#define N 4
#define NNZ 12
#define ROOM (N * N)

static const int Ap[N + 1] = {0, 3, 6, 9, 12};
static const int Ai[NNZ] = {0, 1, 3, 0, 1, 2, 1, 2, 3, 0, 2, 3};
static double Ax[NNZ] = {4, 1, 1, 1, 4, 1, 1, 4, 1, 1, 1, 0};
static int work[4 * NNZ + 2 * N + 17 * N], Q[N], Lp[N + 1], Li[ROOM], Up[N + 1], Ui[ROOM],
    prow[N], iwork[6 * N], info[3];
static double Lx[ROOM], Ux[ROOM], Udiag[N], x[N], b[N];

static void solve_and_print(void)
{
    int i;
    double w[N];
    for (i = 0; i < N; ++i) b[i] = i + 1.0;
    slu_solve(N, Q, Lp, Li, Lx, Up, Ui, Ux, Udiag, prow, b, 1, w);
    for (i = 0; i < N; ++i) printf("%.17g%c", b[i], i + 1 < N ? ' ' : '\n');
}

int main(void)
{
    long bound;
    int code, p;
    if (slu_analyse_size(N, NNZ) > (long)(sizeof work / sizeof work[0])) return 2;
    bound = slu_analyse(N, Ap, Ai, 1, Q, work);
    printf("%ld\n", bound);
    if (bound < 0 || bound > ROOM) return 3;
    code = slu_factor(N, Ap, Ai, Ax, Q, 0.1, Lp, Li, Lx, (int)bound, Up, Ui, Ux, (int)bound,
                      Udiag, prow, iwork, x, info);
    if (code != 0) { printf("factor %d\n", code); return 4; }
    solve_and_print();
    for (p = 0; p < NNZ; ++p) Ax[p] *= 2.0;
    code = slu_refactor(N, Ap, Ai, Ax, Q, 0.1, Lp, Li, Lx, Up, Ui, Ux, Udiag, prow, x, info);
    if (code != 0) { printf("refactor %d\n", code); return 5; }
    solve_and_print();
    return 0;
}
