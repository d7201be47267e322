# Table III: leaf filters positive / tables holding the value / leaf filters scanned vs domain.
# Usage: gnuplot -e "in='results/table3.csv'; out='results/table3'" plots/table3.gp
if (!exists("in")) in = 'results/table3.csv'
if (!exists("out")) out = 'results/table3'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name".
# first(name): the cell of column "name" in the first data row (for titles).
first(name) = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $(h[\"".name."\"])}' ".in)
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
set grid
set key below
set logscale y
set xlabel 'value domain (distinct values, % of N)'
set ylabel 'count per search (median)'
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 900,600 font ",10" } else { set terminal png size 900,600 }
    set output out.'.png'
  } else {
    set terminal svg size 900,600 dynamic font ",10"
    set output out.'.svg'
  }
  set title sprintf("Table III: hierarchy search vs value domain (%s entries, %s tables; ours: lines, paper (50M, 599 tables): open points)", first("n"), first("tables_live"))
  plot in using "domain_pct":"leaf_filters_found" with linespoints lw 2 lc 1 pt 7 title 'leaf filters found (positive)', \
       in using "domain_pct":"sstables_found" with linespoints lw 2 lc 2 pt 7 title 'SSTables holding the value', \
       in using "domain_pct":"leaf_filters_scanned" with linespoints lw 2 lc 3 pt 7 title 'leaf filters scanned', \
       in using "domain_pct":"paper_leaf_filters_found" with points lc 1 pt 6 ps 1.5 title 'paper: found', \
       in using "domain_pct":"paper_sstables_found" with points lc 2 pt 6 ps 1.5 title 'paper: SSTables', \
       in using "domain_pct":"paper_leaf_filters_scanned" with points lc 3 pt 6 ps 1.5 title 'paper: scanned'
  set output
}
