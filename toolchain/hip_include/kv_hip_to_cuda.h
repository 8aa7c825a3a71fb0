// KernelVault HIP-to-CUDA portability header: compile HIP kernels with nvcc, run them on NVIDIA.
//
// Written for this project. The toolchain puts toolchain/hip_include first on nvcc's include path,
// so a candidate's `#include <hip/hip_runtime.h>` lands here instead of in ROCm:
//     nvcc -x cu -std=c++17 -O3 -arch=sm_90 -shared -Xcompiler -fPIC -I toolchain/hip_include k.hip
//
// What it maps (the subset of HIP that kernels and their launch code use):
//   - runtime: hipError_t and its values, hipGetLastError/hipPeekAtLastError/hipGetErrorString,
//     memory (hipMalloc/hipFree/hipMemcpy*/hipMemset*, host and managed memory, symbols), streams,
//     events, device queries and attributes, function attributes, occupancy;
//   - launches: hipLaunchKernelGGL, HIP_KERNEL_NAME, hipLaunchKernel (`<<<>>>` is native to both);
//   - device: HIP's mask-less warp functions __shfl/__shfl_up/__shfl_down/__shfl_xor (optional width,
//     default the warp size), __ballot (64-bit result, as in HIP), __any/__all, __lane_id; the HIP
//     atomics CUDA lacks (float/double min/max/sub/CAS, unsigned long overloads, unsafeAtomicAdd);
//     HIP's vector-type arithmetic (float4 + float4, float4 * s...); hipThreadIdx_x-style legacy
//     macros; HIP_DYNAMIC_SHARED; __builtin_nontemporal_load/store;
//   - types, as in ROCm only through their own headers (cuda_bf16.h alone adds ~1 s to a build):
//     hip/hip_fp16.h gives __half/half2 (cuda_fp16.h); hip/hip_bf16.h and hip/hip_bfloat16.h give
//     __hip_bfloat16/__hip_bfloat162/hip_bfloat16 as cuda_bf16.h's __nv_bfloat16/__nv_bfloat162.
//     The intrinsics (__float2half, __hadd, __float2bfloat16...) share their names with CUDA's.
// Native in CUDA and left alone: __global__/__device__/__shared__, dim3, threadIdx..., warpSize,
// __syncthreads, __launch_bounds__, atomicAdd & co, the *_sync warp functions, math functions.
//
// Semantics that differ and are NOT papered over:
//   - warpSize is 32 here and 64 on CDNA. Code written for 64 lanes compiles but computes wrong
//     results (a __shfl_xor loop starting at offset 32, a 64-bit __ballot mask read as full, shared
//     arrays sized blockDim/64). Write warpSize-agnostic code.
//   - __launch_bounds__(N, M): M is min blocks per SM here, min waves per EU on AMD.
//   - AMD-only builtins (__builtin_amdgcn_*, MFMA/WMMA, DPP, __hip_ds_*) stop the build with
//     "AMD-only: <name> is not portable to NVIDIA" (kv_amd_only_builtins.h).
//   - Not provided: hipModule* (driver-level code objects), hipGraph*, textures, hipcub/rocprim,
//     HIP fp8 types (the fnuz formats of gfx942 have no NVIDIA equivalent), AMD-specific fields of
//     hipDeviceProp_t (gcnArchName...). Using them is a plain "undefined identifier" compile error.
//
// The header also compiles under a plain host C++ compiler (e.g. KernelBench's cpp_sources): the
// device-side parts are then skipped.
#ifndef KV_HIP_TO_CUDA_H
#define KV_HIP_TO_CUDA_H

#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#error "kv_hip_to_cuda.h maps HIP to CUDA for nvcc; on AMD use ROCm's own hip/hip_runtime.h (drop -I toolchain/hip_include)"
#endif

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#define KV_HIP_TO_CUDA 1

