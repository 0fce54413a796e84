// dtsim-bench-compute: GEMM throughput per precision (cuBLAS GemmEx: FP32, TF32, FP16, BF16) and,
// when built with cuDNN, forward-convolution throughput on ResNet-50-like shapes. Writes the JSON
// that `dtsim calibrate` reads as a compute profile (schema: calibration/README.md).
#include "calibration/bench/bench_common.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#ifdef DTSIM_HAVE_CUDNN
#include <cudnn.h>
#endif

#include <functional>

namespace dtsim::bench {
namespace {

const char* kHelp = R"(dtsim-bench-compute: GEMM (and convolution) throughput of one GPU.

usage: dtsim-bench-compute [--device D] [--sizes LIST] [--precisions LIST] [--repeats N]
                           [--warmup N] [--no-conv] [--json FILE] [--help]

  --device D         GPU to measure (default 0)
  --sizes LIST       square GEMM sizes m=n=k (default 1024,2048,4096,8192)
  --precisions LIST  fp32,tf32,fp16,bf16 (default all four)
  --repeats N        timed calls per shape; median, min and max are reported (default 20)
  --warmup N         untimed calls first (default 5)
  --no-conv          skip the convolutions (they need a build with cuDNN)
  --json FILE        write the profile dtsim calibrate reads

Per-layer forward/backward times of a model come from calibration/bench/profile_model.py
(PyTorch), which writes the same schema.
)";

void check_cublas(cublasStatus_t s, const char* what)
{
  if (s != CUBLAS_STATUS_SUCCESS)
    throw BenchError(std::string(what) + " failed: cuBLAS status " + std::to_string(static_cast<int>(s)));
}

template <typename T>
__global__ void fill(T* p, std::size_t n)
{
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = static_cast<T>(static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - 0.5f);
}

struct Settings {
  int repeats = 20, warmup = 5;
};

Stats time_calls(const Settings& s, cudaStream_t stream, const std::function<void()>& call)
{
  cudaEvent_t a, b;
  DTSIM_CUDA(cudaEventCreate(&a));
  DTSIM_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < s.warmup; ++i)
    call();
  std::vector<double> secs;
  for (int i = 0; i < s.repeats; ++i) {
    DTSIM_CUDA(cudaEventRecord(a, stream));
    call();
    DTSIM_CUDA(cudaEventRecord(b, stream));
    DTSIM_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    DTSIM_CUDA(cudaEventElapsedTime(&ms, a, b));
    secs.push_back(ms * 1e-3);
  }
  DTSIM_CUDA(cudaEventDestroy(a));
  DTSIM_CUDA(cudaEventDestroy(b));
  return summarize(secs);
}

nlohmann::json kernel_json(const char* kind, const std::string& precision, const std::string& shape, double flops,
                           const Stats& st)
{
  std::printf("%-5s %-5s %-44s %10.3f ms  %8.2f TFLOP/s  (min %.3f, max %.3f ms)\n", kind, precision.c_str(),
              shape.c_str(), st.median * 1e3, flops / st.median / 1e12, st.min * 1e3, st.max * 1e3);
  return {{"kind", kind}, {"precision", precision}, {"shape", shape}, {"flops", flops}, {"median_s", st.median},
          {"min_s", st.min}, {"max_s", st.max}, {"repeats", st.n}};
}

