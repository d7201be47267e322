# Fig. 8: non-key search time vs N per method (present values; medians of the queries, bars
# the interquartile range), in panels of at most six series: bfh's costs with leaves on disk
# read whole (the paper's setting), k words per probe, and in RAM; the authors' costs (rows of
# `bfh run fig8 --costs authors`); cold-cache points (--cold) under each profile; the paper's
# one query Value187719 (rows "fixed"); and the counts per search.
# Usage: gnuplot -e "in='results/fig8.csv'; out='results/fig8'" plots/fig8.gp
if (!exists("in")) in = 'results/fig8.csv'
if (!exists("out")) out = 'results/fig8'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". count(cond): how many rows. cell(cond, name): column "name" of the
# first row where cond holds.
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
count(cond) = int(system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){k++} END{print k+0}' ".in))
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
# sel(series, costs): warm rows of present values; cold(series, costs): cold rows; fixed(series,
# costs): warm rows of the paper's one value.
sel(s, k) = rows(sprintf('c("series")=="%s" && c("costs")=="%s" && c("query")=="present" && c("cache")=="warm"', s, k))
cold(s, k) = rows(sprintf('c("series")=="%s" && c("costs")=="%s" && c("query")=="present" && c("cache")~/^cold/', s, k))
fixed(s, k) = rows(sprintf('c("series")=="%s" && c("costs")=="%s" && c("query")=="fixed" && c("cache")=="warm"', s, k))
has_bfh = count('c("costs")=="bfh"') > 0
has_authors = count('c("costs")=="authors"') > 0
has_cold = count('c("cache")~/^cold/ && c("costs")=="bfh"') > 0
has_acold = count('c("cache")~/^cold/ && c("costs")=="authors"') > 0
has_fixed = count('c("query")=="fixed"') > 0
fixed_value = has_fixed ? cell('c("query")=="fixed"', "fixed_value") : "187719"
# The panels: series (by name) and their legends (method, placement, leaf location, costs).
whole = "scan leaves-whole hierarchy-paper-whole hierarchy-similarity-whole sliced-whole"
whole_t = "'SSTable scan, bfh costs' 'classical Bloom scan, leaves on disk (whole), bfh costs' 'hierarchy, paper tree, leaves on disk (whole), bfh costs' 'hierarchy, similarity placement, leaves on disk (whole), bfh costs' 'bit-sliced index, leaves on disk (whole), bfh costs'"
disk = "scan leaves-disk hierarchy-paper-disk hierarchy-similarity-disk sliced-disk"
disk_t = "'SSTable scan, bfh costs' 'classical Bloom scan, leaves on disk (k words), bfh costs' 'hierarchy, paper tree, leaves on disk (k words), bfh costs' 'hierarchy, similarity placement, leaves on disk (k words), bfh costs' 'bit-sliced index, leaves on disk (k words), bfh costs'"
mem = "scan leaves-mem hierarchy-paper-mem hierarchy-similarity-mem sliced-mem"
mem_t = "'SSTable scan, bfh costs' 'classical Bloom scan, leaves in RAM, bfh costs' 'hierarchy, paper tree, leaves in RAM, bfh costs' 'hierarchy, similarity placement, leaves in RAM, bfh costs' 'bit-sliced index, leaves in RAM, bfh costs'"
auth = "scan leaves-file hierarchy-paper-file hierarchy-similarity-file"
auth_t = "'SSTable scan (text dump), authors costs' 'classical Bloom scan, leaves on disk (whole file, bit by bit), authors costs' 'hierarchy, paper tree, leaves on disk (whole file, bit by bit), authors costs' 'hierarchy, similarity placement, leaves on disk (whole file, bit by bit), authors costs'"
colds = "scan leaves-whole hierarchy-paper-whole hierarchy-paper-disk sliced-disk"
colds_t = "'SSTable scan, bfh costs, cold' 'classical Bloom scan, leaves on disk (whole), bfh costs, cold' 'hierarchy, paper tree, leaves on disk (whole), bfh costs, cold' 'hierarchy, paper tree, leaves on disk (k words), bfh costs, cold' 'bit-sliced index, leaves on disk (k words), bfh costs, cold'"
acolds_t = "'SSTable scan (text dump), authors costs, cold' 'classical Bloom scan, leaf files, authors costs, cold' 'hierarchy, paper tree, leaf files, authors costs, cold' 'hierarchy, similarity placement, leaf files, authors costs, cold'"
# The paper's query: its three methods, under each profile.
fix = "scan|bfh leaves-whole|bfh hierarchy-paper-whole|bfh scan|authors leaves-file|authors hierarchy-paper-file|authors"
fix_t = "'SSTable scan, bfh costs' 'classical Bloom scan, leaves on disk (whole), bfh costs' 'hierarchy, paper tree, leaves on disk (whole), bfh costs' 'SSTable scan (text dump), authors costs' 'classical Bloom scan, leaf files, authors costs' 'hierarchy, paper tree, leaf files, authors costs'"
fw(i, j) = (fw_w = word(fix,i), fw_p = strstrt(fw_w, "|"), j == 1 ? fw_w[1:fw_p-1] : fw_w[fw_p+1:])
any = 'c("costs")!=""'
params = sprintf("scale %s, m = %s, k = %s, d = %s; time: median of the queries (%s per point with bfh's costs, at most 10 with the authors'), bars: interquartile range (IQR); counts: means; warm cache unless marked cold", \
  cell(any, "scale"), cell(any, "m"), cell(any, "k"), cell(any, "d"), cell('c("costs")=="bfh"', "queries"))