// Platform macros as HIP defines them when it compiles for NVIDIA, so portable code takes its
// NVIDIA branches (`#if defined(__HIP_PLATFORM_AMD__)` stays false).
#ifndef __HIP_PLATFORM_NVIDIA__
#define __HIP_PLATFORM_NVIDIA__ 1
#endif
#ifndef __HIP_PLATFORM_NVCC__
#define __HIP_PLATFORM_NVCC__ 1
#endif
#if defined(__CUDACC__) && !defined(__HIPCC__)
#define __HIPCC__ 1
#endif
#if defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#define __HIP_DEVICE_COMPILE__ 1
#endif

// ---------------------------------------------------------------------------------------------
// Types and error codes
// ---------------------------------------------------------------------------------------------
typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;
typedef cudaMemcpyKind hipMemcpyKind;
typedef cudaFuncAttributes hipFuncAttributes;
typedef cudaFuncAttribute hipFuncAttribute;
typedef cudaFuncCache hipFuncCache_t;
typedef cudaDeviceAttr hipDeviceAttribute_t;
typedef cudaLimit hipLimit_t;
typedef cudaStreamCallback_t hipStreamCallback_t;
typedef cudaHostFn_t hipHostFn_t;
typedef cudaPointerAttributes hipPointerAttribute_t;
typedef void* hipDeviceptr_t;
typedef int hipDevice_t;

#define hipSuccess cudaSuccess
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipErrorMemoryAllocation cudaErrorMemoryAllocation
#define hipErrorNotInitialized cudaErrorInitializationError
#define hipErrorInitializationError cudaErrorInitializationError
#define hipErrorDeinitialized cudaErrorCudartUnloading
#define hipErrorInvalidConfiguration cudaErrorInvalidConfiguration
#define hipErrorInvalidPitchValue cudaErrorInvalidPitchValue
#define hipErrorInvalidSymbol cudaErrorInvalidSymbol
#define hipErrorInvalidDevicePointer cudaErrorInvalidDevicePointer
#define hipErrorInvalidMemcpyDirection cudaErrorInvalidMemcpyDirection
#define hipErrorInsufficientDriver cudaErrorInsufficientDriver
#define hipErrorMissingConfiguration cudaErrorMissingConfiguration
#define hipErrorInvalidDeviceFunction cudaErrorInvalidDeviceFunction
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorInvalidDevice cudaErrorInvalidDevice
#define hipErrorInvalidImage cudaErrorInvalidKernelImage
#define hipErrorInvalidContext cudaErrorDeviceUninitialized
#define hipErrorNoBinaryForGpu cudaErrorNoKernelImageForDevice
#define hipErrorInvalidKernelFile cudaErrorInvalidPtx
#define hipErrorInvalidHandle cudaErrorInvalidResourceHandle
#define hipErrorInvalidResourceHandle cudaErrorInvalidResourceHandle
#define hipErrorIllegalState cudaErrorIllegalState
#define hipErrorNotFound cudaErrorSymbolNotFound
#define hipErrorNotReady cudaErrorNotReady
#define hipErrorIllegalAddress cudaErrorIllegalAddress
#define hipErrorLaunchOutOfResources cudaErrorLaunchOutOfResources
#define hipErrorLaunchTimeOut cudaErrorLaunchTimeout
#define hipErrorLaunchFailure cudaErrorLaunchFailure
#define hipErrorAssert cudaErrorAssert
#define hipErrorCooperativeLaunchTooLarge cudaErrorCooperativeLaunchTooLarge
#define hipErrorNotSupported cudaErrorNotSupported
#define hipErrorStreamCaptureUnsupported cudaErrorStreamCaptureUnsupported
#define hipErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#define hipErrorPeerAccessNotEnabled cudaErrorPeerAccessNotEnabled
#define hipErrorHostMemoryAlreadyRegistered cudaErrorHostMemoryAlreadyRegistered
#define hipErrorHostMemoryNotRegistered cudaErrorHostMemoryNotRegistered
#define hipErrorUnknown cudaErrorUnknown

