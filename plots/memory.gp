# Beyond the paper: index memory against search time. One labelled point per configuration
# and search method (x = bytes per entry the method's index holds, y = median search time,
# log scale), one column of panels per value domain (100%, 10%, 1%); top row present values,
# bottom row absent values.
# Usage: gnuplot -e "in='results/memory.csv'; out='results/memory'" plots/memory.gp
if (!exists("in")) in = 'results/memory.csv'
if (!exists("out")) out = 'results/memory'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". cell(cond, name): column "name" of the first row where cond holds.
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(dom, cfg) = rows(sprintf('c("domain_pct")=="%s" && c("config")=="%s"', dom, cfg))
# The point's label: configuration, method and N (in millions).
label = '(sprintf("%s/%s %gM", strcol("config"), strcol("series"), column("n")/1e6))'
domains = "100 10 1"
dtitles = "'unique values (domain 100%)' 'domain 10% (about 10 keys per value)' 'domain 1% (about 100 keys per value)'"
configs = "paper lean lean-map cuckoo standalone"
ctitles = "'paper layout (m = 2M): HIERARCHY, AUTO' 'lean layout, block filters: AUTO' 'lean layout, value-to-block maps: AUTO' 'Cuckoo Index: CUCKOO' 'stand-alone index: STANDALONE (bytes: RSS over bare)'"
queries = "present absent"
params = sprintf("engine %s, scale %s, m = 2M bits per table (below 1M entries shrunk by 1M/N), k = %s, d = %s, random insert order; median of %s queries (bars: quartiles), warm cache; bytes: bfh stats (stand-alone: measured RSS)", \
  cell('1', "engine"), cell('1', "scale"), cell('1', "k"), cell('1', "d"), cell('1', "queries"))
set logscale y
set format y "10^{%L}"
set grid
set xrange [0:*]
set offsets graph 0.02, graph 0.35, graph 0.2, graph 0.2
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1800,1000 font ",10" } else { set terminal png size 1800,1000 }
    set output out.'.png'
  } else {
    set terminal svg size 1800,1000 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 2,3 title "Beyond the paper: index memory vs search time\n".params
  do for [qi=1:2] {
    do for [di=1:3] {
      set title word(dtitles, di).', value '.word(queries, qi)
      set xlabel 'index memory: bytes per entry'
      set ylabel sprintf('search time (s), value %s (median)', word(queries, qi))
      d = word(domains, di)
      y = word(queries, qi).'_time_s'
      y1 = word(queries, qi).'_time_q1_s'
      y3 = word(queries, qi).'_time_q3_s'
      if (qi == 1 && di == 1) { set key top right box opaque } else { unset key }
      plot for [ci=1:words(configs)] sel(d, word(configs, ci)) using "bytes_per_entry":y:y1:y3 with yerrorbars pt 7 ps 1.3 lc ci title word(ctitles, ci), \
           for [ci=1:words(configs)] sel(d, word(configs, ci)) using "bytes_per_entry":y:@label with labels offset char 1,0.6 left tc lt ci notitle
    }
  }
  unset multiplot
  set output
}
