// KernelVault: <hip/hip_runtime.h> for nvcc. Maps HIP to CUDA through kv_hip_to_cuda.h.
// Under a HIP compiler (hipcc/clang -x hip) this folder is not meant to be on the include path;
// if it is, defer to ROCm's own header.
#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#include_next <hip/hip_runtime.h>
#else
#include "../kv_hip_to_cuda.h"
#endif
