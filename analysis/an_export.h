/* an_export.h — exporting a run's accesses for other cache simulators.
 *
 * oracleGeneral (libCacheSim's binary trace format): packed little-endian
 * 24-byte records, one per access in replay order (pos, layer, head, op,
 * rank):
 *   u32 time      the token position
 *   u64 obj_id    (layer << 40) | (head << 32) | slot   (an_pack_id)
 *   u32 size      (d_v + 1) · 4 bytes: a slot's values and its normaliser
 *   i64 next      1-based index of the next record with the same obj_id,
 *                 −1 when there is none
 * CSV: a header line, then index,time,layer,head,slot,op,obj_id,next
 * (op "w" or "r") with the same 1-based index and next conventions.
 */
#ifndef AN_EXPORT_H
#define AN_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "an_stream.h"
#include "rn_error.h"

#define AN_OG_RECORD 24

/* AN_EXPORT_PARQUET is a dataset directory, written by an_pq_export
 * (an_pq_export.h), not by an_export_write. */
enum { AN_EXPORT_ORACLEGENERAL = 0, AN_EXPORT_CSV = 1, AN_EXPORT_PARQUET = 2 };
int an_export_format_parse(const char *s, int *fmt, rn_error *err);

/* Write the events (any order; selected by ops) in replay order to f.  A
 * failed write is RN_EIO "write failed: <reason>"; the caller, who knows
 * the file's name, prefixes it.  stop (NULL: none) is polled between the
 * phases and every 65536 rows; once it is up the write ends early with
 * RN_EINTR, and what was written is to be discarded. */
int an_export_write(FILE *f, int fmt, const tr_event *ev, size_t n, const rn_config *cfg, int ops,
                    const volatile int *stop, rn_error *err);

/* Several runs as one stream (`export --all-runs`, an_runset.h): the runs
 * are written one after another, each with its own next uses (a run's
 * objects are its own: no next reaches into another run), run k of the
 * set as the part with index0 = the records written before it, time0 =
 * the tokens of the runs before it (so time never goes back), seq = k (in
 * the top 16 bits of every object id: obj_id = seq << 48 | layer << 40 |
 * head << 32 | slot) and the CSV header with the first part only. */
typedef struct {
    uint64_t index0;
    int64_t time0;
    uint64_t seq;
    int header;
} an_export_part;

/* an_export_write of one part. */
int an_export_write_part(FILE *f, int fmt, const tr_event *ev, size_t n, const rn_config *cfg, int ops,
                         const an_export_part *pt, const volatile int *stop, rn_error *err);

/* One decoded oracleGeneral record. */
typedef struct {
    uint32_t time;
    uint64_t obj_id;
    uint32_t size;
    int64_t next;
} an_og_record;

/* Decode record i of a buffer of oracleGeneral bytes. */
void an_og_decode(const unsigned char *buf, size_t i, an_og_record *r);

#endif
