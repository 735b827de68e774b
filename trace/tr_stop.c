/* tr_stop.c — the stop flag read connections poll (tr_stop.h). */
#include "tr_stop.h"

#include <stddef.h>

static volatile int *stop_flag;

void tr_set_stop_flag(volatile int *stop) { stop_flag = stop; }

/* SQLite progress handler: a non-zero return interrupts the statement. */
static int stop_requested(void *unused)
{
    (void)unused;
    return stop_flag && *stop_flag;
}

int tr_stop_requested(void) { return stop_flag && *stop_flag; }

void tr_watch_stop(sqlite3 *db)
{
    /* Every 1000 VM instructions: well under a millisecond apart, and the
     * call is too rare to measure against the work it interleaves. */
    sqlite3_progress_handler(db, 1000, stop_requested, NULL);
}
