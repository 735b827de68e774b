/* fuzz_safetensors.c — fuzz target: safetensors files (rn_model_load of a
 * `.safetensors` path).  Input: the whole file.  modelcheck.c says what
 * is checked. */
#include "fuzz.h"
#include "modelcheck.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 22)) return 0;
    char path[512], other[512];
    fuzz_path(path, sizeof path, "model.safetensors");
    fuzz_path(other, sizeof other, "model-converted.bin");
    fuzz_write_file(path, data, size);
    fuzz_model_file(path, other);
    return 0;
}
