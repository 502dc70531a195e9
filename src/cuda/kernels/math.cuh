// Device math overloaded on float and double: the float overloads call the float functions
// (expf, logf, ...), so float32 kernels compute in float32 as the CPU's do.
#pragma once

#include <cuda_runtime.h>

namespace headgrad::cuda::math {

__device__ __forceinline__ float exp(float x) { return expf(x); }
__device__ __forceinline__ double exp(double x) { return ::exp(x); }
__device__ __forceinline__ float log(float x) { return logf(x); }
__device__ __forceinline__ double log(double x) { return ::log(x); }
__device__ __forceinline__ float sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrt(double x) { return ::sqrt(x); }
__device__ __forceinline__ float abs(float x) { return fabsf(x); }
__device__ __forceinline__ double abs(double x) { return ::fabs(x); }
__device__ __forceinline__ float tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double tanh(double x) { return ::tanh(x); }
__device__ __forceinline__ float pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double pow(double x, double y) { return ::pow(x, y); }

}  // namespace headgrad::cuda::math
