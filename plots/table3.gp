# Table III: the hierarchy vs the value domain, next to the paper's (50M entries, 599 tables).
# Left: the authors' workload (values drawn with replacement over 2..100% of N, their tree) and
# the paper's own definitions, as their code counts: leaf filters scanned (leaves reached),
# leaf filters positive, "SSTables found" = entries found (occurrences summed over the tables
# read) and non-leaf filters that said maybe; lines: means of the domain values queried,
# filled triangles: their one query Value1879, open circles: the paper (its "1%" row is their
# code's 2%). Right: bfh's exact-count workload (1..100%, every value on N/D keys) with each
# placement, as shares of the tables, tables holding the value counted once each (bfh's def.).
# Usage: gnuplot -e "in='results/table3.csv'; out='results/table3'" plots/table3.gp
if (!exists("in")) in = 'results/table3.csv'
if (!exists("out")) out = 'results/table3'
set datafile separator ','
set datafile columnheaders
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
# Rows of the exact mode (also a CSV from before the domain_mode column) and of the authors'.
sel(pl) = rows(sprintf('c("placement")=="%s" && c("domain_mode")!="authors"', pl))
auth(q) = rows(sprintf('c("domain_mode")=="authors" && c("query")=="%s"', q))
have_authors = cell('c("domain_mode")=="authors"', "n") ne ""
pls = "paper positional similarity"
set grid
set key below maxrows 5
set logscale y
set xlabel 'value domain (distinct values, % of N)'
params = sprintf("scale %s, N = %s, m = %s, k = %s, d = %s, commit %s", \
  cell('1', "scale"), cell('1', "n"), cell('1', "m"), cell('1', "k"), cell('1', "d"), cell('1', "commit"))
share(col) = 100.0 * column(col) / column("tables_live")
pshare(col) = 100.0 * column(col) / 599
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1700,760 font ",10" } else { set terminal png size 1700,760 }
    set output out.'.png'
  } else {
    set terminal svg size 1700,760 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,2 title "Table III: the hierarchy vs the value domain\n".params
  if (have_authors) {
    set title sprintf("the authors' workload and counts (the paper's definitions), their tree, about %.0f tables (paper: 599)\nlines: means of %s domain values; triangles: Value1879; circles: the paper (0 is off the log axis)", \
      cell('c("domain_mode")=="authors"', "tables_live")+0.0, cell('c("domain_mode")=="authors" && c("query")=="domain"', "queries"))
    set ylabel 'count per search'
    plot auth("domain") using "domain_pct":"leaf_filters_scanned" with linespoints lw 2 lc 3 pt 7 title "leaf filters scanned (leaves reached)", \
         auth("domain") using "domain_pct":"leaf_filters_found" with linespoints lw 2 lc 1 pt 7 title "leaf filters positive", \
         auth("domain") using "domain_pct":"entries_found" with linespoints lw 2 lc 2 pt 7 title "\"SSTables found\" = entries found (authors' def.)", \
         auth("domain") using "domain_pct":"internal_maybe" with linespoints lw 2 lc 4 pt 7 title "non-leaf filters that said maybe (authors' def.)", \
         auth("fixed") using "domain_pct":"leaf_filters_scanned" with points lc 3 pt 9 ps 1.6 notitle, \
         auth("fixed") using "domain_pct":"leaf_filters_found" with points lc 1 pt 9 ps 1.6 notitle, \
         auth("fixed") using "domain_pct":"entries_found" with points lc 2 pt 9 ps 1.6 notitle, \
         auth("fixed") using "domain_pct":"internal_maybe" with points lc 4 pt 9 ps 1.6 title "Value1879, their one query", \
         auth("domain") using "domain_pct":"paper_leaf_filters_scanned" with points lc 3 pt 6 ps 2 notitle, \
         auth("domain") using "domain_pct":"paper_leaf_filters_found" with points lc 1 pt 6 ps 2 notitle, \
         auth("domain") using "domain_pct":"paper_sstables_found" with points lc 2 pt 6 ps 2 title "the paper"
  } else {
    set title "the authors' workload: not in this CSV"
    unset key
    plot 1/0 notitle
    set key below maxrows 5
  }
  set title sprintf("bfh's exact-count workload, each placement, about %.0f tables, %s present values per point\nshares of the tables (the paper's as shares of 599)", \
    cell('c("domain_mode")!="authors"', "tables_live")+0.0, cell('c("domain_mode")!="authors"', "queries"))
  set ylabel '% of the tables (means per search)'
  plot for [j=1:3] sel(word(pls,j)) using "domain_pct":(share("leaf_filters_scanned")) with linespoints lw 2 lc 3 dt j pt 7 title 'leaf filters scanned, '.word(pls,j), \
       for [j=1:3] sel(word(pls,j)) using "domain_pct":(share("leaf_filters_found")) with linespoints lw 2 lc 1 dt j pt 7 title 'leaf filters positive, '.word(pls,j), \
       sel("paper") using "domain_pct":(share("sstables_found")) with linespoints lw 2 lc 2 pt 7 title "tables holding the value (distinct: bfh's def.)", \
       sel("paper") using "domain_pct":(pshare("paper_leaf_filters_scanned")) with points lc 3 pt 6 ps 1.8 title 'paper: scanned', \
       sel("paper") using "domain_pct":(pshare("paper_leaf_filters_found")) with points lc 1 pt 6 ps 1.8 title 'paper: positive', \
       sel("paper") using "domain_pct":(pshare("paper_sstables_found")) with points lc 2 pt 6 ps 1.8 title "paper: \"SSTables found\" (entries: authors' def.)"
  unset multiplot
  set output
}
