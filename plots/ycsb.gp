# Beyond the paper: YCSB's core workloads recast for value search. Top row: p50 of the value
# searches of each workload (x: A, B, C, F; D: its newest 10 of a word, word = 'w'; E: its
# ranges, word LIKE 'prefix%'), one panel per engine in the CSV; bottom row: their p99.
# Series: the methods (LEAVES is in the CSV, left out here: at most six series a panel). The
# data set is the word list (words), or the first the CSV holds; ycsb.csv holds every data set.
# Usage: gnuplot -e "in='results/ycsb.csv'; out='results/ycsb'" plots/ycsb.gp
if (!exists("in")) in = 'results/ycsb.csv'
if (!exists("out")) out = 'results/ycsb'
set datafile separator ','
set datafile columnheaders
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
# The names of column col, among those of order, that the CSV holds, in that order (a run of a
# part, `bfh run ycsb --engine E --series LIST`, holds fewer).
present(col, order) = system("awk -F, -v col=".col." -v order='".order."' 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} {s[$(h[col])]=1} END{n=split(order,e,\" \");for(i=1;i<=n;i++)if(e[i] in s)printf \"%s \",e[i]}' ".in)
dataset = word(present("dataset", "words synth oui unicode wordnet"), 1)
sel(e, m) = rows(sprintf('c("dataset")=="%s" && c("engine")=="%s" && c("method")=="%s" && ((c("query")=="value" && c("op")=="search") || (c("workload")=="D" && c("op")=="newest") || (c("workload")=="E" && c("op")=="range"))', dataset, e, m))
# x position of a workload letter
wx(w) = w eq "A" ? 1 : w eq "B" ? 2 : w eq "C" ? 3 : w eq "D" ? 4 : w eq "E" ? 5 : 6
engines = present("engine", "lsm leveldb rocksdb")
methods = "scan hierarchy sliced auto standalone cuckoo"
quant = "p50_us p99_us"
params = sprintf("A 50/50 search/update, B 95/5, C searches only, F search + RMW, D 95/5 newest 10/insert, E 95/5 prefix range/insert; data set %s, %s records, scale %s; every search of the run (histograms within 1%%)", \
  dataset, cell(sprintf('c("dataset")=="%s"', dataset), "records"), cell('1', "scale"))
set logscale y
set grid
set xrange [0.5:6.5]
set xtics ("A" 1, "B" 2, "C" 3, "D" 4, "E" 5, "F" 6)
set xlabel 'workload'
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1500,900 font ",10" } else { set terminal png size 1500,900 }
    set output out.'.png'
  } else {
    set terminal svg size 1500,900 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 2,words(engines) title "Beyond the paper: YCSB recast for value search, latency of a value search (D: the newest 10, E: a range)\n".params
  do for [qi=1:2] {
    do for [ei=1:words(engines)] {
      e = word(engines, ei)
      set title sprintf("%s engine, %s", e, qi == 1 ? "p50" : "p99")
      set ylabel sprintf('%s of a value search, newest 10 or range (microseconds)', qi == 1 ? "p50" : "p99")
      if (qi == 1 && ei == 1) { set key top left box opaque } else { unset key }
      plot for [mi=1:words(methods)] sel(e, word(methods, mi)) using (wx(strcol("workload"))):word(quant, qi) smooth unique with linespoints pt 7 lc mi title word(methods, mi)
    }
  }
  unset multiplot
  set output
}
