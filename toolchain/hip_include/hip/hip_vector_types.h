// KernelVault: <hip/hip_vector_types.h> for nvcc, through kv_hip_to_cuda.h:
// float4, int2... with HIP's element-wise arithmetic.
#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#include_next <hip/hip_vector_types.h>
#else
#include "../kv_hip_to_cuda.h"
#endif
