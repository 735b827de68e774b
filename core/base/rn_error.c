/* rn_error.c — the error-value helpers declared in rn_error.h. */
#include "rn_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* An error message is one line: fold line breaks and tabs (e.g. from an SQL
 * text quoted in a library's message) into spaces. */
static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '\t') *s = ' ';
}

int rn_seterr(rn_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        one_line(err->msg);
        err->code = code;
    }
    return code;
}

int rn_preferr(rn_error *err, const char *fmt, ...)
{
    if (!err) return RN_EINTERNAL;
    char pre[RN_ERRMSG_LEN], old[RN_ERRMSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s: %s", pre, old);
    one_line(err->msg);
    return err->code;
}
