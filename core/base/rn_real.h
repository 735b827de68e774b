/* rn_real.h — the scalar type of the model's compute code.
 *
 * Normal builds use float.  The gradient-check test compiles the same compute
 * sources with -DRN_DOUBLE so that every parameter gradient can be compared
 * against central finite differences at 1e-5 relative error.  File I/O
 * (model.bin, safetensors) always stores IEEE float32 and is only built in
 * float mode.  BLAS calls go through the RN_GEMM/RN_GEMV macros below.
 */
#ifndef RN_REAL_H
#define RN_REAL_H

#include <cblas.h>

#ifdef RN_DOUBLE
typedef double rn_real;
#define RN_GEMM cblas_dgemm
#define RN_GEMV cblas_dgemv
#define RN_AXPY cblas_daxpy
#define RN_REAL_NAME "double"
#else
typedef float rn_real;
#define RN_GEMM cblas_sgemm
#define RN_GEMV cblas_sgemv
#define RN_AXPY cblas_saxpy
#define RN_REAL_NAME "float"
#endif

#endif
