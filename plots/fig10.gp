# Fig. 10: filters accessed, tables scanned and time vs d, per m.
# Usage: gnuplot -e "in='results/fig10.csv'; out='results/fig10'" plots/fig10.gp
if (!exists("in")) in = 'results/fig10.csv'
if (!exists("out")) out = 'results/fig10'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name".
# first(name): the cell of column "name" in the first data row (for titles).
first(name) = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $(h[\"".name."\"])}' ".in)
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
sel(m, pl) = rows(sprintf('c("m_paper")=="%d" && c("placement")=="%s" && c("query")=="present"', m, pl))
set grid
set key below
set xlabel 'hierarchy order d'
ms = "20000 200000 2000000"
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1500,560 font ",10" } else { set terminal png size 1500,560 }
    set output out.'.png'
  } else {
    set terminal svg size 1500,560 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,3 title sprintf("Fig. 10: impact of m and d (%s entries, %s tables; hierarchy, present unique value; solid: similarity, dashed: positional placement)", first("n"), first("tables_live"))
  set ylabel 'filters accessed (% of the leaf filters)'
  plot for [i=1:3] sel(word(ms,i)+0, "similarity") using "d":"filters_accessed_pct" with linespoints lw 2 lc i title 'm = '.word(ms,i).' (paper scale)', \
       for [i=1:3] sel(word(ms,i)+0, "positional") using "d":"filters_accessed_pct" with linespoints lw 2 dt 2 lc i notitle
  set ylabel 'tables scanned'
  plot for [i=1:3] sel(word(ms,i)+0, "similarity") using "d":"tables_scanned" with linespoints lw 2 lc i title 'm = '.word(ms,i), \
       for [i=1:3] sel(word(ms,i)+0, "positional") using "d":"tables_scanned" with linespoints lw 2 dt 2 lc i notitle
  set logscale y
  set ylabel 'search time (s)'
  plot for [i=1:3] sel(word(ms,i)+0, "similarity") using "d":"time_s" with linespoints lw 2 lc i title 'm = '.word(ms,i), \
       for [i=1:3] sel(word(ms,i)+0, "positional") using "d":"time_s" with linespoints lw 2 dt 2 lc i notitle
  unset logscale y
  unset multiplot
  set output
}
