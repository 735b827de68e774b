/* test_dist.c — `ramtrace train --dist`: data-parallel training under
 * mpirun (OpenMPI, two ranks oversubscribed on this machine).  Two ranks
 * over a batch of B must give one process's run over the same batch:
 * the per-step losses within 1e-6 relative and the parameters after 20
 * steps within 1e-6 absolute (the gradients are the same sums, formed in
 * another order, so they agree to rounding, not bit for bit), with either
 * rendezvous, and across a resume on another rank count.  A rank killed
 * or stopped mid-run ends every rank with a message (no hang); ranks given
 * different configs, or rendezvous directories that are not one, are
 * refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_modelfile.h"
#include "th.h"

#define P(name) th_path(name)

/* mpirun for the tests: as root too, two ranks on however few cores, in
 * sanitized builds OpenMPI's own leaks suppressed (mk/mpi-lsan.supp, found
 * through RN_TEST_MPI_SUPP, which the suite's set-up exports), and shared
 * memory without the single-copy (CMA) path, which a container that denies
 * process_vm_readv turns into failed large messages (docs/training.md). */
#define MPIRUN "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " \
               "OMPI_MCA_mca_base_component_disable_dlclose=1 " \
               "OMPI_MCA_btl_vader_single_copy_mechanism=none " \
               "LSAN_OPTIONS=suppressions=$RN_TEST_MPI_SUPP:print_suppressions=0 " \
               "ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0 mpirun --oversubscribe"

static int dist_init(void)
{
    char *p = realpath("mk/mpi-lsan.supp", NULL);
    int rc = p ? setenv("RN_TEST_MPI_SUPP", p, 1) : -1;
    free(p);
    return rc;
}
TH_SUITE(dist, dist_init, NULL);

/* A tiny MQAR run of 20 steps with a loss logged every step; batch 4
 * sequences of 64 (8 of 32 at the short segment), split 2 + 2. */
static const char *dist_cfg(void)
{
    static char p[512];
    snprintf(p, sizeof p, "%s", P("dist_tiny.cfg"));
    const char *t = "vocab_size = 600\ntokenizer = ids\nd_model = 16\nn_layers = 2\nn_heads = 2\n"
                    "d_p = 4\norder = 2\nd_v = 8\ntop_k = 4\nd_ff = 32\ncape = first:1\n"
                    "mqar_train = 32:4,64:8\nmqar_eval = 64:8\nseq_len = 64\nbatch = 4\nsteps = 20\n"
                    "lr = 1e-3\neval_every = 0\nckpt_every = 0\nlog_every = 1\neval_examples = 4\n";
    th_write_file(p, t, strlen(t));
    return p;
}

/* The losses of a metrics log, step by step; returns how many (≤ cap). */
static int read_losses(const char *path, double *loss, int cap)
{
    char *s = th_read_file(path, NULL);
    int n = 0;
    for (char *p = s; p && *p && n < cap; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        long long step;
        double l;
        if (sscanf(p, "{\"step\":%lld,\"loss\":%lf", &step, &l) == 2) loss[n++] = l;
    }
    free(s);
    return n;
}

/* The largest relative difference of two logs' losses (all 20 steps). */
static double loss_diff(const char *a, const char *b)
{
    double la[64], lb[64];
    int na = read_losses(a, la, 64), nb = read_losses(b, lb, 64);
    CU_ASSERT_EQUAL(na, 20);
    CU_ASSERT_EQUAL(nb, na);
    double worst = na == nb && na > 0 ? 0 : INFINITY;
    for (int i = 0; i < na && i < nb; i++) {
        double d = fabs(la[i] - lb[i]) / fabs(la[i]);
        if (d > worst) worst = d;
    }
    return worst;
}

/* The largest absolute difference of two model files' parameters. */
static double param_diff(const char *a, const char *b)
{
    rn_model ma, mb;
    rn_error err = { 0, "" };
    if (rn_model_load(&ma, a, &err)) {
        CU_FAIL(err.msg);
        return INFINITY;
    }
    if (rn_model_load(&mb, b, &err)) {
        CU_FAIL(err.msg);
        rn_model_free(&ma);
        return INFINITY;
    }
    double worst = ma.n_block == mb.n_block ? 0 : INFINITY;
    for (int64_t i = 0; i < ma.n_block && i < mb.n_block; i++) {
        double d = fabs((double)ma.params[i] - (double)mb.params[i]);
        if (!(d <= worst)) worst = d;
    }
    rn_model_free(&ma);
    rn_model_free(&mb);
    return worst;
}

/* One process over the batch: the reference run (log dist_one.log). */
static void run_one(const char *cfg)
{
    CU_ASSERT_EQUAL_FATAL(th_run("%s train --task mqar --config %s -j1 -o %s --log %s", th_bin(), cfg,
                                 P("dist_one.bin"), P("dist_one.log")), 0);
}

/* Two ranks with rendezvous `kind` against the reference, and the resume
 * of a two-rank checkpoint (step 10) by one process. */
