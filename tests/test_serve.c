/* test_serve.c — `ramtrace serve`: the HTTP server in-process on a free
 * port, spoken to over raw sockets (so paths reach it unnormalised), and
 * the command's refusals.  Checks: only the embedded files are served (no
 * `..`, raw or percent-encoded), requests are bounded and GET-only, the
 * Host check, JSON escaping of trace text, tiles against an independent
 * computation from the reader, the SQL box's read-only connection, time
 * limit and row cap, and one-line errors for a missing or corrupt trace, a
 * port in use and a non-loopback address. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rn_rows.h"
#include "srv_api.h"
#include "srv_http.h"
#include "srv_tile.h"
#include "th.h"
#include "tr_reader.h"

#define NAME "<script>alert(1)</script> \"quoted\" & more"

static char db[512];
static srv_api *api;
static srv_http *http;

static int setup(void)
{
    snprintf(db, sizeof db, "%s", th_path("srv_viewer.db"));
    const char *prompt = th_path("srv_prompt.txt");
    const char text[] = "In the beginning <b>God</b> created \"the heaven\" & the earth.\n";
    if (th_write_file(prompt, text, sizeof text - 1)) return 1;
    if (th_run("%s trace samples/kjv.bin %s -o %s --name '%s' -j 1", th_bin(), prompt, db, NAME)) return 1;
    rn_error err = { 0 };
    srv_api_opts o = { 8u << 20, { 0.3, 7 }, NULL };
    srv_http_opts ho = { "127.0.0.1", 0, 0, 2 };
    if (srv_api_open(db, &o, &api, &err) || srv_http_start(api, &ho, &http, &err)) {
        fprintf(stderr, "test_serve: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static int teardown(void)
{
    srv_http_stop(http);
    srv_api_close(api);
    return 0;
}
TH_SUITE(serve, setup, teardown);

/* Send raw bytes to the server; the answer (malloc'd) and its status. */
static char *request(const char *raw, size_t len, int *status)
{
    *status = -1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)srv_http_port(http)) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) { if (fd >= 0) close(fd); return NULL; }
    for (size_t off = 0; off < len;) {
        ssize_t k = send(fd, raw + off, len - off, MSG_NOSIGNAL);
        if (k <= 0) break;
        off += (size_t)k;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
        ssize_t k = recv(fd, buf + n, cap - n - 1, 0);
        if (k <= 0) break;
        n += (size_t)k;
    }
    buf[n] = 0;
    close(fd);
    sscanf(buf, "HTTP/1.%*d %d", status);
    return buf;
}

/* GET path with a loopback Host; the body (after the headers) in *body. */
static char *get(const char *path, int *status, const char **body)
{
    char req[4096];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    char *r = request(req, (size_t)n, status);
    const char *b = r ? strstr(r, "\r\n\r\n") : NULL;
    *body = b ? b + 4 : "";
    return r;
}

TH_TEST(test_serve_files, "serve: the page and its files are served, nothing else")
{
    int st;
    const char *body;
    char *r = get("/", &st, &body);
    CU_ASSERT_EQUAL(st, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, "<script src=\"/viewer.js\"></script>"));
    CU_ASSERT(r && strstr(r, "Content-Security-Policy: default-src 'none'; script-src 'self'"));
    free(r);
    r = get("/viewer.js", &st, &body);
    CU_ASSERT_EQUAL(st, 200);
    CU_ASSERT(r && strstr(r, "Content-Type: text/javascript"));
    free(r);
    static const char *const bad[] = { "/../Makefile", "/%2e%2e/Makefile", "/%2E%2E%2FMakefile", "/..%2fMakefile",
                                       "/api/../../Makefile", "/x/..%5c..%5cMakefile", "/.%2e/.%2e/etc/passwd",
                                       "/%252e%252e/Makefile" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = get(bad[i], &st, &body);
        CU_ASSERT(st == 400 || st == 404);
        CU_ASSERT_PTR_NULL(strstr(body, "CFLAGS"));
        CU_ASSERT_PTR_NULL(strstr(body, "root:"));
        CU_ASSERT_PTR_NOT_NULL(strstr(body, "\"error\""));
        free(r);
    }
    static const char *const missing[] = { "//etc/passwd", "/Makefile", "/serve/srv_http.c", "/web/viewer.js" };
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        r = get(missing[i], &st, &body);
        CU_ASSERT_EQUAL(st, 404);
        free(r);
    }
}

