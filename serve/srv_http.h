/* srv_http.h — `ramtrace serve`'s HTTP server: libmicrohttpd serving the
 * viewer's embedded page (srv_assets.h) and its JSON endpoints
 * (srv_api.h), GET only, read-only.
 *
 * Safety: the listening address is loopback unless the caller allows
 * another (the command needs --allow-remote for that); requests are
 * bounded (SRV_MAX_REQUEST bytes of request line and headers, no body
 * accepted); paths are looked up in the embedded table only, and any path
 * with a ".." segment (after percent-decoding) is refused; on a loopback
 * address the Host header must name loopback too (a page elsewhere cannot
 * reach the server through DNS rebinding); every answer carries a Content
 * Security Policy that allows no inline script. */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <stddef.h>

#include "rn_error.h"
#include "srv_api.h"

#define SRV_MAX_REQUEST (32 * 1024)

typedef struct srv_http srv_http;

typedef struct {
    const char *bind;      /* address to listen on (default 127.0.0.1) */
    int port;              /* 0: any free port */
    int allow_remote;      /* a non-loopback bind is refused without it */
    int threads;           /* worker threads (default 4) */
} srv_http_opts;

/* 1 when addr (numeric IPv4 or IPv6) is a loopback address; -1 when it is
 * not an address. */
int srv_addr_is_loopback(const char *addr);

/* Listen and serve api's endpoints in background threads.  RN_EINPUT for
 * a bad or non-loopback address (without allow_remote) or a port in use,
 * each one line naming the option. */
int srv_http_start(srv_api *api, const srv_http_opts *o, srv_http **out, rn_error *err);

/* The port listened on (the chosen one when o->port was 0). */
int srv_http_port(const srv_http *h);

/* Stop serving (waits for the requests in flight) and free. */
void srv_http_stop(srv_http *h);

#endif
