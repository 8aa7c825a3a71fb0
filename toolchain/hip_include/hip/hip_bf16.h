// KernelVault: <hip/hip_bf16.h> (ROCm 6+) for nvcc, through kv_hip_to_cuda.h: HIP's bfloat16 types
// are cuda_bf16.h's; the intrinsics (__float2bfloat16, __bfloat162float, __hadd...) share names.
#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#include_next <hip/hip_bf16.h>
#else
#include "../kv_hip_to_cuda.h"
#include <cuda_bf16.h>
#ifndef KV_HIP_BF16_TYPES
#define KV_HIP_BF16_TYPES
typedef __nv_bfloat16 __hip_bfloat16;
typedef __nv_bfloat162 __hip_bfloat162;
typedef __nv_bfloat16 hip_bfloat16;  // ROCm 5's struct from hip/hip_bfloat16.h
#endif
#endif
