#!/usr/bin/env bash
# Writes <results>/REPORT.md: for every paper artifact, the paper's numbers and ours side by
# side, from the CSVs that `bfh run` wrote into <results>, with the plot linked. Artifacts
# without a CSV are listed as not run. Needs only awk.
#   scripts/report.sh [RESULTS_DIR]      (default ./results)
set -euo pipefail
out=${1:-results}
[ -d "$out" ] || { echo "report: no directory $out" >&2; exit 1; }
report="$out/REPORT.md"

# table FILE COND COL... : the rows of FILE for which the awk condition COND holds (c("x") is
# the cell of column x), as a markdown table of the given columns. A column "a=b" is shown
# with header a and the cell of column b. Numbers are rounded to 4 significant digits.
table() {
  local file=$1 cond=$2
  shift 2
  awk -F, -v cols="$*" '
    function c(n) { return (n in h) ? $(h[n]) : "" }
    function fmt(v) {
      if (v ~ /^-?[0-9]+$/) return v
      if (v ~ /^-?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/) return sprintf("%.4g", v)
      return v
    }
    NR == 1 {
      for (i = 1; i <= NF; i++) h[$i] = i
      n = split(cols, cs, " ")
      line = "|"; sep = "|"
      for (i = 1; i <= n; i++) {
        split(cs[i], kv, "="); head[i] = kv[1]; src[i] = (kv[2] != "") ? kv[2] : kv[1]
        line = line " " head[i] " |"; sep = sep "---|"
      }
      print line; print sep; next
    }
    ('"$cond"') {
      line = "|"
      for (i = 1; i <= n; i++) line = line " " fmt(c(src[i])) " |"
      print line; rows++
    }
    END { if (rows == 0) print "| (no rows) |" }
  ' "$file"
}

# section NAME TITLE: a heading, the plot link if the plot exists; returns 1 (and says "not
# run") if NAME.csv is missing.
section() {
  local name=$1 title=$2
  printf '\n## %s\n\n' "$title"
  if [ ! -s "$out/$name.csv" ]; then
    printf 'Not run (no %s.csv).\n' "$name"
    return 1
  fi
  if [ -s "$out/$name.png" ]; then printf '![%s](%s.png)\n\n' "$name" "$name"; fi
  return 0
}

scale=$(awk -F, 'NR==1{for(i=1;i<=NF;i++)if($i=="scale")s=i} NR==2&&s{print $s;exit}' \
  "$(ls "$out"/*.csv 2>/dev/null | head -n 1)" 2>/dev/null || true)

