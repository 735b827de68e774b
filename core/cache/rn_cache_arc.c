/* rn_cache_arc.c — ARC, Adaptive Replacement Cache (Megiddo & Modha,
 * FAST 2003, Fig. 4), followed case by case.  T1/T2 hold the cached keys
 * seen once / at least twice recently, B1/B2 are ghost lists of keys
 * evicted from them, and the target size p of T1 adapts on ghost hits.
 * One shared link array (a key is in at most one list); O(1) per access. */
#include <stdlib.h>

#include "rn_cache.h"
#include "rn_list.h"

enum { NONE = 0, T1, T2, B1, B2 };

typedef struct {
    double c, p;
    rn_links ln;
    rn_list l[5];      /* indexed by T1..B2 */
    uint8_t *where;
} arc;

static void arc_free(void *q)
{
    arc *a = q;
    if (!a) return;
    rn_links_free(&a->ln);
    free(a->where);
    free(a);
}

static void *arc_init(uint64_t capacity, uint32_t n_keys)
{
    arc *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->c = (double)capacity;
    for (int i = 0; i < 5; i++) rn_list_init(&a->l[i]);
    a->where = calloc(n_keys ? n_keys : 1, 1);
    if (!a->where || rn_links_alloc(&a->ln, n_keys)) { arc_free(a); return NULL; }
    return a;
}

static void move_to(arc *a, uint32_t k, int to)
{
    if (a->where[k]) rn_list_remove(&a->l[a->where[k]], &a->ln, k);
    a->where[k] = (uint8_t)to;
    if (to) rn_list_push_head(&a->l[to], &a->ln, k);
}

/* Drop k from every list (it is never x, which is in none in case IV). */
static void forget(arc *a, uint32_t k, rn_victims *v)
{
    move_to(a, k, NONE);
    rn_forget(v, k);
}

/* REPLACE(x, p): demote the LRU key of T1 to B1 or of T2 to B2. */
static void replace(arc *a, int x_in_b2, rn_victims *v)
{
    double t1 = (double)a->l[T1].size;
    int from_t1 = t1 >= 1 && ((x_in_b2 && t1 == a->p) || t1 > a->p);
    if (!from_t1 && a->l[T2].size == 0) from_t1 = 1; /* cannot happen under ARC's invariants */
    uint32_t t = from_t1 ? a->l[T1].tail : a->l[T2].tail;
    rn_victim(v, t);
    move_to(a, t, from_t1 ? B1 : B2);
}

static int arc_access(void *q, uint32_t x, uint32_t next, rn_victims *v)
{
    arc *a = q;
    (void)next;
    int w = a->where[x];
    if (w == T1 || w == T2) { move_to(a, x, T2); return 1; }          /* case I */
    double b1 = (double)a->l[B1].size, b2 = (double)a->l[B2].size;
    if (w == B1) {                                                     /* case II */
        double d = b1 >= b2 ? 1.0 : b2 / b1;
        a->p = a->p + d < a->c ? a->p + d : a->c;
        replace(a, 0, v);
        move_to(a, x, T2);
        return 0;
    }
    if (w == B2) {                                                     /* case III */
        double d = b2 >= b1 ? 1.0 : b1 / b2;
        a->p = a->p - d > 0 ? a->p - d : 0;
        replace(a, 1, v);
        move_to(a, x, T2);
        return 0;
    }
    /* case IV: x in none of the lists */
    uint64_t l1 = a->l[T1].size + a->l[B1].size;
    uint64_t tot = l1 + a->l[T2].size + a->l[B2].size;
    if ((double)l1 >= a->c) {                                           /* case A */
        if ((double)a->l[T1].size < a->c) {
            forget(a, a->l[B1].tail, v);
            replace(a, 0, v);
        } else {
            rn_victim(v, a->l[T1].tail);
            forget(a, a->l[T1].tail, v);
        }
    } else if ((double)tot >= a->c) {                                   /* case B */
        if ((double)tot >= 2 * a->c) forget(a, a->l[B2].tail, v);
        replace(a, 0, v);
    }
    move_to(a, x, T1);
    return 0;
}

/* |T1| + |T2| + |B1| + |B2| <= 2c (the paper's invariant; case IV keeps
 * |T1| + |B1| <= c and drops B2's oldest at 2c). */
static uint64_t arc_remembers(uint64_t capacity) { return 2 * capacity; }

const rn_policy rn_cache_arc = { "arc", "adaptive replacement cache (Megiddo & Modha)", 0,
                                  arc_init, arc_access, arc_free, arc_remembers };
