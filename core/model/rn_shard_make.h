/* rn_shard_make.h — encoding a text file into a set of shards
 * (`ramtrace tokenizer shards`, docs/shards.md).
 *
 * The ids are those the text path gives the same file (rn_tokenize of a
 * SentencePiece config: the tokenizer's BOS, then rn_spm_encode of the
 * text), made the same way: BOS, then rn_spm_encode of consecutive blocks
 * of the text, each ending at a newline, which for a tokenizer that
 * encodes line by line (rn_spm_by_line) is the same computation as one
 * call on the whole text.  Any other tokenizer gets the whole file in one
 * block.  The text is read in blocks, so memory stays at a block plus one
 * shard whatever the file's size.
 */
#ifndef RN_SHARD_MAKE_H
#define RN_SHARD_MAKE_H

#include <stdint.h>

#include "rn_error.h"

typedef struct {
    int64_t bytes_read;   /* bytes of text encoded so far */
    int64_t bytes_total;  /* the text file's size */
    int64_t tokens;       /* tokens so far (BOS included) */
    int64_t token_bytes;  /* the bytes of text they stand for (less than bytes_read when --max-tokens cut a block) */
    int shards;           /* shard files written */
    int64_t compressed;   /* their bytes */
} rn_shards_stats;

typedef struct {
    const char *tokenizer;   /* a SentencePiece .model */
    const char *text;        /* the text file */
    const char *dir;         /* output directory; must not exist */
    int64_t max_tokens;      /* stop after this many tokens (0: the whole text) */
    int64_t shard_tokens;    /* tokens per shard (the last may hold fewer) */
    uint32_t doc_sep;        /* recorded document separator byte, or RN_SHARD_NO_SEP */
    int level;               /* zstd level */
    void (*progress)(void *ctx, const rn_shards_stats *st); /* after each block and at the end; may be NULL */
    void *ctx;
} rn_shards_opts;

/* Encode o->text into shards under o->dir (written in a temp directory
 * beside it and renamed when complete: no half-made set).  *st gets the
 * totals.  RN_EINPUT naming the file or option for bad input (missing or
 * empty text, not a SentencePiece model, more than 65536 pieces, an
 * existing o->dir, shard_tokens outside 1..2^30). */
int rn_shards_make(const rn_shards_opts *o, rn_shards_stats *st, rn_error *err);

#endif
