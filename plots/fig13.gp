# Fig. 13: search time per method vs the value domain (the hierarchy with each placement).
# Usage: gnuplot -e "in='results/fig13.csv'; out='results/fig13'" plots/fig13.gp
if (!exists("in")) in = 'results/fig13.csv'
if (!exists("out")) out = 'results/fig13'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". cell(cond, name): column "name" of the first row where cond holds.
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(s) = rows(sprintf('c("series")=="%s" && c("costs")=="%s" && c("domain_mode")!="authors"', word(s,1), word(s,2)))
sw(i) = (sw_w = word(series,i), sw_p = strstrt(sw_w, "|"), sw_w[1:sw_p-1]." ".sw_w[sw_p+1:])
drawn(s) = rows(sprintf('c("series")=="%s" && c("costs")=="bfh" && c("domain_mode")=="authors" && c("query")=="domain"', s))
count(cond) = int(system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){k++} END{print k+0}' ".in))
set grid
set key below maxrows 3 left Left reverse
set logscale y
set format y "10^{%L}"
set xlabel 'value domain (distinct values, % of N)'
# A series is "name|costs"; the first panel bfh's costs, the second the authors'.
series = "scan|bfh leaves-mem|bfh leaves-whole|bfh hierarchy-paper-mem|bfh hierarchy-paper-whole|bfh hierarchy-similarity-whole|bfh"
titles = "'SSTable scan, bfh costs' 'classical Bloom scan, leaves in RAM, bfh costs' 'classical Bloom scan, leaves on disk (whole), bfh costs' 'hierarchy, paper tree, leaves in RAM, bfh costs' 'hierarchy, paper tree, leaves on disk (whole), bfh costs' 'hierarchy, similarity, leaves on disk (whole), bfh costs'"
aseries = "scan|authors leaves-file|authors hierarchy-paper-file|authors hierarchy-similarity-file|authors"
atitles = "'SSTable scan (text dump), authors costs' 'classical Bloom scan, leaves on disk (whole file, bit by bit), authors costs' 'hierarchy, paper tree, leaves on disk (whole file, bit by bit), authors costs' 'hierarchy, similarity, leaves on disk (whole file, bit by bit), authors costs'"
asw(i) = (sw_w = word(aseries,i), sw_p = strstrt(sw_w, "|"), sw_w[1:sw_p-1]." ".sw_w[sw_p+1:])
# The authors' workload (values drawn with replacement), bfh's costs, leaves in RAM.
dseries = "scan leaves-mem hierarchy-paper-mem sliced-mem"
dtitles = "'SSTable scan' 'classical Bloom scan, leaves in RAM' 'hierarchy, paper tree, leaves in RAM' 'bit-sliced index, leaves in RAM'"
# The tables a search reads, bfh's exact workload: every method's share of the tables.
tseries = "scan leaves-mem hierarchy-paper-mem hierarchy-similarity-mem"
ttitles = "'SSTable scan' 'classical Bloom scan' 'hierarchy, paper tree' 'hierarchy, similarity'"
# The paper's Table III: leaf filters positive (the tables its hierarchy scans) of 599 tables.
$paper << EOD
domain_pct,positive
1,56
5,28
10,13
40,5
70,2
100,0
EOD
has_authors = count('c("costs")=="authors"') > 0
has_drawn = count('c("domain_mode")=="authors" && c("costs")=="bfh"') > 0
panels = 2 + has_drawn + has_authors
exact = 'c("domain_mode")!="authors"'
params = sprintf("scale %s, engine %s, N = %s, about %.0f tables, m = %s, k = %s, d = %s, %s present values per point (time: median, bars: interquartile range (IQR); counts: means), warm cache", \
  cell(exact, "scale"), cell(exact, "engine"), cell(exact, "n"), cell(exact, "tables_live")+0.0, cell(exact, "m"), cell(exact, "k"), cell(exact, "d"), cell(exact, "queries"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 620*panels,720 font ",10" } else { set terminal png size 620*panels,720 }
    set output out.'.png'
  } else {
    set terminal svg size 620*panels,720 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,panels title "Fig. 13: impact of the value domain\n".params
  set ylabel 'search time (s)'
  set title "bfh's costs, each value on exactly N/D keys"
  plot for [i=1:words(series)] sel(sw(i)) using "domain_pct":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(titles,i)
  if (has_drawn) {
    set title "bfh's costs, the authors' workload (values drawn with replacement)"
    plot for [i=1:words(dseries)] drawn(word(dseries,i)) using "domain_pct":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(dtitles,i)
  }
  if (has_authors) {
    set title "the authors' costs (bfh run fig13 --costs authors)"
    plot for [i=1:words(aseries)] sel(asw(i)) using "domain_pct":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(atitles,i)
  }
  set title "tables scanned, bfh's costs, exact workload\n(the paper's 0 at 100% is off the log axis)"
  set ylabel 'tables scanned (% of the tables, mean per search)'
  set format y "%g"
  plot for [i=1:words(tseries)] sel(word(tseries,i)." bfh") using "domain_pct":(100.0*column("tables_scanned")/column("tables_live")) with linespoints lw 2 lc i pt i title word(ttitles,i), \
       $paper using "domain_pct":(100.0*column("positive")/599) with points lc rgb "black" pt 6 ps 2.5 lw 2 title "the paper: leaf filters positive (Table III, % of 599)"
  set format y "10^{%L}"
  unset multiplot
  set output
}
