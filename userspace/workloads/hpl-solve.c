// SPDX-License-Identifier: GPL-2.0-only
/*
 * HPL's solve alone: a dense system A x = b of order N, dealt out
 * block-cyclically over a P x Q grid of MPI processes, solved by
 * ScaLAPACK's pdgesv (LU with partial pivoting, Debian's libscalapack),
 * then checked as HPL checks it.
 *
 *   hpl-solve N NB P Q PASSES SEED [--corrupt]
 *
 * Debian's hpcc runs PTRANS, DGEMM, STREAM, FFT and RandomAccess before
 * HPL on a matrix of the same size: at the full benchmark's order (3072,
 * a 2 x 2 grid) they took 115 of hpcc's 129 s natively, MPIRandomAccess's
 * stream of small messages 100 of them. This runs what the paper's HPL
 * times and nothing else.
 *
 * A and b come from SEED by a hash of each element's global index, so the
 * system is the same on every grid and A can be made again for the check
 * instead of being kept twice (which would double the footprint). Each
 * pass makes A and b afresh, times pdgesv alone between barriers, and
 * checks the scaled residual HPL reports,
 *
 *   ||A x - b||_oo / (eps * (||A||_oo * ||x||_oo + ||b||_oo) * N),
 *
 * which HPL passes under 16. Process 0 prints, for each pass,
 *
 *   pass=<k> seconds=<pdgesv's time> residual=<r> info=<pdgesv's info>
 *   xsum=<the sum of x's elements, which any grid must agree on>
 *
 * (one line).
 * Exit status 0 when every pass ran (the caller judges the residuals),
 * 2 for bad arguments, 3 when memory cannot be had. --corrupt, for the
 * tests, changes one element of the first pass's x before its check, as
 * a page the swap device gave back wrong would.
 */
#include <errno.h>
#include <float.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ScaLAPACK's and BLACS' entry points (Fortran calling convention). */
void Cblacs_pinfo(int *me, int *procs);
void Cblacs_get(int ctxt, int what, int *val);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc,
	    const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb,
	       const int *nb, const int *irsrc, const int *icsrc,
	       const int *ctxt, const int *lld, int *info);
void pdgesv_(const int *n, const int *nrhs, double *a, const int *ia,
	     const int *ja, const int *desca, int *ipiv, double *b,
	     const int *ib, const int *jb, const int *descb, int *info);
void pdgemv_(const char *trans, const int *m, const int *n,
	     const double *alpha, const double *a, const int *ia,
	     const int *ja, const int *desca, const double *x, const int *ix,
	     const int *jx, const int *descx, const int *incx,
	     const double *beta, double *y, const int *iy, const int *jy,
	     const int *descy, const int *incy);
double pdlange_(const char *norm, const int *m, const int *n,
		const double *a, const int *ia, const int *ja,
		const int *desca, double *work);

struct grid {
	int ctxt, nprow, npcol, myrow, mycol;
};

/* The system's shape, and this process's share of it. */
struct system {
	int n, nb;
	int rows, cols;		/* local rows of A and b, local columns of A */
	int bcols;		/* local columns of b: 1 on process column 0 */
	int desc_a[9], desc_b[9];
	double *a, *b, *x;	/* b's and x's local parts: b's column 0 only */
	int *ipiv;
};

static const int ONE = 1, ZERO = 0;

static uint64_t splitmix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Element (i, j) of the matrix numbered @which, uniform on [-0.5, 0.5). */
static double element(uint64_t seed, int which, long i, long j, long n)
{
	uint64_t h = splitmix64(seed ^ splitmix64((uint64_t)which << 56 |
						 (uint64_t)(i * n + j)));

	return (double)(h >> 11) / 9007199254740992.0 - 0.5;
}

/* The global index of local row (or column) @l of a process at @me of @np. */
static long global_index(int l, int nb, int me, int np)
{
	return ((long)(l / nb) * np + me) * nb + l % nb;
}

/* A's local part, or b's (@which 1, one column) on process column 0. */
static void make(const struct system *s, const struct grid *g, uint64_t seed,
		 int which, double *out, int cols)
{
	for (int lj = 0; lj < cols; lj++) {
		long j = which ? 0 : global_index(lj, s->nb, g->mycol, g->npcol);

		for (int li = 0; li < s->rows; li++) {
			long i = global_index(li, s->nb, g->myrow, g->nprow);

			out[(size_t)lj * s->rows + li] = element(seed, which, i, j, s->n);
		}
	}
}

static void *zalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size);

	if (!p) {
		fprintf(stderr, "hpl-solve: %zu x %zu bytes: %s\n", count, size,
			strerror(errno));
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	return p;
}

