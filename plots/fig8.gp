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
sel(s) = rows(sprintf('c("series")=="%s" && c("query")=="present" && c("cache")=="warm"', s))
cold(s) = rows(sprintf('c("series")=="%s" && c("query")=="present" && c("cache")~/^cold/', s))
colds = "scan leaves-whole hierarchy-whole hierarchy-disk sliced-disk"
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
set grid
set key below maxrows 4
series = "scan leaves-whole hierarchy-whole leaves-disk hierarchy-disk sliced-disk leaves-mem hierarchy-mem sliced-mem"
titles = "'SSTable scan' 'classical Bloom scan, leaves read whole (the paper)' 'hierarchy, leaves read whole (the paper)' 'classical Bloom scan, k words per leaf' 'hierarchy, k words per leaf' 'bit-sliced index (leaves on disk)' 'classical Bloom scan, leaves in RAM' 'hierarchy, leaves in RAM' 'bit-sliced index, leaves in RAM'"
params = sprintf("scale %s, m = %s, k = %s, d = %s, placement %s, %s present values per point (time: median, bars min..max; counts: means), warm (and cold where measured: files evicted before each query)", \
  cell('1', "scale"), cell('1', "m"), cell('1', "k"), cell('1', "d"), cell('1', "placement"), cell('1', "queries"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1500,640 font ",10" } else { set terminal png size 1500,640 }
    set output out.'.png'
  } else {
    set terminal svg size 1500,640 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,2 title "Fig. 8: impact of the number of entries\n".params
  set xlabel 'entries N'
  set ylabel 'search time (s)'
  plot for [i=1:words(series)] sel(word(series,i)) using "n":"time_s":"time_min_s":"time_max_s" with yerrorlines lw 2 lc i pt i dt 1+(i>6) title word(titles,i), \
       for [j=1:words(colds)] cold(word(colds,j)) using "n":"time_s" with linespoints lw 3 dt 3 lc (j == 1 ? 1 : j == 2 ? 2 : j == 3 ? 3 : j == 4 ? 5 : 6) pt 4 title word(colds,j).', cold cache (dotted)'
  set ylabel 'count per search (mean)'
  plot for [i=2:words(series)] sel(word(series,i)) using "n":(column("internal_probes")+column("leaf_probes")) \
         with linespoints lw 2 lc i pt i dt 1+(i>6) notitle, \
       sel("hierarchy-mem") using "n":"tables_scanned" with linespoints lw 3 lc rgb "black" dt 3 title 'tables scanned: hierarchy', \
       sel("scan") using "n":"tables_scanned" with linespoints lw 3 lc rgb "gray" dt 3 title 'tables scanned: SSTable scan', \
       sel("scan") using "n":"tables_live" with lines lw 1 lc rgb "gray" dt 1 title 'tables (right: filters tested = internal + leaf)'
  unset multiplot
  set output
}
