# Fig. 12: leaf filters reached and internal (non-leaf) filters vs m, per order d and
# placement (the hierarchy, present unique values; the Fig. 10 sweep). Non-leaf filters on
# both definitions: those that said maybe (the authors' code's count, the paper's) and every
# one tested (bfh's); a CSV without internal_maybe leaves that panel empty.
# Usage: gnuplot -e "in='results/fig12.csv'; out='results/fig12'" plots/fig12.gp
if (!exists("in")) in = 'results/fig12.csv'
if (!exists("out")) out = 'results/fig12'
set datafile separator ','
set datafile columnheaders
awkrows = "awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} "
rows(cond) = "< ".awkrows.cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(d, pl) = rows(sprintf('c("d")=="%d" && c("placement")=="%s" && c("query")=="present"', d, pl))
ds = "2 3 5 10"
pls = "paper positional similarity"
set grid
set key below maxrows 4
set logscale x
set format x "10^{%L}"
set xlabel "m at the paper's scale (bits; the run used m x the factor above)"
params = sprintf("scale %s, N = %s, about %.0f tables, k = %s, m used = paper m x %g, %s present unique values per point (means), commit %s; paper at m = 2M: two leaf filters and a few non-leaf ones", \
  cell('1', "scale"), cell('1', "n"), cell('1', "tables_live")+0.0, cell('1', "k"), \
  (cell('1', "m")+0.0)/cell('1', "m_paper"), cell('1', "queries"), cell('1', "commit"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1800,640 font ",10" } else { set terminal png size 1800,640 }
    set output out.'.png'
  } else {
    set terminal svg size 1800,640 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,3 title "Fig. 12: leaf and non-leaf filters accessed vs m\n".params
  set logscale y
  set ylabel 'leaf filters reached (mean per search; the paper'."'".'s def.)'
  plot for [i=1:words(ds)] for [j=1:3] sel(word(ds,i)+0, word(pls,j)) using "m_paper":"leaf_filters_reached" with linespoints lw 2 lc i dt j pt j title sprintf("d = %s, %s", word(ds,i), word(pls,j))
  set ylabel 'non-leaf filters that said maybe (mean; the authors'."'".' count, the paper'."'".'s def.)'
  plot for [i=1:words(ds)] for [j=1:3] sel(word(ds,i)+0, word(pls,j)) using "m_paper":"internal_maybe" with linespoints lw 2 lc i dt j pt j notitle
  set ylabel 'non-leaf filters tested (mean per search; bfh'."'".'s def.)'
  plot for [i=1:words(ds)] for [j=1:3] sel(word(ds,i)+0, word(pls,j)) using "m_paper":"internal_filters_tested" with linespoints lw 2 lc i dt j pt j notitle
  unset logscale y
  unset multiplot
  set output
}
