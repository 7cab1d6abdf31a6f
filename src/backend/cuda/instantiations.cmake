# The explicit instantiations of the templated CUDA kernels, one list, one generated .cu per
# instantiation file (house rule 4: each compiles in parallel, one object each). The kernels
# themselves live in the headers named below; a generated file only includes its header and
# names the template arguments. Included from CMakeLists.txt, which appends
# FDPP_CUDA_GENERATED_SOURCES to fdpp_cuda's sources.
#
# Every family is instantiated for both element types (f16, bf16). The occupancy queries
# (decode.cpp's split plan) exist for the synchronized policy only (and, for the tensor-core
# decode kernel, for the default tiles only): the plan sizes its grid from them and the
# unified kernels share their footprint.

# Attention: family:head_dim:policies. "sync" = SoftmaxPolicy::kSynchronized,
# "unified" = SoftmaxPolicy::kUnifiedMax; head_dim "128w" is the tensor-core decode kernel's
# wide-tile variant (8 KB warp tiles; dispatch/decode_splits.h, decode_mma_wide_tiles) at head_dim 128,
# "any" the generic decode kernel's runtime head_dim.
set(FDPP_ATTENTION_INSTANCES
  decode_split:64:sync,unified
  decode_split:128:sync,unified
  decode_split:256:sync
  decode_generic:any:sync,unified
  decode_mma:64:sync,unified
  decode_mma:128:sync,unified
  decode_mma:128w:sync,unified
  prefill_mma:64:sync,unified
  prefill_mma:128:sync,unified)

# ImplB (flat GEMM): config id:name, as in dispatch/gemm_configs.h (kFlatConfigs); each
# generated file static_asserts that the id still names that configuration.
set(FDPP_FLAT_GEMM_CONFIGS
  0:n64k128s4m8
  1:n32k256s4m8
  2:n64k128s4m16
  3:n64k128s4m32
  4:n128k64s4m64)

# ImplA (GEMV): M ranges, first-last; one file per dtype and range (half the M range per
# file, so builds parallelize).
set(FDPP_GEMV_M_RANGES 1-4 5-8)

set(FDPP_CUDA_DTYPES f16 bf16)
set(_fdpp_type_f16 kF16)
set(_fdpp_type_bf16 kBF16)
set(_fdpp_policy_sync kSynchronized)
set(_fdpp_policy_unified kUnifiedMax)

set(FDPP_CUDA_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated/backend/cuda)
set(FDPP_CUDA_GENERATED_SOURCES)

