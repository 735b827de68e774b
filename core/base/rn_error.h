/* rn_error.h — error values shared by every ramtrace module.
 *
 * Library code never exits: a function that can fail returns an int status
 * (RN_OK or one of the codes below) and fills an rn_error with a one-line
 * message that names the file/option and the problem.  The CLI maps the code
 * to an exit status (RN_EINPUT -> 2, others -> 1).
 */
#ifndef RN_ERROR_H
#define RN_ERROR_H

#include <stddef.h>

enum {
    RN_OK = 0,
    RN_EINPUT = 2,   /* bad input: corrupt file, bad option, bad prompt, ... */
    RN_EIO = 3,      /* an I/O failure (disk full, unreadable, ...) */
    RN_ENOMEM = 4,   /* allocation failed */
    RN_EINTR = 5,    /* interrupted by a signal (Ctrl-C) */
    RN_EINTERNAL = 6 /* a library failure (SQLite, cairo, ...) */
};

#define RN_ERRMSG_LEN 512

typedef struct {
    int code;
    char msg[RN_ERRMSG_LEN];
} rn_error;

/* Set err (if non-NULL) to code and a printf-style message; returns code so
 * callers can write `return rn_seterr(err, RN_EINPUT, "...")`. */
int rn_seterr(rn_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix an existing message: "prefix: old message".  Returns err->code. */
int rn_preferr(rn_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Exit status the CLI should use for an error code. */
static inline int rn_exit_status(int code) { return code == RN_EINPUT ? 2 : (code ? 1 : 0); }

#endif
