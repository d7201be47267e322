# Beyond the paper: search time vs N per method, AUTO's block path included (present and
# absent values; medians of the queries).
# Usage: gnuplot -e "in='results/beyond.csv'; out='results/beyond'" plots/beyond.gp
if (!exists("in")) in = 'results/beyond.csv'
if (!exists("out")) out = 'results/beyond'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". cell(cond, name): column "name" of the first row where cond holds.
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(s, q) = rows(sprintf('c("series")=="%s" && c("query")=="%s"', s, q))
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
set grid
set key below maxrows 2
series = "scan leaves hierarchy sliced auto"
titles = "'SSTable scan' 'classical Bloom scan (every leaf)' 'hierarchy (the paper)' 'bit-sliced index' 'AUTO: block filters + memtable index (beyond the paper)'"
params = sprintf("scale %s, m = %s, k = %s, d = %s, 2 MiB tables, unique values in random order, %s values per point (median, bars: interquartile range (IQR)), leaves in memory, warm cache", \
  cell('1', "scale"), cell('1', "m"), cell('1', "k"), cell('1', "d"), cell('1', "queries"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1500,620 font ",10" } else { set terminal png size 1500,620 }
    set output out.'.png'
  } else {
    set terminal svg size 1500,620 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,2 title "Beyond the paper: search time vs N\n".params
  set xlabel 'entries N'
  set ylabel 'search time (s), value present'
  plot for [i=1:words(series)] sel(word(series,i), "present") using "n":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(titles,i)
  set ylabel 'search time (s), value absent'
  plot for [i=1:words(series)] sel(word(series,i), "absent") using "n":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i notitle
  unset multiplot
  set output
}
