# Fig. 10: the hierarchy over ~119 tables: leaf filters reached (the paper's "filters
# accessed": the leaves its code reaches), the non-leaf filters that said maybe (its code's
# count) and, for comparison, those tested (bfh's count), tables scanned and search time vs
# the order d, per m and leaf placement.
# Usage: gnuplot -e "in='results/fig10.csv'; out='results/fig10'" plots/fig10.gp
if (!exists("in")) in = 'results/fig10.csv'
if (!exists("out")) out = 'results/fig10'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". cell(cond, name): column "name" of the first row where cond holds.
awkrows = "awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} "
rows(cond) = "< ".awkrows.cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(m, pl) = rows(sprintf('c("m_paper")=="%d" && c("placement")=="%s" && c("query")=="present"', m, pl))
mused(m) = cell(sprintf('c("m_paper")=="%d"', m), "m")
ms = "20000 200000 2000000"
pls = "paper positional similarity"
# Line style: colour by m, dash by placement (solid: the paper's static tree).
set grid
set key below maxrows 3
set xlabel 'hierarchy order d'
title_of(i, j) = sprintf("m = %s (paper's %s), %s", mused(word(ms,i)+0), word(ms,i), word(pls,j))
params = sprintf("scale %s, N = %s, about %.0f tables, k = %s, %s present unique values per point (counters: means; time: median, bars min..max), warm cache, commit %s", \
  cell('1', "scale"), cell('1', "n"), cell('1', "tables_live")+0.0, cell('1', "k"), cell('1', "queries"), cell('1', "commit"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 2000,680 font ",10" } else { set terminal png size 2000,680 }
    set output out.'.png'
  } else {
    set terminal svg size 2000,680 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,4 title "Fig. 10: impact of m and d on the hierarchy\n".params
  set ylabel "leaf filters reached (% of the leaves; the paper's metric and def.)"
  set label 1 "paper: 6% at m = 2M, d = 3" at 3, 6 point pt 7 ps 1.5 offset 1,-1
  plot for [i=1:3] for [j=1:3] sel(word(ms,i)+0, word(pls,j)) using "d":"leaf_filters_reached_pct" with linespoints lw 2 lc i dt j pt j title title_of(i, j)
  unset label 1
  set logscale y
  set ylabel "non-leaf filters per search: said maybe (points; authors' def.), tested (no points; bfh's)"
  plot for [i=1:3] for [j=1:3] sel(word(ms,i)+0, word(pls,j)) using "d":"internal_maybe" with linespoints lw 2 lc i dt j pt j notitle, \
       for [i=1:3] for [j=1:3] sel(word(ms,i)+0, word(pls,j)) using "d":"internal_filters_tested" with lines lw 1 lc i dt j notitle
  unset logscale y
  set ylabel 'tables scanned (mean per search)'
  plot for [i=1:3] for [j=1:3] sel(word(ms,i)+0, word(pls,j)) using "d":"tables_scanned" with linespoints lw 2 lc i dt j pt j notitle
  set logscale y
  set ylabel 'search time (s)'
  plot for [i=1:3] for [j=1:3] sel(word(ms,i)+0, word(pls,j)) using "d":"time_s":"time_min_s":"time_max_s" with yerrorlines lw 2 lc i dt j pt j notitle
  unset logscale y
  unset multiplot
  set output
}
