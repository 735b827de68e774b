/* srv_cache.c — a byte-bounded LRU of response bodies (srv_cache.h).
 *
 * Entries sit on one doubly linked list, most recent first; lookup walks a
 * chained hash table of the keys.  Put evicts from the tail until the new
 * entry fits. */
#include "srv_cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKET 4096

typedef struct entry {
    struct entry *prev, *next;   /* LRU list */
    struct entry *chain;         /* hash bucket */
    char *key;
    char *body;
    size_t len, cost;
    uint64_t hash;
} entry;

struct srv_cache {
    pthread_mutex_t mu;
    entry *head, *tail;
    entry *bucket[NBUCKET];
    size_t bytes, max_bytes;
};

/* FNV-1a of a key. */
static uint64_t hash_key(const char *k)
{
    uint64_t h = 1469598103934665603ull;
    for (; *k; k++) h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return h;
}

srv_cache *srv_cache_new(size_t max_bytes)
{
    srv_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_init(&c->mu, NULL);
    c->max_bytes = max_bytes;
    return c;
}

static void unlink_lru(srv_cache *c, entry *e)
{
    if (e->prev) e->prev->next = e->next; else c->head = e->next;
    if (e->next) e->next->prev = e->prev; else c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(srv_cache *c, entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head) c->head->prev = e;
    c->head = e;
    if (!c->tail) c->tail = e;
}

static entry *find(srv_cache *c, const char *key, uint64_t h)
{
    for (entry *e = c->bucket[h % NBUCKET]; e; e = e->chain)
        if (e->hash == h && !strcmp(e->key, key)) return e;
    return NULL;
}

/* Remove e from the list and its bucket and free it. */
static void drop(srv_cache *c, entry *e)
{
    unlink_lru(c, e);
    entry **p = &c->bucket[e->hash % NBUCKET];
    while (*p != e) p = &(*p)->chain;
    *p = e->chain;
    c->bytes -= e->cost;
    free(e->key);
    free(e->body);
    free(e);
}

void srv_cache_free(srv_cache *c)
{
    if (!c) return;
    while (c->head) drop(c, c->head);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int srv_cache_get(srv_cache *c, const char *key, char **body, size_t *len)
{
    uint64_t h = hash_key(key);
    int hit = 0;
    pthread_mutex_lock(&c->mu);
    entry *e = find(c, key, h);
    if (e && (*body = malloc(e->len + 1))) {
        memcpy(*body, e->body, e->len + 1);
        *len = e->len;
        unlink_lru(c, e);
        push_front(c, e);
        hit = 1;
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

void srv_cache_put(srv_cache *c, const char *key, const char *body, size_t len)
{
    size_t cost = len + strlen(key) + sizeof(entry) + 2;
    if (cost > c->max_bytes / 4) return;
    entry *e = calloc(1, sizeof *e);
    if (!e) return;
    e->key = strdup(key);
    e->body = malloc(len + 1);
    if (!e->key || !e->body) { free(e->key); free(e->body); free(e); return; }
    memcpy(e->body, body, len);
    e->body[len] = 0;
    e->len = len;
    e->cost = cost;
    e->hash = hash_key(key);
    pthread_mutex_lock(&c->mu);
    entry *old = find(c, key, e->hash);
    if (old) drop(c, old);
    while (c->tail && c->bytes + cost > c->max_bytes) drop(c, c->tail);
    push_front(c, e);
    e->chain = c->bucket[e->hash % NBUCKET];
    c->bucket[e->hash % NBUCKET] = e;
    c->bytes += cost;
    pthread_mutex_unlock(&c->mu);
}

size_t srv_cache_bytes(srv_cache *c)
{
    pthread_mutex_lock(&c->mu);
    size_t b = c->bytes;
    pthread_mutex_unlock(&c->mu);
    return b;
}
