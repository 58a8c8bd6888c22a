/*
 * vnb-mpi-bench: vnetbench's MPI benchmark, run by vnetbench.workloads.mpi with one rank per
 * lab node. Rank 0 prints one JSON object on stdout.
 *
 *   vnb-mpi-bench --test pingpong|barrier|allreduce [--iterations N | --duration S]
 *                 [--size BYTES] [--warmup N]
 *   vnb-mpi-bench --test gaps [--rate R] [--size BYTES] [--iterations N | --duration S]
 *                 [--warmup N]
 *   vnb-mpi-bench --test cg|lu|sp|bt|mg|ft|is [--class S|W|A] [--iterations N] [--warmup N]
 *
 * Micro-benchmarks (study 001: ping-pong RTT, MPI_Barrier synchronisation time, allreduce
 * time); times are in microseconds.
 *
 * pingpong:  rank 0 sends --size bytes to rank 1, which sends them back; one sample per round
 *            trip measured on rank 0 (other ranks only take part in the control broadcasts).
 * barrier:   every rank times each MPI_Barrier call; a sample is the slowest rank's time of
 *            that iteration (element-wise MPI_MAX over ranks after the loop), i.e. how long the
 *            last rank waited before everyone was released.
 * allreduce: like barrier, timing MPI_Allreduce(MPI_SUM) of max(1, size/8) doubles.
 *
 * With --duration, iterations run in batches; after each batch (outside the timed region)
 * rank 0 broadcasts whether to go on, so every rank makes the same collective calls.
 *
 * gaps:      a constant-rate stream (study 001's inter-message gap test, Figs. 2-3): rank 0
 *            sends --size-byte messages to rank 1 with MPI_Send at --rate messages/s (default
 *            1000), sleeping to absolute deadlines start + i/rate (clock_nanosleep TIMER_ABSTIME
 *            on CLOCK_MONOTONIC, timer slack 1 ns, so late wake-ups do not accumulate); rank 1
 *            receives them with MPI_Recv and timestamps each arrival with CLOCK_MONOTONIC.
 *            A send gap is the time between two successive MPI_Send returns on rank 0 (the
 *            wake-up's jitter plus the send call's own variation, which on a veth or bridge
 *            includes the stack's work done in the sender's context); a receive gap the time
 *            between two successive MPI_Recv returns on rank 1, sent to rank 0 after the
 *            stream; recv_gap_dev = receive gap - 1/rate. Each rank only subtracts its own
 *            timestamps: no clock is compared across ranks. --iterations N (default 1000)
 *            or --duration S (N = floor(rate * S)) timed messages, after --warmup messages
 *            (default: those of the first 0.1 s, 1 .. 100) sent the same way and not counted;
 *            one untimed round trip opens the connection first. Every timed message yields
 *            one gap (to its predecessor; N - 1 gaps with no warmup). Output: send_gap_*,
 *            recv_gap_*, recv_gap_dev_* (min, mean, stddev, p1 .. p999, max, microseconds),
 *            sent and received (timed messages; received counts those of the right size),
 *            late (timed messages whose MPI_Send began more than one period after its
 *            deadline: the sender could not keep the rate). Ranks above 1 wait in an
 *            MPI_Ibarrier polled every 10 ms, so they do not compete for the CPU.
 *
 * Application kernels with the communication patterns of the NAS Parallel Benchmarks (NPB
 * itself is not packaged). Each reproduces one NPB program's pattern (who talks to whom,
 * how often, how much, in which order and with which dependencies) with a small fixed
 * amount of computation per grid point, not its numerics. Any rank count >= 2 works (square
 * or not: process grids are chosen by MPI_Dims_create) within the class's limits (below).
 * Class S runs in well under a second on 4 ranks of a 2-core machine, A in a few seconds.
 *
 * cg: conjugate-gradient steps (25 per iteration, as NPB's inner loop) on a P = pr x pc
 *     process grid: sparse mat-vec of the rank's matrix block, ring reduce-scatter of the
 *     partial result along the process row, the new vector's segments sent to the process
 *     column that needs them (the "transpose" exchange), two MPI_Allreduce dot products.
 * lu: SSOR iterations on a 2-D (x, y) process grid, z not split: 2-deep face exchange with
 *     the 4 neighbours, then a lower and an upper triangular sweep, each a pipelined
 *     wavefront (one small message per z plane to each downstream neighbour: NPB LU's
 *     many short messages).
 * sp, bt: ADI time steps on a multi-partition (NPB's q x q scheme when P = q^2, else the
 *     diagonal partition with P cells per dimension, cell (x,y,z) on rank (x+y+z) mod P):
 *     copy_faces (2-deep faces, 5 variables, to the 6 neighbours), then for x, y and z a
 *     forward elimination and a back substitution pipelined across cells. Per face point
 *     SP sends 22 values forward and 10 back (NPB SP), BT 30 forward (5x5 block + 5-vector)
 *     and 5 back (NPB BT) and does more computation per point.
 * mg: V-cycles on a periodic 3-D grid over a 3-D process grid: halo exchanges (faces,
 *     edges and corners, dimension by dimension) with 27-point stencils at every level
 *     from the finest down to 2 points per rank and back up: messages shrink 4x per level.
 * ft: 3-D FFT time steps on z slabs: 1-D FFTs along x and y, transpose by MPI_Alltoall of
 *     large blocks, FFTs along z, and a small MPI_Allreduce checksum.
 * is: integer bucket sort (NPB IS): MPI_Allreduce of 1024 bucket counts, MPI_Alltoall of
 *     send counts, MPI_Alltoallv of the keys, local counting sort.
 *
 * Problem sizes (default iterations in brackets; NPB's sizes except SP/BT class S, MG class
 * W and FT class A):
 *          S                    W                     A
 *   cg     n=1400, 16 nz/row    n=7000, 24 nz/row     n=14000, 32 nz/row    [15]
 *   lu     12^3                 33^3                  64^3                  [50]
 *   sp     16^3                 36^3                  64^3                  [100]
 *   bt     16^3                 24^3                  64^3                  [60]
 *   mg     32^3                 64^3                  256^3                 [4]
 *   ft     64x64x64             128x128x32            128x128x128           [6]
 *   is     2^16 keys < 2^11     2^20 keys < 2^16      2^23 keys < 2^19      [10]
 * A rank count the class cannot be split over (lu: n/px < 2; sp, bt: fewer than 2 planes a
 * cell; mg: not even one level of 2 points a rank) is refused with exit status 2.
 *
 * Verification: grid values are integers given by a hash of (point, phase, variable), so
 * every rank can tell what each received element must be. Received halos, faces, blocks
 * and segments are compared with it, pipelined recurrences must reproduce it, FT's spectrum
 * must have its known peaks, IS's keys must arrive in range and end up globally sorted
 * without loss. "errors" counts mismatches over all ranks; "verified" is errors == 0.
 * "checksum" is a sum of exact integers (FT: a fixed-order sum of sampled FFT values) over
 * the timed iterations: the same on every run of a class and iteration count, whatever the
 * rank count (MG: whatever the rank count that gives the same number of levels).
 *
 * Kernel output: runtime_s (wall time of the timed iterations, max over ranks), comm_s (time
 * inside MPI calls, max over ranks), messages and bytes (sent by all ranks in the timed
 * iterations, summed), checksum, errors, verified. A point-to-point send is one message of
 * its payload; collectives count the messages of their textbook algorithm, per rank:
 * allreduce ceil(log2 P) exchanges of the whole buffer (recursive doubling), alltoall(v) one
 * block to each other rank (empty ones skipped). Messages to oneself are local copies and
 * not counted. --warmup iterations (default 1) run untimed and uncounted before them. Exit
 * status 1 (rank 0) when a kernel fails its verification.
 */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define BATCH 50

enum test_kind { PINGPONG, BARRIER, ALLREDUCE };

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Percentile with linear interpolation between closest ranks (sorted input). */
static double percentile(const double *v, long n, double p) {
    if (n == 1) return v[0];
    double pos = p / 100.0 * (double)(n - 1);
    long lo = (long)floor(pos);
    long hi = lo + 1 < n ? lo + 1 : lo;
    double frac = pos - (double)lo;
    return v[lo] + (v[hi] - v[lo]) * frac;
}

static void usage(void) {
    fprintf(stderr, "usage: vnb-mpi-bench --test pingpong|barrier|allreduce "
                    "[--iterations N | --duration S] [--size BYTES] [--warmup N]\n"
                    "       vnb-mpi-bench --test gaps [--rate R] [--size BYTES] "
                    "[--iterations N | --duration S] [--warmup N]\n"
                    "       vnb-mpi-bench --test cg|lu|sp|bt|mg|ft|is [--class S|W|A] "
                    "[--iterations N] [--warmup N]\n");
}

/* ==== application kernels ================================================================ */

#define NBUCKETS 1024

static int K_rank, K_np;
static double K_comm;              /* seconds inside MPI calls */
static long long K_msgs, K_bytes;  /* sent by this rank */
static long long K_bad;            /* verification mismatches seen by this rank */
static double K_sum;               /* this rank's share of the checksum */
volatile double vnb_sink;          /* keeps the synthetic work from being optimised away */

static void *xalloc(size_t n) {
    void *p = calloc(n ? n : 1, 1);
    if (!p) MPI_Abort(MPI_COMM_WORLD, 3);
    return p;
}
#define NEW(T, n) ((T *)xalloc((size_t)(n) * sizeof(T)))

/* Start of part i of n items split into p near-equal parts. */
static long part(long n, int p, int i) { return (long)((long long)n * i / p); }

static long long type_bytes(MPI_Datatype t) {
    int s = 0;
    MPI_Type_size(t, &s);
    return s;
}

static int ceil_log2(int n) {
    int k = 0;
    while ((1 << k) < n) k++;
    return k;
}

/* ---- MPI calls, timed and counted ---- */

static void k_isend(const void *buf, long n, MPI_Datatype t, int to, int tag, MPI_Request *r) {
    double t0 = MPI_Wtime();
    MPI_Isend(buf, (int)n, t, to, tag, MPI_COMM_WORLD, r);
    K_comm += MPI_Wtime() - t0;
    K_msgs++;
    K_bytes += n * type_bytes(t);
}

static void k_irecv(void *buf, long n, MPI_Datatype t, int from, int tag, MPI_Request *r) {
    double t0 = MPI_Wtime();
    MPI_Irecv(buf, (int)n, t, from, tag, MPI_COMM_WORLD, r);
    K_comm += MPI_Wtime() - t0;
}

