/*
 * Sparse LU of a square unsymmetric matrix in compressed-column form (CSC, 0-based) whose
 * pattern is fixed per model topology: the Newton matrices of the index-3 / GGL
 * integrators (mbdcore.dae.index3), [[S, G^T, ..], [G, 0, ..], ..], zero diagonal blocks
 * included, so rows are pivoted.  Written here, plain C99, libm only; no allocation:
 * every array comes from the caller, sized from the pattern (mbdcore.dae.sparse_solver;
 * docs/sparse_lu.md).
 *
 * analyse   slu_analyse: a fill-reducing column ordering Q, minimum degree in a
 *           quotient graph with approximate external degrees (the scheme of Amestoy,
 *           Davis & Duff 1996, "An approximate minimum degree ordering algorithm",
 *           SIAM J. Matrix Anal. Appl. 17(4); written from the paper, without
 *           supervariables or aggressive absorption) on the pattern of A + A^T, or of
 *           A^T A with A's rows as the graph's first elements (as COLAMD orders A^T A
 *           without forming it), and the number of entries of the Cholesky factor of
 *           the ordered pattern: for A^T A a bound of L's and U's entries whatever
 *           rows are pivoted (George & Ng 1987), so the room is known before
 *           factoring.
 * factor    slu_factor: left-looking LU with threshold partial pivoting, column k of
 *           A Q at a time (Gilbert & Peierls 1988, "Sparse partial pivoting in time
 *           proportional to arithmetic operations", SIAM J. Sci. Stat. Comput. 9(5)):
 *           the pattern of column k of L and U is the set of rows reachable in the
 *           graph of L from the rows of A's column, found by depth-first search in
 *           topological order, then a sparse triangular solve on that pattern.  The
 *           diagonal of the ordered matrix is preferred as pivot while within `tol`
 *           of the column's largest candidate, as KLU does (Davis & Palamadai
 *           Natarajan 2010, "Algorithm 907: KLU", ACM TOMS 37(3)); the searches are
 *           shortened by symmetric pruning (Eisenstat & Liu 1992).  U's entries of a
 *           column are kept in the topological order of that search.
 * refactor  slu_refactor: a matrix of the same pattern with the pivot order and the
 *           patterns of L and U kept: the same triangular solves replayed in the kept
 *           order, no search.  A kept pivot that fails the threshold test now (|pivot|
 *           < tol * the largest entry below it) is reported: factor afresh.
 * solve     slu_solve: A x = b for nrhs right-hand sides in place.
 *
 * P A Q = L U with L unit lower (its row indices kept in A's row numbering), U upper
 * (row indices in step numbering, diagonal apart), prow[k] the row pivoted at step k.
 */
#include <float.h>
#include <math.h>

/* marks what Python calls (mbdcore.cbuild binds it) */
#ifndef SLU_API
#define SLU_API
#endif

enum { SLU_OK = 0, SLU_SINGULAR = 1, SLU_NONFINITE = 2, SLU_NO_ROOM = 3, SLU_BAD_PIVOT = 4,
       SLU_BAD_PATTERN = 5 };

static int is_finite(double x) { return fabs(x) <= DBL_MAX; }

/* ---------------------------------------------------------------------------------- */
/* ordering: minimum degree in the quotient graph                                    */

/* The integers slu_analyse needs as work for an n x n pattern of nnz entries: the
   quotient graph's lists, at most 2 nnz entries live (a new element takes no more room
   than the lists it absorbs), with as much again free for the element being formed,
   then 17 n. */
SLU_API long slu_analyse_size(int n, long nnz)
{
    return 4 * nnz + 2L * n + 17L * n;
}

/* Moves every live list of the N nodes (a variable's elements and variables, an
   element's variables) to the front of iw, in the order they lie there; returns the
   first free position. */
static long compact(int N, int *iw, long pfree, int *pe, int *len)
{
    long p, dst = 0;
    int i, k;
    for (i = 0; i < N; ++i)
        if (len[i] > 0) {                  /* the list's head marks its owner */
            int first = iw[pe[i]];
            iw[pe[i]] = -(i + 1);
            pe[i] = first;
        }
    for (p = 0; p < pfree;) {
        if (iw[p] >= 0) { ++p; continue; }  /* garbage */
        i = -iw[p] - 1;
        iw[dst] = pe[i];
        pe[i] = (int)dst;
        for (k = 1; k < len[i]; ++k) iw[dst + k] = iw[p + k];
        dst += len[i];
        p += len[i];
    }
    return dst;
}

