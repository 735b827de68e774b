/* rn_atomic.h — write an output file all-or-nothing.
 *
 * Every output ramtrace writes (model.bin, safetensors, checkpoints, plots,
 * exports) goes to a temporary file beside the target, is flushed and
 * fsync'd, and only then renamed over the target.  An existing output is
 * never left half-written: on error, interrupt or crash the target is either
 * the old file or the complete new one.  Open temp files are registered so
 * a signal handler can remove them (rn_atomic_cleanup_all is
 * async-signal-safe); registration is thread-safe.  That registry is the
 * one deliberate piece of process-global mutable state in core/.
 *
 * What the output path names decides how it is written:
 *   - a symbolic link (or a chain of them) is followed: the temp file is
 *     made beside the link's final target and renamed over the target, so
 *     the link survives and keeps pointing where it did;
 *   - a character device or a FIFO (/dev/null, a named pipe) is written in
 *     place, and so is one of the process's own descriptors (/dev/stdout,
 *     /dev/stderr, /dev/fd/N, /proc/self/fd/N), through a duplicate of it:
 *     there is nothing to rename, and such a target cannot be all-or-nothing;
 *   - `-` is standard output for rn_atomic_open_text (text outputs: CSV,
 *     JSON, tables) and refused by rn_atomic_open (models, databases,
 *     pictures), with a message;
 *   - a directory, a block device or a socket is refused.
 */
#ifndef RN_ATOMIC_H
#define RN_ATOMIC_H

#include <stdio.h>

#include "rn_error.h"

typedef struct {
    FILE *f;              /* write here */
    char path[4096];      /* final path (symbolic links resolved) */
    char tmp[4096];       /* temporary path */
    int slot;             /* registry slot, -1 if none */
    int direct;           /* 1: writing in place (device, FIFO, stdout): no temp file */
} rn_atomic_file;

/* Create the temp file for path (or open a target written in place, see
 * above).  RN_EINPUT if the directory is missing or not writable, or the
 * target cannot be an output (message names path). */
int rn_atomic_open(rn_atomic_file *af, const char *path, rn_error *err);

/* The same, but `-` means standard output (for text outputs). */
int rn_atomic_open_text(rn_atomic_file *af, const char *path, rn_error *err);

/* Flush, fsync, close and rename over the target (direct targets: flush
 * and close; standard output itself stays open).  On failure (e.g. disk
 * full) the temp file is removed and the target untouched. */
int rn_atomic_commit(rn_atomic_file *af, rn_error *err);

/* The whole of data[0..len) as path, atomically (open, write, commit). */
int rn_atomic_write(const char *path, const void *data, size_t len, rn_error *err);

/* Close and remove the temp file; the target is untouched. */
void rn_atomic_abort(rn_atomic_file *af);

/* Remove every registered temp file (for signal handlers). */
void rn_atomic_cleanup_all(void);

/* Register / unregister a temp path created by other means (e.g. a file a
 * library writes by name).  Returns a slot or -1. */
int rn_atomic_register(const char *tmp);
void rn_atomic_unregister(int slot);

/* RN_EINPUT when out names the same existing file as in (a command must not
 * replace its own input, e.g. `export trace.db -o trace.db`). */
int rn_atomic_check_not_input(const char *in, const char *out, rn_error *err);

/* Fill tmp (cap bytes) with a unique temp name beside path. */
int rn_atomic_tmpname(const char *path, char *tmp, size_t cap, rn_error *err);

#endif
