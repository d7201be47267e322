# Fig. 8: non-key search time vs N per method (present values; medians of the queries).
# Usage: gnuplot -e "in='results/fig8.csv'; out='results/fig8'" plots/fig8.gp
if (!exists("in")) in = 'results/fig8.csv'
if (!exists("out")) out = 'results/fig8'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name".
# first(name): the cell of column "name" in the first data row (for titles).
first(name) = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $(h[\"".name."\"])}' ".in)
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
sel(s) = rows(sprintf('c("series")=="%s" && c("query")=="present"', s))
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
set grid
set key below
series = "scan leaves-disk leaves-mem hierarchy-disk hierarchy-mem sliced-mem"
titles = "'SSTable scan' 'classical Bloom scan, leaves on disk' 'classical Bloom scan, leaves in RAM' 'hierarchy, leaves on disk' 'hierarchy, leaves in RAM' 'bit-sliced index'"
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1200,560 font ",10" } else { set terminal png size 1200,560 }
    set output out.'.png'
  } else {
    set terminal svg size 1200,560 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,2 title "Fig. 8: impact of the number of entries (present values, median)"
  set xlabel 'entries N'
  set ylabel 'search time (s)'
  plot for [i=1:words(series)] sel(word(series,i)) using "n":"time_s" with linespoints lw 2 lc i title word(titles,i)
  set ylabel 'count per search (median)'
  plot for [i=2:words(series)] sel(word(series,i)) using "n":(column("internal_probes")+column("leaf_probes")) \
         with linespoints lw 2 lc i title "filters tested: ".word(titles,i), \
       sel("hierarchy-mem") using "n":"tables_scanned" with linespoints lw 2 dt 2 title 'tables scanned: hierarchy', \
       sel("scan") using "n":"tables_scanned" with linespoints lw 2 dt 2 title 'tables scanned: SSTable scan'
  unset multiplot
  set output
}