void gemm_sweep(const std::vector<long long>& sizes, const std::vector<std::string>& precisions, const Settings& s,
                nlohmann::json& kernels)
{
  const long long max_n = *std::max_element(sizes.begin(), sizes.end());
  const std::size_t elems = static_cast<std::size_t>(max_n * max_n);
  void *a = nullptr, *b = nullptr, *c = nullptr;
  DTSIM_CUDA(cudaMalloc(&a, elems * 4));
  DTSIM_CUDA(cudaMalloc(&b, elems * 4));
  DTSIM_CUDA(cudaMalloc(&c, elems * 4));
  cublasHandle_t h;
  check_cublas(cublasCreate(&h), "cublasCreate");
  cudaStream_t stream;
  DTSIM_CUDA(cudaStreamCreate(&stream));
  check_cublas(cublasSetStream(h, stream), "cublasSetStream");
  for (const auto& p : precisions) {
    cudaDataType_t type = CUDA_R_32F;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    if (p == "tf32")
      compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    else if (p == "fp16")
      type = CUDA_R_16F;
    else if (p == "bf16")
      type = CUDA_R_16BF;
    else if (p != "fp32")
      throw BenchError("unknown precision '" + p + "' (expected fp32, tf32, fp16, bf16)");
    for (void* buf : {a, b, c}) {
      if (type == CUDA_R_32F)
        fill<<<1024, 256, 0, stream>>>(static_cast<float*>(buf), elems);
      else if (type == CUDA_R_16F)
        fill<<<1024, 256, 0, stream>>>(static_cast<__half*>(buf), elems);
      else
        fill<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(buf), elems);
      DTSIM_CUDA(cudaGetLastError());
    }
    const float alpha = 1.0f, beta = 0.0f;
    for (long long n : sizes) {
      const int m = static_cast<int>(n);
      const Stats st = time_calls(s, stream, [&] {
        check_cublas(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, a, type, m, b, type, m, &beta, c, type,
                                  m, compute, CUBLAS_GEMM_DEFAULT),
                     "cublasGemmEx");
      });
      const std::string shape = "m=" + std::to_string(n) + " n=" + std::to_string(n) + " k=" + std::to_string(n);
      kernels.push_back(kernel_json("gemm", p, shape, 2.0 * n * n * n, st));
    }
  }
  check_cublas(cublasDestroy(h), "cublasDestroy");
  DTSIM_CUDA(cudaStreamDestroy(stream));
  DTSIM_CUDA(cudaFree(a));
  DTSIM_CUDA(cudaFree(b));
  DTSIM_CUDA(cudaFree(c));
}

#ifdef DTSIM_HAVE_CUDNN
void check_cudnn(cudnnStatus_t s, const char* what)
{
  if (s != CUDNN_STATUS_SUCCESS)
    throw BenchError(std::string(what) + " failed: " + cudnnGetErrorString(s));
}

/// Forward convolutions of ResNet-50 shapes (batch 64, NCHW), FP32 and FP16 with tensor-op math.
void conv_sweep(const Settings& s, nlohmann::json& kernels)
{
  struct Shape { int n, c, h, w, k, r, stride, pad; };
  const Shape shapes[] = {{64, 64, 56, 56, 64, 3, 1, 1}, {64, 256, 56, 56, 64, 1, 1, 0}, {64, 128, 28, 28, 128, 3, 1, 1},
                          {64, 256, 14, 14, 256, 3, 1, 1}};
  cudnnHandle_t h;
  check_cudnn(cudnnCreate(&h), "cudnnCreate");
  for (const char* p : {"fp32", "fp16"}) {
    const cudnnDataType_t type = std::string(p) == "fp16" ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    const std::size_t esize = type == CUDNN_DATA_HALF ? 2 : 4;
    for (const Shape& sh : shapes) {
      cudnnTensorDescriptor_t x, y;
      cudnnFilterDescriptor_t f;
      cudnnConvolutionDescriptor_t conv;
      check_cudnn(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
      check_cudnn(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
      check_cudnn(cudnnCreateFilterDescriptor(&f), "cudnnCreateFilterDescriptor");
      check_cudnn(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
      check_cudnn(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, type, sh.n, sh.c, sh.h, sh.w), "set x");
      check_cudnn(cudnnSetFilter4dDescriptor(f, type, CUDNN_TENSOR_NCHW, sh.k, sh.c, sh.r, sh.r), "set filter");
      check_cudnn(cudnnSetConvolution2dDescriptor(conv, sh.pad, sh.pad, sh.stride, sh.stride, 1, 1,
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), "set conv");
      check_cudnn(cudnnSetConvolutionMathType(conv, CUDNN_TENSOR_OP_MATH), "set math");
      int on = 0, oc = 0, oh = 0, ow = 0;
      check_cudnn(cudnnGetConvolution2dForwardOutputDim(conv, x, f, &on, &oc, &oh, &ow), "output dim");
      check_cudnn(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, type, on, oc, oh, ow), "set y");
      cudnnConvolutionFwdAlgoPerf_t perf[8];
      int found = 0;
      check_cudnn(cudnnGetConvolutionForwardAlgorithm_v7(h, x, f, conv, y, 8, &found, perf), "choose algorithm");
      std::size_t ws = 0;
      check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(h, x, f, conv, y, perf[0].algo, &ws), "workspace size");
      void *dx, *dy, *df, *dws = nullptr;
      DTSIM_CUDA(cudaMalloc(&dx, esize * sh.n * sh.c * sh.h * sh.w));
      DTSIM_CUDA(cudaMalloc(&dy, esize * on * oc * oh * ow));
      DTSIM_CUDA(cudaMalloc(&df, esize * sh.k * sh.c * sh.r * sh.r));
      DTSIM_CUDA(cudaMemset(dx, 0, esize * sh.n * sh.c * sh.h * sh.w));
      DTSIM_CUDA(cudaMemset(df, 0, esize * sh.k * sh.c * sh.r * sh.r));
      if (ws)
        DTSIM_CUDA(cudaMalloc(&dws, ws));
      const float alpha = 1.0f, beta = 0.0f;
      const Stats st = time_calls(s, nullptr, [&] {
        check_cudnn(cudnnConvolutionForward(h, &alpha, x, dx, f, df, conv, perf[0].algo, dws, ws, &beta, y, dy),
                    "cudnnConvolutionForward");
      });
      const double flops = 2.0 * on * oc * oh * ow * sh.c * sh.r * sh.r;
      char shape[128];
      std::snprintf(shape, sizeof shape, "n=%d c=%d h=%d w=%d k=%d r=%d s=%d stride=%d pad=%d fwd", sh.n, sh.c, sh.h,
                    sh.w, sh.k, sh.r, sh.r, sh.stride, sh.pad);
      auto j = kernel_json("conv", p, shape, flops, st);
      j["algorithm"] = static_cast<int>(perf[0].algo);
      kernels.push_back(j);
      cudaFree(dx); cudaFree(dy); cudaFree(df); cudaFree(dws);
      cudnnDestroyTensorDescriptor(x); cudnnDestroyTensorDescriptor(y);
      cudnnDestroyFilterDescriptor(f); cudnnDestroyConvolutionDescriptor(conv);
    }
  }
  check_cudnn(cudnnDestroy(h), "cudnnDestroy");
}
#endif

