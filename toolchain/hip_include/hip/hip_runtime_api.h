// KernelVault: <hip/hip_runtime_api.h> for nvcc, through kv_hip_to_cuda.h:
// the HIP runtime API (host side).
#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#include_next <hip/hip_runtime_api.h>
#else
#include "../kv_hip_to_cuda.h"
#endif
