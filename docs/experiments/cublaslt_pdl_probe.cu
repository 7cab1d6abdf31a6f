// Experiment (docs/experiments/README.md). Does cuBLASLt's kernel wait (griddepcontrol.wait) when its graph edge from the previous kernel
// is programmatic? A producer triggers its dependents at once, spins, then writes x = 1; the GEMM
// y = x·Wᵀ reads x. If the GEMM does not wait, y is computed from x = 0.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); std::exit(1);} } while (0)
#define BK(x) do { cublasStatus_t e = (x); if (e != CUBLAS_STATUS_SUCCESS) { std::printf("cuBLASLt %d at %d\n", (int)e, __LINE__); std::exit(1);} } while (0)

__global__ void producer(__half* x, int n, unsigned long long delay_ns, float val) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < delay_ns);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = __float2half(val);
}
__global__ void fill(__half* w, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    w[i] = __float2half(((h & 0xffff) / 65536.f - 0.5f) * 0.1f);
  }
}

int main(int argc, char** argv) {
  const int M = 8;
  struct Shape { const char* name; int n, k; } shapes[] = {{"qkv", 12288, 4096}, {"o", 4096, 4096}, {"gate_up", 22016, 4096}, {"down", 4096, 11008}};
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasLtHandle_t lt; BK(cublasLtCreate(&lt));
  void* ws; const size_t ws_bytes = 32 << 20; CK(cudaMalloc(&ws, ws_bytes));
  for (const Shape& sh : shapes) {
    const int N = sh.n, K = sh.k;
    __half *w, *x, *y; CK(cudaMalloc(&w, (size_t)N * K * 2)); CK(cudaMalloc(&x, (size_t)M * K * 2)); CK(cudaMalloc(&y, (size_t)M * N * 2));
    fill<<<1024, 256>>>(w, (size_t)N * K, 7); CK(cudaDeviceSynchronize());
    cublasLtMatmulDesc_t op; BK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    BK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    BK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtMatrixLayout_t la, lb, lc;
    BK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, K, N, K));
    BK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, K, M, K));
    BK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, N, M, N));
    cublasLtMatmulPreference_t pref; BK(cublasLtMatmulPreferenceCreate(&pref));
    BK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    cublasLtMatmulHeuristicResult_t heur; int got = 0;
    BK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &got));
    const float alpha = 1.f, beta = 0.f;
    auto gemm = [&] { BK(cublasLtMatmul(lt, op, &alpha, w, la, x, lb, &beta, y, lc, y, lc, &heur.algo, ws, ws_bytes, s)); };
    // reference: x = 1 -> y[n] = sum_k W[n, k] (computed by the GEMM itself, plain stream order)
    producer<<<64, 256, 0, s>>>(x, M * K, 0, 1.f); gemm(); CK(cudaStreamSynchronize(s));
    std::vector<__half> ref(M * N), out(M * N); CK(cudaMemcpy(ref.data(), y, M * N * 2, cudaMemcpyDeviceToHost));
    for (int programmatic = 0; programmatic < 2; ++programmatic)
      for (unsigned long long delay : {0ull, 200000ull}) {
        cudaGraph_t g; cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        const int reps = delay ? 1 : 50;
        for (int r = 0; r < reps; ++r) {
          producer<<<64, 256, 0, s>>>(x, M * K, delay, 1.f);
          if (programmatic) {
            cudaStreamCaptureStatus st; const cudaGraphNode_t* deps = nullptr; const cudaGraphEdgeData* ed = nullptr; size_t nd = 0;
            CK(cudaStreamGetCaptureInfo(s, &st, nullptr, nullptr, &deps, &ed, &nd));
            std::vector<cudaGraphNode_t> d(deps, deps + nd); std::vector<cudaGraphEdgeData> edges(nd);
            for (auto& v : edges) { v = {}; v.from_port = cudaGraphKernelNodePortProgrammatic; v.type = cudaGraphDependencyTypeProgrammatic; }
            CK(cudaStreamUpdateCaptureDependencies(s, d.data(), edges.data(), nd, cudaStreamSetCaptureDependencies));
          }
          gemm();
        }
        CK(cudaStreamEndCapture(s, &g));
        size_t nn = 0; CK(cudaGraphGetNodes(g, nullptr, &nn));
        std::vector<cudaGraphNode_t> nodes(nn); CK(cudaGraphGetNodes(g, nodes.data(), &nn));
        int kernels = 0; const char* gname = "?";
        for (auto nd : nodes) { cudaGraphNodeType t; CK(cudaGraphNodeGetType(nd, &t)); if (t == cudaGraphNodeTypeKernel) { ++kernels; cudaKernelNodeParams kp; if (cudaGraphKernelNodeGetParams(nd, &kp) == cudaSuccess && kp.func != (void*)producer) { const char* nm = nullptr; if (cudaFuncGetName(&nm, kp.func) == cudaSuccess && nm) gname = nm; } } }
        CK(cudaGraphInstantiate(&ge, g, 0));
        int bad_runs = 0; float ms_best = 1e9;
        for (int it = 0; it < 5; ++it) {
          CK(cudaMemsetAsync(x, 0, M * K * 2, s)); CK(cudaMemsetAsync(y, 0xFF, M * N * 2, s)); CK(cudaStreamSynchronize(s));
          cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
          CK(cudaEventRecord(a, s)); CK(cudaGraphLaunch(ge, s)); CK(cudaEventRecord(b, s)); CK(cudaStreamSynchronize(s));
          float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (ms < ms_best) ms_best = ms;
          CK(cudaMemcpy(out.data(), y, M * N * 2, cudaMemcpyDeviceToHost));
          int bad = 0; for (int i = 0; i < M * N; ++i) if (!(std::fabs(__half2float(out[i]) - __half2float(ref[i])) <= 1e-3f + 1e-3f * std::fabs(__half2float(ref[i])))) ++bad;
          if (bad) ++bad_runs;
        }
        std::printf("%-8s M %d N %5d K %5d programmatic %d delay %6llu ns: kernels/graph %d, wrong runs %d/5, graph %.3f us per GEMM (best), gemm kernel %s\n",
                    sh.name, M, N, K, programmatic, delay, kernels, bad_runs, ms_best * 1e3 / reps, gname);
        CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g));
      }
    CK(cudaFree(w)); CK(cudaFree(x)); CK(cudaFree(y));
  }
  return 0;
}