static void k_recv(void *buf, long n, MPI_Datatype t, int from, int tag) {
    double t0 = MPI_Wtime();
    MPI_Recv(buf, (int)n, t, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    K_comm += MPI_Wtime() - t0;
}

static void k_waitall(int n, MPI_Request *r) {
    double t0 = MPI_Wtime();
    MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
    K_comm += MPI_Wtime() - t0;
}

static void k_allreduce(const void *in, void *out, int n, MPI_Datatype t, MPI_Op op) {
    double t0 = MPI_Wtime();
    MPI_Allreduce(in, out, n, t, op, MPI_COMM_WORLD);
    K_comm += MPI_Wtime() - t0;
    K_msgs += ceil_log2(K_np);
    K_bytes += (long long)ceil_log2(K_np) * n * type_bytes(t);
}

static void k_alltoall(const void *in, int n, MPI_Datatype t, void *out) {
    double t0 = MPI_Wtime();
    MPI_Alltoall(in, n, t, out, n, t, MPI_COMM_WORLD);
    K_comm += MPI_Wtime() - t0;
    K_msgs += K_np - 1;
    K_bytes += (long long)(K_np - 1) * n * type_bytes(t);
}

static void k_alltoallv(const void *in, const int *sc, const int *sd, MPI_Datatype t, void *out,
                        const int *rc, const int *rd) {
    double t0 = MPI_Wtime();
    MPI_Alltoallv(in, sc, sd, t, out, rc, rd, t, MPI_COMM_WORLD);
    K_comm += MPI_Wtime() - t0;
    for (int q = 0; q < K_np; q++) {
        if (q != K_rank && sc[q] > 0) {
            K_msgs++;
            K_bytes += (long long)sc[q] * type_bytes(t);
        }
    }
}

/* ---- values every rank can recompute ---- */

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* An integer in [0, 4095]: the value of variable v at grid point (a, b, c) in a phase. */
static inline double fval(long a, long b, long c, long phase, long v) {
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ULL + (uint64_t)b * 0xC2B2AE3D27D4EB4FULL +
                 (uint64_t)c * 0x165667B19E3779F9ULL + (uint64_t)phase * 0xD6E8FEB86659FD93ULL +
                 (uint64_t)v * 0x27D4EB2F165667C5ULL;
    return (double)(mix64(h) >> 52);
}

/* Synthetic floating-point work: n dependent multiply-adds. */
static inline double work(double x, int n) {
    for (int i = 0; i < n; i++) x = x * 0.9999999 + 0.5;
    return x;
}

static long wrap(long i, long n) { return ((i % n) + n) % n; }

/* ---- CG ------------------------------------------------------------------------------- */

#define CG_STEPS 25

typedef struct {
    long n;
    int k;
    int pr, pc, row, col;
    long r0, nr, c0, nc, s0, ns; /* row block, column block, own segment: start, length */
    long *rp;                    /* local CSR block: rows of the row block, columns of the column block */
    int *ci;
    double *w;
    double *x, *y, *tmp, *xs;
    long xstep;                  /* the step x holds */
} cg_t;

static long cg_seg(const cg_t *s, int i) { return part(s->n, K_np, i); }

static uint64_t cg_entry(long r, int m) {
    return mix64((uint64_t)r * 0x9E3779B97F4A7C15ULL + (uint64_t)m + 1);
}

/* Element c of the vector multiplied at a step: an integer in [1, 256]. */
static double cg_x(long c, long step) {
    return (double)(1 + (mix64((uint64_t)c * 0xC2B2AE3D27D4EB4FULL +
                               (uint64_t)step * 0x165667B19E3779F9ULL + 77) >> 56));
}

static void *cg_setup(int cls, char *grid, char *problem) {
    static const long N[] = {1400, 7000, 14000};
    static const int K[] = {16, 24, 32};
    cg_t *s = NEW(cg_t, 1);
    s->n = N[cls];
    s->k = K[cls];
    int dims[2] = {0, 0};
    MPI_Dims_create(K_np, 2, dims);
    s->pc = dims[0];
    s->pr = dims[1];
    s->row = K_rank / s->pc;
    s->col = K_rank % s->pc;
    /* row block i: segments i*pc .. i*pc+pc-1; column block j: segments j*pr .. j*pr+pr-1 */
    s->r0 = cg_seg(s, s->row * s->pc);
    s->nr = cg_seg(s, (s->row + 1) * s->pc) - s->r0;
    s->c0 = cg_seg(s, s->col * s->pr);
    s->nc = cg_seg(s, (s->col + 1) * s->pr) - s->c0;
    s->s0 = cg_seg(s, K_rank);
    s->ns = cg_seg(s, K_rank + 1) - s->s0;
    s->rp = NEW(long, s->nr + 1);
    long nnz = 0;
    for (long r = 0; r < s->nr; r++) {
        for (int m = 0; m < s->k; m++) {
            long c = (long)(cg_entry(s->r0 + r, m) % (uint64_t)s->n);
            if (c >= s->c0 && c < s->c0 + s->nc) nnz++;
        }
    }
    s->ci = NEW(int, nnz);
    s->w = NEW(double, nnz);
    nnz = 0;
    for (long r = 0; r < s->nr; r++) {
        s->rp[r] = nnz;
        for (int m = 0; m < s->k; m++) {
            uint64_t h = cg_entry(s->r0 + r, m);
            long c = (long)(h % (uint64_t)s->n);
            if (c >= s->c0 && c < s->c0 + s->nc) {
                s->ci[nnz] = (int)(c - s->c0);
                s->w[nnz++] = (double)(1 + (h >> 61));
            }
        }
    }
    s->rp[s->nr] = nnz;
    s->x = NEW(double, s->nc);
    s->y = NEW(double, s->nr);
    s->tmp = NEW(double, s->nr);
    s->xs = NEW(double, s->ns);
    s->xstep = -1000000000L;
    snprintf(grid, 64, "%dx%d", s->pr, s->pc);
    snprintf(problem, 128, "n=%ld nonzeros/row=%d steps/iteration=%d", s->n, s->k, CG_STEPS);
    return s;
}

static void cg_step(cg_t *s, long step, int check) {
    const int pc = s->pc, pr = s->pr, row = s->row, col = s->col;
    MPI_Request req[64 + 2];
    if (s->xstep != step) { /* first step of the run */
        for (long c = 0; c < s->nc; c++) s->x[c] = cg_x(s->c0 + c, step);
        s->xstep = step;
    }
    /* partial product of the local block */
    for (long r = 0; r < s->nr; r++) {
        double acc = 0.0;
        for (long e = s->rp[r]; e < s->rp[r + 1]; e++) acc += s->w[e] * s->x[s->ci[e]];
        s->y[r] = acc;
    }
    /* ring reduce-scatter along the process row: chunk q of the row block is segment row*pc+q */
    int right = row * pc + (col + 1) % pc, left = row * pc + (col + pc - 1) % pc;
    for (int m = 0; m < pc - 1; m++) {
        int sc = ((col - m - 1) % pc + pc) % pc, rc = ((col - m - 2) % pc + 2 * pc) % pc;
        long so = cg_seg(s, row * pc + sc) - s->r0, sn = cg_seg(s, row * pc + sc + 1) - cg_seg(s, row * pc + sc);
        long ro = cg_seg(s, row * pc + rc) - s->r0, rn = cg_seg(s, row * pc + rc + 1) - cg_seg(s, row * pc + rc);
        k_irecv(s->tmp, rn, MPI_DOUBLE, left, 100 + m, &req[0]);
        k_isend(s->y + so, sn, MPI_DOUBLE, right, 100 + m, &req[1]);
        k_waitall(2, req);
        for (long i = 0; i < rn; i++) s->y[ro + i] += s->tmp[i];
    }
    double *ys = s->y + (s->s0 - s->r0); /* the own segment, now summed over the row */
    if (check) {
        for (long i = 0; i < s->ns; i++) {
            long r = s->s0 + i;
            double e = 0.0;
            for (int m = 0; m < s->k; m++) {
                uint64_t h = cg_entry(r, m);
                e += (double)(1 + (h >> 61)) * cg_x((long)(h % (uint64_t)s->n), step);
            }
            if (ys[i] != e) K_bad++;
        }
    }
    /* two dot products (exact: integers far below 2^53) */
    double d[2] = {0.0, 0.0}, g;
    for (long i = 0; i < s->ns; i++) {
        d[0] += cg_x(s->s0 + i, step) * ys[i];
        d[1] += ys[i] * ys[i];
    }
    k_allreduce(&d[0], &g, 1, MPI_DOUBLE, MPI_SUM);
    if (K_rank == 0) K_sum += fmod(g, 1048576.0);
    k_allreduce(&d[1], &g, 1, MPI_DOUBLE, MPI_SUM);
    if (K_rank == 0) K_sum += fmod(g, 1048576.0);
    /* the next vector: this rank's segment goes to the ranks of process column K_rank / pr */
    for (long i = 0; i < s->ns; i++) s->xs[i] = cg_x(s->s0 + i, step + 1);
    int nreq = 0, jc = K_rank / pr;
    for (int i = 0; i < pr; i++) {
        int src = col * pr + i;
        long off = cg_seg(s, src) - s->c0, len = cg_seg(s, src + 1) - cg_seg(s, src);
        if (src == K_rank) memcpy(s->x + off, s->xs, (size_t)len * sizeof(double));
        else k_irecv(s->x + off, len, MPI_DOUBLE, src, 200, &req[nreq++]);
    }
    for (int i = 0; i < pr; i++) {
        int dst = i * pc + jc;
        if (dst != K_rank) k_isend(s->xs, s->ns, MPI_DOUBLE, dst, 200, &req[nreq++]);
    }
    k_waitall(nreq, req);
    for (long c = 0; c < s->nc; c++)
        if (s->x[c] != cg_x(s->c0 + c, step + 1)) K_bad++;
    s->xstep = step + 1;
}

static void cg_iterate(void *p, long t) {
    cg_t *s = p;
    for (int i = 0; i < CG_STEPS; i++) cg_step(s, t * CG_STEPS + i, i == 0);
}

/* ---- LU ------------------------------------------------------------------------------- */

#define LU_OFF_LO 8192.0
#define LU_OFF_HI 16384.0
#define LU_WORK 24

typedef struct {
    long n;
    int px, py, ix, iy, west, east, north, south;
    long x0, lx, y0, ly;
    double *u; /* (n+2) x (ly+4) x (lx+4) x 5: 2-deep x/y ghosts, 1 z ghost on each side */
    double *s; /* (n+2) x (ly+2) x (lx+2) x 5: the sweeps' results, 1 ghost on each side */
    double *fx[2], *fy[2], *gx[2], *gy[2]; /* exchange buffers: send, receive per side */
    double *se, *ss, *rw, *rn;            /* sweep buffers: per-plane sends, one receive each */
    MPI_Request *req;
} lu_t;

#define LU_U(s, i, j, k, v) \
    (s)->u[((((size_t)((k) + 1) * ((s)->ly + 4) + (size_t)((j) + 2)) * ((s)->lx + 4) + (size_t)((i) + 2)) * 5 + (v))]
#define LU_S(s, i, j, k, v) \
    (s)->s[((((size_t)((k) + 1) * ((s)->ly + 2) + (size_t)((j) + 1)) * ((s)->lx + 2) + (size_t)((i) + 1)) * 5 + (v))]

static void *lu_setup(int cls, char *grid, char *problem) {
    static const long N[] = {12, 33, 64};
    lu_t *s = NEW(lu_t, 1);
    s->n = N[cls];
    int dims[2] = {0, 0};
    MPI_Dims_create(K_np, 2, dims);
    s->px = dims[0];
    s->py = dims[1];
    if (s->n / s->px < 2 || s->n / s->py < 2) {
        if (K_rank == 0) fprintf(stderr, "vnb-mpi-bench: lu class too small for %d ranks\n", K_np);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    s->ix = K_rank % s->px;
    s->iy = K_rank / s->px;
    s->west = s->ix > 0 ? K_rank - 1 : -1;
    s->east = s->ix < s->px - 1 ? K_rank + 1 : -1;
    s->north = s->iy > 0 ? K_rank - s->px : -1;
    s->south = s->iy < s->py - 1 ? K_rank + s->px : -1;
    s->x0 = part(s->n, s->px, s->ix);
    s->lx = part(s->n, s->px, s->ix + 1) - s->x0;
    s->y0 = part(s->n, s->py, s->iy);
    s->ly = part(s->n, s->py, s->iy + 1) - s->y0;
    long n = s->n;
    s->u = NEW(double, (n + 2) * (s->ly + 4) * (s->lx + 4) * 5);
    s->s = NEW(double, (n + 2) * (s->ly + 2) * (s->lx + 2) * 5);
    for (int i = 0; i < 2; i++) {
        s->fx[i] = NEW(double, 2 * s->ly * n * 5);
        s->gx[i] = NEW(double, 2 * s->ly * n * 5);
        s->fy[i] = NEW(double, 2 * (s->lx + 4) * n * 5);
        s->gy[i] = NEW(double, 2 * (s->lx + 4) * n * 5);
    }
    s->se = NEW(double, n * s->ly * 5);
    s->ss = NEW(double, n * s->lx * 5);
    s->rw = NEW(double, s->ly * 5);
    s->rn = NEW(double, s->lx * 5);
    s->req = NEW(MPI_Request, 2 * n + 8);
    snprintf(grid, 64, "%dx%d", s->px, s->py);
    snprintf(problem, 128, "%ld^3", n);
    return s;
}

/* Copy the x-face layers i0, i0+1 (j owned, all k) to or from a buffer. */
static void lu_xface(lu_t *s, long i0, double *b, int pack) {
    long m = 0;
    for (long k = 0; k < s->n; k++)
        for (long j = 0; j < s->ly; j++)
            for (long i = i0; i < i0 + 2; i++)
                for (int v = 0; v < 5; v++) {
                    if (pack) b[m++] = LU_U(s, i, j, k, v);
                    else LU_U(s, i, j, k, v) = b[m++];
                }
}

/* Copy the y-face layers j0, j0+1 (i over the ghost-inclusive width, all k). */
static void lu_yface(lu_t *s, long j0, double *b, int pack) {
    long m = 0;
    for (long k = 0; k < s->n; k++)
        for (long j = j0; j < j0 + 2; j++)
            for (long i = -2; i < s->lx + 2; i++)
                for (int v = 0; v < 5; v++) {
                    if (pack) b[m++] = LU_U(s, i, j, k, v);
                    else LU_U(s, i, j, k, v) = b[m++];
                }
}

static void lu_iterate(void *p, long t) {
    lu_t *s = p;
    const long n = s->n, lx = s->lx, ly = s->ly, x0 = s->x0, y0 = s->y0;
    MPI_Request *req = s->req;
    int nr;
    /* this iteration's values; global-boundary ghosts from the formula */
    for (long k = -1; k <= n; k++)
        for (long j = -2; j < ly + 2; j++)
            for (long i = -2; i < lx + 2; i++) {
                int own = i >= 0 && i < lx && j >= 0 && j < ly; /* with the z ghosts */
                int zb = k < 0 || k >= n;
                int bx = (i < 0 && s->west < 0) || (i >= lx && s->east < 0);
                int by = (j < 0 && s->north < 0) || (j >= ly && s->south < 0);
                if (own || (!zb && (bx || by)))
                    for (int v = 0; v < 5; v++) LU_U(s, i, j, k, v) = fval(x0 + i, y0 + j, k, t, v);
            }
    /* exchange_3: 2-deep faces, x then y (y faces carry the x ghosts: corners) */
    long fxn = 2 * ly * n * 5, fyn = 2 * (lx + 4) * n * 5;
    nr = 0;
    if (s->west >= 0) {
        k_irecv(s->gx[0], fxn, MPI_DOUBLE, s->west, 10, &req[nr++]);
        lu_xface(s, 0, s->fx[0], 1);
        k_isend(s->fx[0], fxn, MPI_DOUBLE, s->west, 11, &req[nr++]);
    }
    if (s->east >= 0) {
        k_irecv(s->gx[1], fxn, MPI_DOUBLE, s->east, 11, &req[nr++]);
        lu_xface(s, lx - 2, s->fx[1], 1);
        k_isend(s->fx[1], fxn, MPI_DOUBLE, s->east, 10, &req[nr++]);
    }
    k_waitall(nr, req);
    if (s->west >= 0) lu_xface(s, -2, s->gx[0], 0);
    if (s->east >= 0) lu_xface(s, lx, s->gx[1], 0);
    nr = 0;
    if (s->north >= 0) {
        k_irecv(s->gy[0], fyn, MPI_DOUBLE, s->north, 12, &req[nr++]);
        lu_yface(s, 0, s->fy[0], 1);
        k_isend(s->fy[0], fyn, MPI_DOUBLE, s->north, 13, &req[nr++]);
    }
    if (s->south >= 0) {
        k_irecv(s->gy[1], fyn, MPI_DOUBLE, s->south, 13, &req[nr++]);
        lu_yface(s, ly - 2, s->fy[1], 1);
        k_isend(s->fy[1], fyn, MPI_DOUBLE, s->south, 12, &req[nr++]);
    }
    k_waitall(nr, req);
    if (s->north >= 0) lu_yface(s, -2, s->gy[0], 0);
    if (s->south >= 0) lu_yface(s, ly, s->gy[1], 0);
    for (long k = 0; k < n; k++) /* every ghost must hold this iteration's value */
        for (long j = -2; j < ly + 2; j++)
            for (long i = -2; i < lx + 2; i++) {
                if (i >= 0 && i < lx && j >= 0 && j < ly) {
                    i = lx - 1;
                    continue;
                }
                for (int v = 0; v < 5; v++)
                    if (LU_U(s, i, j, k, v) != fval(x0 + i, y0 + j, k, t, v)) K_bad++;
            }
    /* right-hand side: 2nd- and 4th-difference stencil */
    double acc = 0.0, sink = 0.0;
    for (long k = 0; k < n; k++)
        for (long j = 0; j < ly; j++)
            for (long i = 0; i < lx; i++) {
                for (int v = 0; v < 5; v++) {
                    double c = LU_U(s, i, j, k, v);
                    double r = LU_U(s, i - 1, j, k, v) + LU_U(s, i + 1, j, k, v) + LU_U(s, i, j - 1, k, v) +
                               LU_U(s, i, j + 1, k, v) + LU_U(s, i, j, k - 1, v) + LU_U(s, i, j, k + 1, v) -
                               6.0 * c - (LU_U(s, i - 2, j, k, v) + LU_U(s, i + 2, j, k, v) +
                                          LU_U(s, i, j - 2, k, v) + LU_U(s, i, j + 2, k, v) - 4.0 * c);
                    acc += r;
                }
                sink += work(LU_U(s, i, j, k, 0), LU_WORK);
            }
    K_sum += acc;
    /* lower sweep (blts): wavefront from the (west, north, bottom) corner, plane by plane */
    for (long j = 0; j < ly; j++)
        for (long i = 0; i < lx; i++)
            for (int v = 0; v < 5; v++) LU_S(s, i, j, -1, v) = LU_U(s, i, j, -1, v) + LU_OFF_LO;
    nr = 0;
    for (long k = 0; k < n; k++) {
        int rq = 0;
        MPI_Request rr[2];
        if (s->west >= 0) k_irecv(s->rw, ly * 5, MPI_DOUBLE, s->west, 1000 + (int)k, &rr[rq++]);
        if (s->north >= 0) k_irecv(s->rn, lx * 5, MPI_DOUBLE, s->north, 3000 + (int)k, &rr[rq++]);
        k_waitall(rq, rr);
        for (long j = 0; j < ly; j++)
            for (int v = 0; v < 5; v++) {
                double b = LU_U(s, -1, j, k, v) + LU_OFF_LO;
                if (s->west >= 0 && s->rw[j * 5 + v] != b) K_bad++;
                LU_S(s, -1, j, k, v) = s->west >= 0 ? s->rw[j * 5 + v] : b;
            }
        for (long i = 0; i < lx; i++)
            for (int v = 0; v < 5; v++) {
                double b = LU_U(s, i, -1, k, v) + LU_OFF_LO;
                if (s->north >= 0 && s->rn[i * 5 + v] != b) K_bad++;
                LU_S(s, i, -1, k, v) = s->north >= 0 ? s->rn[i * 5 + v] : b;
            }
        for (long j = 0; j < ly; j++)
            for (long i = 0; i < lx; i++) {
                for (int v = 0; v < 5; v++)
                    LU_S(s, i, j, k, v) =
                        (LU_S(s, i - 1, j, k, v) + LU_S(s, i, j - 1, k, v) + LU_S(s, i, j, k - 1, v) +
                         3.0 * LU_U(s, i, j, k, v) - LU_U(s, i - 1, j, k, v) - LU_U(s, i, j - 1, k, v) -
                         LU_U(s, i, j, k - 1, v)) / 3.0;
                sink += work(LU_S(s, i, j, k, 1), LU_WORK);
            }
        if (s->east >= 0) {
            double *b = s->se + k * ly * 5;
            for (long j = 0; j < ly; j++)
                for (int v = 0; v < 5; v++) b[j * 5 + v] = LU_S(s, lx - 1, j, k, v);
            k_isend(b, ly * 5, MPI_DOUBLE, s->east, 1000 + (int)k, &req[nr++]);
        }
        if (s->south >= 0) {
            double *b = s->ss + k * lx * 5;
            for (long i = 0; i < lx; i++)
                for (int v = 0; v < 5; v++) b[i * 5 + v] = LU_S(s, i, ly - 1, k, v);
            k_isend(b, lx * 5, MPI_DOUBLE, s->south, 3000 + (int)k, &req[nr++]);
        }
    }
    k_waitall(nr, req);
    for (long k = 0; k < n; k++)
        for (long j = 0; j < ly; j++)
            for (long i = 0; i < lx; i++)
                for (int v = 0; v < 5; v++)
                    if (LU_S(s, i, j, k, v) != LU_U(s, i, j, k, v) + LU_OFF_LO) K_bad++;
    /* upper sweep (buts): from the (east, south, top) corner */
    for (long j = 0; j < ly; j++)
        for (long i = 0; i < lx; i++)
            for (int v = 0; v < 5; v++) LU_S(s, i, j, n, v) = LU_U(s, i, j, n, v) + LU_OFF_HI;
    nr = 0;
    for (long k = n - 1; k >= 0; k--) {
        int rq = 0;
        MPI_Request rr[2];
        if (s->east >= 0) k_irecv(s->rw, ly * 5, MPI_DOUBLE, s->east, 5000 + (int)k, &rr[rq++]);
        if (s->south >= 0) k_irecv(s->rn, lx * 5, MPI_DOUBLE, s->south, 7000 + (int)k, &rr[rq++]);
        k_waitall(rq, rr);
        for (long j = 0; j < ly; j++)
            for (int v = 0; v < 5; v++) {
                double b = LU_U(s, lx, j, k, v) + LU_OFF_HI;
                if (s->east >= 0 && s->rw[j * 5 + v] != b) K_bad++;
                LU_S(s, lx, j, k, v) = s->east >= 0 ? s->rw[j * 5 + v] : b;
            }
        for (long i = 0; i < lx; i++)
            for (int v = 0; v < 5; v++) {
                double b = LU_U(s, i, ly, k, v) + LU_OFF_HI;
                if (s->south >= 0 && s->rn[i * 5 + v] != b) K_bad++;
                LU_S(s, i, ly, k, v) = s->south >= 0 ? s->rn[i * 5 + v] : b;
            }
        for (long j = ly - 1; j >= 0; j--)
            for (long i = lx - 1; i >= 0; i--) {
                for (int v = 0; v < 5; v++)
                    LU_S(s, i, j, k, v) =
                        (LU_S(s, i + 1, j, k, v) + LU_S(s, i, j + 1, k, v) + LU_S(s, i, j, k + 1, v) +
                         3.0 * LU_U(s, i, j, k, v) - LU_U(s, i + 1, j, k, v) - LU_U(s, i, j + 1, k, v) -
                         LU_U(s, i, j, k + 1, v)) / 3.0;
                sink += work(LU_S(s, i, j, k, 2), LU_WORK);
            }
        if (s->west >= 0) {
            double *b = s->se + k * ly * 5;
            for (long j = 0; j < ly; j++)
                for (int v = 0; v < 5; v++) b[j * 5 + v] = LU_S(s, 0, j, k, v);
            k_isend(b, ly * 5, MPI_DOUBLE, s->west, 5000 + (int)k, &req[nr++]);
        }
        if (s->north >= 0) {
            double *b = s->ss + k * lx * 5;
            for (long i = 0; i < lx; i++)
                for (int v = 0; v < 5; v++) b[i * 5 + v] = LU_S(s, i, 0, k, v);
            k_isend(b, lx * 5, MPI_DOUBLE, s->north, 7000 + (int)k, &req[nr++]);
        }
    }
    k_waitall(nr, req);
    for (long k = 0; k < n; k++)
        for (long j = 0; j < ly; j++)
            for (long i = 0; i < lx; i++)
                for (int v = 0; v < 5; v++)
                    if (LU_S(s, i, j, k, v) != LU_U(s, i, j, k, v) + LU_OFF_HI) K_bad++;
    vnb_sink += sink;
}

/* ---- SP and BT ------------------------------------------------------------------------ */

#define SP_WORK 6
#define BT_WORK 30

typedef struct {
    long n;
    int G, q;         /* cells per dimension; q > 0: NPB's q x q multi-partition */
    int nc;           /* cells owned, in linear order */
    int (*cc)[3];
    long (*lo)[3], (*ext)[3];
    double **u;       /* per cell: (ez+4) x (ey+4) x (ex+4) x 5, 2-deep face ghosts */
    int succ[3], pred[3];
    int fwv, bwv, work;
    double *cfs[6], *cfr[6]; /* copy_faces buffers: 2*d + 0 low side, 2*d + 1 high side */
    long cfsn[6], cfrn[6];
    double **sw, *rb;        /* sweep buffers: one send buffer per stage, one receive */
    MPI_Request *req;
} adi_t;

static int adi_owner(const adi_t *s, int x, int y, int z) {
    if (s->q > 0) {
        int q = s->q, col = ((x - z) % q + q) % q, row = ((y - z) % q + q) % q;
        return row + col * q;
    }
    return (x + y + z) % K_np;
}

static inline size_t adi_at(const long *e, long i, long j, long k) {
    return (((size_t)(k + 2) * (size_t)(e[1] + 4) + (size_t)(j + 2)) * (size_t)(e[0] + 4) + (size_t)(i + 2)) * 5;
}

static long adi_face(const adi_t *s, int c, int d) {
    return s->ext[c][(d + 1) % 3] * s->ext[c][(d + 2) % 3];
}

static void *adi_setup(int cls, char *grid, char *problem, int bt) {
    static const long NSP[] = {16, 36, 64}, NBT[] = {16, 24, 64};
    adi_t *s = NEW(adi_t, 1);
    s->n = bt ? NBT[cls] : NSP[cls];
    int q = (int)floor(sqrt((double)K_np) + 0.5);
    s->q = q * q == K_np ? q : 0;
    s->G = s->q ? q : K_np;
    if (s->n / s->G < 2) { /* a cell needs 2 planes for the 2-deep faces */
        if (K_rank == 0) fprintf(stderr, "vnb-mpi-bench: %s class too small for %d ranks\n", bt ? "bt" : "sp", K_np);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    s->fwv = bt ? 30 : 22;
    s->bwv = bt ? 5 : 10;
    s->work = bt ? BT_WORK : SP_WORK;
    const int G = s->G;
    for (int z = 0; z < G; z++)
        for (int y = 0; y < G; y++)
            for (int x = 0; x < G; x++)
                if (adi_owner(s, x, y, z) == K_rank) s->nc++;
    s->cc = xalloc((size_t)s->nc * sizeof *s->cc);
    s->lo = xalloc((size_t)s->nc * sizeof *s->lo);
    s->ext = xalloc((size_t)s->nc * sizeof *s->ext);
    s->u = NEW(double *, s->nc);
    int c = 0;
    for (int z = 0; z < G; z++)
        for (int y = 0; y < G; y++)
            for (int x = 0; x < G; x++) {
                if (adi_owner(s, x, y, z) != K_rank) continue;
                int xyz[3] = {x, y, z};
                for (int d = 0; d < 3; d++) {
                    s->cc[c][d] = xyz[d];
                    s->lo[c][d] = part(s->n, G, xyz[d]);
                    s->ext[c][d] = part(s->n, G, xyz[d] + 1) - s->lo[c][d];
                }
                s->u[c] = NEW(double, (s->ext[c][0] + 4) * (s->ext[c][1] + 4) * (s->ext[c][2] + 4) * 5);
                c++;
            }
    long maxmsg = 1;
    for (int d = 0; d < 3; d++) {
        s->succ[d] = s->pred[d] = -1;
        for (c = 0; c < s->nc; c++) {
            int nb[3] = {s->cc[c][0], s->cc[c][1], s->cc[c][2]};
            if (nb[d] < G - 1) {
                nb[d]++;
                int o = adi_owner(s, nb[0], nb[1], nb[2]);
                if (s->succ[d] >= 0 && s->succ[d] != o) MPI_Abort(MPI_COMM_WORLD, 4);
                s->succ[d] = o;
                s->cfsn[2 * d + 1] += 2 * adi_face(s, c, d) * 5;
                s->cfrn[2 * d + 1] += 2 * adi_face(s, c, d) * 5;
                nb[d]--;
            }
            if (nb[d] > 0) {
                nb[d]--;
                int o = adi_owner(s, nb[0], nb[1], nb[2]);
                if (s->pred[d] >= 0 && s->pred[d] != o) MPI_Abort(MPI_COMM_WORLD, 4);
                s->pred[d] = o;
                s->cfsn[2 * d] += 2 * adi_face(s, c, d) * 5;
                s->cfrn[2 * d] += 2 * adi_face(s, c, d) * 5;
            }
        }
        for (int st = 0; st < G; st++) {
            long len = 0;
            for (c = 0; c < s->nc; c++)
                if (s->cc[c][d] == st) len += adi_face(s, c, d) * (s->fwv > s->bwv ? s->fwv : s->bwv);
            if (len > maxmsg) maxmsg = len;
        }
    }
    for (int i = 0; i < 6; i++) {
        s->cfs[i] = NEW(double, s->cfsn[i]);
        s->cfr[i] = NEW(double, s->cfrn[i]);
    }
    s->sw = NEW(double *, G);
    for (int st = 0; st < G; st++) s->sw[st] = NEW(double, maxmsg);
    s->rb = NEW(double, maxmsg);
    s->req = NEW(MPI_Request, G + 12);
    if (s->q) snprintf(grid, 64, "%dx%d multi-partition, %d cells/rank", q, q, s->nc);
    else snprintf(grid, 64, "%d^3 cells diagonal, %d cells/rank", G, s->nc);
    snprintf(problem, 128, "%ld^3", s->n);
    return s;
}

static void *sp_setup(int cls, char *grid, char *problem) { return adi_setup(cls, grid, problem, 0); }
static void *bt_setup(int cls, char *grid, char *problem) { return adi_setup(cls, grid, problem, 1); }

/* Pack (or unpack and check) layers l0, l0+1 along d of cell c, the other two owned. */
static void adi_layers(adi_t *s, int c, int d, long l0, double *b, long *m, int pack, long t) {
    const long *e = s->ext[c], *lo = s->lo[c];
    double *u = s->u[c];
    int a = (d + 1) % 3, bb = (d + 2) % 3;
    long ijk[3];
    for (long y = 0; y < e[bb]; y++)
        for (long x = 0; x < e[a]; x++)
            for (long l = l0; l < l0 + 2; l++) {
                ijk[d] = l;
                ijk[a] = x;
                ijk[bb] = y;
                size_t at = adi_at(e, ijk[0], ijk[1], ijk[2]);
                for (int v = 0; v < 5; v++) {
                    if (pack) {
                        b[(*m)++] = u[at + v];
                    } else {
                        double val = b[(*m)++];
                        if (val != fval(lo[0] + ijk[0], lo[1] + ijk[1], lo[2] + ijk[2], t, v)) K_bad++;
                        u[at + v] = val;
                    }
                }
            }
}

static void adi_iterate(void *p, long t) {
    adi_t *s = p;
    const int G = s->G;
    double acc = 0.0, sink = 0.0;
    /* this step's values; ghosts on the domain's boundary from the formula */
    for (int c = 0; c < s->nc; c++) {
        const long *e = s->ext[c], *lo = s->lo[c];
        for (long k = -2; k < e[2] + 2; k++)
            for (long j = -2; j < e[1] + 2; j++)
                for (long i = -2; i < e[0] + 2; i++) {
                    long ijk[3] = {i, j, k};
                    int out = -1, nout = 0;
                    for (int d = 0; d < 3; d++)
                        if (ijk[d] < 0 || ijk[d] >= e[d]) {
                            out = d;
                            nout++;
                        }
                    if (nout > 1) continue;
                    if (nout == 1) {
                        int nb = s->cc[c][out] + (ijk[out] < 0 ? -1 : 1);
                        if (nb >= 0 && nb < G) continue; /* comes from copy_faces */
                    }
                    size_t at = adi_at(e, i, j, k);
                    for (int v = 0; v < 5; v++) s->u[c][at + v] = fval(lo[0] + i, lo[1] + j, lo[2] + k, t, v);
                }
    }
    /* copy_faces: 2-deep faces of all cells, one message per direction */
    int nr = 0;
    for (int d = 0; d < 3; d++) {
        if (s->cfrn[2 * d]) k_irecv(s->cfr[2 * d], s->cfrn[2 * d], MPI_DOUBLE, s->pred[d], 30 + 2 * d + 1, &s->req[nr++]);
        if (s->cfrn[2 * d + 1]) k_irecv(s->cfr[2 * d + 1], s->cfrn[2 * d + 1], MPI_DOUBLE, s->succ[d], 30 + 2 * d, &s->req[nr++]);
    }
    for (int d = 0; d < 3; d++) {
        long m0 = 0, m1 = 0;
        for (int c = 0; c < s->nc; c++) {
            if (s->cc[c][d] > 0) adi_layers(s, c, d, 0, s->cfs[2 * d], &m0, 1, t);
            if (s->cc[c][d] < G - 1) adi_layers(s, c, d, s->ext[c][d] - 2, s->cfs[2 * d + 1], &m1, 1, t);
        }
        if (m0) k_isend(s->cfs[2 * d], m0, MPI_DOUBLE, s->pred[d], 30 + 2 * d, &s->req[nr++]);
        if (m1) k_isend(s->cfs[2 * d + 1], m1, MPI_DOUBLE, s->succ[d], 30 + 2 * d + 1, &s->req[nr++]);
    }
    k_waitall(nr, s->req);
    for (int d = 0; d < 3; d++) {
        long m0 = 0, m1 = 0;
        for (int c = 0; c < s->nc; c++) {
            if (s->cc[c][d] > 0) adi_layers(s, c, d, -2, s->cfr[2 * d], &m0, 0, t);
            if (s->cc[c][d] < G - 1) adi_layers(s, c, d, s->ext[c][d], s->cfr[2 * d + 1], &m1, 0, t);
        }
    }
    /* right-hand side: 4th differences along the three axes */
    for (int c = 0; c < s->nc; c++) {
        const long *e = s->ext[c];
        const double *u = s->u[c];
        const long st[3] = {5, (e[0] + 4) * 5, (e[1] + 4) * (e[0] + 4) * 5};
        for (long k = 0; k < e[2]; k++)
            for (long j = 0; j < e[1]; j++)
                for (long i = 0; i < e[0]; i++) {
                    size_t at = adi_at(e, i, j, k);
                    for (int v = 0; v < 5; v++) {
                        const double *x = u + at + v;
                        double r = 0.0;
                        for (int d = 0; d < 3; d++)
                            r += 4.0 * (x[-st[d]] + x[st[d]]) - x[-2 * st[d]] - x[2 * st[d]] - 6.0 * x[0];
                        acc += r;
                    }
                }
    }
    /* x, y, z solves: forward elimination then back substitution, pipelined over the cells */
    for (int d = 0; d < 3; d++) {
        int a = (d + 1) % 3, b = (d + 2) % 3;
        for (int back = 0; back < 2; back++) {
            int nv = back ? s->bwv : s->fwv, from = back ? s->succ[d] : s->pred[d];
            int to = back ? s->pred[d] : s->succ[d], tag = back ? 50 + d : 40 + d;
            double off = back ? 65536.0 : 0.0;
            nr = 0;
            for (int n = 0; n < G; n++) {
                int st = back ? G - 1 - n : n;
                int first = n == 0, last = n == G - 1;
                if (!first) {
                    long len = 0;
                    for (int c = 0; c < s->nc; c++)
                        if (s->cc[c][d] == st) len += adi_face(s, c, d) * nv;
                    k_recv(s->rb, len, MPI_DOUBLE, from, tag);
                }
                long m = 0, o = 0;
                double *sb = s->sw[st];
                for (int c = 0; c < s->nc; c++) {
                    if (s->cc[c][d] != st) continue;
                    const long *e = s->ext[c];
                    const double *u = s->u[c];
                    long sd = d == 0 ? 5 : d == 1 ? (e[0] + 4) * 5 : (e[1] + 4) * (e[0] + 4) * 5;
                    if (back) sd = -sd;
                    for (long y = 0; y < e[b]; y++)
                        for (long x = 0; x < e[a]; x++) {
                            long ijk[3];
                            ijk[d] = back ? e[d] - 1 : 0;
                            ijk[a] = x;
                            ijk[b] = y;
                            size_t at = adi_at(e, ijk[0], ijk[1], ijk[2]);
                            const double *g = u + at - sd; /* the ghost before the line */
                            double w[5];
                            if (first) {
                                for (int v = 0; v < 5; v++) w[v] = g[v];
                            } else {
                                for (int mm = 0; mm < nv; mm++)
                                    if (s->rb[m + mm] != g[mm % 5] + mm * 4096.0 + off) K_bad++;
                                for (int v = 0; v < 5; v++) w[v] = s->rb[m + v] - v * 4096.0 - off;
                                m += nv;
                            }
                            const double *x0 = u + at;
                            for (long i = 0; i < e[d]; i++, x0 += sd) {
                                for (int v = 0; v < 5; v++) w[v] += x0[v] - x0[v - sd];
                                sink += work(w[0], s->work);
                            }
                            x0 -= sd; /* the line's last point */
                            for (int v = 0; v < 5; v++)
                                if (w[v] != x0[v]) K_bad++;
                            if (!last)
                                for (int mm = 0; mm < nv; mm++) sb[o++] = w[mm % 5] + mm * 4096.0 + off;
                        }
                }
                if (!last) k_isend(sb, o, MPI_DOUBLE, to, tag, &s->req[nr++]);
            }
            k_waitall(nr, s->req);
        }
    }
    K_sum += acc;
    vnb_sink += sink;
}

/* ---- MG ------------------------------------------------------------------------------- */

#define MG_MAXL 16

typedef struct {
    long n;
    int L, p[3], c[3], nb[3][2];
    long nl[MG_MAXL], lo[MG_MAXL][3], len[MG_MAXL][3];
    double *u[MG_MAXL];
    double *sb[2], *rb[2];
} mg_t;

static void *mg_setup(int cls, char *grid, char *problem) {
    static const long N[] = {32, 64, 256};
    mg_t *s = NEW(mg_t, 1);
    s->n = N[cls];
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(K_np, 3, dims);
    for (int d = 0; d < 3; d++) s->p[d] = dims[d];
    s->c[0] = K_rank % s->p[0];
    s->c[1] = (K_rank / s->p[0]) % s->p[1];
    s->c[2] = K_rank / (s->p[0] * s->p[1]);
    for (int d = 0; d < 3; d++)
        for (int side = 0; side < 2; side++) {
            int cc[3] = {s->c[0], s->c[1], s->c[2]};
            cc[d] = (cc[d] + (side ? 1 : -1) + s->p[d]) % s->p[d];
            s->nb[d][side] = cc[0] + s->p[0] * (cc[1] + s->p[1] * cc[2]);
        }
    for (long m = s->n; s->L < MG_MAXL; m /= 2) {
        int ok = 1;
        for (int d = 0; d < 3; d++) ok = ok && m / s->p[d] >= 2;
        if (!ok) break;
        int l = s->L++;
        s->nl[l] = m;
        for (int d = 0; d < 3; d++) {
            s->lo[l][d] = part(m, s->p[d], s->c[d]);
            s->len[l][d] = part(m, s->p[d], s->c[d] + 1) - s->lo[l][d];
        }
        s->u[l] = NEW(double, (s->len[l][0] + 2) * (s->len[l][1] + 2) * (s->len[l][2] + 2));
    }
    if (s->L == 0) {
        if (K_rank == 0) fprintf(stderr, "vnb-mpi-bench: mg class too small for %d ranks\n", K_np);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long face = 0;
    for (int d = 0; d < 3; d++) {
        long f = (s->len[0][(d + 1) % 3] + 2) * (s->len[0][(d + 2) % 3] + 2);
        if (f > face) face = f;
    }
    for (int i = 0; i < 2; i++) {
        s->sb[i] = NEW(double, face);
        s->rb[i] = NEW(double, face);
    }
    snprintf(grid, 64, "%dx%dx%d", s->p[0], s->p[1], s->p[2]);
    snprintf(problem, 128, "%ld^3 periodic, %d levels", s->n, s->L);
    return s;
}

/* Copy layer `pos` along d (the other two dims ghost-inclusive) to or from a buffer. */
static void mg_face(double *u, const long *e, int d, long pos, double *b, int pack) {
    int a = (d + 1) % 3, bb = (d + 2) % 3;
    long ijk[3], m = 0;
    ijk[d] = pos;
    for (ijk[bb] = 0; ijk[bb] < e[bb]; ijk[bb]++)
        for (ijk[a] = 0; ijk[a] < e[a]; ijk[a]++) {
            size_t at = ((size_t)ijk[2] * (size_t)e[1] + (size_t)ijk[1]) * (size_t)e[0] + (size_t)ijk[0];
            if (pack) b[m++] = u[at];
            else u[at] = b[m++];
        }
}

static void mg_exchange(mg_t *s, int l, long phase) {
    const long e[3] = {s->len[l][0] + 2, s->len[l][1] + 2, s->len[l][2] + 2};
    const long *lo = s->lo[l], nl = s->nl[l];
    double *u = s->u[l];
    for (long k = 1; k < e[2] - 1; k++)
        for (long j = 1; j < e[1] - 1; j++)
            for (long i = 1; i < e[0] - 1; i++)
                u[((size_t)k * (size_t)e[1] + (size_t)j) * (size_t)e[0] + (size_t)i] =
                    fval(lo[0] + i - 1, lo[1] + j - 1, lo[2] + k - 1, phase, l);
    for (int d = 0; d < 3; d++) {
        long fs = e[(d + 1) % 3] * e[(d + 2) % 3];
        mg_face(u, e, d, 1, s->sb[0], 1);
        mg_face(u, e, d, e[d] - 2, s->sb[1], 1);
        if (s->p[d] == 1) { /* periodic onto itself */
            mg_face(u, e, d, 0, s->sb[1], 0);
            mg_face(u, e, d, e[d] - 1, s->sb[0], 0);
            continue;
        }
        MPI_Request r[4];
        k_irecv(s->rb[0], fs, MPI_DOUBLE, s->nb[d][0], 20 + 2 * d + 1, &r[0]);
        k_irecv(s->rb[1], fs, MPI_DOUBLE, s->nb[d][1], 20 + 2 * d, &r[1]);
        k_isend(s->sb[0], fs, MPI_DOUBLE, s->nb[d][0], 20 + 2 * d, &r[2]);
        k_isend(s->sb[1], fs, MPI_DOUBLE, s->nb[d][1], 20 + 2 * d + 1, &r[3]);
        k_waitall(4, r);
        mg_face(u, e, d, 0, s->rb[0], 0);
        mg_face(u, e, d, e[d] - 1, s->rb[1], 0);
    }
    /* every ghost (faces, edges, corners) must hold its periodic image's value */
    for (long k = 0; k < e[2]; k++)
        for (long j = 0; j < e[1]; j++) {
            int inner = k > 0 && k < e[2] - 1 && j > 0 && j < e[1] - 1;
            for (long i = 0; i < e[0]; i += (inner && i == 0) ? e[0] - 1 : 1) {
                double want = fval(wrap(lo[0] + i - 1, nl), wrap(lo[1] + j - 1, nl), wrap(lo[2] + k - 1, nl), phase, l);
                if (u[((size_t)k * (size_t)e[1] + (size_t)j) * (size_t)e[0] + (size_t)i] != want) K_bad++;
            }
        }
}

/* 27-point stencil (weights 8 centre, 4 face, 2 edge, 1 corner) over the owned points. */
static void mg_stencil(mg_t *s, int l) {
    const long e[3] = {s->len[l][0] + 2, s->len[l][1] + 2, s->len[l][2] + 2};
    const double *u = s->u[l];
    double acc = 0.0;
    for (long k = 1; k < e[2] - 1; k++)
        for (long j = 1; j < e[1] - 1; j++)
            for (long i = 1; i < e[0] - 1; i++) {
                double r = 0.0;
                for (int dz = -1; dz <= 1; dz++)
                    for (int dy = -1; dy <= 1; dy++) {
                        const double *row = u + ((size_t)(k + dz) * (size_t)e[1] + (size_t)(j + dy)) * (size_t)e[0] + (size_t)i;
                        int w = 8 >> (abs(dz) + abs(dy));
                        r += w * row[0] + (w / 2) * (row[-1] + row[1]);
                    }
                acc += r;
            }
    K_sum += acc;
}

static void mg_iterate(void *p, long t) {
    mg_t *s = p;
    long step = t * 64;
    mg_exchange(s, 0, step++); /* residual on the finest grid */
    mg_stencil(s, 0);
    for (int l = 1; l < s->L; l++) { /* restriction down to the coarsest level */
        mg_exchange(s, l, step++);
        mg_stencil(s, l);
    }
    for (int l = s->L - 2; l >= 0; l--) { /* interpolation, residual and smoothing back up */
        mg_exchange(s, l, step++);
        mg_stencil(s, l);
        mg_exchange(s, l, step++);
        mg_stencil(s, l);
    }
}

/* ---- FT ------------------------------------------------------------------------------- */

#define FT_WAVES 3
#define FT_SAMPLES 64

typedef struct {
    long nx, ny, nz;
    long z0, nzl, y0, nyl, zmax, ymax;
    double *a, *b, *sb, *rb, *line;  /* complex arrays, interleaved re/im */
    double *tw[3];                   /* twiddles per dimension */
    double *ex, *ey, *ez;            /* this step's plane waves, per wave and coordinate */
    long wa[FT_WAVES], wb[FT_WAVES], wc[FT_WAVES];
} ft_t;

static double *ft_twiddles(long n) {
    double *t = NEW(double, n);
    for (long k = 0; k < n / 2; k++) {
        t[2 * k] = cos(2.0 * M_PI * (double)k / (double)n);
        t[2 * k + 1] = -sin(2.0 * M_PI * (double)k / (double)n);
    }
    return t;
}

/* In-place radix-2 forward FFT of n (a power of 2) complex values. */
static void fft(double *v, long n, const double *tw) {
    for (long i = 1, j = 0; i < n; i++) {
        long bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            double r = v[2 * i], im = v[2 * i + 1];
            v[2 * i] = v[2 * j];
            v[2 * i + 1] = v[2 * j + 1];
            v[2 * j] = r;
            v[2 * j + 1] = im;
        }
    }
    for (long len = 2; len <= n; len <<= 1) {
        long half = len / 2, step = n / len;
        for (long i = 0; i < n; i += len)
            for (long k = 0; k < half; k++) {
                double wr = tw[2 * k * step], wi = tw[2 * k * step + 1];
                double *p = v + 2 * (i + k), *q = v + 2 * (i + k + half);
                double xr = q[0] * wr - q[1] * wi, xi = q[0] * wi + q[1] * wr;
                q[0] = p[0] - xr;
                q[1] = p[1] - xi;
                p[0] += xr;
                p[1] += xi;
            }
    }
}

static void *ft_setup(int cls, char *grid, char *problem) {
    static const long NX[] = {64, 128, 128}, NY[] = {64, 128, 128}, NZ[] = {64, 32, 128};
    ft_t *s = NEW(ft_t, 1);
    s->nx = NX[cls];
    s->ny = NY[cls];
    s->nz = NZ[cls];
    s->z0 = part(s->nz, K_np, K_rank);
    s->nzl = part(s->nz, K_np, K_rank + 1) - s->z0;
    s->y0 = part(s->ny, K_np, K_rank);
    s->nyl = part(s->ny, K_np, K_rank + 1) - s->y0;
    s->zmax = (s->nz + K_np - 1) / K_np;
    s->ymax = (s->ny + K_np - 1) / K_np;
    s->a = NEW(double, 2 * s->nzl * s->ny * s->nx);
    s->b = NEW(double, 2 * s->nyl * s->nz * s->nx);
    s->sb = NEW(double, 2 * K_np * s->zmax * s->ymax * s->nx);
    s->rb = NEW(double, 2 * K_np * s->zmax * s->ymax * s->nx);
    long m = s->nx > s->ny ? s->nx : s->ny;
    s->line = NEW(double, 2 * (m > s->nz ? m : s->nz));
    s->tw[0] = ft_twiddles(s->nx);
    s->tw[1] = ft_twiddles(s->ny);
    s->tw[2] = ft_twiddles(s->nz);
    s->ex = NEW(double, 2 * FT_WAVES * s->nx);
    s->ey = NEW(double, 2 * FT_WAVES * s->ny);
    s->ez = NEW(double, 2 * FT_WAVES * s->nz);
    snprintf(grid, 64, "%d z-slabs", K_np);
    snprintf(problem, 128, "%ldx%ldx%ld complex", s->nx, s->ny, s->nz);
    return s;
}

static void ft_wave(double *tab, long n, long f) {
    for (long x = 0; x < n; x++) {
        double ang = 2.0 * M_PI * (double)((f * x) % n) / (double)n;
        tab[2 * x] = cos(ang);
        tab[2 * x + 1] = sin(ang);
    }
}

static void ft_iterate(void *p, long t) {
    ft_t *s = p;
    const long nx = s->nx, ny = s->ny, nz = s->nz, nzl = s->nzl, nyl = s->nyl;
    const double N = (double)(nx * ny * nz);
    /* this step's field: a sum of plane waves of known frequencies (its spectrum is known) */
    for (int w = 0; w < FT_WAVES; w++) {
        uint64_t h = mix64((uint64_t)t * 8 + (uint64_t)w + 12345);
        s->wa[w] = (long)(h % (uint64_t)nx);
        s->wb[w] = (long)((h >> 20) % (uint64_t)ny);
        s->wc[w] = (long)((h >> 40) % (uint64_t)nz);
        ft_wave(s->ex + 2 * w * nx, nx, s->wa[w]);
        ft_wave(s->ey + 2 * w * ny, ny, s->wb[w]);
        ft_wave(s->ez + 2 * w * nz, nz, s->wc[w]);
    }
    for (long zl = 0; zl < nzl; zl++)
        for (long y = 0; y < ny; y++) {
            double *row = s->a + 2 * ((zl * ny + y) * nx);
            for (long x = 0; x < nx; x++) {
                double re = 0.0, im = 0.0;
                for (int w = 0; w < FT_WAVES; w++) {
                    const double *ax = s->ex + 2 * (w * nx + x), *ay = s->ey + 2 * (w * ny + y);
                    const double *az = s->ez + 2 * (w * nz + s->z0 + zl);
                    double yr = ay[0] * az[0] - ay[1] * az[1], yi = ay[0] * az[1] + ay[1] * az[0];
                    re += (w + 1) * (ax[0] * yr - ax[1] * yi);
                    im += (w + 1) * (ax[0] * yi + ax[1] * yr);
                }
                row[2 * x] = re;
                row[2 * x + 1] = im;
            }
        }
    /* FFTs along x and y within the slab */
    for (long zl = 0; zl < nzl; zl++) {
        for (long y = 0; y < ny; y++) fft(s->a + 2 * ((zl * ny + y) * nx), nx, s->tw[0]);
        for (long x = 0; x < nx; x++) {
            for (long y = 0; y < ny; y++) {
                s->line[2 * y] = s->a[2 * ((zl * ny + y) * nx + x)];
                s->line[2 * y + 1] = s->a[2 * ((zl * ny + y) * nx + x) + 1];
            }
            fft(s->line, ny, s->tw[1]);
            for (long y = 0; y < ny; y++) {
                s->a[2 * ((zl * ny + y) * nx + x)] = s->line[2 * y];
                s->a[2 * ((zl * ny + y) * nx + x) + 1] = s->line[2 * y + 1];
            }
        }
    }
    /* transpose: block (my z, y of rank q) to rank q */
    const long blk = s->zmax * s->ymax * nx;
    for (int q = 0; q < K_np; q++) {
        long qy0 = part(ny, K_np, q), qny = part(ny, K_np, q + 1) - qy0;
        for (long zl = 0; zl < nzl; zl++)
            for (long yl = 0; yl < qny; yl++)
                memcpy(s->sb + 2 * (q * blk + (zl * s->ymax + yl) * nx), s->a + 2 * ((zl * ny + qy0 + yl) * nx),
                       (size_t)(2 * nx) * sizeof(double));
    }
    k_alltoall(s->sb, (int)(2 * blk), MPI_DOUBLE, s->rb);
    for (int q = 0; q < K_np; q++) {
        long qz0 = part(nz, K_np, q), qnz = part(nz, K_np, q + 1) - qz0;
        for (long zl = 0; zl < qnz; zl++)
            for (long yl = 0; yl < nyl; yl++)
                memcpy(s->b + 2 * ((yl * nz + qz0 + zl) * nx), s->rb + 2 * (q * blk + (zl * s->ymax + yl) * nx),
                       (size_t)(2 * nx) * sizeof(double));
    }
    /* FFTs along z, then the spectrum must be the waves' peaks */
    for (long yl = 0; yl < nyl; yl++)
        for (long x = 0; x < nx; x++) {
            for (long z = 0; z < nz; z++) {
                s->line[2 * z] = s->b[2 * ((yl * nz + z) * nx + x)];
                s->line[2 * z + 1] = s->b[2 * ((yl * nz + z) * nx + x) + 1];
            }
            fft(s->line, nz, s->tw[2]);
            for (long z = 0; z < nz; z++) {
                s->b[2 * ((yl * nz + z) * nx + x)] = s->line[2 * z];
                s->b[2 * ((yl * nz + z) * nx + x) + 1] = s->line[2 * z + 1];
            }
        }
    const double tol = 1e-6 * N;
    for (long yl = 0; yl < nyl; yl++)
        for (long z = 0; z < nz; z++)
            for (long x = 0; x < nx; x++) {
                double want = 0.0;
                for (int w = 0; w < FT_WAVES; w++)
                    if (s->wa[w] == x && s->wb[w] == s->y0 + yl && s->wc[w] == z) want += (w + 1) * N;
                const double *v = s->b + 2 * ((yl * nz + z) * nx + x);
                if (fabs(v[0] - want) + fabs(v[1]) > tol) K_bad++;
            }
    /* checksum of sampled elements and the peaks: each is held by one rank, so the sum is exact */
    double smp[2 * (FT_SAMPLES + FT_WAVES)], tot[2 * (FT_SAMPLES + FT_WAVES)];
    memset(smp, 0, sizeof smp);
    for (int j = 0; j < FT_SAMPLES + FT_WAVES; j++) {
        long x = j < FT_SAMPLES ? (5 * j + 1) % nx : s->wa[j - FT_SAMPLES];
        long y = j < FT_SAMPLES ? (3 * j + 2) % ny : s->wb[j - FT_SAMPLES];
        long z = j < FT_SAMPLES ? (7 * j) % nz : s->wc[j - FT_SAMPLES];
        if (y >= s->y0 && y < s->y0 + nyl) {
            smp[2 * j] = s->b[2 * (((y - s->y0) * nz + z) * nx + x)];
            smp[2 * j + 1] = s->b[2 * (((y - s->y0) * nz + z) * nx + x) + 1];
        }
    }
    k_allreduce(smp, tot, 2 * (FT_SAMPLES + FT_WAVES), MPI_DOUBLE, MPI_SUM);
    if (K_rank == 0)
        for (int j = 0; j < 2 * (FT_SAMPLES + FT_WAVES); j++) K_sum += tot[j];
}

/* ---- IS ------------------------------------------------------------------------------- */

typedef struct {
    long n, nloc, g0;
    int maxkey, shift;
    int *key, *sbuf, *rbuf, *hist, *rankpos;
    long rcap, nrecv;
    int cnt[NBUCKETS], tot[NBUCKETS], bstart[NBUCKETS];
    int *scount, *sdisp, *rcount, *rdisp, *bfirst, *blast;
} is_t;

static void *is_setup(int cls, char *grid, char *problem) {
    static const long N[] = {1L << 16, 1L << 20, 1L << 23};
    static const int LOGK[] = {11, 16, 19};
    is_t *s = NEW(is_t, 1);
    s->n = N[cls];
    s->maxkey = 1 << LOGK[cls];
    s->shift = LOGK[cls] - 10; /* NBUCKETS = 2^10 */
    s->g0 = part(s->n, K_np, K_rank);
    s->nloc = part(s->n, K_np, K_rank + 1) - s->g0;
    s->key = NEW(int, s->nloc);
    for (long i = 0; i < s->nloc; i++) { /* sum of 4 uniforms: a bell-shaped key distribution */
        uint64_t h = mix64((uint64_t)(s->g0 + i) * 0x9E3779B97F4A7C15ULL + 99), g = mix64(h);
        uint64_t sum = (h & 0xffff) + ((h >> 32) & 0xffff) + (g & 0xffff) + ((g >> 32) & 0xffff);
        s->key[i] = (int)((sum * (uint64_t)s->maxkey) >> 18);
    }
    s->sbuf = NEW(int, s->nloc);
    s->rcap = s->nloc + s->nloc / 2 + 1024;
    s->rbuf = NEW(int, s->rcap);
    s->hist = NEW(int, s->maxkey);
    s->rankpos = NEW(int, s->maxkey);
    s->scount = NEW(int, K_np);
    s->sdisp = NEW(int, K_np);
    s->rcount = NEW(int, K_np);
    s->rdisp = NEW(int, K_np);
    s->bfirst = NEW(int, K_np);
    s->blast = NEW(int, K_np);
    snprintf(grid, 64, "%d", K_np);
    snprintf(problem, 128, "%ld keys < 2^%d", s->n, LOGK[cls]);
    return s;
}

/* This rank's key range [lo, hi) after the last ranking (empty: lo == hi). */
static void is_range(const is_t *s, int q, int *lo, int *hi) {
    *lo = s->bfirst[q] << s->shift;
    *hi = s->blast[q] < s->bfirst[q] ? *lo : (s->blast[q] + 1) << s->shift;
}

static void is_iterate(void *p, long t) {
    is_t *s = p;
    const int P = K_np;
    if (t >= 0) { /* as NPB: two keys change every iteration */
        long i1 = t % (s->n / 2), i2 = i1 + s->n / 2;
        if (i1 >= s->g0 && i1 < s->g0 + s->nloc) s->key[i1 - s->g0] = (int)(t % s->maxkey);
        if (i2 >= s->g0 && i2 < s->g0 + s->nloc) s->key[i2 - s->g0] = s->maxkey - 1 - (int)(t % s->maxkey);
    }
    /* local bucket counts and the keys in bucket order */
    memset(s->cnt, 0, sizeof s->cnt);
    for (long i = 0; i < s->nloc; i++) s->cnt[s->key[i] >> s->shift]++;
    for (int b = 0, acc = 0; b < NBUCKETS; b++) {
        s->bstart[b] = acc;
        acc += s->cnt[b];
    }
    for (long i = 0; i < s->nloc; i++) s->sbuf[s->bstart[s->key[i] >> s->shift]++] = s->key[i];
    k_allreduce(s->cnt, s->tot, NBUCKETS, MPI_INT, MPI_SUM);
    /* consecutive buckets per rank, about n/P keys each (NPB's split) */
    long acc = 0, local = 0;
    int j = 0;
    for (int q = 0; q < P; q++) {
        s->scount[q] = 0;
        s->bfirst[q] = NBUCKETS;
        s->blast[q] = NBUCKETS - 1;
    }
    s->bfirst[0] = 0;
    for (int b = 0; b < NBUCKETS && j < P; b++) {
        acc += s->tot[b];
        local += s->cnt[b];
        if (acc >= (long)((long long)(j + 1) * s->n / P)) {
            s->scount[j] = (int)local;
            s->blast[j] = b;
            local = 0;
            if (++j < P) s->bfirst[j] = b + 1;
        }
    }
    for (int q = 0, d = 0; q < P; q++) {
        s->sdisp[q] = d;
        d += s->scount[q];
    }
    k_alltoall(s->scount, 1, MPI_INT, s->rcount);
    long nrecv = 0;
    for (int q = 0; q < P; q++) {
        s->rdisp[q] = (int)nrecv;
        nrecv += s->rcount[q];
    }
    if (nrecv > s->rcap) {
        free(s->rbuf);
        s->rcap = nrecv + nrecv / 4;
        s->rbuf = NEW(int, s->rcap);
    }
    s->nrecv = nrecv;
    k_alltoallv(s->sbuf, s->scount, s->sdisp, MPI_INT, s->rbuf, s->rcount, s->rdisp);
    /* local ranking: counting sort over this rank's key range */
    int lo, hi;
    is_range(s, K_rank, &lo, &hi);
    memset(s->hist, 0, (size_t)(hi - lo) * sizeof(int));
    for (long i = 0; i < nrecv; i++) {
        int k = s->rbuf[i];
        if (k < lo || k >= hi) K_bad++;
        else s->hist[k - lo]++;
    }
    for (int k = 0, r = 0; k < hi - lo; k++) {
        s->rankpos[k] = r;
        r += s->hist[k];
    }
}

/* Full verification (untimed, uncounted): nothing lost, keys sorted across ranks; checksum. */
static void is_finish(void *p) {
    is_t *s = p;
    int lo, hi;
    is_range(s, K_rank, &lo, &hi);
    long long mine[2] = {0, 0}, all[2];
    for (long i = 0; i < s->nloc; i++) mine[0] += s->key[i];
    for (long i = 0; i < s->nrecv; i++) mine[1] += s->rbuf[i];
    MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    long long got = s->nrecv, total = 0, before = 0;
    MPI_Allreduce(&got, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(&got, &before, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (K_rank == 0) {
        before = 0;
        if (all[0] != all[1] || total != s->n) K_bad++;
    }
    for (int q = 1; q < K_np; q++) { /* the ranges must be increasing */
        int a0, a1, b0, b1;
        is_range(s, q - 1, &a0, &a1);
        is_range(s, q, &b0, &b1);
        if (K_rank == 0 && a1 > a0 && b1 > b0 && a1 > b0) K_bad++;
    }
    uint64_t cs = 0;
    long long pos = before;
    for (int k = 0; k < hi - lo; k++)
        for (int c = 0; c < s->hist[k]; c++, pos++)
            cs += ((uint64_t)(pos + 1) * 2654435761ULL + (uint64_t)(lo + k)) % 1048573ULL;
    K_sum += (double)cs;
}

/* ---- driver --------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    long iterations; /* default */
    void *(*setup)(int cls, char *grid, char *problem);
    void (*iterate)(void *state, long t);
    void (*finish)(void *state);
} kernel_t;

static const kernel_t KERNELS[] = {
    {"cg", 15, cg_setup, cg_iterate, NULL},
    {"lu", 50, lu_setup, lu_iterate, NULL},
    {"sp", 100, sp_setup, adi_iterate, NULL},
    {"bt", 60, bt_setup, adi_iterate, NULL},
    {"mg", 4, mg_setup, mg_iterate, NULL},
    {"ft", 6, ft_setup, ft_iterate, NULL},
    {"is", 10, is_setup, is_iterate, is_finish},
};
#define NKERNELS ((int)(sizeof KERNELS / sizeof KERNELS[0]))

static const kernel_t *find_kernel(const char *name) {
    for (int i = 0; i < NKERNELS; i++)
        if (strcmp(KERNELS[i].name, name) == 0) return &KERNELS[i];
    return NULL;
}

/* Runs --warmup untimed iterations (t < 0), then the timed ones (t = 0 .. iterations-1);
 * rank 0 prints the result. Returns the exit status: 1 on rank 0 if verification failed. */
static int run_kernel(const kernel_t *k, int cls, long iterations, long warmup) {
    MPI_Comm_rank(MPI_COMM_WORLD, &K_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &K_np);
    if (K_np < 2) {
        if (K_rank == 0) fprintf(stderr, "vnb-mpi-bench: %s needs at least 2 ranks\n", k->name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char grid[64] = "", problem[128] = "";
    void *state = k->setup(cls, grid, problem);
    for (long t = -warmup; t < 0; t++) k->iterate(state, t);
    K_comm = 0.0;
    K_msgs = K_bytes = 0;
    K_sum = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long t = 0; t < iterations; t++) k->iterate(state, t);
    double elapsed = MPI_Wtime() - start, comm = K_comm;
    long long counts[2] = {K_msgs, K_bytes}, total[2] = {0, 0};
    if (k->finish) k->finish(state);
    double times[2] = {elapsed, comm}, tmax[2] = {0.0, 0.0}, checksum = 0.0;
    long long errors = 0;
    MPI_Reduce(times, tmax, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(counts, total, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&K_bad, &errors, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&K_sum, &checksum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int verified = errors == 0 && isfinite(checksum);
    if (K_rank == 0) {
        char cs[40];
        if (isfinite(checksum)) snprintf(cs, sizeof cs, "%.17g", checksum);
        else snprintf(cs, sizeof cs, "null");
        printf("{\"tool\": \"vnb-mpi-bench\", \"test\": \"%s\", \"kernel\": \"%s\", \"class\": \"%c\", "
               "\"ranks\": %d, \"grid\": \"%s\", \"problem\": \"%s\", \"iterations\": %ld, \"warmup\": %ld, "
               "\"runtime_s\": %.6f, \"comm_s\": %.6f, \"messages\": %lld, \"bytes\": %lld, "
               "\"checksum\": %s, \"errors\": %lld, \"verified\": %s}\n",
               k->name, k->name, "SWA"[cls], K_np, grid, problem, iterations, warmup, tmax[0], tmax[1],
               total[0], total[1], cs, errors, verified ? "true" : "false");
        fflush(stdout);
        if (!verified)
            fprintf(stderr, "vnb-mpi-bench: kernel %s class %c FAILED verification (%lld errors)\n", k->name,
                    "SWA"[cls], errors);
    }
    return K_rank == 0 && !verified ? 1 : 0;
}

/* ==== constant-rate gap test ============================================================= */

#define GAP_TAG 7
#define GAP_RESULT_TAG 8

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleep until the absolute CLOCK_MONOTONIC time t (ns); returns at once if it has passed. */
static void sleep_until_ns(int64_t t) {
    struct timespec ts = {(time_t)(t / 1000000000), (long)(t % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* Prints `, "<prefix>_min": .., "<prefix>_mean": .., ... "<prefix>_max": ..` (sorts v). */
static void print_dist(const char *prefix, double *v, long n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    double sum = 0.0, sq = 0.0;
    for (long i = 0; i < n; i++) sum += v[i];
    double mean = sum / (double)n;
    for (long i = 0; i < n; i++) sq += (v[i] - mean) * (v[i] - mean);
    double sd = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
    printf(", \"%s_min\": %.3f, \"%s_mean\": %.3f, \"%s_stddev\": %.3f", prefix, v[0], prefix, mean,
           prefix, sd);
    static const double P[] = {1, 25, 50, 75, 90, 99, 99.9};
    static const char *const NAME[] = {"p1", "p25", "p50", "p75", "p90", "p99", "p999"};
    for (int k = 0; k < 7; k++) printf(", \"%s_%s\": %.3f", prefix, NAME[k], percentile(v, n, P[k]));
    printf(", \"%s_max\": %.3f", prefix, v[n - 1]);
}

/* Idle ranks: wait for the others without spinning (an MPI_Ibarrier tested every 10 ms). */
static void gaps_join(int idle) {
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    if (!idle) {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        return;
    }
    int done = 0;
    struct timespec nap = {0, 10000000};
    for (MPI_Test(&req, &done, MPI_STATUS_IGNORE); !done; MPI_Test(&req, &done, MPI_STATUS_IGNORE))
        nanosleep(&nap, NULL);
}

/* Rank 0 streams warmup + n messages of size bytes to rank 1 at rate messages/s; rank 0
 * prints the gap distributions. Returns the exit status. */
static int run_gaps(double rate, long size, long n, long warmup) {
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 2) {
        if (rank == 0) fprintf(stderr, "vnb-mpi-bench: gaps needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long total = warmup + n, first = warmup > 0 ? warmup : 1; /* first timed gap's message */
    int msg = (int)size;
    char *buf = xalloc((size_t)(size > 0 ? size : 1));
    int64_t *ts = rank <= 1 ? NEW(int64_t, total) : NULL;
    long long counts[2] = {0, 0}; /* rank 1: timed messages received of the right size, all */
    double period_ns = 1e9 / rate;
    long late = 0;
    int64_t t0 = 0;

    if (rank == 0) { /* one untimed round trip opens the connection */
        MPI_Send(buf, msg, MPI_CHAR, 1, GAP_TAG, MPI_COMM_WORLD);
        MPI_Recv(buf, msg, MPI_CHAR, 1, GAP_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Recv(buf, msg, MPI_CHAR, 0, GAP_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, msg, MPI_CHAR, 0, GAP_TAG, MPI_COMM_WORLD);
    }
    gaps_join(rank > 1);

    if (rank == 0) {
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); /* wake at the deadline, not 50 us later */
        t0 = mono_ns() + 1000000;
        for (long i = 0; i < total; i++) {
            int64_t deadline = t0 + (int64_t)llround((double)i * period_ns);
            sleep_until_ns(deadline);
            if (i >= warmup && (double)(mono_ns() - deadline) > period_ns) late++;
            MPI_Send(buf, msg, MPI_CHAR, 1, GAP_TAG, MPI_COMM_WORLD);
            ts[i] = mono_ns();
        }
    } else if (rank == 1) {
        for (long i = 0; i < total; i++) {
            MPI_Status st;
            int got = -1;
            MPI_Recv(buf, msg, MPI_CHAR, 0, GAP_TAG, MPI_COMM_WORLD, &st);
            ts[i] = mono_ns();
            MPI_Get_count(&st, MPI_CHAR, &got);
            if (i >= warmup && got == msg) counts[0]++;
            counts[1]++;
        }
        MPI_Send(counts, 2, MPI_LONG_LONG, 0, GAP_RESULT_TAG, MPI_COMM_WORLD);
        MPI_Send(ts, (int)total, MPI_INT64_T, 0, GAP_RESULT_TAG, MPI_COMM_WORLD);
    }

    if (rank == 0) {
        int64_t *rts = NEW(int64_t, total);
        MPI_Recv(counts, 2, MPI_LONG_LONG, 1, GAP_RESULT_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(rts, (int)total, MPI_INT64_T, 1, GAP_RESULT_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        long ngaps = total - first;
        double *send_gap = NEW(double, ngaps), *recv_gap = NEW(double, ngaps);
        double *recv_dev = NEW(double, ngaps), period_us = period_ns / 1e3;
        for (long i = first; i < total; i++) {
            send_gap[i - first] = (double)(ts[i] - ts[i - 1]) / 1e3;
            recv_gap[i - first] = (double)(rts[i] - rts[i - 1]) / 1e3;
            recv_dev[i - first] = recv_gap[i - first] - period_us;
        }
        double elapsed = (double)(ts[total - 1] - ts[first - 1]) / 1e9;
        printf("{\"tool\": \"vnb-mpi-bench\", \"test\": \"gaps\", \"ranks\": %d, \"size\": %ld, "
               "\"rate\": %.10g, \"period_us\": %.3f, \"warmup\": %ld, \"sent\": %ld, "
               "\"received\": %lld, \"gaps\": %ld, \"late\": %ld, \"elapsed_s\": %.6f, "
               "\"unit\": \"us\"",
               np, size, rate, period_us, warmup, n, counts[0], ngaps, late, elapsed);
        print_dist("send_gap", send_gap, ngaps);
        print_dist("recv_gap", recv_gap, ngaps);
        print_dist("recv_gap_dev", recv_dev, ngaps);
        printf("}\n");
        fflush(stdout);
        if (counts[1] != total)
            fprintf(stderr, "vnb-mpi-bench: gaps: rank 1 received %lld of %ld messages\n", counts[1],
                    total);
        free(rts);
        free(send_gap);
        free(recv_gap);
        free(recv_dev);
    }
    gaps_join(rank > 1);
    free(ts);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    enum test_kind test = PINGPONG;
    const char *test_name = "pingpong";
    long iterations = 1000, warmup = 100, size = 8;
    double duration = 0.0, rate = 1000.0;
    const kernel_t *kernel = NULL;
    int cls = 0, iterations_given = 0, warmup_given = 0, gaps = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) { usage(); return 2; }
        if (strcmp(a, "--test") == 0) {
            test_name = v;
            if (strcmp(v, "pingpong") == 0) test = PINGPONG;
            else if (strcmp(v, "barrier") == 0) test = BARRIER;
            else if (strcmp(v, "allreduce") == 0) test = ALLREDUCE;
            else if (strcmp(v, "gaps") == 0) gaps = 1;
            else if ((kernel = find_kernel(v)) == NULL) { usage(); return 2; }
        } else if (strcmp(a, "--iterations") == 0) { iterations = atol(v); iterations_given = 1; }
        else if (strcmp(a, "--duration") == 0) duration = atof(v);
        else if (strcmp(a, "--size") == 0) size = atol(v);
        else if (strcmp(a, "--rate") == 0) rate = atof(v);
        else if (strcmp(a, "--warmup") == 0) { warmup = atol(v); warmup_given = 1; }
        else if (strcmp(a, "--class") == 0) {
            const char *c = strchr("SWA", v[0]);
            if (c == NULL || v[0] == '\0' || v[1] != '\0') { usage(); return 2; }
            cls = (int)(c - "SWA");
        }
        else { usage(); return 2; }
        i++;
    }
    if (iterations < 1 || warmup < 0 || size < 0 || duration < 0) { usage(); return 2; }
    if (gaps) {
        if (!(rate > 0 && rate <= 1e6) || size > INT32_MAX) { usage(); return 2; }
        long n = iterations_given ? iterations : duration > 0 ? (long)floor(rate * duration) : 1000;
        if (!warmup_given) warmup = (long)fmin(100.0, fmax(1.0, ceil(rate * 0.1)));
        if (n < 2 || n + warmup > 100000000L) { usage(); return 2; }
        MPI_Init(&argc, &argv);
        int rc = run_gaps(rate, size, n, warmup);
        MPI_Finalize();
        return rc;
    }
    if (kernel != NULL) {
        if (duration > 0) { usage(); return 2; }
        MPI_Init(&argc, &argv);
        int rc = run_kernel(kernel, cls, iterations_given ? iterations : kernel->iterations,
                            warmup_given ? warmup : 1);
        MPI_Finalize();
        return rc;
    }

    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (test == PINGPONG && nranks < 2) {
        if (rank == 0) fprintf(stderr, "vnb-mpi-bench: pingpong needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    long count = size / 8 > 0 ? size / 8 : 1;
    long bufsize = test == ALLREDUCE ? count * (long)sizeof(double) : (size > 0 ? size : 1);
    char *sendbuf = calloc((size_t)bufsize, 1);
    char *recvbuf = calloc((size_t)bufsize, 1);
    long cap = duration > 0 ? 4096 : iterations;
    double *samples = malloc((size_t)cap * sizeof(double));
    if (!sendbuf || !recvbuf || !samples) MPI_Abort(MPI_COMM_WORLD, 3);
    int msg = (int)size;

    long done = 0;
    long target = warmup + (duration > 0 ? 0 : iterations);
    double start = 0.0;
    int go = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long it = 0; go; it++) {
        double t0 = MPI_Wtime();
        if (test == PINGPONG) {
            if (rank == 0) {
                MPI_Send(sendbuf, msg, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(recvbuf, msg, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(recvbuf, msg, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(recvbuf, msg, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        } else if (test == BARRIER) {
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            MPI_Allreduce(sendbuf, recvbuf, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        double t1 = MPI_Wtime();
        if (it == warmup) start = t0;
        if (it >= warmup) {
            if (done == cap) {
                cap *= 2;
                samples = realloc(samples, (size_t)cap * sizeof(double));
                if (!samples) MPI_Abort(MPI_COMM_WORLD, 3);
            }
            samples[done++] = (t1 - t0) * 1e6;
        }
        if (duration > 0) {
            if ((it + 1) % BATCH == 0) {
                if (rank == 0) go = it + 1 <= warmup || MPI_Wtime() - start < duration;
                MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
            }
        } else {
            go = it + 1 < target;
        }
    }
    double elapsed = MPI_Wtime() - start;

    if (test != PINGPONG) {
        double *worst = rank == 0 ? malloc((size_t)done * sizeof(double)) : NULL;
        if (rank == 0 && !worst) MPI_Abort(MPI_COMM_WORLD, 3);
        MPI_Reduce(samples, worst, (int)done, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            free(samples);
            samples = worst;
        }
    }

    if (rank == 0) {
        qsort(samples, (size_t)done, sizeof(double), cmp_double);
        double sum = 0.0, sq = 0.0;
        for (long i = 0; i < done; i++) sum += samples[i];
        double mean = sum / (double)done;
        for (long i = 0; i < done; i++) sq += (samples[i] - mean) * (samples[i] - mean);
        double sd = done > 1 ? sqrt(sq / (double)(done - 1)) : 0.0;
        char name[MPI_MAX_PROCESSOR_NAME];
        int len = 0;
        MPI_Get_processor_name(name, &len);
        printf("{\"tool\": \"vnb-mpi-bench\", \"test\": \"%s\", \"ranks\": %d, \"size\": %ld, "
               "\"iterations\": %ld, \"warmup\": %ld, \"elapsed_s\": %.6f, \"unit\": \"us\", "
               "\"min\": %.3f, \"mean\": %.3f, \"stddev\": %.3f, \"p1\": %.3f, \"p25\": %.3f, "
               "\"p50\": %.3f, \"p75\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"p999\": %.3f, "
               "\"max\": %.3f}\n",
               test_name, nranks, size, done, warmup, elapsed, samples[0], mean, sd,
               percentile(samples, done, 1), percentile(samples, done, 25),
               percentile(samples, done, 50), percentile(samples, done, 75),
               percentile(samples, done, 90), percentile(samples, done, 99),
               percentile(samples, done, 99.9), samples[done - 1]);
        fflush(stdout);
    }
    free(samples);
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return 0;
}
