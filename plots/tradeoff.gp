# Beyond the paper: the stand-alone index trade-off. Write cost (x) against the median
# present-value search time (y), one labelled point per configuration and query series; one
# column of panels per workload (unique values, domain 1%); top row x = ingest time per put,
# bottom row x = write amplification.
# Usage: gnuplot -e "in='results/tradeoff.csv'; out='results/tradeoff'" plots/tradeoff.gp
if (!exists("in")) in = 'results/tradeoff.csv'
if (!exists("out")) out = 'results/tradeoff'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". cell(cond, name): column "name" of the first row where cond holds.
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(dom, cfg) = rows(sprintf('c("domain_pct")=="%s" && c("config")=="%s"', dom, cfg))
# nvalid(dom, col): how many rows of the workload have col > 0 (a log axis needs one; RocksDB's
# C API counts no bytes written, so its write_amp is 0).
nvalid(dom, col) = system(sprintf("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} c(\"domain_pct\")==\"%s\" && c(\"%s\")+0>0{n++} END{print n+0}' %s", dom, col, in)) + 0
# The point's label: query series and N (in millions).
label = '(sprintf("%s %gM", strcol("series"), column("n")/1e6))'
# Labels of HIERARCHY and SLICED are moved up and down: their points often coincide.
lift(s) = s eq "hierarchy" ? 1.35 : s eq "sliced" ? 0.74 : 1.0
domains = "100 1"
dtitles = "'unique values (domain 100%)' 'low cardinality (domain 1%, about 100 keys per value)'"
configs = "bare bfh standalone"
ctitles = "'bare engine (SCAN)' 'bfh: value filters + block filters + memtable index' 'stand-alone index (value||key store)'"
xcols = "ingest_us_per_put write_amp"
xlabels = "'ingest: microseconds per put (puts + final flush)' 'write amplification: bytes written / bytes put'"
params = sprintf("%s engine, scale %s, m = %s, k = %s, d = %s, random insert order; ingest: median of %s build(s); search: median of %s queries, second pass (warm)", \
  cell('1', "engine"), cell('1', "scale"), cell('1', "m"), cell('1', "k"), cell('1', "d"), cell('1', "reps"), cell('1', "queries"))
set logscale xy
set format y "10^{%L}"
set grid
set offsets graph 0.1, graph 0.3, graph 0.2, graph 0.2
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1400,1000 font ",10" } else { set terminal png size 1400,1000 }
    set output out.'.png'
  } else {
    set terminal svg size 1400,1000 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 2,2 title "Beyond the paper: write cost vs search time, bfh against a stand-alone index\n".params
  do for [xi=1:2] {
    do for [di=1:2] {
      set title word(dtitles, di)
      set xlabel word(xlabels, xi)
      set ylabel 'search time (s), value present (median)'
      d = word(domains, di)
      xc = word(xcols, xi)
      if (xi == 1 && di == 1) { set key top right box opaque } else { unset key }
      if (nvalid(d, xc) == 0) {
        set label 1 "not measured on this engine" at graph 0.5, graph 0.5 center
        plot [1:10] [1e-6:1] NaN notitle
        unset label 1
      } else {
        plot for [ci=1:words(configs)] sel(d, word(configs, ci)) using xc:"present_time_s" with points pt 7 ps 1.5 lc ci title word(ctitles, ci), \
             for [ci=1:words(configs)] sel(d, word(configs, ci)) using xc:(column("present_time_s")*lift(strcol("series"))):@label with labels offset char 1,0.7 left tc lt ci notitle
      }
    }
  }
  unset multiplot
  set output
}
