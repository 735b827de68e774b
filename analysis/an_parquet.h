/* an_parquet.h — a minimal Apache Parquet file writer: columns in, a file
 * out.  No Parquet library is packaged in Debian 12, so this writes the
 * format from its specification (github.com/apache/parquet-format:
 * parquet.thrift, Encodings.md) for the trace datasets of `ramtrace export
 * --format parquet` (an_pq_export.h); it knows nothing of traces.
 *
 * What it writes: flat schemas of REQUIRED columns (int32, uint32, int64,
 * float, double, UTF-8 strings); rows buffered into row groups; per column
 * chunk either a dictionary page (PLAIN) and data pages of RLE/bit-packed
 * dictionary indices (RLE_DICTIONARY), or, when the chunk's distinct values
 * outgrow the dictionary limits, PLAIN data pages (floats and doubles as
 * BYTE_STREAM_SPLIT where zstd compresses that better; 32-bit integers of
 * a column that asks for it as DELTA_BINARY_PACKED, an_pq_delta.h, where
 * every step between rows fits 32 bits; enum an_pq_enc); every page compressed
 * with zstd (libzstd); v1 data pages; the footer in the Thrift compact
 * protocol with per-chunk statistics (min_value / max_value in the type's
 * order, null_count 0; NaN left out of float ranges, a zero minimum written
 * as -0.0 and a zero maximum as +0.0, as the format asks) so readers skip
 * row groups by predicate.  A full row group is encoded and written by a
 * thread of its own while the caller appends the next one into a second
 * buffer; its column chunks are encoded and compressed in parallel
 * (OpenMP), then written in order. */
#ifndef AN_PARQUET_H
#define AN_PARQUET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rn_error.h"

enum an_pq_type { AN_PQ_INT32, AN_PQ_UINT32, AN_PQ_INT64, AN_PQ_FLOAT, AN_PQ_DOUBLE, AN_PQ_STRING };

/* A string value: len bytes at p (any bytes; readers expect UTF-8). */
typedef struct {
    const char *p;
    uint32_t len;
} an_pq_str;

/* A column's encoding: PLAIN (floats and doubles PLAIN or
 * BYTE_STREAM_SPLIT, whichever compresses a chunk's first rows smaller);
 * DICT, a dictionary for every chunk whose distinct values fit the limits
 * (PLAIN for the others); DELTA, DELTA_BINARY_PACKED for int32 / uint32
 * (PLAIN for a chunk with a step of 2^31 or more between rows); BEST, for
 * int32 / uint32, DICT or DELTA chunk by chunk, whichever compresses the
 * chunk's first rows (with the dictionary) smaller. */
enum an_pq_enc { AN_PQ_PLAIN, AN_PQ_DICT, AN_PQ_DELTA, AN_PQ_BEST };

typedef struct {
    const char *name;
    int type;      /* enum an_pq_type */
    int enc;       /* enum an_pq_enc */
    int zstd_level; /* of this column's pages (0: the writer's, an_pq_opts) */
} an_pq_column;

typedef struct {
    size_t group_rows;   /* rows per row group (0: 1M) */
    size_t page_rows;    /* rows per data page (0: 128K) */
    uint32_t dict_max;   /* most distinct values a dictionary holds (0: 65536) */
    size_t dict_bytes;   /* most bytes of a dictionary page (0: 1 MiB) */
    int zstd_level;      /* 0: 1 (fastest) */
    int threads;         /* columns encoded at once (0: 1) */
    const char *created_by; /* NULL: "ramtrace" */
} an_pq_opts;

typedef struct an_pq_writer an_pq_writer;

/* A writer of ncols columns (names and types copied) that writes to f from
 * its current position, which must be the start of the file. */
int an_pq_open(an_pq_writer **out, FILE *f, const an_pq_column *cols, int ncols, const an_pq_opts *o,
               rn_error *err);

/* Start another file on f with the writer *w of a file before (finished,
 * or abandoned after a failure), keeping its buffers: a writer's buffers
 * take tens of MB, and the pages the kernel maps for them fresh cost a
 * third of an export's CPU where each file had writers of its own.  *w
 * must have the same column names and types and the same group_rows and
 * dict_max; the columns' encodings and the other options may differ.
 * Otherwise (or with *w NULL) *w is freed and a new writer opened. */
int an_pq_reopen(an_pq_writer **w, FILE *f, const an_pq_column *cols, int ncols, const an_pq_opts *o,
                 rn_error *err);

/* Append n rows: cols[c] points to n values of column c's type (int32_t,
 * uint32_t, int64_t, float, double or an_pq_str).  The values are copied.
 * RN_EIO "write failed: <reason>" when a row group could not be written
 * (a group's failure in the background shows at the next full group or at
 * an_pq_finish). */
int an_pq_append(an_pq_writer *w, size_t n, const void *const *cols, rn_error *err);

/* Write the last row group and the footer (f is left open). */
int an_pq_finish(an_pq_writer *w, rn_error *err);

/* Wait for the row group the writer may be writing in the background, so
 * its file can be closed after a failure (an_pq_free waits too). */
void an_pq_abandon(an_pq_writer *w);

/* Rows appended, and bytes written (once an_pq_finish has returned). */
uint64_t an_pq_rows(const an_pq_writer *w);
uint64_t an_pq_bytes(const an_pq_writer *w);

void an_pq_free(an_pq_writer *w);

#endif
