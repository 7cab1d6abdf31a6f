#!/usr/bin/env bash
# The GPU machine's one entry point: build, run the gpu tests, make the random
# 7B/13B models, cross-check against transformers, benchmark, and leave every
# result under $OUT (a summary.md plus results.tgz: the device returns few files).
#
#   scripts/gpu_check.sh [STAGE...]      default: build test
# Stages: build unpack test models compare bench gemm attention calibrate tune pdl fuse ablation
#   family baselines ncu ab results
# Environment: OUT (results), FDPP_MODELS_TMP (random models, default /tmp/fdpp-models),
#   BENCH_ARGS / COMPARE_ARGS / BASELINE_ARGS / GEMM_ARGS / ATTN_ARGS / TUNE_ARGS / ABLATION_ARGS /
#   ABLATION_LONG_ARGS (the ablation's 32K engine; 13B: -b 1,2) /
#   FUSE_ARGS / FUSE_REPS / NCU_ATTN_CONFIGS / AB_OTHER (required by ab) / AB_ARGS / AB_REPS /
#   FAMILY_COMPARE_ARGS (e.g. --noise-floor: transformers' own fp16 error beside fdpp's)
#   (extra arguments), MODEL (random model, default llama-2-7b), FAMILY_MODELS (the family stage's
#   models, default "opt-6.7b chatglm2-6b llama-2-13b").
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
WORK=$OUT/work
mkdir -p "$WORK"
BUILD=$ROOT/build-gpu
MODELS_TMP=${FDPP_MODELS_TMP:-/tmp/fdpp-models}
MODEL=${MODEL:-llama-2-7b}
export FDPP_MODELS_DIR=$ROOT/models  # the repository's models/
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
    unpack)
      # Binaries built on the development machine (same nvcc 13.0, sm_90; the host code by
      # g++ 12) and carried as prebuilt/gpu.tar.xz: a cold GPU machine then spends its time
      # running, not compiling. scripts/pack_prebuilt.sh makes the archive.
      mkdir -p "$BUILD" && tar -C "$BUILD" -xJf "$ROOT/prebuilt/gpu.tar.xz" &&
        note "unpack: ok ($(stage_time $t0)); built from $(cat "$BUILD/PREBUILT_COMMIT" 2>/dev/null)" ||
        { note "unpack: FAILED"; break; }
      export LD_LIBRARY_PATH=$BUILD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      "$FDPP" tokenize -m "$ROOT/models/stories260K" -p "Hello" >/dev/null 2>"$WORK/unpack.err" ||
        { note "unpack: fdpp cannot tokenize with stories260K"; cat "$WORK/unpack.err" >>"$summary"; break; }
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
      sed -n 1,10p "$BUILD"/tests/gpu_test_ops*_tests.cmake 2>/dev/null | cut -c1-300 >>"$WORK/discovery.txt"
      note "gpu tests: $(stage_time $t0)"
      ;;
    models)
      for m in $MODEL; do
        [ -f "$MODELS_TMP/$m/config.json" ] ||
          python3 scripts/models/make_random_model.py "$m" "$MODELS_TMP/$m" >>"$WORK/models.log" 2>&1
      done
      note "models: $(ls "$MODELS_TMP" 2>/dev/null | tr '\n' ' ') ($(stage_time $t0)); $(df -h /tmp | tail -1)"
      ;;
    compare)
      # shellcheck disable=SC2086
      python3 scripts/compare/hf_compare.py --model "$MODELS_TMP/$MODEL" --fdpp "$FDPP" --out "$WORK/compare.json" \
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
    gemm)
      # GEMV / flat GEMM / cuBLASLt over M on the Llama-2 7B and 13B shapes (GEMM_ARGS: e.g.
      # "--splits 1,2,3,4,6,8,12,16" to time every split-K for the tuner).
      # shellcheck disable=SC2086
      "$FDPP" bench-gemm --json-out "$WORK/gemm.json" ${GEMM_ARGS:-} >"$WORK/gemm.md" 2>"$WORK/gemm.err"
      note "bench-gemm: exit $? ($(stage_time $t0))"
      cat "$WORK/gemm.md" >>"$summary"
      python3 scripts/plots/plot_gemm.py "$WORK/gemm.json" "$WORK/gemm.png" >>"$summary" 2>&1
      ;;
    attention)
      # Decode and prefill attention kernels, synchronized and unified, beside torch SDPA
      # flash (FlashDecoding) and cuDNN in the same run (issue 4's tables).
      # shellcheck disable=SC2086
      "$FDPP" bench-attention -o json ${ATTN_ARGS:-} >"$WORK/attn_fdpp.json" 2>"$WORK/attn_fdpp.err"
      note "bench-attention: exit $? ($(stage_time $t0))"
      python3 scripts/baselines/attention_baselines.py --fdpp "$WORK/attn_fdpp.json" --out "$WORK/attn_torch.json" \
        --md "$WORK/attn.md" >"$WORK/attn_baselines.log" 2>&1
      note "attention baselines: exit $? ($(stage_time $t0))"
      cat "$WORK/attn.md" >>"$summary" 2>/dev/null
      tail -5 "$WORK/attn_baselines.log" >>"$summary"
      ;;
    calibrate)
      # φ calibration and the fallback rate per layer of each φ source, on stories260K and
      # the random-weight $MODEL (issue 4).
      for m in "$ROOT/models/stories260K" "$MODELS_TMP/$MODEL"; do
        [ -f "$m/config.json" ] || { note "calibrate: no $m"; continue; }
        # Calibration runs text: the random Llama-2 models get the real Llama 2 tokenizer.
        case $(basename "$m") in llama-2-*) [ -f "$m/tokenizer.model" ] ||
          cp "$ROOT/models/tokenizers/llama2/tokenizer.model" "$m/" ;; esac
        n=$(basename "$m")
        "$FDPP" calibrate -m "$m" --out "$WORK/cal_$n.json" >"$WORK/calibrate_$n.md" 2>&1
        note "calibrate $n: exit $? ($(stage_time $t0))"
        cat "$WORK/calibrate_$n.md" >>"$summary"
        for phi in calibrated follow; do
          "$FDPP" generate -m "$m" --softmax unified --phi "$phi" --calibration "$WORK/cal_$n.json" \
            -p "Once upon a time" -n 256 --ignore-eos --json >"$WORK/fallback_${n}_$phi.json" 2>"$WORK/fallback_${n}_$phi.err"
          note "fallbacks $n φ=$phi: exit $?: $(tail -1 "$WORK/fallback_${n}_$phi.err")"
          python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["softmax"]; print("per layer (prefill, decode):", [(l["prefill_fallbacks"], l["decode_fallbacks"]) for l in s["layers"]], "rows/layer", s["rows_per_layer"])' \
            "$WORK/fallback_${n}_$phi.json" >>"$summary" 2>&1
        done
      done
      ;;
    tune)
      # The dispatch table of $MODEL's shapes (issue 6): M1, M2, regret; the plots.
      # shellcheck disable=SC2086
      "$FDPP" tune -m "$MODELS_TMP/$MODEL" --cache-dir "$WORK/cache" --json-out "$WORK/tune_$MODEL.json" \
        ${TUNE_ARGS:-} >"$WORK/tune_$MODEL.md" 2>"$WORK/tune_$MODEL.err"
      note "tune $MODEL: exit $? ($(stage_time $t0))"
      cat "$WORK/tune_$MODEL.md" >>"$summary"
      tail -5 "$WORK/tune_$MODEL.err" >>"$summary"
      mkdir -p "${FDPP_CACHE_DIR:-$HOME/.cache/fdpp}" && cp -r "$WORK/cache/." "${FDPP_CACHE_DIR:-$HOME/.cache/fdpp}/" 2>/dev/null
      python3 scripts/plots/plot_tune.py "$WORK/tune_$MODEL.json" "$WORK/plots" >>"$summary" 2>&1
      ;;
    pdl)
      # Programmatic dependent launch on and off (src/backend/cuda/launch.h), with the
      # dispatch table and with cuBLASLt only, one engine per cell.
      for g in auto cublas; do
        for p in on off; do
          "$FDPP" bench -m "$MODELS_TMP/$MODEL" --gemm "$g" --pdl "$p" -b 1,8 -p 1024,8192 -n 64 -r 2 \
            >"$WORK/pdl_${MODEL}_${g}_$p.md" 2>"$WORK/pdl_${MODEL}_${g}_$p.err"
          note "pdl $MODEL gemm=$g pdl=$p: exit $? ($(stage_time $t0))"
          grep -E '^\| *[0-9]' "$WORK/pdl_${MODEL}_${g}_$p.md" >>"$summary"
        done
      done
      ;;
    fuse)
      # RMSNorm / the SiLU gate inside the GEMV's load of x (--fuse) on and off, engines started
      # alternately FUSE_REPS times: engines started minutes apart differ by about ±2%, more
      # than the effect, so only interleaved runs resolve it.
      for rep in $(seq "${FUSE_REPS:-3}"); do
        for f in on off; do
          # shellcheck disable=SC2086
          "$FDPP" bench -m "$MODELS_TMP/$MODEL" --fuse "$f" ${FUSE_ARGS:--b 1 -p 1024,8192 -n 128 -r 3} \
            >"$WORK/fuse_${MODEL}_${f}_$rep.md" 2>"$WORK/fuse_${MODEL}_${f}_$rep.err"
          note "fuse $MODEL fuse=$f run $rep: exit $? ($(stage_time $t0))"
          grep -E '^\| *[0-9]' "$WORK/fuse_${MODEL}_${f}_$rep.md" >>"$summary"
        done
      done
      ;;
    ablation)
      # Issue 6's grid, one bench per cell: {softmax sync, unified} x {gemm cublas, auto}, plus
      # gemv and flat forced (sync); contexts 128/1K/8K in one engine, then 32K (an engine of its
      # own: the KV cache is sized by the largest batch x context) for the 2 x 2 grid.
      # scripts/profile/ablation_table.py turns the folder into the tables of docs/experiments/log.md.
      adir=$WORK/ablation_$MODEL; mkdir -p "$adir"
      for cell in sync:cublas sync:auto unified:cublas unified:auto sync:gemv sync:flat; do
        sm=${cell%:*}; g=${cell#*:}
        # shellcheck disable=SC2086
        "$FDPP" bench -m "$MODELS_TMP/$MODEL" --softmax "$sm" --gemm "$g" \
          ${ABLATION_ARGS:--b 1,2,4,8 -p 128,1024,8192 -n 48 -r 2} >"$adir/abl_${sm}_$g.md" 2>&1
        note "ablation $MODEL softmax=$sm gemm=$g: exit $? ($(stage_time $t0))"
        case $g in cublas|auto)
          # shellcheck disable=SC2086
          "$FDPP" bench -m "$MODELS_TMP/$MODEL" --softmax "$sm" --gemm "$g" \
            ${ABLATION_LONG_ARGS:--b 1,2,4 -p 32768 -n 32 -r 1} >"$adir/abl32k_${sm}_$g.md" 2>&1
          note "ablation $MODEL 32K softmax=$sm gemm=$g: exit $? ($(stage_time $t0))" ;;
        esac
      done
      python3 scripts/profile/ablation_table.py "$adir" >>"$summary"
      ;;
    family)
      # Issue 7, one model at a time (the disk holds about two): random weights, its GEMM table
      # (fdpp tune into the cache, --emit-cpp of every shape the cache holds), logits against
      # transformers in fp32 (prompt lengths 1, 17, 500), fdpp bench, calibration, Hugging
      # Face eager the same day; the model is deleted afterwards. FAMILY_STEPS picks steps.
      steps=" ${FAMILY_STEPS:-tune compare bench calibrate hf} "
      for fm in ${FAMILY_MODELS:-opt-6.7b chatglm2-6b llama-2-13b}; do
        t1=$(date +%s)
        dir=$MODELS_TMP/$fm
        extra=(); ctx="128,1024,8192"; hfdir=$dir
        case $fm in
          chatglm2-6b) extra=(--chatglm-naming both); ctx="128,1024,8192,32768"; hfdir=$dir-glm ;;
          opt-*) ctx="128,1024" ;;  # OPT learned 2048 positions
        esac
        [ -f "$dir/config.json" ] ||
          python3 scripts/models/make_random_model.py "$fm" "$dir" "${extra[@]}" >>"$WORK/models.log" 2>&1
        case $fm in
          llama-*) cp --update=none "$ROOT/models/tokenizers/llama2/tokenizer.model" "$dir/" ;;
          opt-*) cp --update=none "$ROOT/models/tokenizers/gpt2/"{vocab.json,merges.txt} "$dir/" ;;
          chatglm*) cp --update=none "$ROOT/models/tokenizers/chatglm2/"* "$dir/" ;;
        esac
        note "family $fm: model ready ($(stage_time $t1)); $(df -h /tmp | tail -1 | awk '{print $4}') free"
        if [[ $steps == *" tune "* ]]; then
          # shellcheck disable=SC2086
          "$FDPP" tune -m "$dir" --emit-cpp "$WORK/gemm_table_h200.cpp" ${TUNE_ARGS:-} \
            >"$WORK/tune_$fm.md" 2>"$WORK/tune_$fm.err"
          note "family $fm tune: exit $? ($(stage_time $t1))"
          cat "$WORK/tune_$fm.md" >>"$summary"
        fi
        if [[ $steps == *" compare "* ]]; then
          # shellcheck disable=SC2086
          python3 scripts/compare/hf_compare.py --model "$dir" --hf-model "$hfdir" --fdpp "$FDPP" --hf-dtype fp32 \
            --lengths 1,17,500 --batch 1 --out "$WORK/compare_$fm.json" ${FAMILY_COMPARE_ARGS:-} \
            >"$WORK/compare_$fm.log" 2>&1
          note "family $fm compare: exit $? ($(stage_time $t1))"
          grep -A8 "^| mode" "$WORK/compare_$fm.log" >>"$summary"
        fi
        if [[ $steps == *" bench "* ]]; then
          "$FDPP" bench -m "$dir" -b 1,8 -p "$ctx" -n 32 -r 1 >"$WORK/bench_$fm.md" 2>"$WORK/bench_$fm.err"
          note "family $fm bench: exit $? ($(stage_time $t1))"
          cat "$WORK/bench_$fm.md" >>"$summary"
        fi
        if [[ $steps == *" calibrate "* ]]; then
          "$FDPP" calibrate -m "$dir" --tokens 2048 --out "$WORK/cal_$fm.json" >"$WORK/calibrate_$fm.md" 2>&1
          note "family $fm calibrate: exit $? ($(stage_time $t1))"
          cat "$WORK/calibrate_$fm.md" >>"$summary"
        fi
        if [[ $steps == *" hf "* ]]; then
          python3 scripts/baselines/bench_baselines.py --model "$hfdir" --modes eager --batch 1 --prompt 1024 --gen 16 \
            --reps 1 --time-limit 30 --out "$WORK/baselines_$fm.json" >"$WORK/baselines_$fm.log" 2>&1
          note "family $fm HF eager: exit $? ($(stage_time $t1))"
          tail -6 "$WORK/baselines_$fm.log" >>"$summary"
        fi
        rm -rf "$dir" "$dir-glm"
      done
      ;;
    ncu)
      # Nsight Compute on the decode attention kernels, one configuration at a time
      # (NCU_ATTN_CONFIGS: "B L Hq/Hkv" separated by ';'): the details page (speed of light,
      # stall reasons, source counters) and the raw metrics as CSV. Clocks and caches are
      # left as they are (a configuration that fits the L2 is then read from it on the
      # profiled replay: keep L × heads × 512 bytes above ~50 MB).
      ncu_bin=${NCU:-/usr/local/cuda/bin/ncu}
      IFS=';' read -ra cfgs <<<"${NCU_ATTN_CONFIGS:-1 8192 32/32;8 8192 32/32;8 32768 32/8}"
      for cfg in "${cfgs[@]}"; do
        read -r b l h <<<"$cfg"
        tag=ncu_b${b}_L${l}_${h/\//x}
        "$ncu_bin" --set full --clock-control none --cache-control none -k regex:split_kernel \
          --launch-skip 4 --launch-count 1 -o "$WORK/$tag" \
          "$FDPP" bench-attention --what decode --softmax sync -b "$b" -L "$l" --heads "$h" -r 5 \
          >"$WORK/$tag.log" 2>&1
        "$ncu_bin" -i "$WORK/$tag.ncu-rep" --page details >"$WORK/$tag.txt" 2>&1
        "$ncu_bin" -i "$WORK/$tag.ncu-rep" --page raw --csv >"$WORK/$tag.csv" 2>&1
        rm -f "$WORK/$tag.ncu-rep"
        note "ncu decode B $b L $l $h: $(grep -E 'Duration|DRAM Throughput|L2 Cache Throughput' \
          "$WORK/$tag.txt" | head -3 | tr -s ' ' | tr '\n' ' ') ($(stage_time $t0))"
        # cuDNN's kernel on the same configuration (torch SDPA), for the same three figures: the
        # L2 / DRAM throughput pair of the two kernels is what found the TMA maps' L2 promotion.
        "$ncu_bin" --section SpeedOfLight --clock-control none --cache-control none -k regex:cudnn \
          --launch-skip 1 --launch-count 1 \
          python3 scripts/baselines/cudnn_decode_once.py "$b" "$l" "${h%/*}" "${h#*/}" \
          >"$WORK/${tag}_cudnn.txt" 2>&1
        note "ncu cuDNN decode B $b L $l $h: $(grep -E 'Duration|DRAM Throughput|L2 Cache Throughput' \
          "$WORK/${tag}_cudnn.txt" | head -3 | tr -s ' ' | tr '\n' ' ')"
      done
      ;;
    ab)
      # A/B of two builds end to end: AB_OTHER (an fdpp binary, or one compressed with xz,
      # e.g. the previous commit's) and this build, engines started alternately AB_REPS times
      # (engines started minutes apart differ by about ±2%: only interleaved runs resolve a
      # few percent). AB_ARGS: the bench arguments.
      other=$BUILD/fdpp_other  # outside $WORK: results.tgz stays small
      case ${AB_OTHER:?ab needs AB_OTHER} in
        *.xz) xz -dc "$AB_OTHER" >"$other" ;;
        *) cp "$AB_OTHER" "$other" ;;
      esac
      chmod +x "$other"
      for rep in $(seq "${AB_REPS:-2}"); do
        for v in other this; do
          bin=$FDPP; [ "$v" = other ] && bin=$other
          # shellcheck disable=SC2086
          "$bin" bench -m "$MODELS_TMP/$MODEL" ${AB_ARGS:--b 1,8 -p 1024,8192 -n 64 -r 2} \
            >"$WORK/ab_${v}_$rep.md" 2>"$WORK/ab_${v}_$rep.err"
          note "ab $v run $rep: exit $? ($(stage_time $t0))"
          grep -E '^\| *[0-9]' "$WORK/ab_${v}_$rep.md" >>"$summary"
        done
      done
      ;;
    baselines)
      python3 scripts/baselines/bench_baselines.py --model "$MODELS_TMP/$MODEL" --batch 1,8 --prompt 128,1024,8192 \
        --gen 128 --reps 3 --out "$WORK/baselines_$MODEL.json" ${BASELINE_ARGS:-} >"$WORK/baselines.log" 2>&1
      note "baselines $MODEL: exit $? ($(stage_time $t0))"
      tail -20 "$WORK/baselines.log" | tee -a "$summary"
      ;;
    results)
      # The JSON behind docs/results.md, named as scripts/plots/results_page.py reads it, in
      # $OUT/results/ (outside work/, so each file comes back on its own), and the page made from
      # it: copy the folder over docs/results/ and rerun results_page.py. The bench JSON gets the
      # commit and the model's name, which fdpp bench does not write.
      rdir=$OUT/results
      mkdir -p "$rdir"
      # The binaries' commit: a carried build names it in PREBUILT_COMMIT (the GPU machine's copy
      # of the checkout need not carry the history that git rev-parse would read).
      commit=$(git rev-parse --short HEAD 2>/dev/null)
      [ -f "$BUILD/PREBUILT_COMMIT" ] && commit=$(cut -d' ' -f1 "$BUILD/PREBUILT_COMMIT")
      "$FDPP" bench -m "$MODELS_TMP/$MODEL" -b 1,8 -p 1024 -n 128 -r 3 -o json \
        >"$WORK/res_bench.json" 2>"$WORK/res_bench.err" &&
        python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j.update(commit=sys.argv[3], model=sys.argv[4]); json.dump(j, open(sys.argv[2], "w"), indent=1)' \
          "$WORK/res_bench.json" "$rdir/bench_$MODEL.json" "$commit" "$MODEL"
      note "results bench: exit $? ($(stage_time $t0))"
      python3 scripts/baselines/bench_baselines.py --model "$MODELS_TMP/$MODEL" --modes compiled --batch 1,8 \
        --prompt 1024 --gen 64 --reps 2 --out "$rdir/hf_$MODEL.json" >"$WORK/res_hf.log" 2>&1
      note "results hf compiled: exit $? ($(stage_time $t0))"
      "$FDPP" bench-gemm -m "$MODELS_TMP/$MODEL" -M 1,2,4,8,16 --json-out "$WORK/res_gemm.json" \
        >"$WORK/res_gemm.md" 2>&1 &&
        python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j.update(commit=sys.argv[3]); json.dump(j, open(sys.argv[2], "w"), indent=1)' \
          "$WORK/res_gemm.json" "$rdir/gemm_$MODEL.json" "$commit"
      note "results gemm: exit $? ($(stage_time $t0))"
      gpu_tag=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr 'A-Z' 'a-z' |
                sed 's/nvidia //; s/[^a-z0-9]//g')
      "$FDPP" bench-attention --what decode,prefill -o json >"$WORK/res_attn.json" 2>"$WORK/res_attn.err" &&
        python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j.update(commit=sys.argv[3]); json.dump(j, open(sys.argv[2], "w"), indent=1)' \
          "$WORK/res_attn.json" "$rdir/attention_fdpp_${gpu_tag:-gpu}.json" "$commit" &&
        python3 scripts/baselines/attention_baselines.py --what decode,prefill \
          --fdpp "$rdir/attention_fdpp_${gpu_tag:-gpu}.json" --out "$rdir/attention_torch_${gpu_tag:-gpu}.json" \
          >"$WORK/res_attn_torch.log" 2>&1
      note "results attention: exit $? ($(stage_time $t0))"
      python3 scripts/plots/plot_results.py --results "$rdir" --out "$OUT/img" >>"$summary" 2>&1
      python3 scripts/plots/results_page.py --results "$rdir" --page "$OUT/results.md"
      note "results page: exit $? ($OUT/results.md)"
      ;;
    *)
      note "unknown stage $stage"
      ;;
  esac
done
