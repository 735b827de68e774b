/* srv_cache.h — the server's answer cache: finished JSON bodies (tiles,
 * head lists, curves) by key, least recently used evicted first, bounded
 * in bytes.  The server's memory is bounded by this cache, not by the
 * trace.  Thread-safe (one mutex). */
#ifndef SRV_CACHE_H
#define SRV_CACHE_H

#include <stddef.h>

typedef struct srv_cache srv_cache;

/* A cache of at most max_bytes of bodies (keys included); NULL when out
 * of memory. */
srv_cache *srv_cache_new(size_t max_bytes);
void srv_cache_free(srv_cache *c);

/* A malloc'd copy of the body cached under key into *body, *len, and 1;
 * 0 when absent (or out of memory). */
int srv_cache_get(srv_cache *c, const char *key, char **body, size_t *len);

/* Cache a copy of body under key (replacing an entry of that key); a body
 * larger than a quarter of the cache is not kept. */
void srv_cache_put(srv_cache *c, const char *key, const char *body, size_t len);

/* Bytes held now. */
size_t srv_cache_bytes(srv_cache *c);

#endif