int bench_compute(int argc, char** argv)
{
  Args args(argc, argv, {"--device", "--sizes", "--precisions", "--repeats", "--warmup", "--json"},
            {"--no-conv", "--help", "-h"});
  if (args.flag("--help") || args.flag("-h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  Settings s;
  s.repeats = static_cast<int>(args.get_int("--repeats", s.repeats));
  s.warmup = static_cast<int>(args.get_int("--warmup", s.warmup));
  std::vector<long long> sizes;
  for (const auto& t : args.list("--sizes", "1024,2048,4096,8192"))
    sizes.push_back(parse_bytes(t));
  if (s.repeats < 1 || sizes.empty() || *std::min_element(sizes.begin(), sizes.end()) < 1)
    throw BenchError("expected --repeats >= 1 and positive --sizes");
  const int count = cuda_device_count();
  const int device = static_cast<int>(args.get_int("--device", 0));
  if (device < 0 || device >= count)
    throw BenchError("--device " + std::to_string(device) + " but the machine has " + std::to_string(count) + " GPU(s)");
  DTSIM_CUDA(cudaSetDevice(device));
  const nlohmann::json machine = machine_description();
  nlohmann::json kernels = nlohmann::json::array(), not_measured = nlohmann::json::array();
  gemm_sweep(sizes, args.list("--precisions", "fp32,tf32,fp16,bf16"), s, kernels);
#ifdef DTSIM_HAVE_CUDNN
  if (!args.flag("--no-conv"))
    conv_sweep(s, kernels);
  else
    not_measured.push_back("convolution: skipped (--no-conv)");
#else
  not_measured.push_back("convolution: this build has no cuDNN");
#endif
  not_measured.push_back("per-layer model times: run calibration/bench/profile_model.py (PyTorch)");
  if (!args.get("--json", "").empty()) {
    nlohmann::json gpu = machine["gpus"][device];
    gpu["driver_version"] = machine["cuda_driver_version"];
    gpu["runtime_version"] = machine["cuda_runtime_version"];
    nlohmann::json out = {{"tool", "dtsim-bench-compute"}, {"schema_version", 1}, {"gpu", gpu},
                          {"settings", {{"repeats", s.repeats}, {"warmup", s.warmup}, {"statistic", "median"},
                                        {"hostname", machine["hostname"]}}},
                          {"kernels", kernels}, {"not_measured", not_measured}};
    write_file(args.get("--json", ""), out.dump(2) + "\n");
  }
  return 0;
}

}  // namespace
}  // namespace dtsim::bench

int main(int argc, char** argv)
{
  return dtsim::bench::run_main("dtsim-bench-compute", dtsim::bench::bench_compute, argc, argv);
}
