# Fig. 12: leaf filters reached and internal (non-leaf) filters vs m, per order d (the
# hierarchy, present unique values; the Fig. 10 sweep), one row of panels per leaf placement.
# Non-leaf filters on both definitions: those that said maybe (the authors' code's count, the
# paper's) and every one tested (bfh's); a CSV without internal_maybe leaves that panel empty.
# The paper's value, two leaf filters at m = 2M, is marked on each leaf panel.
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
pls_t = "'the paper tree (exactly d children)' 'positional (d..2d)' 'similarity (d..2d)'"
# The paper's value: at m = 2M, "only two leaf Bloom filters" (and "a few" non-leaf ones).
$paper << EOD
m_paper,leaves
2000000,2
EOD
set grid
set key below maxrows 2 left Left reverse
set logscale x
set format x "10^{%L}"
set xlabel "m at the paper's scale (bits; the run used m x the factor above)"
params = sprintf("scale %s, engine %s, N = %s, about %.0f tables, k = %s, m used = paper m x %g, %s present unique values per point (means), commit %s", \
  cell('1', "scale"), cell('1', "engine"), cell('1', "n"), cell('1', "tables_live")+0.0, cell('1', "k"), \
  (cell('1', "m")+0.0)/cell('1', "m_paper"), cell('1', "queries"), cell('1', "commit"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1800,1700 font ",10" } else { set terminal png size 1800,1700 }
    set output out.'.png'
  } else {
    set terminal svg size 1800,1700 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 3,3 title "Fig. 12: leaf and non-leaf filters accessed vs m, one row per placement\n".params
  set logscale y
  do for [j=1:3] {
    pl = word(pls,j)
    set title "leaf filters reached: ".word(pls_t,j)
    set ylabel 'leaf filters reached (mean per search; the paper'."'".'s def.)'
    plot for [i=1:words(ds)] sel(word(ds,i)+0, pl) using "m_paper":"leaf_filters_reached" with linespoints lw 2 lc i pt i title sprintf("d = %s", word(ds,i)), \
         $paper using "m_paper":"leaves" with points lc rgb "black" pt 6 ps 2.5 lw 2 title "the paper: two at m = 2M"
    set title "non-leaf filters that said maybe: ".word(pls_t,j)."\n(the paper at m = 2M: \"a few\", no number)"
    set ylabel 'non-leaf filters that said maybe (mean; the authors'."'".' count)'
    plot for [i=1:words(ds)] sel(word(ds,i)+0, pl) using "m_paper":"internal_maybe" with linespoints lw 2 lc i pt i title sprintf("d = %s", word(ds,i))
    set title "non-leaf filters tested: ".word(pls_t,j)
    set ylabel 'non-leaf filters tested (mean per search; bfh'."'".'s def.)'
    plot for [i=1:words(ds)] sel(word(ds,i)+0, pl) using "m_paper":"internal_filters_tested" with linespoints lw 2 lc i pt i title sprintf("d = %s", word(ds,i))
  }
  unset logscale y
  unset multiplot
  set output
}
