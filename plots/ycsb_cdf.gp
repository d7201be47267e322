# Beyond the paper: YCSB recast for value search, the latency distribution of a value search
# under workload C (searches only), one panel per engine, one curve per method (LEAVES left
# out: at most six series a panel), one panel per engine in the CSV; the data set is the word
# list (words), or the first the CSV holds.
# Usage: gnuplot -e "in='results/ycsb_cdf.csv'; out='results/ycsb_cdf'" plots/ycsb_cdf.gp
if (!exists("in")) in = 'results/ycsb_cdf.csv'
if (!exists("out")) out = 'results/ycsb_cdf'
set datafile separator ','
set datafile columnheaders
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
# The names of column col, among those of order, that the CSV holds, in that order (a run of a
# part, `bfh run ycsb --engine E --series LIST`, holds fewer).
present(col, order) = system("awk -F, -v col=".col." -v order='".order."' 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} {s[$(h[col])]=1} END{n=split(order,e,\" \");for(i=1;i<=n;i++)if(e[i] in s)printf \"%s \",e[i]}' ".in)
dataset = word(present("dataset", "words synth oui unicode wordnet"), 1)
sel(e, m) = rows(sprintf('c("dataset")=="%s" && c("query")=="value" && c("workload")=="C" && c("engine")=="%s" && c("method")=="%s" && c("op")=="search"', dataset, e, m))
engines = present("engine", "lsm leveldb rocksdb")
methods = "scan hierarchy sliced auto standalone cuckoo"
set logscale x
set grid
set yrange [0:1]
set xlabel 'latency of a value search (microseconds)'
set ylabel 'fraction of searches at most this long'
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1500,500 font ",10" } else { set terminal png size 1500,500 }
    set output out.'.png'
  } else {
    set terminal svg size 1500,500 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,words(engines) title sprintf("Beyond the paper: YCSB workload C (value searches only) on %s: latency CDF per method", dataset)
  do for [ei=1:words(engines)] {
    e = word(engines, ei)
    set title sprintf("%s engine", e)
    if (ei == 1) { set key bottom right box opaque } else { unset key }
    plot for [mi=1:words(methods)] sel(e, word(methods, mi)) using "latency_us":"quantile" with linespoints pt 7 ps 0.6 lc mi title word(methods, mi)
  }
  unset multiplot
  set output
}