TH_TEST(test_serve_limits, "serve: GET only, no bodies, bounded headers, Host checked, malformed requests")
{
    int st;
    const char post[] = "POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    free(request(post, sizeof post - 1, &st));
    CU_ASSERT_EQUAL(st, 405);
    const char body[] = "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello";
    free(request(body, sizeof body - 1, &st));
    CU_ASSERT_EQUAL(st, 413);
    const char evil[] = "GET /api/runs HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n";
    free(request(evil, sizeof evil - 1, &st));
    CU_ASSERT_EQUAL(st, 403);
    const char junk[] = "\x01\x02 garbage line\r\n\r\n";
    free(request(junk, sizeof junk - 1, &st));
    CU_ASSERT(st == 400 || st == -1);
    /* headers past the limit */
    size_t big = SRV_MAX_REQUEST * 2;
    char *huge = malloc(big + 200);
    int n = sprintf(huge, "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ");
    memset(huge + n, 'a', big);
    n += (int)big;
    n += sprintf(huge + n, "\r\nConnection: close\r\n\r\n");
    free(request(huge, (size_t)n, &st));
    CU_ASSERT(st >= 400 && st < 500);
    free(huge);
    /* and it still serves */
    const char *b;
    free(get("/api/runs", &st, &b));
    CU_ASSERT_EQUAL(st, 200);
}

TH_TEST(test_serve_json, "serve: trace text is escaped in JSON; bad parameters are JSON errors")
{
    int st;
    const char *body;
    char *r = get("/api/runs", &st, &body);
    CU_ASSERT_EQUAL(st, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, "\"name\":\"<script>alert(1)</script> \\\"quoted\\\" & more\""));
    free(r);
    r = get("/api/tokens?b=0", &st, &body);
    CU_ASSERT_EQUAL(st, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, "\"\\\"\"]"));   /* the piece '"' as a JSON string */
    free(r);
    static const char *const bad[] = { "/api/tile?layer=9&head=0&z=0&t=0", "/api/tile?layer=1&head=2&z=0",
                                       "/api/tile?layer=1&head=2&z=0&t=99", "/api/tile?layer=x&head=2&z=0&t=0",
                                       "/api/slot?layer=1&head=2&slot=100000", "/api/heads?run=7",
                                       "/api/pos?pos=-1", "/api/sql", "/api/mrc?layer=1&head=9" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = get(bad[i], &st, &body);
        CU_ASSERT_EQUAL(st, 400);
        CU_ASSERT_EQUAL(strncmp(body, "{\"error\":\"", 10), 0);
        CU_ASSERT(strchr(body, '\n') == body + strlen(body) - 1);   /* one line */
        free(r);
    }
    r = get("/api/nothing", &st, &body);
    CU_ASSERT_EQUAL(st, 404);
    free(r);
}

/* Decode base64 (test's own, no padding checks). */
static size_t unbase64(const char *s, size_t n, unsigned char *out)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t k = 0;
    uint32_t v = 0;
    int bits = 0;
    for (size_t i = 0; i < n && s[i] != '='; i++) {
        v = v << 6 | (uint32_t)(strchr(A, s[i]) - A);
        bits += 6;
        if (bits >= 8) { bits -= 8; out[k++] = (unsigned char)(v >> bits); }
    }
    return k;
}

/* The latest run of the test trace and the events of one of its heads
 * (malloc'd), read with the reader: what the answers are checked against.
 * With toks, also the run's tokens.  0 on success. */
static int read_head(int layer, int head, tr_run_info *run, tr_event **ev, size_t *n, tr_token **toks,
                     int64_t *nt)
{
    rn_error err = { 0 };
    tr_db *d;
    if (tr_open_read(db, &d, &err)) return 1;
    tr_filter f = tr_filter_all();
    f.layer = layer;
    f.head = head;
    int rc = tr_run_get(d, 0, run, &err) || tr_load_events(d, run->run_id, &f, ev, n, &err) ||
             (toks && tr_load_tokens(d, run->run_id, toks, nt, &err));
    tr_close(d);
    return rc;
}