#define hipMemcpyHostToHost cudaMemcpyHostToHost
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault

#define hipStreamDefault cudaStreamDefault
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamPerThread cudaStreamPerThread
#define hipStreamLegacy cudaStreamLegacy

#define hipEventDefault cudaEventDefault
#define hipEventBlockingSync cudaEventBlockingSync
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventInterprocess cudaEventInterprocess

#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostMallocPortable cudaHostAllocPortable
#define hipHostMallocMapped cudaHostAllocMapped
#define hipHostMallocWriteCombined cudaHostAllocWriteCombined
#define hipHostRegisterDefault cudaHostRegisterDefault
#define hipHostRegisterPortable cudaHostRegisterPortable
#define hipHostRegisterMapped cudaHostRegisterMapped
#define hipMemAttachGlobal cudaMemAttachGlobal
#define hipMemAttachHost cudaMemAttachHost

#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipFuncAttributePreferredSharedMemoryCarveout cudaFuncAttributePreferredSharedMemoryCarveout
#define hipFuncCachePreferNone cudaFuncCachePreferNone
#define hipFuncCachePreferShared cudaFuncCachePreferShared
#define hipFuncCachePreferL1 cudaFuncCachePreferL1
#define hipFuncCachePreferEqual cudaFuncCachePreferEqual

#define hipLimitStackSize cudaLimitStackSize
#define hipLimitPrintfFifoSize cudaLimitPrintfFifoSize
#define hipLimitMallocHeapSize cudaLimitMallocHeapSize

#define hipDeviceAttributeMaxThreadsPerBlock cudaDevAttrMaxThreadsPerBlock
#define hipDeviceAttributeMaxBlockDimX cudaDevAttrMaxBlockDimX
#define hipDeviceAttributeMaxBlockDimY cudaDevAttrMaxBlockDimY
#define hipDeviceAttributeMaxBlockDimZ cudaDevAttrMaxBlockDimZ
#define hipDeviceAttributeMaxGridDimX cudaDevAttrMaxGridDimX
#define hipDeviceAttributeMaxGridDimY cudaDevAttrMaxGridDimY
#define hipDeviceAttributeMaxGridDimZ cudaDevAttrMaxGridDimZ
#define hipDeviceAttributeMaxSharedMemoryPerBlock cudaDevAttrMaxSharedMemoryPerBlock
#define hipDeviceAttributeSharedMemPerBlockOptin cudaDevAttrMaxSharedMemoryPerBlockOptin
#define hipDeviceAttributeMaxSharedMemoryPerMultiprocessor cudaDevAttrMaxSharedMemoryPerMultiprocessor
#define hipDeviceAttributeTotalConstantMemory cudaDevAttrTotalConstantMemory
#define hipDeviceAttributeWarpSize cudaDevAttrWarpSize
#define hipDeviceAttributeMaxRegistersPerBlock cudaDevAttrMaxRegistersPerBlock
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeMaxThreadsPerMultiProcessor cudaDevAttrMaxThreadsPerMultiProcessor
#define hipDeviceAttributeComputeCapabilityMajor cudaDevAttrComputeCapabilityMajor
#define hipDeviceAttributeComputeCapabilityMinor cudaDevAttrComputeCapabilityMinor
#define hipDeviceAttributeL2CacheSize cudaDevAttrL2CacheSize
#define hipDeviceAttributeMemoryBusWidth cudaDevAttrGlobalMemoryBusWidth
#define hipDeviceAttributeConcurrentKernels cudaDevAttrConcurrentKernels
#define hipDeviceAttributeCooperativeLaunch cudaDevAttrCooperativeLaunch
#define hipDeviceAttributeManagedMemory cudaDevAttrManagedMemory

// ---------------------------------------------------------------------------------------------
// Runtime API. The types above are CUDA's own, so most calls are a plain rename and keep CUDA's
// overloads and default arguments (templated hipMalloc(T**), hipEventRecord(e) on stream 0...).
// ---------------------------------------------------------------------------------------------
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipDriverGetVersion cudaDriverGetVersion
#define hipRuntimeGetVersion cudaRuntimeGetVersion

