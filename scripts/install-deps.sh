#!/usr/bin/env bash
# Installs the Debian packages bfh builds and runs with, if any is missing; with arguments,
# those packages instead (scripts/authors-baseline.sh passes the ones the authors' code needs).
# Needs root (or sudo) only when something has to be installed.
set -euo pipefail

packages=(build-essential cmake pkg-config libleveldb-dev libsnappy-dev libxxhash-dev
          liblz4-dev libzstd-dev zlib1g-dev libbz2-dev libjson-c-dev liburing-dev librocksdb-dev rocksdb-tools
          libcmocka-dev gnuplot-nox
          wamerican-insane ieee-data unicode-data wordnet-base) # the workloads' real data (workloads/dataset.h)
[ $# -gt 0 ] && packages=("$@")

missing=()
for p in "${packages[@]}"; do
  # Another gnuplot flavour (gnuplot-qt, gnuplot-x11) will do.
  if [ "$p" = gnuplot-nox ] && command -v gnuplot >/dev/null 2>&1; then continue; fi
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "need root to install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