static void check_two_ranks(const char *kind, const char *tag)
{
    const char *cfg = dist_cfg();
    run_one(cfg);
    char out[256], log[256];
    snprintf(out, sizeof out, "%s", P(tag));
    snprintf(log, sizeof log, "%s.log", out);
    CU_ASSERT_EQUAL_FATAL(th_run(MPIRUN " -np 2 %s train --task mqar --config %s -j1 -o %s.bin --log %s --dist %s",
                                 th_bin(), cfg, out, log, kind), 0);
    /* rank 0 alone prints: one start line and one saved line */
    CU_ASSERT(strstr(th_err(), "on 2 ranks") != NULL);
    const char *saved = strstr(th_err(), "saved ");
    CU_ASSERT(saved && !strstr(saved + 1, "saved "));
    double dl = loss_diff(P("dist_one.log"), log);
    char bin[300];
    snprintf(bin, sizeof bin, "%s.bin", out);
    double dp = param_diff(P("dist_one.bin"), bin);
    printf("\n    --dist %s: losses within %.2g relative, parameters within %.2g absolute\n", kind, dl, dp);
    CU_ASSERT(dl <= 1e-6);
    CU_ASSERT(dp <= 1e-6);
}

TH_TEST(test_dist_mpi_equals_one, "mpirun -np 2 --dist mpi equals one process over the same batch")
{
    check_two_ranks("mpi", "dist_mpi");
}

TH_TEST(test_dist_fs_equals_one, "mpirun -np 2 --dist fs:DIR equals one process; DIR is left empty")
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s", P("dist_rdv"));
    CU_ASSERT_EQUAL_FATAL(th_run("mkdir -p %s", dir), 0);
    char kind[300];
    snprintf(kind, sizeof kind, "fs:%s", dir);
    check_two_ranks(kind, "dist_fs");
    CU_ASSERT_EQUAL(th_run("ls -A %s | wc -l", dir), 0);
    CU_ASSERT(atoi(th_out()) == 0);
}

TH_TEST(test_dist_resume_other_count, "a checkpoint resumes on another rank count")
{
    const char *cfg = dist_cfg();
    run_one(cfg);
    /* two ranks stop at step 10; one process finishes the run */
    CU_ASSERT_EQUAL_FATAL(th_run(MPIRUN " -np 2 %s train --task mqar --config %s -j1 -o %s --log %s --dist mpi "
                                 "--stop-after 10", th_bin(), cfg, P("dist_r2.bin"), P("dist_r2.log")), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s train --task mqar --config %s -j1 -o %s --log %s --resume %s", th_bin(), cfg,
                                 P("dist_r2.bin"), P("dist_r2.log"), P("dist_r2.bin.ckpt")), 0);
    double dl = loss_diff(P("dist_one.log"), P("dist_r2.log")), dp = param_diff(P("dist_one.bin"), P("dist_r2.bin"));
    /* one process stops at step 10; two ranks finish the run */
    CU_ASSERT_EQUAL_FATAL(th_run("%s train --task mqar --config %s -j1 -o %s --log %s --stop-after 10", th_bin(),
                                 cfg, P("dist_r1.bin"), P("dist_r1.log")), 0);
    CU_ASSERT_EQUAL_FATAL(th_run(MPIRUN " -np 2 %s train --task mqar --config %s -j1 -o %s --log %s --dist mpi "
                                 "--resume %s", th_bin(), cfg, P("dist_r1.bin"), P("dist_r1.log"),
                                 P("dist_r1.bin.ckpt")), 0);
    double dl1 = loss_diff(P("dist_one.log"), P("dist_r1.log")), dp1 = param_diff(P("dist_one.bin"), P("dist_r1.bin"));
    printf("\n    2 ranks -> 1: losses %.2g, parameters %.2g; 1 -> 2 ranks: %.2g, %.2g\n", dl, dp, dl1, dp1);
    CU_ASSERT(dl <= 1e-6 && dp <= 1e-6);
    CU_ASSERT(dl1 <= 1e-6 && dp1 <= 1e-6);
}

/* A long run under mpirun with `what` done to one rank once its progress
 * shows step 3.  Prints "rc=N secs=S": mpirun's exit status and the
 * seconds from the signal until the other rank had ended ("hang" when it
 * had not after 60 s; "noranks" when the two ranks were not found).  The
 * signalled rank is killed afterwards (a stopped process would stop its
 * launcher too: the scheduler's part), and mpirun at the latest 30 s
 * later, so the test never waits for the million steps.  tag names the
 * run's files (a fresh stderr file per run: an old one's progress would
 * be read before the new run has started). */
