// KernelVault: <hip/hip_bfloat16.h> (ROCm 5's hip_bfloat16 struct) for nvcc: hip_bfloat16 is
// cuda_bf16.h's __nv_bfloat16 here, set up by hip/hip_bf16.h.
#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#include_next <hip/hip_bfloat16.h>
#else
#include "hip_bf16.h"
#endif
