# Fig. 7: memory of the non-leaf filters vs the order d.
# Usage: gnuplot -e "in='results/fig7.csv'; out='results/fig7'" plots/fig7.gp
if (!exists("in")) in = 'results/fig7.csv'
if (!exists("out")) out = 'results/fig7'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name".
# first(name): the cell of column "name" in the first data row (for titles).
first(name) = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $(h[\"".name."\"])}' ".in)
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
sel(pl) = rows(sprintf('c("placement")=="%s"', pl))
set logscale y
set grid
set key top right
set xlabel 'hierarchy order d'
set ylabel 'non-leaf filter memory (MB = 10^6 bytes)'
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 900,600 font ",10" } else { set terminal png size 900,600 }
    set output out.'.png'
  } else {
    set terminal svg size 900,600 dynamic font ",10"
    set output out.'.svg'
  }
  set title sprintf("Fig. 7: non-leaf filter memory vs order d\nscale %s, %s synthetic leaves of %s values (N = %s), m = %s, k = %s", first("scale"), first("leaves"), first("entries_per_leaf"), first("n_equiv"), first("m"), first("k"))
  plot sel("paper") using "d":"nonleaf_mb" with linespoints lw 2 lc 4 pt 5 title "the paper's tree, built (exactly d children)", \
       sel("positional") using "d":"nonleaf_mb" with linespoints lw 2 lc 1 pt 7 title 'ours, positional (d..2d children)', \
       sel("similarity") using "d":"nonleaf_mb" with linespoints lw 2 lc 2 pt 7 title 'ours, similarity (d..2d children)', \
       sel("positional") using "d":"paper_model_mb" with linespoints lw 2 dt 2 lc 3 pt 6 title "the paper's tree, computed: nodes x m/8"
  set output
}
