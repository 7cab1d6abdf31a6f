// Tensor maps for Hopper's TMA unit (cp.async.bulk.tensor): the host encodes, once per
// (tensor, box) and outside any kernel, how a 2-D row-major b16 matrix is cut into boxes;
// a kernel receives the 128-byte map by value (a __grid_constant__ parameter, so a CUDA
// graph captures it with the launch) and copies whole boxes with one instruction.
//
// The encoder is a driver API function (cuTensorMapEncodeTiled); it is reached through the
// runtime's entry-point query, so nothing links libcuda directly.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

// A (rows, cols) row-major f16/bf16 matrix at `base` (16-byte aligned, cols · 2 a multiple
// of 16), boxes of box_rows × 64 columns (128 bytes: the widest the 128-byte swizzle takes)
// stored with the 128-byte swizzle: 16-byte chunk c of box row r lands at chunk c ^ (r % 8)
// of that row, so a box's shared-memory destination must be 1024-byte aligned. Reads past
// the matrix fill zeros. L2 fills are promoted to 128 bytes, one box row: promoting to 256
// bytes (a whole 128-dim f16 row, so the other half-box's requests hit L2) made the decode
// kernel slower on its long rows (no promotion and 64 bytes came out even with 128): under
// Nsight Compute the 256-byte version kept the L2 nearly saturated for less DRAM throughput
// than cuDNN's kernel gets (docs/experiments/log.md, "tensor_map.h: the L2 promotion").
// rows must fit a 32-bit coordinate. Writes *map (an out-parameter:
// CUtensorMap is 64-byte aligned, which does not travel well by value through Result).
Status encode_b16_tensor_map_sw128(const void* base, int64_t rows, int64_t cols, int box_rows,
                                   DType dtype, CUtensorMap* map);

}  // namespace fdpp::cuda
