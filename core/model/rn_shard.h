/* rn_shard.h — pre-tokenised corpus shards: SentencePiece ids as uint16,
 * zstd-compressed, behind a small checked header (docs/shards.md).
 *
 * A corpus is encoded once (`ramtrace tokenizer shards`) into a directory
 * of shard files; `train --task text` and `eval --task text` read them in
 * place of the text and get the very ids the text would give (the same
 * rn_tokenize, BOS first, then the text's ids in order), without a
 * tokenizer pass and in a seventh of the text's bytes (docs/shards.md).
 * The header names the tokenizer by the checksum model.bin records for
 * it, so a shard is never read with another tokenizer.
 *
 * File layout (little-endian):
 *   0  8  magic "RAMNETSH"
 *   8  4  version (1)
 *  12  4  header size (64)
 *  16  4  vocabulary: the tokenizer's number of pieces (2..65536)
 *  20  4  document separator byte (0..255), or 0xFFFFFFFF for none
 *  24  8  the tokenizer's checksum (rn_checksum64 of its .model bytes)
 *  32  8  tokens in this shard (1..2^30)
 *  40  8  bytes of text those tokens stand for (their token bytes)
 *  48  4  index of the shard in its set (0, 1, ...)
 *  52  4  flags: bit 0 = the last shard of its set; other bits zero
 *  56  8  rn_checksum64 of bytes 0..56
 *  64  .  one zstd frame with its content size (2 * tokens) and checksum,
 *         holding the ids as uint16 little-endian, and nothing after it
 */
#ifndef RN_SHARD_H
#define RN_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "rn_config.h"
#include "rn_error.h"

#define RN_SHARD_MAGIC "RAMNETSH"
#define RN_SHARD_HEADER 64
#define RN_SHARD_NO_SEP 0xFFFFFFFFu
#define RN_SHARD_MAX_TOKENS ((uint64_t)1 << 30)

typedef struct {
    uint32_t vocab;        /* the tokenizer's pieces */
    uint32_t doc_sep;      /* separator byte, or RN_SHARD_NO_SEP */
    uint64_t tok_checksum; /* rn_spm_checksum of the tokenizer */
    uint64_t n_tokens;
    uint64_t n_bytes;
    uint32_t index;
    uint32_t last;         /* 1: the set's last shard */
} rn_shard_info;

/* 2 when path is a shard file (starts with the magic), 1 when it is a
 * directory (which rn_shards_load reads as a set), 0 for anything else,
 * unreadable paths included (the text loader then reports them). */
int rn_shard_is(const char *path);

/* Write ids[0..h->n_tokens) as the shard at path, atomically, compressed
 * at zstd level (1..22). */
int rn_shard_write(const char *path, const rn_shard_info *h, const uint16_t *ids, int level, rn_error *err);

/* Read and check the shard at path: its header (*h) and its ids (a
 * malloc'd array of h->n_tokens).  Every check of docs/shards.md, each an
 * RN_EINPUT naming path: truncated, bad magic, version or header size,
 * header checksum, fields out of range, a zstd frame that is not one
 * complete frame of exactly 2 * n_tokens bytes, corrupt compressed data,
 * an id at or past vocab. */
int rn_shard_read(const char *path, rn_shard_info *h, uint16_t **ids, rn_error *err);

/* Load a shard file or a directory of them (its *.rns files in name
 * order, which must be the indices 0..n-1 of one set, the last flagged)
 * for the SentencePiece config c: *ids (malloc'd, BOS first as in the
 * text), *n tokens.  Refused with one line: a config that is not
 * SentencePiece, a shard made with another tokenizer (checksum) or for
 * another vocabulary, a header whose byte count is not its tokens' bytes,
 * shards of different sets, more than INT32_MAX/2 tokens. */
int rn_shards_load(const char *path, const rn_config *c, int **ids, int64_t *n, rn_error *err);

#endif
