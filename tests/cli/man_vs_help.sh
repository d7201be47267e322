#!/usr/bin/env bash
# The long options of bfh.1 and of every subcommand's --help must be the same set.
# usage: man_vs_help.sh BFH_BINARY BFH_1
set -euo pipefail
bfh=$1 man=$2
commands=$("$bfh" --help | awk '/^  [a-z]+ / {print $1}')
help_opts=$( { "$bfh" --help; for c in $commands; do "$bfh" "$c" --help; done; } |
  grep -o -- '--[a-z][a-z-]*' | sort -u)
man_opts=$(grep -o -- '\\-\\-[a-z]\([a-z]\|\\-\)*' "$man" | sed 's/\\-/-/g' | sort -u)
only_help=$(comm -23 <(echo "$help_opts") <(echo "$man_opts"))
only_man=$(comm -13 <(echo "$help_opts") <(echo "$man_opts"))
[ -z "$only_help" ] || { echo "in --help but not in $man: $only_help" >&2; exit 1; }
[ -z "$only_man" ] || { echo "in $man but in no --help: $only_man" >&2; exit 1; }
echo "$(echo "$help_opts" | wc -l) long options, the same in bfh.1 and the --help of: $commands" | tr '\n' ' '
echo
