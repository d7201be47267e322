# Fig. 9: search time and filters checked vs the order d.
# Usage: gnuplot -e "in='results/fig9.csv'; out='results/fig9'" plots/fig9.gp
if (!exists("in")) in = 'results/fig9.csv'
if (!exists("out")) out = 'results/fig9'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name".
# first(name): the cell of column "name" in the first data row (for titles).
first(name) = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $(h[\"".name."\"])}' ".in)
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
sel(s) = rows(sprintf('c("series")=="%s" && c("query")=="present"', s))
set grid
set key below
set xlabel 'hierarchy order d'
series = "scan leaves sliced hierarchy-similarity hierarchy-positional"
titles = "'SSTable scan' 'classical Bloom scan' 'bit-sliced index' 'hierarchy, similarity placement' 'hierarchy, positional placement (paper)'"
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1200,560 font ",10" } else { set terminal png size 1200,560 }
    set output out.'.png'
  } else {
    set terminal svg size 1200,560 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,2 title sprintf("Fig. 9: impact of the order d (%s entries, m = %s bits; present values, median)", first("n"), first("m"))
  set logscale y
  set ylabel 'search time (s)'
  plot for [i=1:words(series)] sel(word(series,i)) using "d":"time_s" with linespoints lw 2 lc i title word(titles,i)
  unset logscale y
  set ylabel 'filters checked (internal + leaf probes)'
  plot for [i=2:words(series)] sel(word(series,i)) using "d":"filters_checked" with linespoints lw 2 lc i title word(titles,i)
  unset multiplot
  set output
}