#define hipGetDevice cudaGetDevice
#define hipSetDevice cudaSetDevice
#define hipGetDeviceCount cudaGetDeviceCount
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipDeviceReset cudaDeviceReset
#define hipDeviceGetLimit cudaDeviceGetLimit
#define hipDeviceSetLimit cudaDeviceSetLimit
#define hipDeviceSetCacheConfig cudaDeviceSetCacheConfig
#define hipDeviceGetStreamPriorityRange cudaDeviceGetStreamPriorityRange

#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMallocManaged cudaMallocManaged
#define hipMallocAsync cudaMallocAsync
#define hipFreeAsync cudaFreeAsync
#define hipMallocHost cudaMallocHost
#define hipHostFree cudaFreeHost
#define hipFreeHost cudaFreeHost
#define hipHostRegister cudaHostRegister
#define hipHostUnregister cudaHostUnregister
#define hipHostGetDevicePointer cudaHostGetDevicePointer
#define hipMemGetInfo cudaMemGetInfo
#define hipPointerGetAttributes cudaPointerGetAttributes
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpy2D cudaMemcpy2D
#define hipMemcpy2DAsync cudaMemcpy2DAsync
#define hipMemcpyPeer cudaMemcpyPeer
#define hipMemcpyPeerAsync cudaMemcpyPeerAsync
#define hipMemset cudaMemset
#define hipMemsetAsync cudaMemsetAsync
#define hipMemset2D cudaMemset2D
#define hipMemset2DAsync cudaMemset2DAsync
#define hipMemcpyToSymbol cudaMemcpyToSymbol
#define hipMemcpyToSymbolAsync cudaMemcpyToSymbolAsync
#define hipMemcpyFromSymbol cudaMemcpyFromSymbol
#define hipMemcpyFromSymbolAsync cudaMemcpyFromSymbolAsync
#define hipGetSymbolAddress cudaGetSymbolAddress
#define hipGetSymbolSize cudaGetSymbolSize
#define HIP_SYMBOL(symbol) symbol

#define hipStreamCreate cudaStreamCreate
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamCreateWithPriority cudaStreamCreateWithPriority
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamQuery cudaStreamQuery
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipStreamGetFlags cudaStreamGetFlags
#define hipStreamGetPriority cudaStreamGetPriority
#define hipStreamAddCallback cudaStreamAddCallback
#define hipLaunchHostFunc cudaLaunchHostFunc

#define hipEventCreate cudaEventCreate
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventQuery cudaEventQuery
#define hipEventElapsedTime cudaEventElapsedTime
#define hipEventDestroy cudaEventDestroy

#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncGetAttributes cudaFuncGetAttributes
#define hipFuncSetCacheConfig cudaFuncSetCacheConfig
#define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define hipOccupancyMaxActiveBlocksPerMultiprocessorWithFlags \
    cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags
#define hipOccupancyMaxPotentialBlockSize cudaOccupancyMaxPotentialBlockSize
#define hipLaunchKernel cudaLaunchKernel
#define hipLaunchCooperativeKernel cudaLaunchCooperativeKernel

// Calls whose HIP signature differs from the CUDA one.
static inline hipError_t hipInit(unsigned int /*flags*/) { return cudaFree(0); }  // creates the context

static inline hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags = hipHostMallocDefault) {
    return cudaHostAlloc(ptr, size, flags);
}
template <class T>
static inline hipError_t hipHostMalloc(T** ptr, size_t size, unsigned int flags = hipHostMallocDefault) {
    return cudaHostAlloc(reinterpret_cast<void**>(ptr), size, flags);
}

static inline hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, const void* src, size_t bytes) {
    return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}
