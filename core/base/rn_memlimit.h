/* rn_memlimit.h — the most memory ramtrace lets one model take.
 *
 * A model file is small, but the state it asks for need not be: a 15 KB
 * model.bin with M = 2^28 slots wants gigabytes of dense memory state.
 * Every allocation whose size a model's config decides (the inference
 * state and scratch, the training workspace, the parameter block) is
 * checked against one limit before it is made, and refused with a one-line
 * RN_EINPUT message that gives the size needed and the limit, instead of
 * swapping the machine or being killed by the OOM killer.
 *
 * The limit is half the machine's physical memory
 * (sysconf(_SC_PHYS_PAGES) · page size), or the environment variable
 * RAMTRACE_MEM_LIMIT (bytes, or a number with a K/M/G/T suffix, powers of
 * 1024), which is capped at the physical memory.  docs/inference.md.
 */
#ifndef RN_MEMLIMIT_H
#define RN_MEMLIMIT_H

#include "rn_error.h"

typedef struct {
    double bytes;     /* the limit in bytes */
    double phys;      /* physical memory in bytes (0 if unknown) */
    char why[128];    /* where the limit comes from, for messages */
} rn_memlimit;

/* The limit now in force.  RN_EINPUT when RAMTRACE_MEM_LIMIT is set but is
 * not a size. */
int rn_memlimit_get(rn_memlimit *lim, rn_error *err);

/* RN_OK when `bytes` fit the limit, else RN_EINPUT with the one-line
 * message "WHAT needs SIZE but the memory limit is LIMIT (WHY)"; `what`
 * says what needs it ("model memory state (L*H*M*(d_v+1) = 4e+09 floats)"). */
int rn_memlimit_check(const char *what, double bytes, rn_error *err);

/* Format a byte count as "2.0 GiB" / "512.0 MiB" / "300 bytes" into buf. */
const char *rn_memlimit_fmt(double bytes, char *buf, size_t cap);

#endif
