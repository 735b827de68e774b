/* rn_version.h — the tool version recorded in model files and traces. */
#ifndef RN_VERSION_H
#define RN_VERSION_H
#define RAMTRACE_VERSION "0.1.0"
#endif