# An empty panel says what would fill it.
empty(msg) = sprintf("set label 99 '%s' at graph 0.5, graph 0.5 center; unset logscale; set format xy ''; set xrange [0:1]; set yrange [0:1]; plot NaN notitle; unset label 99; set logscale xy; set autoscale xy; set format xy '10^{%%L}'", msg)
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 2400,1600 font ",9" } else { set terminal png size 2400,1600 }
    set output out.'.png'
  } else {
    set terminal svg size 2400,1600 dynamic font ",9"
    set output out.'.svg'
  }
  set multiplot layout 2,4 title "Fig. 8: impact of the number of entries\n".params
  set logscale xy
  set format x "10^{%L}"
  set format y "10^{%L}"
  set grid
  set key below maxrows 5 left
  set xlabel 'entries N'
  set ylabel 'search time (s)'
  set title "(a) bfh's costs, leaves on disk read whole per probe (the paper's setting)"
  if (has_bfh) { plot for [i=1:words(whole)] sel(word(whole,i), "bfh") using "n":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(whole_t,i) } else { eval empty("no rows with --costs bfh") }
  set title "(b) bfh's costs, leaves on disk, k words read per probe"
  if (has_bfh) { plot for [i=1:words(disk)] sel(word(disk,i), "bfh") using "n":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(disk_t,i) } else { eval empty("no rows with --costs bfh") }
  set title "(c) bfh's costs, leaves in RAM"
  if (has_bfh) { plot for [i=1:words(mem)] sel(word(mem,i), "bfh") using "n":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(mem_t,i) } else { eval empty("no rows with --costs bfh") }
  set title "(d) the authors' costs (their code's steps: text-dump scan, leaf files read bit by bit)"
  if (has_authors) { plot for [i=1:words(auth)] sel(word(auth,i), "authors") using "n":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(auth_t,i) } else { eval empty("no rows with --costs authors (run bfh run fig8 --costs authors)") }
  set title "(e) cold cache: files evicted before each query (bfh's costs)"
  if (has_cold) { plot for [i=1:words(colds)] cold(word(colds,i), "bfh") using "n":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 dt 2 lc i pt i title word(colds_t,i) } else { eval empty("not measured (run with --cold)") }
  set title "(f) cold cache: files evicted before each query (the authors' costs)"
  if (has_acold) { plot for [i=1:words(auth)] cold(word(auth,i), "authors") using "n":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 dt 2 lc i pt i title word(acolds_t,i) } else { eval empty("not measured (run with --costs authors --cold)") }
  set title sprintf("(g) the paper's one query, Value%s (rows 'fixed', warm)", fixed_value)
  if (has_fixed) { plot for [i=1:words(fix)] fixed(fw(i,1), fw(i,2)) using "n":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i dt 1+(i>3) title word(fix_t,i) } else { eval empty("no rows of the fixed query (its N holds no such value)") }
  set title "(h) work per search (means, bfh's costs, leaves in RAM; filters tested = internal + leaf)"
  set ylabel 'count per search (mean)'
  set key top left inside opaque box maxrows 6 maxcols 1 Left reverse width 2
  if (has_bfh) { \
    plot sel("scan", "bfh") using "n":"tables_live" with linespoints lw 2 lc 1 pt 1 title 'tables (= leaf filters a classical Bloom scan tests)', \
         sel("hierarchy-paper-mem", "bfh") using "n":(column("internal_probes")+column("leaf_probes")) with linespoints lw 2 lc 3 pt 3 title 'filters tested, hierarchy, paper tree', \
         sel("hierarchy-similarity-mem", "bfh") using "n":(column("internal_probes")+column("leaf_probes")) with linespoints lw 2 lc 4 pt 4 title 'filters tested, hierarchy, similarity placement', \
         sel("hierarchy-paper-mem", "bfh") using "n":"tables_scanned" with linespoints lw 2 lc 7 pt 7 title 'tables scanned: hierarchy, paper tree', \
         sel("scan", "bfh") using "n":"tables_scanned" with linespoints lw 2 lc rgb "gray" pt 6 dt 2 title 'tables scanned: SSTable scan' \
  } else { eval empty("no rows with --costs bfh") }
  unset multiplot
  set output
}