TH_TEST(test_serve_tiles, "serve: raw and binned tiles match the events the reader loads")
{
    tr_run_info run;
    tr_event *ev;
    size_t n;
    CU_ASSERT_EQUAL_FATAL(read_head(1, 2, &run, &ev, &n, NULL, NULL), 0);
    CU_ASSERT(n > 0);
    int st;
    const char *body;
    char *r = get("/api/tile?layer=1&head=2&z=0&t=0", &st, &body);
    CU_ASSERT_EQUAL(st, 200);
    char want[64];
    snprintf(want, sizeof want, "\"n\":%zu}", n);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, want));
    snprintf(want, sizeof want, "\"ev\":[%d,%u,%d,%d,%u,", ev[0].pos, ev[0].slot, ev[0].op, ev[0].rank, ev[0].addr);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, want));
    free(r);
    /* level 2: columns of 4 positions; the grid against a direct binning */
    const int64_t M = rn_config_slots(&run.cfg), rows = M;   /* M <= SRV_TILE_ROWS: one slot a row */
    CU_ASSERT_FATAL(M <= SRV_TILE_ROWS);
    unsigned char *expect = calloc((size_t)(SRV_TILE_COLS * rows), 1);
    float *best = calloc((size_t)(SRV_TILE_COLS * rows), sizeof *best);
    for (size_t i = 0; i < n; i++) {
        size_t c = (size_t)(ev[i].pos / 4) * (size_t)rows + ev[i].slot;
        if (!expect[c] || ev[i].weight > best[c]) {
            best[c] = ev[i].weight;
            float w = ev[i].weight > 1 ? 1 : ev[i].weight;
            expect[c] = (unsigned char)((ev[i].op ? 128 : 0) + 1 + (int)(w * 126.0f + 0.5f));
        }
    }
    r = get("/api/tile?layer=1&head=2&z=2&t=0", &st, &body);
    CU_ASSERT_EQUAL(st, 200);
    const char *g = strstr(body, "\"grid\":\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    g += 8;
    unsigned char *grid = malloc((size_t)(SRV_TILE_COLS * rows) + 4);
    size_t got = unbase64(g, strcspn(g, "\""), grid);
    CU_ASSERT_EQUAL(got, (size_t)(SRV_TILE_COLS * rows));
    CU_ASSERT_EQUAL(memcmp(grid, expect, (size_t)(SRV_TILE_COLS * rows)), 0);
    free(grid); free(expect); free(best); free(r); free(ev);
}

TH_TEST(test_serve_slot_pos, "serve: a slot's writers and readers and a position's accesses match the reader, with token text")
{
    tr_run_info run;
    tr_event *ev;
    size_t n;
    tr_token *toks;
    int64_t nt;
    CU_ASSERT_EQUAL_FATAL(read_head(2, 1, &run, &ev, &n, &toks, &nt), 0);
    CU_ASSERT_FATAL(n > 0 && nt > 0);
    /* the slot of the last event: its writes and reads counted directly */
    uint32_t slot = ev[n - 1].slot;
    int64_t nw = 0, nr = 0, first_w = -1;
    for (size_t i = 0; i < n; i++)
        if (ev[i].slot == slot) {
            if (ev[i].op == 0 && first_w < 0) first_w = ev[i].pos;
            ev[i].op ? nr++ : nw++;
        }
    char path[128], want[160];
    snprintf(path, sizeof path, "/api/slot?layer=2&head=1&slot=%u", slot);
    int st;
    const char *body;
    char *r = get(path, &st, &body);
    CU_ASSERT_EQUAL(st, 200);
    snprintf(want, sizeof want, "\"n_writes\":%lld,\"reads\":[", (long long)nw);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, want));
    snprintf(want, sizeof want, "\"n_reads\":%lld}", (long long)nr);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, want));
    if (first_w >= 0) {   /* the first writer's position and token text */
        snprintf(want, sizeof want, "\"writes\":[{\"pos\":%lld,", (long long)first_w);
        CU_ASSERT_PTR_NOT_NULL(strstr(body, want));
        const char *tok = strstr(body, "\"tok\":\"");
        CU_ASSERT_PTR_NOT_NULL_FATAL(tok);
        char *esc = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&esc, &len);
        rn_json_string(m, toks[first_w].piece);   /* the piece as a JSON string */
        fclose(m);
        CU_ASSERT_EQUAL(strncmp(tok + 6, esc, len), 0);
        free(esc);
    }
    free(r);
    /* a position: every traced head's accesses there (K of each op) and its token */
    int64_t pos = nt / 2;
    snprintf(path, sizeof path, "/api/pos?pos=%lld", (long long)pos);
    r = get(path, &st, &body);
    CU_ASSERT_EQUAL(st, 200);
    const char *a = strstr(body, "\"ev\":[");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    int commas = 0;
    for (const char *c = a; *c && *c != ']'; c++) commas += *c == ',';
    CU_ASSERT_EQUAL(commas + 1, run.cfg.n_layers * run.cfg.n_heads * 2 * run.cfg.top_k * 7);
    free(r);
    free(ev);
    free(toks);
}

