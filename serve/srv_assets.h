/* srv_assets.h — the viewer's static files, compiled into the binary from
 * serve/web/ (scripts/embed-assets writes the table at build time), so the
 * server reads no file but the trace and no URL can name a path on disk. */
#ifndef SRV_ASSETS_H
#define SRV_ASSETS_H

#include <stddef.h>

typedef struct {
    const char *name;   /* URL path: "/index.html", "/viewer.js", ... */
    const char *type;   /* Content-Type */
    const unsigned char *data;
    size_t len;
} srv_asset;

extern const srv_asset srv_assets[];
extern const size_t srv_n_assets;

#endif
