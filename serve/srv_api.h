/* srv_api.h — the viewer's JSON endpoints over one trace file, read-only.
 *
 *   /api/info                      the file, the plot palettes, the limits
 *   /api/runs                      the runs
 *   /api/heads?run=R               traced heads: events per head, CAPE heads
 *   /api/tokens?run=R&b=B          token text of positions [B·4096, B·4096+4096)
 *   /api/tile?run&layer&head&z&t   one tile of the trace plot (srv_tile.h)
 *   /api/slot?run&layer&head&slot  the writes and reads of one slot
 *   /api/pos?run&pos               every head's accesses at one position
 *   /api/mrc?run[&layer&head]      the exact LRU miss-ratio curve (an_mrc.h)
 *   /api/sql?run&q                 read-only SQL, time- and row-limited
 *
 * run 0 (or absent) is the latest run.  Answers are JSON; a bad request is
 * status 400 with {"error": "one line"}.  Answers that cannot change (the
 * trace is opened read-only) are kept in a byte-bounded cache.  This layer
 * knows nothing of HTTP: arguments come through a lookup function, so the
 * tests and the benchmark call it directly. */
#ifndef SRV_API_H
#define SRV_API_H

#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"
#include "tr_query.h"

typedef struct srv_api srv_api;

typedef struct {
    size_t cache_bytes;          /* answer cache (default 64 MiB) */
    tr_query_limits sql;         /* SQL box bounds (default 5 s, 1000 rows) */
    volatile const int *stop;    /* raised on Ctrl-C (may be NULL) */
} srv_api_opts;

/* Open path (must be a readable trace: RN_EINPUT names the problem). */
int srv_api_open(const char *path, const srv_api_opts *o, srv_api **out, rn_error *err);
void srv_api_close(srv_api *a);

/* A request's argument by name, NULL when absent. */
typedef const char *(*srv_arg_fn)(void *cls, const char *name);

/* An answer: a malloc'd body of len bytes and an HTTP status. */
typedef struct {
    int status;
    char *body;
    size_t len;
} srv_reply;

/* Answer endpoint `path` (starting "/api/") with args; always fills *r
 * (an error is a JSON error body); returns 0, or RN_ENOMEM when not even
 * the error could be built. */
int srv_api_handle(srv_api *a, const char *path, srv_arg_fn args, void *cls, srv_reply *r);

/* Bytes in the answer cache. */
size_t srv_api_cache_bytes(srv_api *a);

#endif
