# Fig. 9: search time and filters checked vs the order d (the hierarchy with each placement,
# next to the methods that do not depend on d).
# Usage: gnuplot -e "in='results/fig9.csv'; out='results/fig9'" plots/fig9.gp
if (!exists("in")) in = 'results/fig9.csv'
if (!exists("out")) out = 'results/fig9'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". cell(cond, name): column "name" of the first row where cond holds.
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(s) = rows(sprintf('c("series")=="%s" && c("query")=="present" && c("costs")=="%s"', word(s,1), word(s,2)))
set grid
set key below maxrows 7 left Left reverse
set xlabel 'hierarchy order d'
# A series is "name costs" joined by '|' (gnuplot words split at blanks).
series = "scan|bfh leaves-mem|bfh hierarchy-paper-mem|bfh hierarchy-paper-whole|bfh hierarchy-similarity-mem|bfh hierarchy-similarity-whole|bfh hierarchy-paper-file|authors"
titles = "'SSTable scan, bfh costs' 'classical Bloom scan, leaves in RAM, bfh costs' 'hierarchy, paper tree (exactly d children), leaves in RAM, bfh costs' 'hierarchy, paper tree, leaves on disk (whole), bfh costs' 'hierarchy, similarity (d..2d), leaves in RAM, bfh costs' 'hierarchy, similarity, leaves on disk (whole), bfh costs' 'hierarchy, paper tree, leaves on disk (whole file, bit by bit), authors costs'"
sw(i) = (sw_w = word(series,i), sw_p = strstrt(sw_w, "|"), sw_w[1:sw_p-1]." ".sw_w[sw_p+1:])
params = sprintf("scale %s, N = %s, about %.0f tables, m = %s, k = %s, %s present values per point (time: median, bars: interquartile range (IQR); counts: means), warm cache", \
  cell('1', "scale"), cell('1', "n"), cell('1', "tables_live")+0.0, cell('1', "m"), cell('1', "k"), cell('1', "queries"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1600,700 font ",10" } else { set terminal png size 1600,700 }
    set output out.'.png'
  } else {
    set terminal svg size 1600,700 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,3 title "Fig. 9: impact of the order d\n".params
  set logscale y
  set ylabel 'search time (s)'
  plot for [i=1:words(series)] sel(sw(i)) using "d":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(titles,i)
  unset logscale y
  set ylabel "leaf filters reached (the paper's trend: more with larger d)"
  plot for [i=2:words(series)] sel(sw(i)) using "d":"leaf_filters_reached" with linespoints lw 2 lc i pt i notitle
  set ylabel 'internal filters tested'
  plot for [i=3:words(series)] sel(sw(i)) using "d":"internal_filters_tested" with linespoints lw 2 lc i pt i notitle
  unset multiplot
  set output
}