static inline hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t bytes) {
    return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
}
static inline hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t bytes) {
    return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice);
}
static inline hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, const void* src, size_t bytes, hipStream_t s) {
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s);
}
static inline hipError_t hipMemcpyDtoHAsync(void* dst, hipDeviceptr_t src, size_t bytes, hipStream_t s) {
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s);
}
static inline hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t dst, hipDeviceptr_t src, size_t bytes, hipStream_t s) {
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s);
}

// ---------------------------------------------------------------------------------------------
// Launch macros
// ---------------------------------------------------------------------------------------------
// hipLaunchKernelGGL(kernel, grid, block, dynamic_shared_bytes, stream, args...). A template
// kernel with several template arguments goes through HIP_KERNEL_NAME(k<A, B>), as in HIP.
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define hipLaunchKernelGGL(kernel_name, num_blocks, num_threads, dynamic_shared_bytes, stream, ...) \
    do {                                                                                           \
        kernel_name<<<(num_blocks), (num_threads), (dynamic_shared_bytes), (stream)>>>(__VA_ARGS__); \
    } while (0)

// Legacy HIP index macros.
#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z

#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_DYNAMIC_SHARED_ATTRIBUTE

// ---------------------------------------------------------------------------------------------
// Vector-type arithmetic. HIP's float4, int2... support + - * / (element-wise, and with a
// scalar); CUDA's are plain structs. These are templates, so a candidate that defines its own
// `operator+(float4, float4)` still compiles (a non-template overload wins).
// ---------------------------------------------------------------------------------------------
namespace kv_hip_detail {
template <class V> struct vec_traits {};
#define KV_HIP_VEC_(V, S, N)             \
    template <> struct vec_traits<V> {   \
        typedef S scalar;                \
        static constexpr int size = N;   \
    };
KV_HIP_VEC_(float1, float, 1) KV_HIP_VEC_(float2, float, 2) KV_HIP_VEC_(float3, float, 3)
KV_HIP_VEC_(float4, float, 4) KV_HIP_VEC_(double1, double, 1) KV_HIP_VEC_(double2, double, 2)
KV_HIP_VEC_(double3, double, 3) KV_HIP_VEC_(int1, int, 1) KV_HIP_VEC_(int2, int, 2)
KV_HIP_VEC_(int3, int, 3) KV_HIP_VEC_(int4, int, 4) KV_HIP_VEC_(uint1, unsigned int, 1)
KV_HIP_VEC_(uint2, unsigned int, 2) KV_HIP_VEC_(uint3, unsigned int, 3)
KV_HIP_VEC_(uint4, unsigned int, 4) KV_HIP_VEC_(longlong2, long long, 2)
KV_HIP_VEC_(ulonglong2, unsigned long long, 2)
#undef KV_HIP_VEC_

struct op_add { template <class T> __host__ __device__ static T f(T a, T b) { return a + b; } };
struct op_sub { template <class T> __host__ __device__ static T f(T a, T b) { return a - b; } };
struct op_mul { template <class T> __host__ __device__ static T f(T a, T b) { return a * b; } };
struct op_div { template <class T> __host__ __device__ static T f(T a, T b) { return a / b; } };

template <class Op, class V>
__host__ __device__ __forceinline__ V vv(V a, const V& b) {
    constexpr int n = vec_traits<V>::size;
    a.x = Op::f(a.x, b.x);
    if constexpr (n > 1) a.y = Op::f(a.y, b.y);
    if constexpr (n > 2) a.z = Op::f(a.z, b.z);
    if constexpr (n > 3) a.w = Op::f(a.w, b.w);
    return a;
}
template <class Op, class V, class S>
__host__ __device__ __forceinline__ V vs(V a, S s) {
    constexpr int n = vec_traits<V>::size;
    a.x = Op::f(a.x, s);
    if constexpr (n > 1) a.y = Op::f(a.y, s);
    if constexpr (n > 2) a.z = Op::f(a.z, s);
    if constexpr (n > 3) a.w = Op::f(a.w, s);
    return a;
}
template <class Op, class V, class S>
__host__ __device__ __forceinline__ V sv(S s, V a) {
    constexpr int n = vec_traits<V>::size;
    a.x = Op::f(s, a.x);
    if constexpr (n > 1) a.y = Op::f(s, a.y);
    if constexpr (n > 2) a.z = Op::f(s, a.z);
    if constexpr (n > 3) a.w = Op::f(s, a.w);
    return a;
}
}  // namespace kv_hip_detail