static int signal_rank(const char *tag, const char *what, const char *extra)
{
    const char *cfg = dist_cfg();
    return th_run("cd %s && rm -f %s.err && (" MPIRUN " -np 2 %s train --task mqar --config %s -j1 -o %s.bin "
                  "--set steps=1000000 --dist mpi %s >/dev/null 2>%s.err & M=$!; "
                  "i=0; until grep -q 'step 3/' %s.err 2>/dev/null || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done; "
                  "O=$(ps --ppid $M -o pid= | head -n 1); R=$(ps --ppid $M -o pid= | tail -n 1); "
                  "if [ -z \"$O\" ] || [ \"$O\" = \"$R\" ]; then echo noranks; kill -9 $M; O=; R=; fi; "
                  "[ -n \"$R\" ] && kill %s $R; t0=$(date +%%s); "
                  "i=0; while [ -n \"$O\" ] && kill -0 $O 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "
                  "[ -n \"$O\" ] && kill -0 $O 2>/dev/null && { kill -9 $O; echo hang; }; secs=$(( $(date +%%s) - t0 )); "
                  "[ -n \"$R\" ] && kill -9 $R 2>/dev/null; "
                  "i=0; while kill -0 $M 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "
                  "kill -0 $M 2>/dev/null && { kill -9 $M; echo hang; }; "
                  "wait $M; echo rc=$? secs=$secs; cat %s.err >&2)",
                  th_tmpdir(), tag, th_bin(), cfg, tag, extra, tag, tag, what, tag);
}

/* signal_rank, then: mpirun failed, the other rank ended by itself
 * between min_s and 30 s after the signal, and stderr holds `message`. */
static void check_signal(const char *tag, const char *what, const char *extra, int min_s, const char *message)
{
    signal_rank(tag, what, extra);
    int rc = -1, secs = -1;
    const char *r = strstr(th_out(), "rc=");
    CU_ASSERT_FATAL(r != NULL);
    sscanf(r, "rc=%d secs=%d", &rc, &secs);
    CU_ASSERT(strstr(th_out(), "hang") == NULL);
    CU_ASSERT(strstr(th_out(), "noranks") == NULL);
    CU_ASSERT(rc != 0);
    CU_ASSERT(secs >= min_s && secs < 30);
    CU_ASSERT(strstr(th_err(), message) != NULL);
}

TH_TEST(test_dist_killed_rank, "a rank killed mid-run ends the run with a message, no hang")
{
    /* the launcher names the dead rank and ends the other */
    check_signal("dist_kill", "-9", "", 0, "signal 9");
}

TH_TEST(test_dist_stopped_rank, "a rank that stops answering: the watchdog ends every rank")
{
    check_signal("dist_stop", "-STOP", "--dist-timeout 2", 2, "no word from the other ranks for 2 s");
}

TH_TEST(test_dist_mismatch, "ranks given different configs or training keys are refused")
{
    const char *cfg = dist_cfg();
    const char *bin = th_bin();
    CU_ASSERT_EQUAL(th_run(MPIRUN " -np 1 %s train --task mqar --config %s -o %s --dist mpi : -np 1 %s train --task mqar "
                           "--config %s -o %s --dist mpi --set lr=2e-3", bin, cfg, P("dist_mm.bin"), bin, cfg,
                           P("dist_mm.bin")) != 0, 1);
    CU_ASSERT(strstr(th_err(), "rank 1 has 'lr = 0.002', rank 0 has 'lr = 0.001'") != NULL);
    CU_ASSERT(!th_file_exists(P("dist_mm.bin")));
    CU_ASSERT_EQUAL(th_run(MPIRUN " -np 1 %s train --task mqar --config %s -o %s --dist mpi : -np 1 %s train --task mqar "
                           "--config %s -o %s --dist mpi --set d_model=32", bin, cfg, P("dist_mm.bin"), bin, cfg,
                           P("dist_mm.bin")) != 0, 1);
    CU_ASSERT(strstr(th_err(), "rank 1 has 'd_model = 32', rank 0 has 'd_model = 16'") != NULL);
    /* fs:DIR with a directory per rank: not one shared directory */
    CU_ASSERT_EQUAL(th_run("mkdir -p %s %s", P("dist_rdv_a"), P("dist_rdv_b")), 0);
    CU_ASSERT_EQUAL(th_run(MPIRUN " -np 1 %s train --task mqar --config %s -o %s --dist fs:%s --dist-timeout 1 : "
                           "-np 1 %s train --task mqar --config %s -o %s --dist fs:%s --dist-timeout 1", bin, cfg,
                           P("dist_mm.bin"), P("dist_rdv_a"), bin, cfg, P("dist_mm.bin"), P("dist_rdv_b")) != 0, 1);
    CU_ASSERT(strstr(th_err(), "a directory every rank shares?") != NULL);
    /* bad --dist values: one line, exit 2, before MPI starts */
    CU_ASSERT_EQUAL(th_run("%s train --task mqar --config %s -o %s --dist tcp", bin, cfg, P("dist_mm.bin")), 2);
    CU_ASSERT(strstr(th_err(), "'tcp' is not mpi, fs:DIR or none") != NULL);
    CU_ASSERT_EQUAL(th_run("%s train --task mqar --config %s -o %s --dist fs:", bin, cfg, P("dist_mm.bin")), 2);
    CU_ASSERT_EQUAL(th_run(MPIRUN " -np 2 %s train --task mqar --config %s -o %s --dist mpi --set batch=1", bin, cfg,
                           P("dist_mm.bin")) != 0, 1);
    CU_ASSERT(strstr(th_err(), "batch = 1 sequences cannot be shared by 2 ranks") != NULL);
}
