#!/usr/bin/env bash
# Packs the CUDA build's binaries (fdpp and the gpu tests) into prebuilt/gpu.tar.xz for the
# GPU machine (scripts/gpu_check.sh unpack), so its limited time goes to running them.
#   scripts/pack_prebuilt.sh [BUILD_DIR]     default: build-cu (configure it with
#   -DFDPP_CUDA=ON -DFDPP_CUDA_ARCHS=90 -DCMAKE_BUILD_TYPE=Release)
# The binaries link the system's libfmt 9, PCRE2 and CUDA 13 libraries, which Debian 12 and
# Ubuntu 24.04 both provide under the same sonames and ABI. SentencePiece is the exception:
# its C++ classes changed between 0.1.97 (Debian) and 0.1.99 (Ubuntu) under the same soname
# (every Llama model crashed on load), so the library the binaries were built against is
# packed into lib/ (it has no dependencies beyond libstdc++).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-cu}
grep -q "CMAKE_BUILD_TYPE:STRING=Release" "$BUILD/CMakeCache.txt" || { echo "$BUILD is not a Release build" >&2; exit 1; }
cmake --build "$BUILD"
mkdir -p prebuilt
echo "$(git rev-parse --short HEAD) + $(git status --porcelain | wc -l) changed files, $(date -u '+%F %H:%M UTC')" \
  >"$BUILD/PREBUILT_COMMIT"
mapfile -t tests < <(find "$BUILD/tests" -maxdepth 1 -type f -name 'gpu_test_*' -executable -printf 'tests/%f\n')
mkdir -p "$BUILD/lib"
cp -L "$(ldd "$BUILD/fdpp" | awk '/libsentencepiece.so/ {print $3}')" "$BUILD/lib/"
tar -C "$BUILD" -cf - fdpp PREBUILT_COMMIT lib "${tests[@]}" | xz -9 -T2 >prebuilt/gpu.tar.xz
ls -la prebuilt/gpu.tar.xz
