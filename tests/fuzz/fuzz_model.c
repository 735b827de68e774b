/* fuzz_model.c — fuzz target: model.bin files (rn_model_load).
 *
 * Input: byte 0 is a flag byte, the rest the file.  With the flag's low bit
 * set, the header's checksum (bytes 32..39) is recomputed over the data
 * after the header before loading, so mutations get past the checksum and
 * reach the config, size and padding checks.  modelcheck.c says what
 * is checked. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "modelcheck.h"
#include "rn_checksum.h"

#define MB_HEADER 2176u /* core/model/rn_modelfile.c */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 22)) return 0;
    size_t n = size - 1;
    uint8_t *file = malloc(n ? n : 1);
    fuzz_check(file != NULL, "%s", "out of memory");
    memcpy(file, data + 1, n);
    if ((data[0] & 1) && n >= MB_HEADER) {
        uint64_t sum = rn_checksum64(file + MB_HEADER, n - MB_HEADER);
        for (int i = 0; i < 8; i++) file[32 + i] = (uint8_t)(sum >> (8 * i));
    }
    char path[512], other[512];
    fuzz_path(path, sizeof path, "model.bin");
    fuzz_path(other, sizeof other, "model-converted.safetensors");
    fuzz_write_file(path, file, n);
    free(file);
    fuzz_model_file(path, other);
    return 0;
}