/* degree lists: head[d] -> first variable of degree d, next/prev links */
static void dlist_insert(int i, int d, int *head, int *next, int *prev, int *deg)
{
    deg[i] = d;
    prev[i] = -1;
    next[i] = head[d];
    if (head[d] >= 0) prev[head[d]] = i;
    head[d] = i;
}

static void dlist_remove(int i, int *head, int *next, int *prev, const int *deg)
{
    if (prev[i] >= 0) next[prev[i]] = next[i]; else head[deg[i]] = next[i];
    if (next[i] >= 0) prev[next[i]] = prev[i];
}

enum { VARIABLE = 0, ELEMENT = 1, ABSORBED = 2 };

/* the quotient graph: nodes 0..n-1 are the variables (columns), n..2n-1 the rows of A
   as elements (the A^T A form); lists in iw at pe[] of len[] entries, a variable's
   first elen[] of them elements */
typedef struct {
    int n;
    long iwlen, pfree;
    int *iw, *pe, *len, *elen, *status, *wgt, *wmark;      /* 2 n nodes */
    int *deg, *head, *next, *prev, *mark;                  /* n variables */
} qgraph_t;

/* A + A^T without the diagonal: each variable adjacent to variables, no element. */
static void graph_symmetric(qgraph_t *g, const int *Ap, const int *Ai)
{
    int n = g->n, i, j, *iw = g->iw, *len = g->len, *elen = g->elen, *pe = g->pe;
    long p, q;
    for (i = 0; i < n; ++i) len[i] = 0;
    for (j = 0; j < n; ++j)
        for (p = Ap[j]; p < Ap[j + 1]; ++p)
            if (Ai[p] != j) { ++len[Ai[p]]; ++len[j]; }
    for (p = 0, i = 0; i < n; ++i) { pe[i] = (int)p; p += len[i]; elen[i] = 0; }
    for (j = 0; j < n; ++j)
        for (q = Ap[j]; q < Ap[j + 1]; ++q) {
            i = Ai[q];
            if (i != j) { iw[pe[i] + elen[i]++] = j; iw[pe[j] + elen[j]++] = i; }
        }
    g->pfree = p;
    for (i = n; i < 2 * n; ++i) { len[i] = 0; g->status[i] = ABSORBED; }   /* no rows */
    for (i = 0; i < n; ++i) g->mark[i] = -1;
    for (i = 0; i < n; ++i) {
        int count = 0;
        for (p = pe[i]; p < pe[i] + len[i]; ++p)
            if (g->mark[iw[p]] != i) { g->mark[iw[p]] = i; iw[pe[i] + count++] = iw[p]; }
        len[i] = count;
        elen[i] = 0;
        g->deg[i] = count;
    }
}

/* A^T A: column j is adjacent to the elements of its rows, row i an element of the
   columns it has entries in (the cliques of A^T A, never formed). */
static void graph_normal(qgraph_t *g, const int *Ap, const int *Ai)
{
    int n = g->n, i, j, *iw = g->iw, *len = g->len, *elen = g->elen, *pe = g->pe;
    long p, q;
    for (i = 0; i < n; ++i) len[n + i] = 0;
    for (j = 0; j < n; ++j) {
        len[j] = elen[j] = Ap[j + 1] - Ap[j];
        for (p = Ap[j]; p < Ap[j + 1]; ++p) ++len[n + Ai[p]];
    }
    for (p = 0, i = 0; i < 2 * n; ++i) { pe[i] = (int)p; p += len[i]; }
    g->pfree = p;
    for (i = 0; i < n; ++i) len[n + i] = 0;
    for (j = 0; j < n; ++j)
        for (q = Ap[j], p = pe[j]; q < Ap[j + 1]; ++q, ++p) {
            i = Ai[q];
            iw[p] = n + i;
            iw[pe[n + i] + len[n + i]++] = j;
        }
    for (i = 0; i < n; ++i) g->mark[i] = -1;
    for (j = 0; j < n; ++j) {                /* exact degree: |union of its rows| - 1 */
        int d = 0;
        g->mark[j] = j;
        for (p = pe[j]; p < pe[j] + len[j]; ++p)
            for (q = pe[iw[p]]; q < pe[iw[p]] + len[iw[p]]; ++q)
                if (g->mark[iw[q]] != j) { g->mark[iw[q]] = j; ++d; }
        g->deg[j] = d;
    }
    for (i = 0; i < n; ++i) g->status[n + i] = ELEMENT;
}

