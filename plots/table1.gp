# Table I: insert time, full-scan non-key lookup and key lookup vs N.
# Usage: gnuplot -e "in='results/table1.csv'; out='results/table1'" plots/table1.gp
if (!exists("in")) in = 'results/table1.csv'
if (!exists("out")) out = 'results/table1'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name".
# first(name): the cell of column "name" in the first data row (for titles).
first(name) = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $(h[\"".name."\"])}' ".in)
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
set grid
set xlabel 'entries N'
set ylabel 'time (s)'
# The paper's Table I (LevelDB): N, insert (s), one non-key lookup (s), one key lookup (s).
$paper << EOD
n,insert_s,scan_lookup_s,key_lookup_s
1e7,21,5,0.000243
5e7,103,27,0.000088
1e8,210,54,0.000257
5e8,1141,281,0.000868
EOD
# rows(cond) as in the other scripts; prof(k): the rows of cost profile k. has(k, col): does
# a row of profile k have column col filled? q(name): a quartile column, NaN in a CSV written
# before the driver kept them (the bars then vanish, the points stay).
count(cond) = int(system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){k++} END{print k+0}' ".in))
prof(k) = rows(sprintf('c("costs")=="%s"', k))
has(k, col) = count(sprintf('c("costs")=="%s" && c("%s")!=""', k, col)) > 0
has_q = int(system("head -1 ".in." | tr , '\\n' | grep -cx scan_lookup_q1_s")) > 0
q(name) = has_q ? column(name) : NaN
profiles = ""
do for [k in "bfh authors"] { if (count(sprintf('c("costs")=="%s"', k)) > 0) { profiles = profiles." ".k } }
ptitle(k) = k eq "authors" ? "the authors' costs (text-dump scan; a get: the first after a reopen)" : "bfh's costs"
panels = 1 + words(profiles)
set key below maxrows 3
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 620*panels,720 font ",10" } else { set terminal png size 620*panels,720 }
    set output out.'.png'
  } else {
    set terminal svg size 620*panels,720 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,panels title sprintf("Table I: the engine without value filters (ours: lines; the paper's LevelDB: open circles)\nscale %s, engine %s; medians of the scans and of the gets, bars: interquartile range (IQR)", \
    first("scale"), first("engine"))
  set offsets graph 0.03, graph 0.03, 0, 0
  set title "insert N entries (puts + final flush)"
  plot prof(word(profiles,1)) using "n":"insert_s" with linespoints lw 2 lc 1 pt 7 title 'insert N entries', \
       $paper using 1:2 with points lc 1 pt 6 ps 1.5 title 'paper: insert'
  do for [k in profiles] {
    cold = has(k, "scan_lookup_cold_s")
    set title "one lookup, ".ptitle(k)."\n".(cold ? "solid: warm cache, dashed: cold" : "warm cache")
    # Without cold points the cold lines have no valid point and no key entry.
    plot prof(k) using "n":"scan_lookup_s":(q("scan_lookup_q1_s")):(q("scan_lookup_q3_s")) with yerrorlines lw 2 lc 2 pt 7 title 'non-key lookup (full scan), warm', \
         prof(k) using "n":"key_lookup_s":(q("key_lookup_q1_s")):(q("key_lookup_q3_s")) with yerrorlines lw 2 lc 3 pt 7 title 'key lookup, warm', \
         prof(k) using "n":(cold ? column("scan_lookup_cold_s") : NaN):(q("scan_lookup_cold_q1_s")):(q("scan_lookup_cold_q3_s")) with yerrorlines lw 2 dt 2 lc 2 pt 5 title (cold ? 'non-key lookup, cold cache' : ''), \
         prof(k) using "n":(cold ? column("key_lookup_cold_s") : NaN):(q("key_lookup_cold_q1_s")):(q("key_lookup_cold_q3_s")) with yerrorlines lw 2 dt 2 lc 3 pt 5 title (cold ? 'key lookup, cold cache' : ''), \
         $paper using 1:3 with points lc 2 pt 6 ps 1.5 title 'paper: non-key lookup', \
         $paper using 1:4 with points lc 3 pt 6 ps 1.5 title 'paper: key lookup'
  }
  unset multiplot
  set output
}
