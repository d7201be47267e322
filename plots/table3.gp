# Table III: leaf filters positive / tables holding the value / leaf filters scanned vs the
# value domain, for the hierarchy with each placement, as shares of the tables next to the
# paper's (50M entries, 599 tables).
# Usage: gnuplot -e "in='results/table3.csv'; out='results/table3'" plots/table3.gp
if (!exists("in")) in = 'results/table3.csv'
if (!exists("out")) out = 'results/table3'
set datafile separator ','
set datafile columnheaders
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(pl) = rows(sprintf('c("placement")=="%s"', pl))
pls = "paper positional similarity"
set grid
set key below maxrows 4
set logscale y
set xlabel 'value domain (distinct values, % of N)'
set ylabel '% of the tables (means per search)'
params = sprintf("scale %s, N = %s, about %.0f tables, m = %s, k = %s, d = %s, %s present values per point", \
  cell('1', "scale"), cell('1', "n"), cell('1', "tables_live")+0.0, cell('1', "m"), cell('1', "k"), cell('1', "d"), cell('1', "queries"))
share(col) = 100.0 * column(col) / column("tables_live")
pshare(col) = 100.0 * column(col) / 599
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1100,700 font ",10" } else { set terminal png size 1100,700 }
    set output out.'.png'
  } else {
    set terminal svg size 1100,700 dynamic font ",10"
    set output out.'.svg'
  }
  set title "Table III: the hierarchy vs the value domain (lines: ours per placement; open points: the paper)\n".params
  plot for [j=1:3] sel(word(pls,j)) using "domain_pct":(share("leaf_filters_scanned")) with linespoints lw 2 lc 3 dt j pt 7 title 'leaf filters scanned, '.word(pls,j), \
       for [j=1:3] sel(word(pls,j)) using "domain_pct":(share("leaf_filters_found")) with linespoints lw 2 lc 1 dt j pt 7 title 'leaf filters positive, '.word(pls,j), \
       sel("paper") using "domain_pct":(share("sstables_found")) with linespoints lw 2 lc 2 pt 7 title 'tables holding the value', \
       sel("paper") using "domain_pct":(pshare("paper_leaf_filters_scanned")) with points lc 3 pt 6 ps 1.8 title 'paper: scanned', \
       sel("paper") using "domain_pct":(pshare("paper_leaf_filters_found")) with points lc 1 pt 6 ps 1.8 title 'paper: positive', \
       sel("paper") using "domain_pct":(pshare("paper_sstables_found")) with points lc 2 pt 6 ps 1.8 title 'paper: tables (0 at 100%: off the log axis)'
  set output
}
