# Fig. 12: leaf and non-leaf filters accessed vs m, per d (same sweep as Fig. 10).
# Usage: gnuplot -e "in='results/fig12.csv'; out='results/fig12'" plots/fig12.gp
if (!exists("in")) in = 'results/fig12.csv'
if (!exists("out")) out = 'results/fig12'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name".
# first(name): the cell of column "name" in the first data row (for titles).
first(name) = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $(h[\"".name."\"])}' ".in)
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
sel(d) = rows(sprintf('c("d")=="%d" && c("placement")=="similarity" && c("query")=="present"', d))
set grid
set key below
set logscale x
set format x "10^{%L}"
set xlabel 'filter size m at paper scale (bits; the m column holds the scaled value)'
ds = "2 3 5 10"
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1200,560 font ",10" } else { set terminal png size 1200,560 }
    set output out.'.png'
  } else {
    set terminal svg size 1200,560 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,2 title "Fig. 12: filters accessed vs m (hierarchy, similarity placement, present unique value, median)"
  set logscale y
  set ylabel 'leaf filters accessed'
  plot for [i=1:words(ds)] sel(word(ds,i)+0) using "m_paper":"leaf_probes" with linespoints lw 2 lc i title 'd = '.word(ds,i)
  set ylabel 'non-leaf filters accessed'
  plot for [i=1:words(ds)] sel(word(ds,i)+0) using "m_paper":"internal_probes" with linespoints lw 2 lc i title 'd = '.word(ds,i)
  unset logscale y
  unset multiplot
  set output
}
