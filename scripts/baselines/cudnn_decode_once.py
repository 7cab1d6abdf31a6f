#!/usr/bin/env python3
"""One decode-attention configuration through torch SDPA's cuDNN backend, for a profiler.

`attention_baselines.py` times cuDNN inside captured graphs over rotated K/V copies; this runs
the bare call a few times on one set of tensors, so that Nsight Compute sees cuDNN's own kernel
(its launch shape, registers, shared memory, DRAM throughput) next to fdpp's:

  ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__registers_per_thread \
    --csv python3 scripts/baselines/cudnn_decode_once.py B L HQ HKV [--calls N]

fp16, head_dim 128, one query token per sequence; K and V are (B, HKV, L, 128).
"""
import argparse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("batch", type=int)
    ap.add_argument("length", type=int)
    ap.add_argument("hq", type=int)
    ap.add_argument("hkv", type=int)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--calls", type=int, default=4)
    a = ap.parse_args()
    import torch  # lazily: --help works without it
    from torch.nn.attention import SDPBackend, sdpa_kernel

    d = a.head_dim
    q = torch.randn(a.batch, a.hq, 1, d, device="cuda", dtype=torch.float16)
    k = torch.randn(a.batch, a.hkv, a.length, d, device="cuda", dtype=torch.float16)
    v = torch.randn(a.batch, a.hkv, a.length, d, device="cuda", dtype=torch.float16)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        for _ in range(a.calls):
            torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=a.hq != a.hkv)
    torch.cuda.synchronize()
    print(f"cudnn decode b {a.batch} L {a.length} {a.hq}/{a.hkv}: {a.calls} calls")


if __name__ == "__main__":
    main()
