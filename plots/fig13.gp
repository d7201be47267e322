# Fig. 13: search time per method vs the value domain.
# Usage: gnuplot -e "in='results/fig13.csv'; out='results/fig13'" plots/fig13.gp
if (!exists("in")) in = 'results/fig13.csv'
if (!exists("out")) out = 'results/fig13'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name".
# first(name): the cell of column "name" in the first data row (for titles).
first(name) = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $(h[\"".name."\"])}' ".in)
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
sel(s) = rows(sprintf('c("series")=="%s"', s))
set grid
set key below
set logscale y
set format y "10^{%L}"
set xlabel 'value domain (distinct values, % of N)'
series = "scan leaves hierarchy sliced"
titles = "'SSTable scan' 'classical Bloom scan' 'hierarchy scan' 'bit-sliced index'"
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1200,560 font ",10" } else { set terminal png size 1200,560 }
    set output out.'.png'
  } else {
    set terminal svg size 1200,560 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,2 title sprintf("Fig. 13: impact of the value domain (%s entries, present values, median)", first("n"))
  set ylabel 'search time (s)'
  plot for [i=1:words(series)] sel(word(series,i)) using "domain_pct":"time_s" with linespoints lw 2 lc i title word(titles,i)
  set ylabel 'tables scanned'
  plot for [i=1:words(series)] sel(word(series,i)) using "domain_pct":"tables_scanned" with linespoints lw 2 lc i title word(titles,i)
  unset multiplot
  set output
}
