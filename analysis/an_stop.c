/* an_stop.c — the stop flag polled by long analysis loops (an_stop.h). */
#include "an_stop.h"

#include <stddef.h>

static volatile int *stop_flag;

void an_set_stop_flag(volatile int *stop) { stop_flag = stop; }

int an_stopped(void) { return stop_flag && *stop_flag; }
