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
set key below
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
has_cold = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)if($i==\"scan_lookup_cold_s\")c=i} NR==2&&c&&$c!=\"\"{print 1;exit} END{}' ".in) eq "1"
set key below maxrows 3
set title sprintf("Table I: engine without value filters (ours: lines, dashed = cold cache; the paper's LevelDB: open points)\nscale %s, engine %s, %s scans (median), 101 warm / 21 cold gets (median)", first("scale"), first("engine"), first("queries"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1000,680 font ",10" } else { set terminal png size 1000,680 }
    set output out.'.png'
  } else {
    set terminal svg size 1000,680 dynamic font ",10"
    set output out.'.svg'
  }
  plot in using "n":"insert_s" with linespoints lw 2 lc 1 pt 7 title 'insert N entries', \
       in using "n":"scan_lookup_s" with linespoints lw 2 lc 2 pt 7 title 'one non-key lookup (full scan), warm', \
       in using "n":"key_lookup_s" with linespoints lw 2 lc 3 pt 7 title 'one key lookup, warm', \
       in using "n":(has_cold ? column("scan_lookup_cold_s") : NaN) with linespoints lw 2 dt 2 lc 2 pt 5 title (has_cold ? 'non-key lookup, cold cache' : ''), \
       in using "n":(has_cold ? column("key_lookup_cold_s") : NaN) with linespoints lw 2 dt 2 lc 3 pt 5 title (has_cold ? 'key lookup, cold cache' : ''), \
       $paper using 1:2 with points lc 1 pt 6 ps 1.5 title 'paper: insert', \
       $paper using 1:3 with points lc 2 pt 6 ps 1.5 title 'paper: non-key lookup', \
       $paper using 1:4 with points lc 3 pt 6 ps 1.5 title 'paper: key lookup'
  set output
}
