# Fig. 11: search time vs m per method, in panels of at most six series: bfh's costs with
# leaves on disk read whole (the paper's setting), k words per probe, and in RAM; the authors'
# costs (rows of `bfh run fig11 --costs authors`); and the tables scanned, which decide the time.
# Usage: gnuplot -e "in='results/fig11.csv'; out='results/fig11'" plots/fig11.gp
if (!exists("in")) in = 'results/fig11.csv'
if (!exists("out")) out = 'results/fig11'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". count(cond): how many rows. cell(cond, name): column "name" of the
# first row where cond holds.
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
count(cond) = int(system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){k++} END{print k+0}' ".in))
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(s, k) = rows(sprintf('c("series")=="%s" && c("costs")=="%s" && c("query")=="present" && c("cache")=="warm"', s, k))
has_bfh = count('c("costs")=="bfh"') > 0
has_authors = count('c("costs")=="authors"') > 0
ck = has_bfh ? "bfh" : "authors"
ck_t = has_bfh ? "bfh's costs, leaves in RAM" : "the authors' costs"
# The panels: series (by name) and their legends.
whole = "scan leaves-whole hierarchy-paper-whole hierarchy-similarity-whole sliced-whole"
disk = "scan leaves-disk hierarchy-paper-disk hierarchy-similarity-disk sliced-disk"
mem = "scan leaves-mem hierarchy-paper-mem hierarchy-similarity-mem sliced-mem"
titles = "'SSTable scan' 'classical Bloom scan' 'hierarchy, paper tree' 'hierarchy, similarity placement' 'bit-sliced index'"
auth = "scan leaves-file hierarchy-paper-file hierarchy-similarity-file"
auth_t = "'SSTable scan (text dump)' 'classical Bloom scan (leaf files read bit by bit)' 'hierarchy, paper tree' 'hierarchy, similarity placement'"
counted = has_bfh ? "scan leaves-mem hierarchy-paper-mem hierarchy-similarity-mem" : "scan leaves-file hierarchy-paper-file hierarchy-similarity-file"
panels = 3*has_bfh + has_authors + 1
cols = panels > 3 ? (panels + 1) / 2 : panels
lines = panels > 3 ? 2 : 1
any = 'c("costs")!=""'
params = sprintf("scale %s, engine %s, N = %s, about %.0f tables, k = %s, d = %s, %s present values per point (median, bars: interquartile range (IQR); counts: means), warm cache", \
  cell(any, "scale"), cell(any, "engine"), cell(any, "n"), cell(any, "tables_live")+0.0, cell(any, "k"), cell(any, "d"), cell(any, "queries"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 620*cols,650*lines font ",10" } else { set terminal png size 620*cols,650*lines }
    set output out.'.png'
  } else {
    set terminal svg size 620*cols,650*lines dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout lines,cols title "Fig. 11: impact of the filter size m\n".params
  set grid
  set key below maxrows 3 left Left reverse
  set logscale xy
  set format x "10^{%L}"
  set format y "10^{%L}"
  set xlabel 'filter size m at paper scale (bits; the m column holds the scaled value)'
  set ylabel 'search time (s)'
  if (has_bfh) {
    set title "bfh's costs, leaves on disk read whole per probe (the paper's setting)"
    plot for [i=1:words(whole)] sel(word(whole,i), "bfh") using "m_paper":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(titles,i)
    set title "bfh's costs, leaves on disk, k words read per probe"
    plot for [i=1:words(disk)] sel(word(disk,i), "bfh") using "m_paper":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(titles,i)
    set title "bfh's costs, leaves in RAM"
    plot for [i=1:words(mem)] sel(word(mem,i), "bfh") using "m_paper":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(titles,i)
  }
  if (has_authors) {
    set title "the authors' costs (text-dump scan, leaf files read bit by bit)"
    plot for [i=1:words(auth)] sel(word(auth,i), "authors") using "m_paper":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc i pt i title word(auth_t,i)
  }
  set title sprintf("tables scanned (mean per search; %s)", ck_t)
  set ylabel 'tables scanned (mean per search)'
  set format y "%g"
  plot for [i=1:words(counted)] sel(word(counted,i), ck) using "m_paper":"tables_scanned" with linespoints lw 2 lc i pt i title word(titles,i)
  unset multiplot
  set output
}
