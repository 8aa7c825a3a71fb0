// KernelVault: <hip/hip_cooperative_groups.h> for nvcc. HIP's cooperative_groups namespace mirrors
// CUDA's, so this is CUDA's header (thread_block, tiled_partition, grid sync...). Tiles are at most
// 32 threads wide here, 64 on CDNA.
#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#include_next <hip/hip_cooperative_groups.h>
#else
#include "../kv_hip_to_cuda.h"
#include <cooperative_groups.h>
#endif
