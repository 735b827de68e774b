/* fuzz.h — shared by the fuzz targets in tests/fuzz/ (docs/fuzzing.md).
 *
 * Each fuzz_NAME.c defines LLVMFuzzerTestOneInput (and, where it needs
 * set-up, LLVMFuzzerInitialize).  The same file is linked two ways: with
 * libFuzzer (`make fuzz`, clang) and with tests/fuzz/replay.c, a plain main
 * that feeds it every committed corpus and crash file (`make test`).
 *
 * A target fails by aborting (fuzz_check): a sanitizer report, a crash, or
 * a broken promise of the library (an error that is not one line, bad input
 * that is not RN_EINPUT, a result that disagrees with an independent
 * computation).
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Abort with a message naming the broken condition when cond is false. */
#define fuzz_check(cond, ...) \
    do { if (!(cond)) fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); } while (0)
void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

/* A failed library call on bad input: the code must be one of `allowed`
 * (a bit set of RN_* codes, e.g. FUZZ_CODE(RN_EINPUT)) and the message one
 * non-empty line. */
#define FUZZ_CODE(c) (1u << (c))
void fuzz_check_error(int rc, const rn_error *err, unsigned allowed, const char *what);

/* A per-process scratch directory (created on first use, removed with its
 * files when the process that created it exits); fuzz_path writes the
 * path of a file in it into the caller's buffer. */
const char *fuzz_dir(void);
void fuzz_path(char *buf, size_t cap, const char *name);

/* Write len bytes to path (whole file); aborts on failure (the scratch
 * directory is ours, so a failure is the harness's, not the input's). */
void fuzz_write_file(const char *path, const void *data, size_t len);

/* A reader of the fuzz input as a stream of decisions: once the input is
 * used up every read returns 0. */
typedef struct {
    const uint8_t *p;
    size_t n;
} fuzz_in;
uint8_t fuzz_u8(fuzz_in *in);
uint16_t fuzz_u16(fuzz_in *in);
uint32_t fuzz_u32(fuzz_in *in);

#endif
