// A torch.profiler (Kineto 2024+) trace of about N events for the import benchmark,
// written as torch writes it: per op a cpu_op with input shapes, its cudaLaunchKernel,
// the kernel with its launch configuration, and the ac2g flow pair; a ProfilerStep
// range every 1000 ops; every 50th op a memcpy; every 20th an allocation. Streams to
// the file, so the generator's memory stays small.
//
// One rank of `world_size` (distributedInfo): with more than one, each step ends in an
// NCCL all-reduce (record_param_comms, its launch, the kernel on stream 20) that the
// next step's first kernels overlap, and the last rank's kernels run 20% longer (a
// straggler) for the analyses' benchmark (analyze_bench.cpp).
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace opscope::bench {

// Returns the number of events written.
inline int64_t write_kineto_trace(const std::string& path, int64_t events, int rank = 0, int world_size = 1) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  static const char* kOps[] = {"aten::mul", "aten::add", "aten::mm", "aten::silu", "aten::rsqrt", "aten::copy_"};
  static const char* kKernels[] = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, "
      "at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, "
      "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, "
      "at::detail::Array<char*, 3>)",
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> "
      ">(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
      "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
      "void at::native::vectorized_elementwise_kernel<4, at::native::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}",
      "void at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)",
      "Memcpy DtoD (Device -> Device)"};
  fmt::print(f, "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", "
                "\"totalGlobalMem\": 85045231616, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}}],\n"
                "  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}}},\n  \"traceEvents\": [\n",
             rank, world_size);
  const double slow = world_size > 1 && rank == world_size - 1 ? 1.2 : 1.0;
  int64_t written = 0;
  double ts = 1000.0;
  bool first = true;
  auto sep = [&] {
    if (!first) std::fputs(",\n", f);
    first = false;
    ++written;
  };
  int64_t op = 0;
  while (written < events) {
    if (op % 1000 == 0) {
      sep();
      fmt::print(f, R"J(  {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 4242, "tid": 4242, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}, "Record function id": 0}}}})J",
                 op / 1000, ts, 1000 * 9.0, op * 2 + 1);
    }
    int k = int(op % 6);
    int64_t corr = op + 1;
    int64_t ext = op * 2 + 2;
    sep();
    fmt::print(f, R"J(  {{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 4242, "tid": 4242, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}, "Sequence number": {}, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": ["", ""], "Input type": ["float", "float"], "Input Strides": [[4096, 1], [4096, 1]], "Input Dims": [[8, 4096], [8, 4096]], "Ev Idx": {}}}}})J",
               kOps[k], ts + 0.5, 7.0, ext, op, op);
    sep();
    fmt::print(f, R"J(  {{"ph": "X", "cat": "cuda_runtime", "name": "{}", "pid": 4242, "tid": 4242, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}, "cbid": 211, "correlation": {}}}}})J",
               k == 5 ? "cudaMemcpyAsync" : "cudaLaunchKernel", ts + 2.0, 4.0, ext, corr);
    sep();
    fmt::print(f, R"J(  {{"ph": "s", "id": {}, "pid": 4242, "tid": 4242, "ts": {:.3f}, "cat": "ac2g", "name": "ac2g"}})J", corr, ts + 2.0);
    sep();
    if (k == 5)
      fmt::print(f, R"J(  {{"ph": "X", "cat": "gpu_memcpy", "name": "{}", "pid": 0, "tid": 7, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}, "device": 0, "context": 1, "stream": 7, "correlation": {}, "bytes": 131072, "memory bandwidth (GB/s)": 65.536}}}})J",
                 kKernels[k], ts + 6.0, 2.0, ext, corr);
    else
      fmt::print(f, R"J(  {{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {}, "registers per thread": 32, "shared memory": 0, "blocks per SM": 0.25, "warps per SM": 1.0, "grid": [32, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 2}}}})J",
                 kKernels[k], ts + 6.0, (1.5 + k) * slow, ext, corr);
    sep();
    fmt::print(f, R"J(  {{"ph": "f", "id": {}, "pid": 0, "tid": 7, "ts": {:.3f}, "cat": "ac2g", "name": "ac2g", "bp": "e"}})J", corr, ts + 6.0);
    if (op % 20 == 0) {
      sep();
      fmt::print(f, R"J(  {{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 4242, "tid": 4242, "ts": {:.3f}, "args": {{"Total Reserved": 2097152, "Total Allocated": {}, "Bytes": 131072, "Addr": {}, "Device Id": 0, "Device Type": 1}}}})J",
                 ts + 1.0, 131072 * ((op / 20) % 8 + 1), 139637976727552 + op * 512);
    }
    if (world_size > 1 && op % 1000 == 999) {  // the step's all-reduce
      int64_t c = 100'000'000 + op, x = 200'000'000 + op;
      sep();
      fmt::print(f, R"J(  {{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 4242, "tid": 4242, "ts": {:.3f}, "dur": 8.0, "args": {{"External id": {}, "Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576, "Group size": {}, "dtype": "Float"}}}})J",
                 ts + 9.0, x, world_size);
      sep();
      fmt::print(f, R"J(  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242, "ts": {:.3f}, "dur": 4.0, "args": {{"External id": {}, "cbid": 211, "correlation": {}}}}})J",
                 ts + 10.0, x, c);
      sep();
      fmt::print(f, R"J(  {{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 20, "ts": {:.3f}, "dur": 300.0, "args": {{"External id": {}, "device": 0, "context": 1, "stream": 20, "correlation": {}}}}})J",
                 ts + 15.0, x, c);
    }
    ts += 9.0;
    ++op;
  }
  fmt::print(f, "\n  ],\n  \"traceName\": \"bench.pt.trace.json\",\n  \"displayTimeUnit\": \"ms\",\n"
                "  \"baseTimeNanoseconds\": 1733000000000000000\n}}\n");
  if (std::fclose(f) != 0) throw std::runtime_error("cannot write " + path);
  return written;
}

}  // namespace opscope::bench
