#include "backend/cpu/cpu_backend.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include <fmt/format.h>

#include "backend/cpu/ops.h"

namespace fdpp {

Result<Buffer> CpuBackend::alloc(size_t bytes) { return host_alloc(bytes); }

size_t CpuBackend::free_memory() const {
  // MemAvailable counts reclaimable page cache, which sysconf(_SC_AVPHYS_PAGES) (MemFree)
  // does not: a host whose RAM sits in the cache would otherwise look full.
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f))
      found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    std::fclose(f);
    if (found) return static_cast<size_t>(kib) * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return static_cast<size_t>(pages) * static_cast<size_t>(page);
  return SIZE_MAX;  // unknown: let the allocation itself decide
}

Status CpuBackend::copy_from_host(const void* host, const Tensor& dst) {
  if (dst.device != Device::kCPU)
    return InvalidArgument(
        fmt::format("copy_from_host: dst is {}, not host memory", dst.describe()));
  if (dst.nbytes() == 0) return Status::Ok();
  if (host == nullptr || dst.data == nullptr)
    return InvalidArgument(fmt::format("copy_from_host: null pointer for {}", dst.describe()));
  std::memcpy(dst.data, host, dst.nbytes());
  return Status::Ok();
}

Status CpuBackend::copy(const Tensor& src, const Tensor& dst) {
  if (src.nbytes() != dst.nbytes())
    return InvalidArgument(fmt::format("copy: {} and {} differ in size", src.describe(), dst.describe()));
  if (src.nbytes() && (!src.data || !dst.data)) return InvalidArgument("copy: null tensor");
  if (src.nbytes()) std::memmove(dst.data, src.data, src.nbytes());
  return Status::Ok();
}

Status CpuBackend::copy_to_host(const Tensor& src, void* host) {
  if (src.device != Device::kCPU)
    return InvalidArgument(fmt::format("copy_to_host: src is {}, not host memory", src.describe()));
  if (src.nbytes() == 0) return Status::Ok();
  if (host == nullptr || src.data == nullptr)
    return InvalidArgument(fmt::format("copy_to_host: null pointer for {}", src.describe()));
  std::memcpy(host, src.data, src.nbytes());
  return Status::Ok();
}

Status CpuBackend::embed(const Tensor& ids, const Tensor& table, const Tensor& out) {
  return cpu::embed(ids, table, out);
}
Status CpuBackend::rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  return cpu::rmsnorm(x, weight, eps, out);
}
Status CpuBackend::linear(const Tensor& x, const Tensor& w, const Tensor& y,
                          const LinearEpilogue& ep) {
  return cpu::linear(x, w, y, ep);
}
Status CpuBackend::rope_and_append_kv(const RopeAppendArgs& args) {
  return cpu::rope_and_append_kv(args);
}
Status CpuBackend::attention_decode(const AttentionDecodeArgs& args) {
  return cpu::attention_decode(args);
}
Status CpuBackend::attention_prefill(const AttentionPrefillArgs& args) {
  return cpu::attention_prefill(args);
}
Status CpuBackend::silu_mul(const Tensor& gate_up, const Tensor& out) {
  return cpu::silu_mul(gate_up, out);
}
Status CpuBackend::layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                             const Tensor& out) {
  return cpu::layernorm(x, weight, bias, eps, out);
}
Status CpuBackend::embed_add(const Tensor& ids, const Tensor& table, const Tensor& out) {
  return cpu::embed_add(ids, table, out);
}
Status CpuBackend::activation(const Tensor& x, const Tensor& out, Activation act) {
  return cpu::activation(x, out, act);
}
Status CpuBackend::argmax(const Tensor& logits, const Tensor& ids) {
  return cpu::argmax(logits, ids);
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace fdpp
