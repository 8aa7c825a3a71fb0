// KernelVault: <hip/hip_fp16.h> for nvcc, through kv_hip_to_cuda.h:
// __half, __half2, half, half2 and their intrinsics, which cuda_fp16.h names as HIP does.
#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#include_next <hip/hip_fp16.h>
#else
#include "../kv_hip_to_cuda.h"
#include <cuda_fp16.h>
#endif