#define KV_HIP_VEC_OP_(op, Op)                                                                       \
    template <class V, class S = typename kv_hip_detail::vec_traits<V>::scalar>                       \
    __host__ __device__ __forceinline__ V operator op(V a, const V& b) {                              \
        return kv_hip_detail::vv<kv_hip_detail::Op>(a, b);                                            \
    }                                                                                                 \
    template <class V>                                                                                \
    __host__ __device__ __forceinline__ V operator op(V a, typename kv_hip_detail::vec_traits<V>::scalar s) { \
        return kv_hip_detail::vs<kv_hip_detail::Op>(a, s);                                            \
    }                                                                                                 \
    template <class V>                                                                                \
    __host__ __device__ __forceinline__ V operator op(typename kv_hip_detail::vec_traits<V>::scalar s, V a) { \
        return kv_hip_detail::sv<kv_hip_detail::Op>(s, a);                                            \
    }                                                                                                 \
    template <class V, class S = typename kv_hip_detail::vec_traits<V>::scalar>                       \
    __host__ __device__ __forceinline__ V& operator op##=(V& a, const V& b) {                         \
        return a = kv_hip_detail::vv<kv_hip_detail::Op>(a, b);                                        \
    }                                                                                                 \
    template <class V>                                                                                \
    __host__ __device__ __forceinline__ V& operator op##=(V& a, typename kv_hip_detail::vec_traits<V>::scalar s) { \
        return a = kv_hip_detail::vs<kv_hip_detail::Op>(a, s);                                        \
    }
KV_HIP_VEC_OP_(+, op_add)
KV_HIP_VEC_OP_(-, op_sub)
KV_HIP_VEC_OP_(*, op_mul)
KV_HIP_VEC_OP_(/, op_div)
#undef KV_HIP_VEC_OP_

// ---------------------------------------------------------------------------------------------
// Device side (nvcc only)
// ---------------------------------------------------------------------------------------------
#if defined(__CUDACC__)

// HIP's mask-less warp functions act on the whole wavefront; on NVIDIA that is the full 32-lane
// warp. CUDA still declares deprecated mask-less __shfl/__any/__all/__ballot (extern "C" or with
// other return types), so HIP's names are object-like macros onto functions of our own: every use,
// called or not, is renamed consistently, including in headers included later.
template <class T>
__device__ __forceinline__ T kv_hip_shfl(T var, int src_lane, int width = 32) {
    return __shfl_sync(0xffffffffu, var, src_lane, width);
}
template <class T>
__device__ __forceinline__ T kv_hip_shfl_up(T var, unsigned int lane_delta, int width = 32) {
    return __shfl_up_sync(0xffffffffu, var, lane_delta, width);
}
template <class T>
__device__ __forceinline__ T kv_hip_shfl_down(T var, unsigned int lane_delta, int width = 32) {
    return __shfl_down_sync(0xffffffffu, var, lane_delta, width);
}
template <class T>
__device__ __forceinline__ T kv_hip_shfl_xor(T var, int lane_mask, int width = 32) {
    return __shfl_xor_sync(0xffffffffu, var, lane_mask, width);
}
// HIP's __ballot returns a 64-bit mask (one bit per lane of a 64-wide wavefront); here only the
// low 32 bits can be set.
__device__ __forceinline__ unsigned long long kv_hip_ballot(int predicate) {
    return static_cast<unsigned long long>(__ballot_sync(0xffffffffu, predicate));
}
__device__ __forceinline__ int kv_hip_any(int predicate) { return __any_sync(0xffffffffu, predicate); }
__device__ __forceinline__ int kv_hip_all(int predicate) { return __all_sync(0xffffffffu, predicate); }
#define __shfl kv_hip_shfl
#define __shfl_up kv_hip_shfl_up
#define __shfl_down kv_hip_shfl_down
#define __shfl_xor kv_hip_shfl_xor
#define __ballot kv_hip_ballot
#define __ballot64 kv_hip_ballot
#define __any kv_hip_any
#define __all kv_hip_all