/* Eliminates the variables in minimum (approximate) degree order into Q; returns the
   sum of the sizes of the elements formed. */
static long eliminate(qgraph_t *g, int *Q)
{
    int n = g->n, *iw = g->iw, *pe = g->pe, *len = g->len, *elen = g->elen,
        *status = g->status, *wgt = g->wgt, *wmark = g->wmark, *deg = g->deg,
        *head = g->head, *next = g->next, *prev = g->prev, *mark = g->mark;
    int i, j, k, e, tag = 0, mindeg = 0;
    long p, q, lnz = 0;
    for (i = 0; i < n; ++i) {
        status[i] = VARIABLE;
        head[i] = -1;
        mark[i] = -1;
    }
    for (i = 0; i < 2 * n; ++i) wmark[i] = -1;
    for (i = 0; i < n; ++i) {
        int d = deg[i] < n - 1 ? deg[i] : n - 1;
        dlist_insert(i, d, head, next, prev, deg);
    }
    for (k = 0; k < n; ++k) {
        long need, start;
        int pv, nlp = 0;
        while (head[mindeg] < 0) ++mindeg;
        pv = head[mindeg];
        dlist_remove(pv, head, next, prev, deg);
        Q[k] = pv;
        /* the new element L_p = (A_p u the elements' variables) \ {p}, at the end */
        need = len[pv];
        for (p = pe[pv]; p < pe[pv] + elen[pv]; ++p) need += len[iw[p]];
        if (g->pfree + need > g->iwlen) g->pfree = compact(2 * n, iw, g->pfree, pe, len);
        start = g->pfree;
        ++tag;
        mark[pv] = tag;
        for (p = pe[pv]; p < pe[pv] + len[pv]; ++p) {
            e = iw[p];
            if (p < pe[pv] + elen[pv]) {     /* an element: its variables, then absorbed */
                for (q = pe[e]; q < pe[e] + len[e]; ++q) {
                    i = iw[q];
                    if (status[i] == VARIABLE && mark[i] != tag) {
                        mark[i] = tag; iw[g->pfree++] = i;
                    }
                }
                status[e] = ABSORBED;
                len[e] = 0;
            } else if (status[e] == VARIABLE && mark[e] != tag) {
                mark[e] = tag; iw[g->pfree++] = e;
            }
        }
        status[pv] = ELEMENT;
        pe[pv] = (int)start;
        len[pv] = nlp = (int)(g->pfree - start);
        elen[pv] = 0;
        lnz += nlp;
        /* each variable of L_p: elements without the absorbed ones, plus p; its
           variables without those of L_p (now adjacent through p) */
        for (q = start; q < start + nlp; ++q) {
            long b, w;
            int ne = 0, na = 0;
            i = iw[q];
            dlist_remove(i, head, next, prev, deg);
            b = pe[i];
            for (p = b; p < b + elen[i]; ++p)
                if (status[iw[p]] == ELEMENT && iw[p] != pv) iw[b + ne++] = iw[p];
            w = b + ne;
            for (p = b + elen[i]; p < b + len[i]; ++p) {
                j = iw[p];
                if (status[j] == VARIABLE && mark[j] != tag) { iw[w++] = j; ++na; }
            }
            /* p goes at the end of the elements (the first variable moves to the end):
               at least one entry left, p itself or an absorbed element */
            if (na > 0) iw[b + ne + na] = iw[b + ne];
            iw[b + ne] = pv;
            elen[i] = ne + 1;
            len[i] = ne + na + 1;
        }
        /* approximate external degrees: |A_i| + |L_p \ i| + sum |L_e \ L_p| */
        for (q = start; q < start + nlp; ++q) {
            i = iw[q];
            for (p = pe[i]; p < pe[i] + elen[i] - 1; ++p) {
                e = iw[p];
                if (wmark[e] != tag) { wmark[e] = tag; wgt[e] = len[e]; }
                --wgt[e];
            }
        }
        for (q = start; q < start + nlp; ++q) {
            long d;
            i = iw[q];
            d = (len[i] - elen[i]) + (nlp - 1);
            for (p = pe[i]; p < pe[i] + elen[i] - 1; ++p) d += wgt[iw[p]];
            if (d > deg[i] + nlp - 1) d = deg[i] + nlp - 1;
            if (d > n - k - 2) d = n - k - 2;
            if (d < 0) d = 0;
            dlist_insert(i, (int)d, head, next, prev, deg);
            if (d < mindeg) mindeg = (int)d;
        }
    }
    return lnz;
}

