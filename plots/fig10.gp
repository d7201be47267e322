# Fig. 10: the hierarchy over ~119 tables: leaf filters reached (the paper's "filters
# accessed": the leaves its code reaches), the non-leaf filters that said maybe (its code's
# count) and, for comparison, those tested (bfh's count), tables scanned and search time vs
# the order d, per leaf placement: one row of panels per m, at most six series a panel, the
# paper's values (m = 2M, d = 3: 6% of the filters, one table) marked where they belong.
# Usage: gnuplot -e "in='results/fig10.csv'; out='results/fig10'" plots/fig10.gp
if (!exists("in")) in = 'results/fig10.csv'
if (!exists("out")) out = 'results/fig10'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". cell(cond, name): column "name" of the first row where cond holds.
awkrows = "awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} "
rows(cond) = "< ".awkrows.cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(m, pl) = rows(sprintf('c("m_paper")=="%d" && c("placement")=="%s" && c("query")=="present"', m, pl))
mused(m) = cell(sprintf('c("m_paper")=="%d"', m), "m")
ms = "20000 200000 2000000"
pls = "paper positional similarity"
pls_t = "'paper tree (exactly d children)' 'positional (d..2d)' 'similarity (d..2d)'"
# The paper's values: at m = 2M and d = 3, 6% of the leaf filters and one table scanned.
$paper_pct << EOD
d,pct
3,6
EOD
$paper_tables << EOD
d,tables
3,1
EOD
set grid
set xlabel 'hierarchy order d'
params = sprintf("scale %s, engine %s, N = %s, about %.0f tables, k = %s, %s present unique values per point (counts: means; time: median, bars: interquartile range (IQR)), warm cache, commit %s", \
  cell('1', "scale"), cell('1', "engine"), cell('1', "n"), cell('1', "tables_live")+0.0, cell('1', "k"), cell('1', "queries"), cell('1', "commit"))
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 2000,1900 font ",10" } else { set terminal png size 2000,1900 }
    set output out.'.png'
  } else {
    set terminal svg size 2000,1900 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 3,4 title "Fig. 10: impact of m and d on the hierarchy, one row per m\n".params
  do for [i=1:3] {
    m = word(ms,i)+0
    is2m = m == 2000000
    set key below maxrows 3 left Left reverse
    set title sprintf("m = %s (the paper's %s): leaf filters reached", mused(m), word(ms,i))
    set ylabel "leaf filters reached (% of the leaves; the paper's metric)"
    set yrange [0:105]
    plot for [j=1:3] sel(m, word(pls,j)) using "d":"leaf_filters_reached_pct" with linespoints lw 2 lc j pt j title word(pls_t,j), \
         $paper_pct using 1:(is2m ? $2 : NaN) with points lc rgb "black" pt 6 ps 2.5 lw 2 title (is2m ? "the paper: 6% at d = 3" : "")
    set autoscale y
    set logscale y
    set title sprintf("m = %s: non-leaf filters per search", mused(m))
    set ylabel "non-leaf filters (mean per search)"
    set key below maxrows 3 left Left reverse
    plot for [j=1:3] sel(m, word(pls,j)) using "d":"internal_maybe" with linespoints lw 2 lc j pt j title 'said maybe (the authors'."'".' count), '.word(pls,j), \
         for [j=1:3] sel(m, word(pls,j)) using "d":"internal_filters_tested" with linespoints lw 1 dt 2 lc j pt j title 'tested (bfh'."'".'s), '.word(pls,j)
    unset logscale y
    set title sprintf("m = %s: tables scanned", mused(m))
    set ylabel 'tables scanned (mean per search)'
    set yrange [0:*]
    plot for [j=1:3] sel(m, word(pls,j)) using "d":"tables_scanned" with linespoints lw 2 lc j pt j title word(pls_t,j), \
         $paper_tables using 1:(is2m ? $2 : NaN) with points lc rgb "black" pt 6 ps 2.5 lw 2 title (is2m ? "the paper: one table at d = 3" : "")
    set autoscale y
    set logscale y
    set title sprintf("m = %s: search time", mused(m))
    set ylabel 'search time (s)'
    plot for [j=1:3] sel(m, word(pls,j)) using "d":"time_s":"time_q1_s":"time_q3_s" with yerrorlines lw 2 lc j pt j title word(pls_t,j)
    unset logscale y
  }
  unset multiplot
  set output
}