static void setup(struct system *s, const struct grid *g)
{
	int lld, info;

	s->rows = numroc_(&s->n, &s->nb, &g->myrow, &ZERO, &g->nprow);
	s->cols = numroc_(&s->n, &s->nb, &g->mycol, &ZERO, &g->npcol);
	s->bcols = numroc_(&ONE, &s->nb, &g->mycol, &ZERO, &g->npcol);
	lld = s->rows > 1 ? s->rows : 1;
	descinit_(s->desc_a, &s->n, &s->n, &s->nb, &s->nb, &ZERO, &ZERO,
		  &g->ctxt, &lld, &info);
	if (!info)
		descinit_(s->desc_b, &s->n, &ONE, &s->nb, &s->nb, &ZERO, &ZERO,
			  &g->ctxt, &lld, &info);
	if (info) {
		fprintf(stderr, "hpl-solve: descinit: argument %d is wrong\n", -info);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	s->a = zalloc((size_t)s->rows * s->cols, sizeof(double));
	s->b = zalloc((size_t)s->rows * s->bcols, sizeof(double));
	s->x = zalloc((size_t)s->rows * s->bcols, sizeof(double));
	s->ipiv = zalloc((size_t)s->rows + s->nb, sizeof(int));
}

/* pdgesv's time, A and b made first; x is left in s->x and A is its LU. */
static double solve(struct system *s, const struct grid *g, uint64_t seed,
		    int *info)
{
	double t0;

	make(s, g, seed, 0, s->a, s->cols);
	make(s, g, seed, 1, s->x, s->bcols);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	pdgesv_(&s->n, &ONE, s->a, &ONE, &ONE, s->desc_a, s->ipiv, s->x, &ONE,
		&ONE, s->desc_b, info);
	MPI_Barrier(MPI_COMM_WORLD);
	return MPI_Wtime() - t0;
}

/* The sum of x's elements, on every process. */
static double sum_of_x(const struct system *s)
{
	double mine = 0, all;

	for (int li = 0; s->bcols && li < s->rows; li++)
		mine += s->x[li];
	MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return all;
}

/* HPL's scaled residual of x, with A and b made again. */
static double residual(struct system *s, const struct grid *g, uint64_t seed)
{
	static const double minus_one = -1.0, plus_one = 1.0;
	double *work = zalloc((size_t)s->rows + s->nb, sizeof(double));
	double norm_a, norm_x, norm_b, norm_r;

	make(s, g, seed, 0, s->a, s->cols);
	make(s, g, seed, 1, s->b, s->bcols);
	norm_a = pdlange_("I", &s->n, &s->n, s->a, &ONE, &ONE, s->desc_a, work);
	norm_x = pdlange_("I", &s->n, &ONE, s->x, &ONE, &ONE, s->desc_b, work);
	norm_b = pdlange_("I", &s->n, &ONE, s->b, &ONE, &ONE, s->desc_b, work);
	/* b := b - A x */
	pdgemv_("N", &s->n, &s->n, &minus_one, s->a, &ONE, &ONE, s->desc_a,
		s->x, &ONE, &ONE, s->desc_b, &ONE, &plus_one, s->b, &ONE, &ONE,
		s->desc_b, &ONE);
	norm_r = pdlange_("I", &s->n, &ONE, s->b, &ONE, &ONE, s->desc_b, work);
	free(work);
	return norm_r / (DBL_EPSILON / 2 * (norm_a * norm_x + norm_b) * s->n);
}

static int number(const char *text, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(text, &end, 10);
	return errno || end == text || *end || *out < lo || *out > hi;
}

struct args {
	int p, q, passes;
	uint64_t seed;
	int corrupt;
};

static int parse(int argc, char **argv, struct system *s, struct args *a)
{
	long v[5];
	static const long hi[5] = { 1L << 20, 1024, 64, 64, 20 };
	char *end;

	if (argc == 8 && !strcmp(argv[7], "--corrupt"))
		a->corrupt = 1;
	else if (argc != 7)
		return 1;
	for (int k = 0; k < 5; k++)
		if (number(argv[k + 1], 1, hi[k], &v[k]))
			return 1;
	errno = 0;
	a->seed = strtoull(argv[6], &end, 0);
	if (errno || end == argv[6] || *end || argv[6][0] == '-')
		return 1;
	s->n = v[0];
	s->nb = v[1];
	a->p = v[2];
	a->q = v[3];
	a->passes = v[4];
	return 0;
}

int main(int argc, char **argv)
{
	struct system s = { 0 };
	struct args a = { 0 };
	struct grid g;
	int me, procs;

	MPI_Init(&argc, &argv);
	Cblacs_pinfo(&me, &procs);
	if (parse(argc, argv, &s, &a)) {
		if (!me)
			fprintf(stderr, "usage: hpl-solve N NB P Q PASSES SEED [--corrupt]\n");
		MPI_Finalize();
		return 2;
	}
	if (a.p * a.q != procs) {
		if (!me)
			fprintf(stderr, "hpl-solve: a %dx%d grid needs %d processes, not %d\n",
				a.p, a.q, a.p * a.q, procs);
		MPI_Finalize();
		return 2;
	}
	Cblacs_get(-1, 0, &g.ctxt);
	Cblacs_gridinit(&g.ctxt, "Row", a.p, a.q);
	Cblacs_gridinfo(g.ctxt, &g.nprow, &g.npcol, &g.myrow, &g.mycol);
	setup(&s, &g);
	for (int k = 0; k < a.passes; k++) {
		uint64_t pass_seed = splitmix64(a.seed + k);
		int info;
		double seconds = solve(&s, &g, pass_seed, &info);
		double r, xsum;

		if (a.corrupt && !k && !g.myrow && !g.mycol)
			s.x[0] += 1.0;
		r = residual(&s, &g, pass_seed);
		xsum = sum_of_x(&s);
		if (!me)
			printf("pass=%d seconds=%.6f residual=%.6g info=%d xsum=%.17g\n",
			       k, seconds, r, info, xsum);
		fflush(stdout);
	}
	free(s.a);
	free(s.b);
	free(s.x);
	free(s.ipiv);
	Cblacs_gridexit(g.ctxt);
	MPI_Finalize();
	return 0;
}
