# Fig. 9: search time and filters checked vs the order d (the hierarchy with each placement,
# next to the methods that do not depend on d), in panels of at most six series: the times
# with bfh's costs (leaves in RAM; leaves on disk read whole per probe), with the authors'
# costs (rows of `bfh run fig9 --costs authors`), and the counts per search.
# Usage: gnuplot -e "in='results/fig9.csv'; out='results/fig9'" plots/fig9.gp
if (!exists("in")) in = 'results/fig9.csv'
if (!exists("out")) out = 'results/fig9'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". count(cond): how many rows. cell(cond, name): column "name" of
# the first row where cond holds.
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
count(cond) = int(system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){k++} END{print k+0}' ".in))
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
# sel(series, costs): the rows of present values, one per d (the first: a CSV may hold a
# d-independent series measured more than once).
sel(s, k) = rows(sprintf('c("series")=="%s" && c("query")=="present" && c("costs")=="%s" && !seen[c("d")]++', s, k))
has_bfh = count('c("costs")=="bfh"') > 0
has_authors = count('c("costs")=="authors"') > 0
# The counts do not depend on the costs: those of bfh's, leaves in RAM, if measured.
ck = has_bfh ? "bfh" : "authors"
cs = has_bfh ? "-mem" : "-file"
ck_t = has_bfh ? "bfh's costs, leaves in RAM" : "the authors' costs"
# The panels: series (by name) and their legends.
mem = "scan leaves-mem hierarchy-paper-mem hierarchy-positional-mem hierarchy-similarity-mem sliced-mem"
mem_t = "'SSTable scan' 'classical Bloom scan' 'hierarchy, paper tree (exactly d children)' 'hierarchy, positional (d..2d)' 'hierarchy, similarity (d..2d)' 'bit-sliced index'"
whole = "scan leaves-whole hierarchy-paper-whole hierarchy-positional-whole hierarchy-similarity-whole sliced-whole"
auth = "scan leaves-file hierarchy-paper-file hierarchy-positional-file hierarchy-similarity-file"
auth_t = "'SSTable scan (text dump)' 'classical Bloom scan' 'hierarchy, paper tree (exactly d children)' 'hierarchy, positional (d..2d)' 'hierarchy, similarity (d..2d)'"
pls = "paper positional similarity"
pls_t = "'paper tree' 'positional' 'similarity'"
any = 'c("costs")!=""'
params = sprintf("scale %s, engine %s, N = %s, about %.0f tables, m = %s, k = %s, %s present values per point (time: median, bars: interquartile range (IQR); counts: means), warm cache", \
  cell(any, "scale"), cell(any, "engine"), cell(any, "n"), cell(any, "tables_live")+0.0, cell(any, "m"), cell(any, "k"), cell(any, "queries"))
# Only the panels with rows: the time panels of each cost profile measured, then the counts.
panels = 2*has_bfh + has_authors + 3
cols = (panels + 1) / 2
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 600*cols,1300 font ",10" } else { set terminal png size 600*cols,1300 }
    set output out.'.png'
  } else {
    set terminal svg size 600*cols,1300 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 2,cols title "Fig. 9: impact of the order d\n".params
  set grid
  set key below maxrows 3 left Left reverse
  set xlabel 'hierarchy order d'
  set ylabel 'search time (s)'
  set logscale y
  if (has_bfh) {
    set title "bfh's costs, leaves in RAM"
    plot for [i=1:words(mem)] sel(word(mem,i), "bfh") using "d":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(mem_t,i)
    set title "bfh's costs, leaves on disk read whole per probe (the paper's setting)"
    plot for [i=1:words(whole)] sel(word(whole,i), "bfh") using "d":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(mem_t,i)
  }
  if (has_authors) {
    set title "the authors' costs (leaf files read bit by bit; scan and Bloom scan at the first d only)"
    plot for [i=1:words(auth)] sel(word(auth,i), "authors") using "d":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(auth_t,i)
  }
  unset logscale y
  set title sprintf("leaf filters reached (the paper's trend: more with larger d); %s", ck_t)
  set ylabel 'leaf filters reached (mean per search)'
  plot sel("leaves".cs, ck) using "d":"leaf_filters_reached" with linespoints lw 2 lc 2 pt 2 title 'classical Bloom scan (every leaf)', \
       for [j=1:3] sel("hierarchy-".word(pls,j).cs, ck) using "d":"leaf_filters_reached" with linespoints lw 2 lc 2+j pt 2+j title 'hierarchy, '.word(pls_t,j)
  set title "non-leaf filters per search: tested (solid; bfh's count), said maybe (dashed; the authors' count)"
  set ylabel 'non-leaf filters (mean per search)'
  plot for [j=1:3] sel("hierarchy-".word(pls,j).cs, ck) using "d":"internal_filters_tested" with linespoints lw 2 lc 2+j pt 2+j title 'tested, '.word(pls_t,j), \
       for [j=1:3] sel("hierarchy-".word(pls,j).cs, ck) using "d":"internal_maybe" with linespoints lw 2 dt 2 lc 2+j pt 2+j title 'said maybe, '.word(pls_t,j)
  set title "tables scanned (mean per search): the same at every d"
  set ylabel 'tables scanned (mean per search)'
  set logscale y
  plot sel("scan", ck) using "d":"tables_scanned" with linespoints lw 2 lc 1 pt 1 title 'SSTable scan', \
       sel("leaves".cs, ck) using "d":"tables_scanned" with linespoints lw 2 lc 2 pt 2 title 'classical Bloom scan', \
       for [j=1:3] sel("hierarchy-".word(pls,j).cs, ck) using "d":"tables_scanned" with linespoints lw 2 lc 2+j pt 2+j title 'hierarchy, '.word(pls_t,j)
  unset logscale y
  unset multiplot
  set output
}
