/* fuzz_shard.c — fuzz target: shard files (rn_shard_read).
 *
 * Input: byte 0 is a flag byte, the rest the file.  With the flag's low bit
 * set, the header checksum (bytes 56..63) is recomputed before reading, so
 * mutations get past it and reach the field, frame and id checks.  A
 * refused file must be RN_EINPUT with one line; an accepted one must agree
 * with this file's own reading of the header, hold ids below the
 * vocabulary, and be written back (rn_shard_write) to a file that reads the
 * same. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "rn_checksum.h"
#include "rn_shard.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20)) return 0;
    size_t n = size - 1;
    uint8_t *file = malloc(n ? n : 1);
    fuzz_check(file != NULL, "%s", "out of memory");
    memcpy(file, data + 1, n);
    if ((data[0] & 1) && n >= RN_SHARD_HEADER) {
        uint64_t sum = rn_checksum64(file, 56);
        for (int i = 0; i < 8; i++) file[56 + i] = (uint8_t)(sum >> (8 * i));
    }
    char path[512], back[512];
    fuzz_path(path, sizeof path, "shard.rns");
    fuzz_path(back, sizeof back, "shard-back.rns");
    fuzz_write_file(path, file, n);
    rn_shard_info h, h2;
    uint16_t *ids, *ids2;
    rn_error err = { 0, "" };
    int rc = rn_shard_read(path, &h, &ids, &err);
    if (rc) {
        fuzz_check_error(rc, &err, FUZZ_CODE(RN_EINPUT), "rn_shard_read");
        free(file);
        return 0;
    }
    fuzz_check(n >= RN_SHARD_HEADER && !memcmp(file, RN_SHARD_MAGIC, 8), "%s", "accepted without the magic");
    fuzz_check(h.vocab == le(file + 16, 4) && h.n_tokens == le(file + 32, 8) && h.n_bytes == le(file + 40, 8) &&
                   h.index == le(file + 48, 4) && h.tok_checksum == le(file + 24, 8),
               "%s", "header fields differ from the file's");
    for (uint64_t i = 0; i < h.n_tokens; i++) fuzz_check(ids[i] < h.vocab, "id %u at %llu", ids[i], (unsigned long long)i);
    rc = rn_shard_write(back, &h, ids, 1, &err);
    fuzz_check(rc == RN_OK, "write back: %s", err.msg);
    rc = rn_shard_read(back, &h2, &ids2, &err);
    fuzz_check(rc == RN_OK && !memcmp(&h, &h2, sizeof h) && !memcmp(ids, ids2, (size_t)h.n_tokens * 2), "%s",
               "the written-back shard reads differently");
    free(ids2);
    free(ids);
    free(file);
    return 0;
}
