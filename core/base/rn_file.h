/* rn_file.h — reading a whole input file into memory. */
#ifndef RN_FILE_H
#define RN_FILE_H

#include <stddef.h>

#include "rn_error.h"

/* Read the file at path ("-": standard input) into a malloc'd
 * NUL-terminated buffer of *len bytes.  RN_EINPUT (naming the path) when it cannot be opened, is a
 * directory, or holds more than max bytes; RN_EIO on a read error. */
int rn_read_file_max(const char *path, size_t max, char **data, size_t *len, rn_error *err);

/* The same with a bound of 1 GiB. */
int rn_read_file(const char *path, char **data, size_t *len, rn_error *err);

#endif