/* Q: the elimination order (Q[k] = the column, and with normal = 0 the row, eliminated
   at step k) of the pattern (Ap, Ai) of an n x n matrix, by minimum degree on the
   pattern of A + A^T (normal = 0) or of A^T A (normal = 1); work:
   slu_analyse_size(n, Ap[n]) integers.  Returns the number of strictly lower entries
   of the Cholesky factor of Q^T (A + A^T) Q, or of Q^T A^T A Q (its pattern is exactly
   the union of the elements formed), or -1 for an index out of range.  With normal =
   1 that number bounds the strictly lower entries of L and the strictly upper ones of
   U for every choice of pivot rows (George & Ng 1987): room enough, known here. */
SLU_API long slu_analyse(int n, const int *Ap, const int *Ai, int normal, int *Q, int *work)
{
    qgraph_t g;
    long p, nnz = Ap[n];
    for (p = 0; p < nnz; ++p)
        if (Ai[p] < 0 || Ai[p] >= n) return -1;
    g.n = n;
    g.iwlen = 4 * nnz + 2L * n;
    g.iw = work;
    g.pe = work + g.iwlen;
    g.len = g.pe + 2 * n;
    g.elen = g.len + 2 * n;
    g.status = g.elen + 2 * n;
    g.wgt = g.status + 2 * n;
    g.wmark = g.wgt + 2 * n;
    g.deg = g.wmark + 2 * n;
    g.head = g.deg + n;
    g.next = g.head + n;
    g.prev = g.next + n;
    g.mark = g.prev + n;
    if (normal) graph_normal(&g, Ap, Ai); else graph_symmetric(&g, Ap, Ai);
    return eliminate(&g, Q);
}

/* ---------------------------------------------------------------------------------- */
/* numeric factorisation                                                              */

/* Depth-first search from row j in the graph of L (a pivotal row s = pinv[j] leads to
   the rows of L's column s, its first Lpend[s] only once the column is pruned); finished
   rows are pushed onto topo[--top]. */
static int reach(int j, int k, const int *Lp, const int *Li, const int *Lpend,
                 const int *pinv, int *flag, int *stack, int *pstack, int *topo, int top)
{
    int head = 0;
    stack[0] = j;
    while (head >= 0) {
        int s, done = 1, end, p;
        j = stack[head];
        s = pinv[j];
        if (flag[j] != k) { flag[j] = k; pstack[head] = s < 0 ? 0 : Lp[s]; }
        end = s < 0 ? 0 : (Lpend[s] >= 0 ? Lp[s] + Lpend[s] : Lp[s + 1]);
        for (p = pstack[head]; p < end; ++p) {
            int i = Li[p];
            if (flag[i] == k) continue;
            pstack[head] = p + 1;
            stack[++head] = i;
            done = 0;
            break;
        }
        if (done) { --head; topo[--top] = j; }
    }
    return top;
}

/* Symmetric pruning (Eisenstat & Liu 1992, as KLU does): once column k's pivot row is a
   row of L's column s with U(s, k) != 0, the rows of column s not yet pivotal are all
   rows of column k too, so the search needs only its pivotal rows: they are moved to
   the front of the column (values with them) and counted in Lpend[s]. */
static void prune(int k, int pivrow, const int *Lp, int *Li, double *Lx, int *Lpend,
                  const int *Up, const int *Ui, const int *pinv)
{
    int p, q;
    for (p = Up[k]; p < Up[k + 1]; ++p) {
        int s = Ui[p];
        if (Lpend[s] >= 0) continue;
        for (q = Lp[s]; q < Lp[s + 1] && Li[q] != pivrow; ++q) {}
        if (q < Lp[s + 1]) {
            int head = Lp[s], tail = Lp[s + 1];
            while (head < tail) {
                if (pinv[Li[head]] >= 0) { ++head; continue; }
                --tail;
                { int ti = Li[head]; Li[head] = Li[tail]; Li[tail] = ti; }
                { double tx = Lx[head]; Lx[head] = Lx[tail]; Lx[tail] = tx; }
            }
            Lpend[s] = head - Lp[s];
        }
    }
}

