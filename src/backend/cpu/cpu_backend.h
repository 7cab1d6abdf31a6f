// CpuBackend: the reference implementation of the op contract. Host memory,
// memcpy copies, synchronous ops (synchronize() has nothing to wait for); each
// op is a free function in cpu/ops.h, one per file.
#pragma once

#include "backend/backend.h"

namespace fdpp {

class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device::kCPU; }
  DType activation_dtype() const override { return DType::kF32; }

  Result<Buffer> alloc(size_t bytes) override;
  // MemAvailable from /proc/meminfo: what can be allocated without swapping, so that the
  // engine's up-front check refuses a model the host cannot hold instead of attempting it.
  size_t free_memory() const override;
  Status copy_from_host(const void* host, const Tensor& dst) override;
  Status copy_to_host(const Tensor& src, void* host) override;
  Status copy(const Tensor& src, const Tensor& dst) override;
  Status synchronize() override { return Status::Ok(); }

  Status embed(const Tensor& ids, const Tensor& table, const Tensor& out) override;
  Status rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  Status linear(const Tensor& x, const Tensor& w, const Tensor& y,
                const LinearEpilogue& ep) override;
  Status rope_and_append_kv(const RopeAppendArgs& args) override;
  Status attention_decode(const AttentionDecodeArgs& args) override;
  Status attention_prefill(const AttentionPrefillArgs& args) override;
  Status silu_mul(const Tensor& gate_up, const Tensor& out) override;
  Status layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                   const Tensor& out) override;
  Status embed_add(const Tensor& ids, const Tensor& table, const Tensor& out) override;
  Status activation(const Tensor& x, const Tensor& out, Activation act) override;
  Status argmax(const Tensor& logits, const Tensor& ids) override;
};

}  // namespace fdpp