__device__ __forceinline__ unsigned int __lane_id() {
    unsigned int lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

// clang's nontemporal hints: plain loads and stores here (the hint is only about caching).
#define __builtin_nontemporal_load(ptr) (*(ptr))
#define __builtin_nontemporal_store(value, ptr) ((void)(*(ptr) = (value)))

// HIP atomics that CUDA lacks. Floating-point min/max and CAS go through the integer CAS on the
// value's bits; the rest are reinterpretations of existing CUDA atomics.
__device__ __forceinline__ float atomicCAS(float* address, float compare, float val) {
    return __int_as_float(atomicCAS(reinterpret_cast<int*>(address), __float_as_int(compare), __float_as_int(val)));
}
__device__ __forceinline__ double atomicCAS(double* address, double compare, double val) {
    return __longlong_as_double(static_cast<long long>(atomicCAS(reinterpret_cast<unsigned long long*>(address),
        static_cast<unsigned long long>(__double_as_longlong(compare)),
        static_cast<unsigned long long>(__double_as_longlong(val)))));
}
__device__ __forceinline__ double atomicExch(double* address, double val) {
    return __longlong_as_double(static_cast<long long>(atomicExch(reinterpret_cast<unsigned long long*>(address),
        static_cast<unsigned long long>(__double_as_longlong(val)))));
}
__device__ __forceinline__ float atomicSub(float* address, float val) { return atomicAdd(address, -val); }
__device__ __forceinline__ double atomicSub(double* address, double val) { return atomicAdd(address, -val); }
__device__ __forceinline__ unsigned long long atomicSub(unsigned long long* address, unsigned long long val) {
    return atomicAdd(address, ~val + 1ull);
}

namespace kv_hip_detail {
__device__ __forceinline__ unsigned int to_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned long long to_bits(double v) {
    return static_cast<unsigned long long>(__double_as_longlong(v));
}
__device__ __forceinline__ float from_bits(unsigned int b, float) { return __uint_as_float(b); }
__device__ __forceinline__ double from_bits(unsigned long long b, double) {
    return __longlong_as_double(static_cast<long long>(b));
}
// Store val while it beats *address (smaller for Min, larger otherwise); returns the old value.
template <bool Min, class T>
__device__ __forceinline__ T atomic_fp_minmax(T* address, T val) {
    auto* bits = reinterpret_cast<decltype(to_bits(val))*>(address);
    auto old = *bits;
    while (true) {
        T current = from_bits(old, val);
        if (!(Min ? val < current : val > current)) return current;  // also stops when val is NaN
        auto seen = atomicCAS(bits, old, to_bits(val));
        if (seen == old) return current;
        old = seen;
    }
}
}  // namespace kv_hip_detail

__device__ __forceinline__ float atomicMin(float* address, float val) {
    return kv_hip_detail::atomic_fp_minmax<true>(address, val);
}
__device__ __forceinline__ float atomicMax(float* address, float val) {
    return kv_hip_detail::atomic_fp_minmax<false>(address, val);
}
__device__ __forceinline__ double atomicMin(double* address, double val) {
    return kv_hip_detail::atomic_fp_minmax<true>(address, val);
}
__device__ __forceinline__ double atomicMax(double* address, double val) {
    return kv_hip_detail::atomic_fp_minmax<false>(address, val);
}

// unsigned long is 64-bit on Linux but a distinct type from unsigned long long, which CUDA uses.
static_assert(sizeof(unsigned long) == sizeof(unsigned long long), "LP64 host expected");
#define KV_HIP_ULONG_ATOMIC_(name)                                                                  \
    __device__ __forceinline__ unsigned long name(unsigned long* address, unsigned long val) {      \
        return static_cast<unsigned long>(                                                           \
            name(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(val))); \
    }
KV_HIP_ULONG_ATOMIC_(atomicAdd)
KV_HIP_ULONG_ATOMIC_(atomicSub)
KV_HIP_ULONG_ATOMIC_(atomicExch)
KV_HIP_ULONG_ATOMIC_(atomicMin)
KV_HIP_ULONG_ATOMIC_(atomicMax)
#undef KV_HIP_ULONG_ATOMIC_
__device__ __forceinline__ unsigned long atomicCAS(unsigned long* address, unsigned long compare, unsigned long val) {
    return static_cast<unsigned long>(atomicCAS(reinterpret_cast<unsigned long long*>(address),
        static_cast<unsigned long long>(compare), static_cast<unsigned long long>(val)));
}

__device__ __forceinline__ void atomicAddNoRet(float* address, float val) { atomicAdd(address, val); }
template <class T> __device__ __forceinline__ T unsafeAtomicAdd(T* address, T val) { return atomicAdd(address, val); }
template <class T> __device__ __forceinline__ T safeAtomicAdd(T* address, T val) { return atomicAdd(address, val); }

// hipMemsetD8/D16/D32: fill `count` elements with a value, ordered like cudaMemset. D16 and D32 run
// a tiny fill kernel; the wrappers are templates (with the HIP value type as default) so that the
// kernel is compiled only into sources that call them.
namespace kv_hip_detail {
template <class T> struct same_type { typedef T type; };
template <class T>
__global__ void memset_d_kernel(T* dst, T value, size_t count) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = value;
}
template <class T>
static inline hipError_t memset_d(void* dst, T value, size_t count, hipStream_t stream) {
    if (count == 0) return cudaSuccess;
    size_t blocks = (count + 255) / 256;
    memset_d_kernel<T><<<(unsigned)(blocks < 65535 ? blocks : 65535), 256, 0, stream>>>(static_cast<T*>(dst), value, count);
    return cudaGetLastError();
}
}  // namespace kv_hip_detail
static inline hipError_t hipMemsetD8(hipDeviceptr_t dst, unsigned char value, size_t count) {
    return cudaMemset(dst, value, count);
}
static inline hipError_t hipMemsetD8Async(hipDeviceptr_t dst, unsigned char value, size_t count, hipStream_t s = 0) {
    return cudaMemsetAsync(dst, value, count, s);
}
template <class T = unsigned short>
static inline hipError_t hipMemsetD16(hipDeviceptr_t dst, typename kv_hip_detail::same_type<T>::type value, size_t count) {
    return kv_hip_detail::memset_d<T>(dst, value, count, 0);
}
template <class T = unsigned short>
static inline hipError_t hipMemsetD16Async(hipDeviceptr_t dst, typename kv_hip_detail::same_type<T>::type value,
                                           size_t count, hipStream_t s = 0) {
    return kv_hip_detail::memset_d<T>(dst, value, count, s);
}
template <class T = int>
static inline hipError_t hipMemsetD32(hipDeviceptr_t dst, typename kv_hip_detail::same_type<T>::type value, size_t count) {
    return kv_hip_detail::memset_d<T>(dst, value, count, 0);
}
template <class T = int>
static inline hipError_t hipMemsetD32Async(hipDeviceptr_t dst, typename kv_hip_detail::same_type<T>::type value,
                                           size_t count, hipStream_t s = 0) {
    return kv_hip_detail::memset_d<T>(dst, value, count, s);
}

#endif  // __CUDACC__

#include "kv_amd_only_builtins.h"

#endif  // KV_HIP_TO_CUDA_H