/* Factors A (n x n, CSC Ap/Ai/Ax) ordered by Q with pivots chosen within tol (0 < tol <=
   1) of the largest, the diagonal preferred.  L (Lp, Li, Lx, room lroom) and U (Up,
   Ui, Ux, room uroom, Udiag) and the pivot rows prow are written.  iwork: 6 n ints;
   x: n doubles, zero on entry and on return.  info[0]: the step at which it stopped,
   info[1], info[2]: entries of L and U written (at SLU_NO_ROOM: at least what they
   need so far).  Returns SLU_OK, SLU_SINGULAR (a column with no candidate pivot),
   SLU_NONFINITE or SLU_NO_ROOM. */
SLU_API int slu_factor(int n, const int *Ap, const int *Ai, const double *Ax, const int *Q,
                       double tol, int *Lp, int *Li, double *Lx, int lroom, int *Up,
                       int *Ui, double *Ux, int uroom, double *Udiag, int *prow,
                       int *iwork, double *x, int *info)
{
    int *pinv = iwork, *flag = iwork + n, *stack = flag + n, *pstack = stack + n,
        *topo = pstack + n, *Lpend = topo + n;
    int i, k, lnz = 0, unz = 0, code = SLU_OK;
    for (i = 0; i < n; ++i) { pinv[i] = -1; flag[i] = -1; Lpend[i] = -1; }
    Lp[0] = Up[0] = 0;
    for (k = 0; k < n; ++k) {
        int col = Q[k], top = n, t, p, piv = -1, diag = Q[k], lnew = -1, unew = 0;
        double amax = 0.0, pivot;
        for (p = Ap[col]; p < Ap[col + 1]; ++p) {
            if (!is_finite(Ax[p])) { code = SLU_NONFINITE; break; }
            if (flag[Ai[p]] != k)
                top = reach(Ai[p], k, Lp, Li, Lpend, pinv, flag, stack, pstack, topo, top);
        }
        /* the column's entries of U (rows pivoted already) and of L (the others, the
           pivot apart) */
        for (t = top; t < n; ++t) {
            if (pinv[topo[t]] >= 0) ++unew; else ++lnew;
        }
        if (lnew < 0) lnew = 0;
        if (code == SLU_OK && (lnz + lnew > lroom || unz + unew > uroom)) {
            code = SLU_NO_ROOM;
            lnz += lnew;
            unz += unew;
        }
        if (code != SLU_OK) { info[0] = k; info[1] = lnz; info[2] = unz; return code; }
        for (p = Ap[col]; p < Ap[col + 1]; ++p) x[Ai[p]] = Ax[p];
        /* x := L^-1 x on the reached rows, in topological order */
        for (t = top; t < n; ++t) {
            int j = topo[t], s = pinv[j];
            double xj = x[j];
            if (s < 0 || xj == 0.0) continue;
            for (p = Lp[s]; p < Lp[s + 1]; ++p) x[Li[p]] -= Lx[p] * xj;
        }
        for (t = top; t < n; ++t) {
            int j = topo[t];
            if (pinv[j] < 0) {
                double a = fabs(x[j]);
                if (!is_finite(x[j])) code = SLU_NONFINITE;
                if (a > amax) { amax = a; piv = j; }
            }
        }
        if (code == SLU_OK && amax == 0.0) code = SLU_SINGULAR;
        if (code != SLU_OK) {
            for (t = top; t < n; ++t) x[topo[t]] = 0.0;
            info[0] = k; info[1] = lnz; info[2] = unz;
            return code;
        }
        if (pinv[diag] < 0 && flag[diag] == k && fabs(x[diag]) >= tol * amax) piv = diag;
        pivot = x[piv];
        for (t = top; t < n; ++t) {
            int j = topo[t];
            if (pinv[j] >= 0) { Ui[unz] = pinv[j]; Ux[unz++] = x[j]; }
            else if (j != piv) { Li[lnz] = j; Lx[lnz++] = x[j] / pivot; }
            x[j] = 0.0;
        }
        Udiag[k] = pivot;
        pinv[piv] = k;
        prow[k] = piv;
        Lp[k + 1] = lnz;
        Up[k + 1] = unz;
        prune(k, piv, Lp, Li, Lx, Lpend, Up, Ui, pinv);
    }
    info[0] = n; info[1] = lnz; info[2] = unz;
    return SLU_OK;
}

