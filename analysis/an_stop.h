/* an_stop.h — the process's stop flag (Ctrl-C) as analysis loops see it.
 *
 * Most analysis is bounded by loading the events (which stops through the
 * trace readers, tr_set_stop_flag); loops that can run long on data
 * already loaded (the quadratic attribution matrix) poll an_stopped()
 * and return RN_EINTR.  The command sets the flag once at start-up. */
#ifndef AN_STOP_H
#define AN_STOP_H

/* Poll *stop from now on (NULL: never stop). */
void an_set_stop_flag(volatile int *stop);

/* Non-zero once the flag is raised. */
int an_stopped(void);

#endif
