#!/usr/bin/env bash
# The GPU machine's one entry point: build, run the gpu tests, make the random
# 7B/13B models, cross-check against transformers, benchmark, and leave every
# result under $OUT (a summary.md plus results.tgz: the device returns few files).
#
#   scripts/gpu_check.sh [STAGE...]      default: build test
# Stages: build test models compare bench kernels baselines
# Environment: OUT (results), FDPP_MODELS_TMP (random models, default /tmp/fdpp-models),
#   BENCH_ARGS / COMPARE_ARGS / BASELINE_ARGS (extra arguments), MODEL (random model, default llama-2-7b).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
WORK=$OUT/work
mkdir -p "$WORK"
BUILD=$ROOT/build-gpu
MODELS_TMP=${FDPP_MODELS_TMP:-/tmp/fdpp-models}
MODEL=${MODEL:-llama-2-7b}
export FDPP_MODELS_DIR=$ROOT/models  # the carried copy of ../shared/models
export PYTHONUNBUFFERED=1
FDPP=$BUILD/fdpp
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build test)
summary=$OUT/summary.md
echo "# gpu_check $(date -u '+%Y-%m-%d %H:%M UTC') — stages: ${stages[*]}" >"$summary"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used,memory.total --format=csv \
  >>"$summary" 2>&1
echo "commit: $(git rev-parse --short HEAD 2>/dev/null) $(git status --porcelain 2>/dev/null | wc -l) changed files" \
  >>"$summary"

note() { echo "$*" | tee -a "$summary"; }
# Pack the results however the script ends (the device run may stop it at its time limit).
finish() {
  # Raw logits dumps stay behind: the device returns at most 16 MiB per file.
  [ -d "$WORK" ] && tar -C "$OUT" --exclude='*.f32' --exclude='*.bin' -czf "$OUT/results.tgz" work &&
    rm -rf "$WORK"
  echo "results: $OUT/summary.md, $OUT/results.tgz"
}
trap finish EXIT
trap 'note "stopped by a signal"; exit 143' TERM INT
stage_time() { local t0=$1; echo "$(( $(date +%s) - t0 ))s"; }

for stage in "${stages[@]}"; do
  t0=$(date +%s)
  case $stage in
    build)
      cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFDPP_CUDA=ON -DFDPP_CUDA_ARCHS=90 \
        -DFDPP_MODELS_DIR="$ROOT/models" >"$WORK/configure.log" 2>&1
      if cmake --build "$BUILD" >"$WORK/build.log" 2>&1; then
        note "build: ok ($(stage_time $t0))"
      else
        note "build: FAILED ($(stage_time $t0))"
        grep -E "error|Error" "$WORK/build.log" | head -40 | tee -a "$summary"
        break
      fi
      ;;
    test)
      # The gtest binaries run directly: ctest 4.x on the GPU machine failed to parse the
      # test lists gtest_discover_tests wrote (kept below for diagnosis).
      for t in "$BUILD"/tests/gpu_test_*; do
        [ -x "$t" ] || continue
        name=$(basename "$t")
        timeout 300 "$t" --gtest_brief=1 >"$WORK/$name.log" 2>&1
        rc=$?
        note "$name: exit $rc, $(grep -E '^\[  PASSED  \]' "$WORK/$name.log" | head -1)" \
          "$(grep -E '^\[  FAILED  \] [0-9]+ test' "$WORK/$name.log" | head -1)"
        grep -E '^\[  FAILED  \] [A-Za-z]' "$WORK/$name.log" | head -20 | tee -a "$summary"
        grep -E '\[ perf \]' "$WORK/$name.log" | head -40 | tee -a "$summary"
      done
      sed -n 1,10p "$BUILD"/tests/gpu_test_cuda_ops*_tests.cmake 2>/dev/null | cut -c1-300 >>"$WORK/discovery.txt"
      note "gpu tests: $(stage_time $t0)"
      ;;
    models)
      for m in $MODEL; do
        [ -f "$MODELS_TMP/$m/config.json" ] ||
          python3 scripts/make_random_model.py "$m" "$MODELS_TMP/$m" >>"$WORK/models.log" 2>&1
      done
      note "models: $(ls "$MODELS_TMP" 2>/dev/null | tr '\n' ' ') ($(stage_time $t0)); $(df -h /tmp | tail -1)"
      ;;
    compare)
      # shellcheck disable=SC2086
      python3 scripts/hf_compare.py --model "$MODELS_TMP/$MODEL" --fdpp "$FDPP" --out "$WORK/compare.json" \
        --workdir "$WORK/compare" ${COMPARE_ARGS:-} >"$WORK/compare.log" 2>&1
      note "compare $MODEL: exit $? ($(stage_time $t0))"
      tail -30 "$WORK/compare.log" | tee -a "$summary"
      ;;
    bench)
      # shellcheck disable=SC2086
      "$FDPP" bench -m "$MODELS_TMP/$MODEL" -b 1,8 -p 128,1024,8192 -n 128 -r 3 ${BENCH_ARGS:-} \
        >"$WORK/bench_$MODEL.md" 2>"$WORK/bench_$MODEL.err"
      note "bench $MODEL: exit $? ($(stage_time $t0))"
      cat "$WORK/bench_$MODEL.md" | tee -a "$summary"
      tail -5 "$WORK/bench_$MODEL.err" >>"$summary"
      ;;
    kernels)
      for b in "$BUILD"/bench/fdpp_bench_*; do
        [ -x "$b" ] || continue
        "$b" >"$WORK/$(basename "$b").md" 2>&1
        note "kernel bench $(basename "$b"): exit $?"
        cat "$WORK/$(basename "$b").md" >>"$summary"
      done
      ;;
    baselines)
      python3 scripts/bench_baselines.py --model "$MODELS_TMP/$MODEL" --batch 1,8 --prompt 128,1024,8192 \
        --gen 128 --reps 3 --out "$WORK/baselines_$MODEL.json" ${BASELINE_ARGS:-} >"$WORK/baselines.log" 2>&1
      note "baselines $MODEL: exit $? ($(stage_time $t0))"
      tail -20 "$WORK/baselines.log" | tee -a "$summary"
      ;;
    *)
      note "unknown stage $stage"
      ;;
  esac
done