# Writes ${FDPP_CUDA_GENERATED_DIR}/<subdir>/<stem>.cu (only when its text changes, so a
# reconfigure does not rebuild the kernels) and appends it to FDPP_CUDA_GENERATED_SOURCES.
function(fdpp_write_instantiation subdir stem comment header body)
  set(path ${FDPP_CUDA_GENERATED_DIR}/${subdir}/${stem}.cu)
  set(FDPP_INSTANTIATION_TEXT
"// Generated from src/backend/cuda/instantiations.cmake; do not edit.
${comment}
#include \"${header}\"

namespace fdpp::cuda {
${body}}  // namespace fdpp::cuda
")
  file(CONFIGURE OUTPUT ${path} CONTENT "${FDPP_INSTANTIATION_TEXT}" @ONLY)
  set(FDPP_CUDA_GENERATED_SOURCES ${FDPP_CUDA_GENERATED_SOURCES} ${path} PARENT_SCOPE)
endfunction()

set(_fdpp_one "// One instantiation per file so the kernels compile in parallel (house rule 4).")
set(_fdpp_wide "// The wide-tile variant (8 KB warp tiles; dispatch/decode_splits.h, decode_mma_wide_tiles).")
set(_fdpp_decode_args "(\n    const DecodeParams& p, KernelStream stream);\n")
set(_fdpp_prefill_args "(\n    const PrefillParams& p, cudaStream_t stream);\n")
foreach(row IN LISTS FDPP_ATTENTION_INSTANCES)
  string(REPLACE ":" ";" parts ${row})
  list(GET parts 0 family)
  list(GET parts 1 dim)
  list(GET parts 2 policies)
  string(REPLACE "," ";" policies ${policies})
  foreach(dt IN LISTS FDPP_CUDA_DTYPES)
    set(T "DType::${_fdpp_type_${dt}}")
    foreach(pol IN LISTS policies)
      set(P "SoftmaxPolicy::${_fdpp_policy_${pol}}")
      set(suffix "")
      if(pol STREQUAL "unified")
        set(suffix "_unified")
      endif()
      set(comment ${_fdpp_one})
      if(family STREQUAL "decode_split")
        set(stem decode_d${dim}_${dt}${suffix})
        set(header backend/cuda/attention/decode_kernel.cuh)
        set(body "template Status launch_decode_split<${T}, ${dim}, ${P}>${_fdpp_decode_args}")
        if(pol STREQUAL "sync")
          string(APPEND body
                 "template Result<int> decode_split_occupancy<${T}, ${dim}, ${P}>();\n")
        endif()
      elseif(family STREQUAL "decode_generic")
        set(stem decode_generic_${dt}${suffix})
        set(header backend/cuda/attention/decode_generic.cuh)
        set(body "template Status launch_decode_generic<${T}, ${P}>${_fdpp_decode_args}")
        if(pol STREQUAL "sync")
          string(APPEND body "template Result<int> decode_generic_occupancy<${T}, ${P}>();\n")
        endif()
      elseif(family STREQUAL "decode_mma")
        set(stem decode_mma_d${dim}_${dt}${suffix})
        set(header backend/cuda/attention/decode_mma_kernel.cuh)
        string(REPLACE "w" "" d ${dim})
        if(dim MATCHES "w$")
          set(wide true)
          string(APPEND comment "\n${_fdpp_wide}")
        else()
          set(wide false)
        endif()
        set(body "template Status launch_decode_mma<${T}, ${d}, ${P}, ${wide}>${_fdpp_decode_args}")
        if(pol STREQUAL "sync" AND NOT wide)
          string(APPEND body "template Result<int> decode_mma_occupancy<${T}, ${d}, ${P}>();\n")
        endif()
      elseif(family STREQUAL "prefill_mma")
        set(stem prefill_d${dim}_${dt}${suffix})
        set(header backend/cuda/attention/prefill_kernel.cuh)
        set(body "template Status launch_prefill_mma<${T}, ${dim}, ${P}>${_fdpp_prefill_args}")
      else()
        message(FATAL_ERROR "instantiations.cmake: unknown attention family '${family}'")
      endif()
      fdpp_write_instantiation(attention ${stem} "${comment}" ${header} "${body}")
    endforeach()
  endforeach()
endforeach()

foreach(row IN LISTS FDPP_FLAT_GEMM_CONFIGS)
  string(REPLACE ":" ";" parts ${row})
  list(GET parts 0 id)
  list(GET parts 1 name)
  foreach(dt IN LISTS FDPP_CUDA_DTYPES)
    set(T "DType::${_fdpp_type_${dt}}")
    set(body "\nstatic_assert(flat_config_named(${id}, \"${name}\"));\n")
    string(APPEND body
           "template Status launch_flat_gemm<${id}, ${T}>(const GemmParams&, KernelStream);\n")
    string(APPEND body "template Result<int> prepare_flat_gemm_config<${id}, ${T}>();\n\n")
    fdpp_write_instantiation(gemm flat_gemm_${name}_${dt}
      "// ImplB instantiation: configuration ${id} (${name}, dispatch/gemm_configs.h), ${dt}."
      backend/cuda/gemm/flat_gemm_kernel.cuh "${body}")
  endforeach()
endforeach()

foreach(range IN LISTS FDPP_GEMV_M_RANGES)
  string(REPLACE "-" ";" ends ${range})
  list(GET ends 0 first)
  list(GET ends 1 last)
  foreach(dt IN LISTS FDPP_CUDA_DTYPES)
    set(T "DType::${_fdpp_type_${dt}}")
    set(body "\n")
    foreach(m RANGE ${first} ${last})
      string(APPEND body
             "template Status launch_gemv<${T}, ${m}>(const GemmParams&, KernelStream);\n")
      string(APPEND body "template Result<int> gemv_occupancy<${T}, ${m}>();\n")
    endforeach()
    string(APPEND body "\n")
    set(comment "// ImplA instantiations: ${dt}, M = ${first}..${last} (a dtype and part of the M ")
    string(APPEND comment "range per file,\n// so builds parallelize).")
    fdpp_write_instantiation(gemm gemv_${dt}_m${first}_${last} "${comment}"
                             backend/cuda/gemm/gemv_kernel.cuh "${body}")
  endforeach()
endforeach()