{
  printf '# bfh: the paper and our measurements side by side\n\n'
  printf 'Macyna & Ordonez, "A Bloom Filter Hierarchy for Non-key Search in Key-Value Stores".\n'
  printf 'Scale of this run: %s. Written by scripts/report.sh from the CSVs in this directory;\n' "${scale:-unknown}"
  printf 'PAPER_NOTES.md in the source tree has the reasoning behind each comparison.\n'
  printf 'Placements: paper = the authors'"'"' static tree (exactly d children per node);\n'
  printf 'positional and similarity = ours (B+-tree, d..2d children). Counters are per-query\n'
  printf 'means; times are medians. At small scale the geometry is shrunk so that the table\n'
  printf 'count and the filter bits per entry are the paper'"'"'s (the m column is the value used).\n'

  if section table1 "Table I: basic operations without value filters"; then
    printf 'Paper (LevelDB, from storage), seconds: insert / non-key lookup / key lookup.\n\n'
    table "$out/table1.csv" 1 n tables insert_s paper_insert_s scan_lookup_s scan_lookup_cold_s \
      paper_scan_lookup_s key_lookup_s key_lookup_cold_s paper_key_lookup_s
  fi
  if section fig6 "Fig. 6: creation time with and without value filters"; then
    printf 'Paper: "very similar".\n\n'
    table "$out/fig6.csv" 'c("value_filters")=="1"' n reps insert_s insert_min_s overhead_pct \
      overhead_min_pct
  fi
  if section table2 "Table II: SSTable, leaf-filter and non-leaf filter sizes (MB)"; then
    printf "Paper, MB: 10M 293/29/7; 50M 1200/148/37; 100M 2420/296/75; 500M 12500/1540/405.\n\n"
    table "$out/table2.csv" 1 source n placement tables sst_mb paper_sst_mb leaf_mb paper_leaf_mb \
      nonleaf_mb paper_nonleaf_mb paper_model_nonleaf_mb
  fi
  if section fig7 "Fig. 7: non-leaf filter memory vs d"; then
    printf "Paper: the smaller d, the more memory (500M entries, 6434 tables, m = 2M).\n\n"
    table "$out/fig7.csv" 1 leaves d placement internal_nodes nonleaf_mb paper_model_nodes \
      paper_model_mb query_leaf_probes
  fi
  if section fig8 "Fig. 8: search time vs N"; then
    printf 'Paper: SSTable scan and classical Bloom scan (leaves read whole from disk)\n'
    printf 'indistinguishable; the hierarchy far faster. Present values, seconds.\n\n'
    table "$out/fig8.csv" 'c("query")=="present"' n series cache tables_live time_s \
      tables_scanned leaf_probes internal_probes
  fi
  if section fig9 "Fig. 9: search time and filters checked vs d"; then
    printf 'Paper: the larger d, the more filters checked (100M entries, m = 500k).\n\n'
    table "$out/fig9.csv" 'c("query")=="present" && c("series") ~ /^hierarchy/' d series time_s \
      leaf_filters_reached internal_filters_tested tables_live
  fi
  if section fig10 "Fig. 10: filters accessed vs d and m"; then
    printf 'Paper: at m = 2M and d = 3, 6%% of the filters accessed (leaf filters reached: about\n'
    printf '7 of 119) and 1 table scanned. The paper'"'"'s metric is leaf_filters_reached_pct.\n\n'
    table "$out/fig10.csv" 'c("query")=="present" && c("m_paper")=="2000000"' d placement \
      tables_live leaf_filters_reached leaf_filters_reached_pct internal_filters_tested \
      tables_scanned time_s
  fi
  if section fig11 "Fig. 11: search time vs m"; then
    printf 'Paper: at 20k the hierarchy does not beat the others; at 200k the classical Bloom\n'
    printf 'scan beats the table scan; best at 2M. Present values, seconds.\n\n'
    table "$out/fig11.csv" 1 m_paper series time_s tables_scanned
  fi
  if section fig12 "Fig. 12: leaf and non-leaf filters accessed vs m"; then
    printf 'Paper: small m, many filters; at 2M about two leaf filters and a few non-leaf ones.\n\n'
    table "$out/fig12.csv" 'c("query")=="present" && c("d")=="3"' m_paper d placement \
      leaf_filters_reached internal_filters_tested tables_scanned
  fi
  if section fig13 "Fig. 13: search time vs the value domain"; then
    printf 'Paper: the smaller the domain, the slower the hierarchy; scan and Bloom scan flat.\n\n'
    table "$out/fig13.csv" 1 domain_pct series time_s tables_scanned
  fi
  if section table3 "Table III: leaf filters positive / tables with the value / leaf filters scanned"; then
    printf 'Paper (50M, 599 tables): 1%%: 56/55/250, 5%%: 28/26/190, 10%%: 13/11/105,\n'
    printf '40%%: 5/5/125, 70%%: 2/1/70, 100%%: 0/0/65 (its 100%% row says 0 tables hold a value\n'
    printf 'that is present: inconsistent). Shares are of the tables.\n\n'
    table "$out/table3.csv" 1 domain_pct placement tables_live leaf_filters_found \
      paper_leaf_filters_found sstables_found paper_sstables_found leaf_filters_scanned \
      paper_leaf_filters_scanned leaf_filters_scanned_pct paper_leaf_filters_scanned_pct
  fi
  if section beyond "Beyond the paper: search time vs N, AUTO's block path included"; then
    printf 'Not in the paper. The named methods read each selected table whole; AUTO reads only
'
    printf 'the data blocks its block filters name (PAPER_NOTES "Beyond the paper").

'
    table "$out/beyond.csv" 1 n query series time_s tables_scanned blocks_read bytes_read
  fi
  if section tradeoff "Beyond the paper: the stand-alone index trade-off"; then
    printf 'Not in the paper. Own engine; bare = value filters off (SCAN), bfh = value filters,\n'
    printf 'block filters and memtable index (HIERARCHY, SLICED, AUTO), standalone = a second\n'
    printf 'store keyed by value||key (LevelDB++'"'"'s stand-alone index). Ingest = puts + final\n'
    printf 'flush (median of reps builds), overhead over bare; write_amp = bytes written (both\n'
    printf 'stores) / bytes put; index_mem = bfh_stats value-index memory (bfh only); rss_over_bare\n'
    printf '= measured RssAnon of a process that opened the database and ran the queries, minus\n'
    printf 'bare'"'"'s. Latencies: medians of the second pass of the same queries; first = the\n'
    printf 'first pass, which also opens tables at their first read (PAPER_NOTES "Beyond the\n'
    printf 'paper: the stand-alone index trade-off").\n\n'
    table "$out/tradeoff.csv" 1 n domain_pct config series reps ingest_s ingest_overhead \
      write_amp disk_bytes index_mem=index_memory_stats_bytes rss_over_bare=rss_anon_over_bare_bytes \
      present_time_s absent_time_s present_first=present_first_pass_s wrong
    if [ -s "$out/tradeoff_goals.csv" ]; then
      printf '\nGoals: (a) bfh ingest overhead <= 1/5 of standalone'"'"'s; (b) AUTO present latency\n'
      printf '<= 2x STANDALONE'"'"'s; (c) AUTO absent latency <= STANDALONE'"'"'s.\n\n'
      table "$out/tradeoff_goals.csv" 1 n domain_pct goal what ratio bound met
    fi
  fi
} >"$report"
echo "report: $report"
