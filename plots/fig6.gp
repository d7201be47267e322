# Fig. 6: creation time with vs without value filters, per N.
# Usage: gnuplot -e "in='results/fig6.csv'; out='results/fig6'" plots/fig6.gp
if (!exists("in")) in = 'results/fig6.csv'
if (!exists("out")) out = 'results/fig6'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name".
# first(name): the cell of column "name" in the first data row (for titles).
first(name) = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $(h[\"".name."\"])}' ".in)
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
sel(vf) = rows(sprintf('c("value_filters")=="%d"', vf))
set logscale x
set format x "10^{%L}"
set grid
set key top left
set xlabel 'entries N'
set ylabel 'creation time (s): puts + final flush; median, bars: interquartile range (IQR)'
set title sprintf("Fig. 6: database creation time with and without value filters\nscale %s, engine %s, m = %s, k = %s, %s repetitions per point (median, bars: interquartile range (IQR) of the repetitions)", first("scale"), first("engine"), first("m"), first("k"), first("reps"))
set offsets graph 0.05, graph 0.05, 0, 0
# q(name): a quartile column, NaN in a CSV written before the driver kept them (no bars).
has_q = int(system("head -1 ".in." | tr , '\n' | grep -cx insert_q1_s")) > 0
q(name) = has_q ? column(name) : NaN
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 900,600 font ",10" } else { set terminal png size 900,600 }
    set output out.'.png'
  } else {
    set terminal svg size 900,600 dynamic font ",10"
    set output out.'.svg'
  }
  plot sel(0) using "n":"insert_s":(q("insert_q1_s")):(q("insert_q3_s")) with yerrorlines lw 2 lc 1 title 'without value filters', \
       sel(1) using "n":"insert_s":(q("insert_q1_s")):(q("insert_q3_s")) with yerrorlines lw 2 lc 2 title 'with value filters'
  set output
}
