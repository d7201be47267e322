# Beyond the paper: scale-out simulated on one machine. Left: shards a value query contacts
# against the number of shards, present and absent values, beside SAI's shape (every shard);
# right: p99 of a query as a parallel coordinator sees it (its slowest shard asked), against
# asking every shard.
# Usage: gnuplot -e "in='results/shards.csv'; out='results/shards'" plots/shards.gp
if (!exists("in")) in = 'results/shards.csv'
if (!exists("out")) out = 'results/shards'
set datafile separator ','
set datafile columnheaders
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(q) = rows(sprintf('c("query")=="%s"', q))
params = sprintf("%s records by key hash, own engine, summaries of %s bytes per entry, scale %s", \
  cell('1', "records"), cell('1', "summary_bytes_per_entry"), cell('1', "scale"))
set logscale x 2
set grid
set xlabel 'shards'
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1300,500 font ",10" } else { set terminal png size 1300,500 }
    set output out.'.png'
  } else {
    set terminal svg size 1300,500 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,2 title "Beyond the paper: value queries over N shards, a coordinator with per-shard summaries\n".params
  set title 'shards contacted per query (mean)'
  set ylabel 'shards contacted'
  set key top left box opaque
  set yrange [0:*]
  plot sel("present") using "shards":"contacted_mean" with linespoints pt 7 lc 1 title 'present value, summaries', \
       sel("absent") using "shards":"contacted_mean" with linespoints pt 7 lc 2 title 'absent value, summaries', \
       sel("present") using "shards":"contacted_every" with linespoints pt 6 dt 2 lc 3 title 'every shard (SAI)'
  set title 'p99 of a query: the slowest shard asked'
  set ylabel 'p99 (microseconds)'
  set logscale y
  set yrange [*:*]
  plot sel("present") using "shards":"p99_us" with linespoints pt 7 lc 1 title 'present, shards the summaries name', \
       sel("present") using "shards":"every_p99_us" with linespoints pt 6 dt 2 lc 3 title 'present, every shard', \
       sel("absent") using "shards":"every_p99_us" with linespoints pt 6 dt 2 lc 2 title 'absent, every shard'
  unset logscale y
  unset multiplot
  set output
}
