# Beyond the paper: a table's range filters. False-positive rate of empty ranges against bits
# per value, one panel per range size L, for the per-table range filter (grafite) and dyadic
# prefixes in a Bloom filter (dyadic), uniform and correlated queries (a range starting right
# after a present value), beside Grafite's bound L / 2^(bits - 2). Codes drawn uniform; the
# clustered codes are in ranges.csv.
# Usage: gnuplot -e "in='results/ranges.csv'; out='results/ranges'" plots/ranges.gp
if (!exists("in")) in = 'results/ranges.csv'
if (!exists("out")) out = 'results/ranges'
set datafile separator ','
set datafile columnheaders
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
sel(s, q, L) = rows(sprintf('c("codes")=="uniform" && c("structure")=="%s" && c("queries_kind")=="%s" && c("range_codes")=="%s"', s, q, L))
sizes = "1 16 1024 65536"
params = sprintf("%s values per table (codes uniform over 2^48), %s empty ranges per point, scale %s", \
  cell('1', "n"), cell('1', "queries"), cell('1', "scale"))
set logscale y
set grid
set xlabel 'bits per value'
set ylabel 'false-positive rate of an empty range'
set yrange [1e-6:1.5]
set format y "10^{%L}"
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1600,500 font ",10" } else { set terminal png size 1600,500 }
    set output out.'.png'
  } else {
    set terminal svg size 1600,500 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,4 title "Beyond the paper: range filters for one table against Grafite's bound\n".params
  do for [li=1:words(sizes)] {
    L = word(sizes, li)
    set title sprintf("ranges of %s codes", L)
    if (li == 1) { set key top right box opaque } else { unset key }
    plot sel("grafite", "uniform", L) using "bits_per_value":"fpr" with linespoints pt 7 lc 1 title 'range filter, uniform queries', \
         sel("grafite", "correlated", L) using "bits_per_value":"fpr" with linespoints pt 6 lc 1 dt 2 title 'range filter, correlated queries', \
         sel("dyadic", "uniform", L) using "bits_per_value":"fpr" with linespoints pt 5 lc 2 title 'dyadic prefixes in a Bloom filter, uniform', \
         sel("dyadic", "correlated", L) using "bits_per_value":"fpr" with linespoints pt 4 lc 2 dt 2 title 'dyadic prefixes, correlated', \
         sel("grafite", "uniform", L) using "bits_per_value":"bound" with lines lc 8 dt 3 lw 2 title "Grafite's bound"
  }
  unset multiplot
  set output
}
