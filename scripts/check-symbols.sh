#!/usr/bin/env bash
# Fails if the shared library LIB exports a symbol outside the bfh_ API (the library is
# built with hidden visibility and include/bfh.h marks its functions BFH_API), or, given the
# header, if a function the header declares is not exported (a BFH_API forgotten).
#   bash scripts/check-symbols.sh P/lib/libbfh.so [P/include/bfh.h]
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: bash scripts/check-symbols.sh LIB [HEADER]" >&2
  exit 2
fi
lib=$1
# The linker's own entries (_init, _fini, the _edata/_end markers) are not bfh's.
symbols=$(nm -D --defined-only "$lib" | awk '{print $3}')
stray=$(grep -Ev '^(bfh_|_init$|_fini$|_edata$|_end$|__bss_start$)' <<<"$symbols" || true)
count=$(grep -c '^bfh_' <<<"$symbols" || true)
if [ -n "$stray" ]; then
  echo "check-symbols: $lib exports symbols outside the bfh_ API:" >&2
  while read -r name; do echo "  $name" >&2; done <<<"$stray"
  exit 1
fi
if [ "$count" -eq 0 ]; then
  echo "check-symbols: $lib exports no bfh_ symbol at all" >&2
  exit 1
fi
if [ $# -eq 2 ]; then
  # Every bfh_name( the header calls or declares, but the static inline wrappers it defines.
  declared=$(grep -oE '\bbfh_[a-z0-9_]+\(' "$2" | tr -d '(' | sort -u)
  inline=$(grep -oE 'static inline [a-z_ ]*\bbfh_[a-z0-9_]+\(' "$2" | grep -oE 'bfh_[a-z0-9_]+' | sort -u)
  missing=$(comm -23 <(comm -23 <(echo "$declared") <(echo "$inline")) <(sort -u <<<"$symbols"))
  if [ -n "$missing" ]; then
    echo "check-symbols: $2 declares functions $lib does not export (BFH_API missing?):" >&2
    while read -r name; do echo "  $name" >&2; done <<<"$missing"
    exit 1
  fi
fi
echo "check-symbols: $lib exports $count bfh_ symbols and nothing else"
