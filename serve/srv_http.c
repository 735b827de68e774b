/* srv_http.c — the HTTP side of `ramtrace serve` (srv_http.h), on
 * libmicrohttpd with its own thread pool.  The listening socket is made
 * here (so a port in use is one clear line, and port 0 reports the port
 * chosen); libmicrohttpd does the HTTP. */
#include "srv_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "srv_assets.h"

#define CSP "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
            "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

struct srv_http {
    struct MHD_Daemon *d;
    srv_api *api;
    int port;
    int check_host;   /* loopback: the Host header must be loopback too */
};

/* Per-request state through libmicrohttpd's calls (its con_cls). */
static char req_seen, req_with_body;

int srv_addr_is_loopback(const char *addr)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, addr, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, addr, &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
    return -1;
}

/* Is the Host header a loopback name (with any port)? */
static int host_is_loopback(const char *host)
{
    if (!host) return 0;
    static const char *const names[] = { "127.0.0.1", "localhost", "[::1]" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (!strncasecmp(host, names[i], n) && (host[n] == 0 || host[n] == ':')) return 1;
    }
    return 0;
}

static const char *get_arg(void *cls, const char *name)
{
    return MHD_lookup_connection_value(cls, MHD_GET_ARGUMENT_KIND, name);
}

/* Queue body (owned: freed by libmicrohttpd, or persistent when own == 0)
 * with the headers every answer carries. */
static enum MHD_Result send_body(struct MHD_Connection *c, int status, const char *type, void *body, size_t len,
                                 int own)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, own ? MHD_RESPMEM_MUST_FREE
                                                                            : MHD_RESPMEM_PERSISTENT);
    if (!r) { if (own) free(body); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Content-Security-Policy", CSP);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

/* A JSON error answer. */
static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *msg)
{
    size_t cap = strlen(msg) + 32;
    char *body = malloc(cap);
    if (!body) return MHD_NO;
    /* msgs here are fixed ASCII without quotes or backslashes */
    int len = snprintf(body, cap, "{\"error\":\"%s\"}\n", msg);
    return send_body(c, status, "application/json", body, (size_t)len, 1);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    srv_http *h = cls;
    if (!*con_cls) { *con_cls = &req_seen; return MHD_YES; }
    if (*upload_size) {   /* no request has a body: refuse it unread */
        *upload_size = 0;
        *con_cls = &req_with_body;
        return MHD_YES;
    }
    if (*con_cls == &req_with_body) return send_error(c, 413, "requests take no body");
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) return send_error(c, 405, "only GET is served");
    if (h->check_host && !host_is_loopback(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host")))
        return send_error(c, 403, "Host is not a loopback name");
    if (strstr(url, "..") || strchr(url, '\\') || url[0] != '/') return send_error(c, 400, "bad path");
    if (!strncmp(url, "/api/", 5)) {
        srv_reply rep;
        if (srv_api_handle(h->api, url, get_arg, c, &rep)) return send_error(c, 500, "out of memory");
        return send_body(c, rep.status, "application/json", rep.body, rep.len, 1);
    }
    const char *name = strcmp(url, "/") ? url : "/index.html";
    for (size_t i = 0; i < srv_n_assets; i++)
        if (!strcmp(name, srv_assets[i].name))
            return send_body(c, 200, srv_assets[i].type, (void *)srv_assets[i].data, srv_assets[i].len, 0);
    return send_error(c, 404, "not found");
}

/* A bound, listening, non-blocking socket on addr:port. */
static int listen_on(const char *addr, int port, rn_error *err)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        sl = sizeof *s4;
    } else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        sl = sizeof *s6;
    } else {
        return -rn_seterr(err, RN_EINPUT, "--bind: '%s' is not a numeric IPv4 or IPv6 address", addr);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0) return -rn_seterr(err, RN_EIO, "cannot make a socket: %s", strerror(errno));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 64)) {
        int e = errno;
        close(fd);
        if (e == EADDRINUSE)
            return -rn_seterr(err, RN_EINPUT, "--port: port %d on %s is in use (--port 0 picks a free one)", port,
                              addr);
        return -rn_seterr(err, RN_EINPUT, "--bind/--port: cannot listen on %s port %d: %s", addr, port,
                          strerror(e));
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

int srv_http_start(srv_api *api, const srv_http_opts *o, srv_http **out, rn_error *err)
{
    *out = NULL;
    const char *addr = o->bind ? o->bind : "127.0.0.1";
    int loop = srv_addr_is_loopback(addr);
    if (loop < 0) return rn_seterr(err, RN_EINPUT, "--bind: '%s' is not a numeric IPv4 or IPv6 address", addr);
    if (!loop && !o->allow_remote)
        return rn_seterr(err, RN_EINPUT, "--bind: %s is not a loopback address; other machines could read the "
                         "trace: add --allow-remote to mean it", addr);
    if (o->port < 0 || o->port > 65535) return rn_seterr(err, RN_EINPUT, "--port: %d is not in [0, 65535]", o->port);
    srv_http *h = calloc(1, sizeof *h);
    if (!h) return rn_seterr(err, RN_ENOMEM, "out of memory");
    int fd = listen_on(addr, o->port, err);
    if (fd < 0) { free(h); return -fd; }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    h->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                            : ((struct sockaddr_in6 *)&ss)->sin6_port);
    h->api = api;
    h->check_host = loop;
    unsigned threads = o->threads > 0 ? (unsigned)o->threads : 4;
    h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC |
                                (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
                            0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, fd,
                            MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                            (size_t)SRV_MAX_REQUEST, MHD_OPTION_CONNECTION_LIMIT, 64u,
                            MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    if (!h->d) {
        close(fd);
        free(h);
        return rn_seterr(err, RN_EINTERNAL, "cannot start the HTTP server on %s port %d", addr, o->port);
    }
    *out = h;
    return RN_OK;
}

int srv_http_port(const srv_http *h) { return h->port; }

void srv_http_stop(srv_http *h)
{
    if (!h) return;
    MHD_socket fd = MHD_quiesce_daemon(h->d);
    MHD_stop_daemon(h->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    free(h);
}
