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
sel(s) = rows(sprintf('c("series")=="%s" && c("costs")=="%s" && c("domain_mode")!="authors"', word(s,1), word(s,2)))
sw(i) = (sw_w = word(series,i), sw_p = strstrt(sw_w, "|"), sw_w[1:sw_p-1]." ".sw_w[sw_p+1:])
set grid
set key below maxrows 3
set logscale y
set format y "10^{%L}"
set xlabel 'value domain (distinct values, % of N)'
# A series is "name|costs"; the first panel bfh's costs, the second the authors'.
series = "scan|bfh leaves-mem|bfh leaves-whole|bfh hierarchy-paper-mem|bfh hierarchy-paper-whole|bfh hierarchy-similarity-whole|bfh"
titles = "'SSTable scan, bfh costs' 'classical Bloom scan, leaves in RAM, bfh costs' 'classical Bloom scan, leaves on disk (whole), bfh costs' 'hierarchy, paper tree, leaves in RAM, bfh costs' 'hierarchy, paper tree, leaves on disk (whole), bfh costs' 'hierarchy, similarity, leaves on disk (whole), bfh costs'"
aseries = "scan|authors leaves-file|authors hierarchy-paper-file|authors hierarchy-similarity-file|authors"
atitles = "'SSTable scan (text dump), authors costs' 'classical Bloom scan, leaves on disk (whole file, bit by bit), authors costs' 'hierarchy, paper tree, leaves on disk (whole file, bit by bit), authors costs' 'hierarchy, similarity, leaves on disk (whole file, bit by bit), authors costs'"
asw(i) = (sw_w = word(aseries,i), sw_p = strstrt(sw_w, "|"), sw_w[1:sw_p-1]." ".sw_w[sw_p+1:])
has_authors = int(system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} $(h[\"costs\"])==\"authors\"{k++} END{print k+0}' ".in)) > 0
params = sprintf("scale %s, N = %s, about %.0f tables, m = %s, k = %s, d = %s, %s present values per point (time: median, bars: interquartile range (IQR); counts: means), warm cache", \
  cell('1', "scale"), cell('1', "n"), cell('1', "tables_live")+0.0, cell('1', "m"), cell('1', "k"), cell('1', "d"), cell('1', "queries"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1900,650 font ",10" } else { set terminal png size 1900,650 }
    set output out.'.png'
  } else {
    set terminal svg size 1900,650 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,3 title "Fig. 13: impact of the value domain\n".params
  set ylabel 'search time (s)'
  set title "bfh's costs"
  plot for [i=1:words(series)] sel(sw(i)) using "domain_pct":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(titles,i)
  set title "the authors' costs (bfh run fig13 --costs authors)"
  if (has_authors) { plot for [i=1:words(aseries)] sel(asw(i)) using "domain_pct":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(atitles,i) } else { set label 99 "no rows with --costs authors" at graph 0.5, graph 0.5 center; plot 1 notitle lc rgb "white"; unset label 99 }
  set title "tables scanned (bfh's costs)"
  set ylabel 'tables scanned (mean per search)'
  plot for [i=1:words(series)] sel(sw(i)) using "domain_pct":"tables_scanned" with linespoints lw 2 lc i pt i dt i notitle
  unset multiplot
  set output
}