TH_TEST(test_serve_sql, "serve: the SQL box is read-only, time-limited and row-capped")
{
    int st;
    const char *body;
    char *r = get("/api/sql?q=SELECT%20name%20FROM%20runs_this", &st, &body);
    CU_ASSERT_EQUAL(st, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, "\"columns\": [\"name\"]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(body, "\"truncated\":false"));
    free(r);
    r = get("/api/sql?q=DELETE%20FROM%20runs", &st, &body);
    CU_ASSERT_EQUAL(st, 400);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, "read-only"));
    free(r);
    r = get("/api/sql?q=SELECT%20nope", &st, &body);
    CU_ASSERT_EQUAL(st, 400);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, "no such column"));
    free(r);
    r = get("/api/sql?q=SELECT%20pos%20FROM%20tokens", &st, &body);
    CU_ASSERT_EQUAL(st, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, "\"truncated\":true,\"max_rows\":7"));
    CU_ASSERT_PTR_NOT_NULL(strstr(body, "{\"pos\": 6}"));
    CU_ASSERT_PTR_NULL(strstr(body, "{\"pos\": 7}"));
    free(r);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r = get("/api/sql?q=WITH%20RECURSIVE%20c(x)%20AS%20(SELECT%201%20UNION%20ALL%20SELECT%20x%2B1%20FROM%20c)"
            "%20SELECT%20count(*)%20FROM%20c", &st, &body);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    CU_ASSERT_EQUAL(st, 400);
    CU_ASSERT_PTR_NOT_NULL(strstr(body, "ran past the 0.3 s limit"));
    CU_ASSERT(s < 5.0);
    free(r);
    r = get("/api/runs", &st, &body);   /* still serving */
    CU_ASSERT_EQUAL(st, 200);
    free(r);
}

TH_TEST(test_serve_cli, "serve: one-line refusals; a non-loopback bind warns; Ctrl-C stops cleanly")
{
    CU_ASSERT_EQUAL(th_run("%s serve %s --port 0", th_bin(), th_path("srv_missing.db")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "srv_missing.db"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    const char *junk = th_path("srv_junk.db");
    CU_ASSERT_EQUAL(th_write_file(junk, "not a database at all, just text\n", 33), 0);
    CU_ASSERT_EQUAL(th_run("%s serve %s --port 0", th_bin(), junk), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s serve %s --port %d", th_bin(), db, srv_http_port(http)), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "in use"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s serve %s --port 0 --bind 0.0.0.0", th_bin(), db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--allow-remote"));
    CU_ASSERT_EQUAL(th_run("%s serve %s --port 0 --bind localhost", th_bin(), db), 2);
    CU_ASSERT_EQUAL(th_run("%s serve %s --port 99999", th_bin(), db), 2);
    /* an explicit remote bind serves with a warning; SIGINT stops it with status 0 */
    CU_ASSERT_EQUAL(th_run("timeout --preserve-status -s INT 1 %s serve %s --port 0 --bind 0.0.0.0 --allow-remote",
                           th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "warning: listening on 0.0.0.0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "stopped"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "http://0.0.0.0:"));
}
