/*
 * vnb-mpi-bench: vnetbench's MPI micro-benchmark (study 001: ping-pong RTT, MPI_Barrier
 * synchronisation time, allreduce time), run by vnetbench.workloads.mpi with one rank per
 * lab node. Rank 0 prints one JSON object on stdout; times are in microseconds.
 *
 *   vnb-mpi-bench --test pingpong|barrier|allreduce [--iterations N | --duration S]
 *                 [--size BYTES] [--warmup N]
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
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
                    "[--iterations N | --duration S] [--size BYTES] [--warmup N]\n");
}

int main(int argc, char **argv) {
    enum test_kind test = PINGPONG;
    const char *test_name = "pingpong";
    long iterations = 1000, warmup = 100, size = 8;
    double duration = 0.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) { usage(); return 2; }
        if (strcmp(a, "--test") == 0) {
            test_name = v;
            if (strcmp(v, "pingpong") == 0) test = PINGPONG;
            else if (strcmp(v, "barrier") == 0) test = BARRIER;
            else if (strcmp(v, "allreduce") == 0) test = ALLREDUCE;
            else { usage(); return 2; }
        } else if (strcmp(a, "--iterations") == 0) iterations = atol(v);
        else if (strcmp(a, "--duration") == 0) duration = atof(v);
        else if (strcmp(a, "--size") == 0) size = atol(v);
        else if (strcmp(a, "--warmup") == 0) warmup = atol(v);
        else { usage(); return 2; }
        i++;
    }
    if (iterations < 1 || warmup < 0 || size < 0 || duration < 0) { usage(); return 2; }

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
