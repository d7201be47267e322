# Table II: SSTable / leaf filter / non-leaf filter sizes vs N.
# Usage: gnuplot -e "in='results/table2.csv'; out='results/table2'" plots/table2.gp
if (!exists("in")) in = 'results/table2.csv'
if (!exists("out")) out = 'results/table2'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name".
# first(name): the cell of column "name" in the first data row (for titles).
first(name) = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $(h[\"".name."\"])}' ".in)
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
db(pl) = rows(sprintf('c("source")=="db" && c("placement")=="%s"', pl))
syn(pl) = rows(sprintf('c("source")=="synthetic" && c("placement")=="%s"', pl))
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
set grid
set key below
set xlabel 'entries N'
set ylabel 'size (MB = 10^6 bytes)'
set title sprintf("Table II: SSTables, leaf and non-leaf filters\nscale %s, engine %s, m = %s, k = %s, d = %s; non-leaf for each placement", first("scale"), first("engine"), first("m"), first("k"), first("d"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1000,650 font ",10" } else { set terminal png size 1000,650 }
    set output out.'.png'
  } else {
    set terminal svg size 1000,650 dynamic font ",10"
    set output out.'.svg'
  }
  plot db("similarity") using "n":"sst_mb" with linespoints lw 2 lc 1 pt 7 title 'SSTables (database)', \
       db("similarity") using "n":"leaf_mb" with linespoints lw 2 lc 2 pt 7 title 'leaf filters (database)', \
       db("similarity") using "n":"nonleaf_mb" with linespoints lw 2 lc 3 pt 7 title 'non-leaf filters, similarity (database)', \
       db("positional") using "n":"nonleaf_mb" with linespoints lw 2 lc 4 pt 7 title 'non-leaf filters, positional (database)', \
       db("paper") using "n":"nonleaf_mb" with linespoints lw 2 lc 5 pt 7 title "non-leaf filters, the paper's tree (database)", \
       syn("paper") using "n":"nonleaf_mb" with linespoints lw 2 dt 2 lc 5 pt 5 title "non-leaf filters, the paper's tree (synthetic)", \
       syn("positional") using "n":"leaf_mb" with linespoints lw 2 dt 2 lc 2 pt 5 title 'leaf filters (synthetic leaves)', \
       syn("positional") using "n":"nonleaf_mb" with linespoints lw 2 dt 2 lc 4 pt 5 title 'non-leaf filters, positional (synthetic)', \
       syn("similarity") using "n":"nonleaf_mb" with linespoints lw 2 dt 2 lc 3 pt 5 title 'non-leaf filters, similarity (synthetic)', \
       in using "n":"paper_sst_mb" with points lc 1 pt 6 ps 1.5 title 'paper: SSTables', \
       in using "n":"paper_leaf_mb" with points lc 2 pt 6 ps 1.5 title 'paper: leaf filters', \
       in using "n":"paper_nonleaf_mb" with points lc 4 pt 6 ps 1.5 title 'paper: non-leaf filters'
  set output
}
