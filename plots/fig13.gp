# Fig. 13: search time per method vs the value domain (the hierarchy with each placement).
# Usage: gnuplot -e "in='results/fig13.csv'; out='results/fig13'" plots/fig13.gp
if (!exists("in")) in = 'results/fig13.csv'
if (!exists("out")) out = 'results/fig13'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". cell(cond, name): column "name" of the first row where cond holds.
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(s) = rows(sprintf('c("series")=="%s" && c("domain_mode")!="authors"', s))
set grid
set key below maxrows 3
set logscale y
set format y "10^{%L}"
set xlabel 'value domain (distinct values, % of N)'
series = "scan leaves sliced hierarchy-paper hierarchy-positional hierarchy-similarity"
titles = "'SSTable scan' 'classical Bloom scan' 'bit-sliced index' 'hierarchy, paper tree' 'hierarchy, positional' 'hierarchy, similarity'"
params = sprintf("scale %s, N = %s, about %.0f tables, m = %s, k = %s, d = %s, %s present values per point (time: median, bars min..max; counts: means), warm cache", \
  cell('1', "scale"), cell('1', "n"), cell('1', "tables_live")+0.0, cell('1', "m"), cell('1', "k"), cell('1', "d"), cell('1', "queries"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1400,600 font ",10" } else { set terminal png size 1400,600 }
    set output out.'.png'
  } else {
    set terminal svg size 1400,600 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,2 title "Fig. 13: impact of the value domain\n".params
  set ylabel 'search time (s)'
  plot for [i=1:words(series)] sel(word(series,i)) using "domain_pct":"time_s":"time_min_s":"time_max_s" with yerrorlines lw 2 lc i pt i title word(titles,i)
  set ylabel 'tables scanned (mean per search)'
  plot for [i=1:words(series)] sel(word(series,i)) using "domain_pct":"tables_scanned" with linespoints lw 2 lc i pt i dt i notitle
  unset multiplot
  set output
}