/* A matrix of the pattern slu_factor factored, with its pivot order and the patterns of
   L and U kept (only Lx, Ux, Udiag are written).  Returns SLU_OK, SLU_NONFINITE or
   SLU_BAD_PIVOT (a kept pivot zero or below tol times the largest entry of its column
   of L: factor afresh); info[0]: the step at which it stopped.  x: n doubles, zero on
   entry and on return. */
SLU_API int slu_refactor(int n, const int *Ap, const int *Ai, const double *Ax, const int *Q,
                         double tol, const int *Lp, const int *Li, double *Lx,
                         const int *Up, const int *Ui, double *Ux, double *Udiag,
                         const int *prow, double *x, int *info)
{
    int k;
    for (k = 0; k < n; ++k) {
        int col = Q[k], p, code = SLU_OK;
        double amax = 0.0, pivot;
        for (p = Ap[col]; p < Ap[col + 1]; ++p) {
            if (!is_finite(Ax[p])) code = SLU_NONFINITE;
            x[Ai[p]] = Ax[p];
        }
        for (p = Up[k]; p < Up[k + 1]; ++p) {
            int s = Ui[p], r = prow[s], q;
            double xs = x[r];
            Ux[p] = xs;
            x[r] = 0.0;
            if (xs != 0.0)
                for (q = Lp[s]; q < Lp[s + 1]; ++q) x[Li[q]] -= Lx[q] * xs;
        }
        pivot = x[prow[k]];
        x[prow[k]] = 0.0;
        for (p = Lp[k]; p < Lp[k + 1]; ++p) {
            double a = fabs(x[Li[p]]);
            if (!is_finite(x[Li[p]])) code = SLU_NONFINITE;
            if (a > amax) amax = a;
        }
        if (code == SLU_OK && !is_finite(pivot)) code = SLU_NONFINITE;
        if (code == SLU_OK && (pivot == 0.0 || fabs(pivot) < tol * amax)) code = SLU_BAD_PIVOT;
        if (code != SLU_OK) {
            for (p = Lp[k]; p < Lp[k + 1]; ++p) x[Li[p]] = 0.0;
            info[0] = k;
            return code;
        }
        for (p = Lp[k]; p < Lp[k + 1]; ++p) {
            Lx[p] = x[Li[p]] / pivot;
            x[Li[p]] = 0.0;
        }
        Udiag[k] = pivot;
    }
    info[0] = n;
    return SLU_OK;
}

/* b := A^-1 b for nrhs right-hand sides stored one after the other (n each);
   work: n doubles. */
SLU_API void slu_solve(int n, const int *Q, const int *Lp, const int *Li, const double *Lx,
                       const int *Up, const int *Ui, const double *Ux, const double *Udiag,
                       const int *prow, double *b, int nrhs, double *work)
{
    int r, k, p;
    for (r = 0; r < nrhs; ++r, b += n) {
        for (k = 0; k < n; ++k) {          /* L z = P b, z in step numbering */
            double z = b[prow[k]];
            work[k] = z;
            if (z != 0.0)
                for (p = Lp[k]; p < Lp[k + 1]; ++p) b[Li[p]] -= Lx[p] * z;
        }
        for (k = n - 1; k >= 0; --k) {     /* U y = z */
            double y = (work[k] /= Udiag[k]);
            if (y != 0.0)
                for (p = Up[k]; p < Up[k + 1]; ++p) work[Ui[p]] -= Ux[p] * y;
        }
        for (k = 0; k < n; ++k) b[Q[k]] = work[k];
    }
}

/* out := the values of A (Ap, Ai, Ax) at the positions of the pattern (Pp, Pi), zero
   where A has no entry; SLU_BAD_PATTERN if A has an entry outside it.  where: n ints,
   -1 on entry and on return. */
SLU_API int slu_gather(int n, const int *Pp, const int *Pi, const int *Ap, const int *Ai,
                       const double *Ax, double *out, int *where)
{
    int j, p, code = SLU_OK;
    for (j = 0; j < n; ++j) {
        for (p = Pp[j]; p < Pp[j + 1]; ++p) { where[Pi[p]] = p; out[p] = 0.0; }
        for (p = Ap[j]; p < Ap[j + 1]; ++p) {
            int i = Ai[p];
            if (i < 0 || i >= n || where[i] < 0) code = SLU_BAD_PATTERN;
            else out[where[i]] += Ax[p];
        }
        for (p = Pp[j]; p < Pp[j + 1]; ++p) where[Pi[p]] = -1;
        if (code != SLU_OK) return code;
    }
    return code;
}
