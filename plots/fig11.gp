# Fig. 11: search time vs m per method.
# Usage: gnuplot -e "in='results/fig11.csv'; out='results/fig11'" plots/fig11.gp
if (!exists("in")) in = 'results/fig11.csv'
if (!exists("out")) out = 'results/fig11'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name".
# first(name): the cell of column "name" in the first data row (for titles).
first(name) = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $(h[\"".name."\"])}' ".in)
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
sel(s) = rows(sprintf('c("series")=="%s" && c("costs")=="bfh"', s))
set grid
set key below maxrows 4
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
set xlabel 'filter size m at paper scale (bits; the m column holds the scaled value)'
set ylabel 'search time (s)'
series = "scan leaves-whole hierarchy-paper-whole hierarchy-similarity-whole leaves-disk hierarchy-paper-disk leaves-mem hierarchy-paper-mem hierarchy-similarity-mem sliced-mem"
titles = "'SSTable scan, bfh costs' 'classical Bloom scan, leaves on disk (whole), bfh costs' 'hierarchy, paper tree, leaves on disk (whole), bfh costs' 'hierarchy, similarity placement, leaves on disk (whole), bfh costs' 'classical Bloom scan, leaves on disk (k words), bfh costs' 'hierarchy, paper tree, leaves on disk (k words), bfh costs' 'classical Bloom scan, leaves in RAM, bfh costs' 'hierarchy, paper tree, leaves in RAM, bfh costs' 'hierarchy, similarity placement, leaves in RAM, bfh costs' 'bit-sliced index, leaves in RAM, bfh costs'"
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1100,700 font ",10" } else { set terminal png size 1100,700 }
    set output out.'.png'
  } else {
    set terminal svg size 1100,700 dynamic font ",10"
    set output out.'.svg'
  }
  set title sprintf("Fig. 11: impact of the filter size m\nscale %s, N = %s, about %.0f tables, k = %s, d = %s%s, %s present values per point (median, bars: interquartile range (IQR)), warm cache", \
    first("scale"), first("n"), first("tables_live")+0.0, first("k"), first("d"), "", first("queries"))
  plot for [i=1:words(series)] sel(word(series,i)) using "m_paper":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i dt 1+(i>5) title word(titles,i)
  set output
}
