/* bench_serve.c — what the viewer's server (`ramtrace serve`) takes to
 * answer on a big trace: tiles of 1,024 positions x one head (every
 * event), zoomed-out tiles (binned), the head list and one position's
 * accesses, each a different head so no answer comes from the cache
 * (cold: read from the trace and formatted as JSON), median and max; then
 * the same tiles again (from the cache), and the process's peak memory.
 *
 * Usage: build/bench/bench_serve [TRACE.db [REPS]]
 * Without a trace it writes one first: the synthetic stream of bench_trace
 * (bench_synth.h) in the paper's shape, 14,500 tokens = 100M events (about
 * 540 MB in $TMPDIR, removed at the end). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_synth.h"
#include "bench_util.h"
#include "srv_api.h"
#include "srv_tile.h"
#include "tr_reader.h"

typedef struct { const char *k[6]; char v[6][32]; } args;

static const char *arg(void *cls, const char *name)
{
    args *a = cls;
    for (int i = 0; i < 6 && a->k[i]; i++)
        if (!strcmp(a->k[i], name)) return a->v[i];
    return NULL;
}

/* Seconds to answer path with the given args (exits on an error answer). */
static double timed(srv_api *api, const char *path, args *a, size_t *bytes)
{
    srv_reply r;
    double t0 = bench_now();
    if (srv_api_handle(api, path, arg, a, &r) || r.status != 200) {
        fprintf(stderr, "bench_serve: %s: %s\n", path, r.body ? r.body : "out of memory");
        exit(1);
    }
    double t = bench_now() - t0;
    if (bytes) *bytes = r.len;
    free(r.body);
    return t;
}

/* REPS tiles of level z, each of another head, cold then cached. */
static void tiles(srv_api *api, const tr_run_info *run, int z, int reps, int64_t tmax)
{
    double cold[256], warm[256];
    size_t bytes = 0;
    for (int i = 0; i < reps; i++) {
        int head = (i * 7) % (run->cfg.n_layers * run->cfg.n_heads);
        args a = { { "layer", "head", "z", "t", NULL }, { { 0 } } };
        snprintf(a.v[0], 32, "%d", head / run->cfg.n_heads);
        snprintf(a.v[1], 32, "%d", head % run->cfg.n_heads);
        snprintf(a.v[2], 32, "%d", z);
        snprintf(a.v[3], 32, "%lld", (long long)((i * 5) % (tmax + 1)));
        cold[i] = timed(api, "/api/tile", &a, &bytes);
        warm[i] = timed(api, "/api/tile", &a, NULL);
    }
    double cmax = 0;
    for (int i = 0; i < reps; i++) cmax = cold[i] > cmax ? cold[i] : cmax;
    printf("  tile z=%-2d (%7lld positions, %s): cold median %6.1f ms, max %6.1f ms; cached median %5.2f ms; %zu bytes\n",
           z, (long long)SRV_TILE_COLS << z, z ? "binned" : "every event", 1e3 * bench_median(cold, reps), 1e3 * cmax,
           1e3 * bench_median(warm, reps), bytes);
}

int main(int argc, char **argv)
{
    int reps = argc > 2 ? atoi(argv[2]) : 15;
    if (reps < 1 || reps > 256) reps = 15;
    rn_error err = { 0 };
    char dir[] = "/tmp/bench_serve.XXXXXX", made[256] = "";
    const char *path = argc > 1 ? argv[1] : made;
    if (argc < 2) {   /* a 100M-event run of the paper's shape */
        rn_config c;
        synth_tab tab;
        if (!mkdtemp(dir) || paper_config(&c, &err) || synth_make(&tab, &c)) {
            fprintf(stderr, "bench_serve: cannot make the synthetic trace %s\n", err.msg);
            return 1;
        }
        snprintf(made, sizeof made, "%s/big.db", dir);
        tr_writer_stats st;
        tr_writer_opts wo = { .durability = TR_DURABILITY_DEFAULT };
        double tw = write_run(made, &c, &tab, 14500, &wo, 1, &st);
        printf("bench_serve: wrote a synthetic trace of %lld events in %.1f s\n", (long long)st.events, tw);
        free(tab.slot);
        free(tab.w);
    }
    srv_api *api;
    srv_api_opts o = { 64u << 20, { 5, 1000 }, NULL };
    if (srv_api_open(path, &o, &api, &err)) { fprintf(stderr, "bench_serve: %s\n", err.msg); return 1; }
    tr_db *d;
    tr_run_info run;
    if (tr_open_read(path, &d, &err) || tr_run_get(d, 0, &run, &err)) {
        fprintf(stderr, "bench_serve: %s\n", err.msg);
        return 1;
    }
    tr_close(d);
    printf("bench_serve: %s, run %lld: %lld tokens, %lld events, %d x %d heads, M = %lld\n", path,
           (long long)run.run_id, (long long)run.n_tokens, (long long)run.n_events, run.cfg.n_layers,
           run.cfg.n_heads, (long long)rn_config_slots(&run.cfg));
    int ztop = 0;
    while (((int64_t)SRV_TILE_COLS << ztop) < run.n_tokens) ztop++;
    const int levels[] = { 0, 3, ztop };
    for (int i = 0; i < 3; i++) {
        if (i && levels[i] <= levels[i - 1]) continue;
        tiles(api, &run, levels[i], reps, (run.n_tokens - 1) / ((int64_t)SRV_TILE_COLS << levels[i]));
    }
    size_t bytes;
    args none = { { NULL }, { { 0 } } };
    double th = timed(api, "/api/heads", &none, &bytes);
    printf("  heads (events per head, %d heads): %.1f ms\n", run.cfg.n_layers * run.cfg.n_heads, 1e3 * th);
    args p = { { "pos", NULL }, { { 0 } } };
    snprintf(p.v[0], 32, "%lld", (long long)(run.n_tokens / 2));
    double tp = timed(api, "/api/pos", &p, &bytes);
    printf("  position (every head's accesses at one position): %.1f ms, %zu bytes\n", 1e3 * tp, bytes);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("  answer cache %.1f MiB; peak resident memory %.1f MiB\n", srv_api_cache_bytes(api) / 1048576.0,
           ru.ru_maxrss / 1024.0);
    srv_api_close(api);
    if (*made) {
        char side[300];
        unlink(made);
        snprintf(side, sizeof side, "%s-wal", made);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", made);
        unlink(side);
        rmdir(dir);
    }
    return 0;
}
