# Beyond the paper: the cost of declared attributes. Left: ingest time per put, the whole value
# alone against three JSON attributes (goal: at most 1.5x) and against those three with the
# composite tag_age (pair); middle: index_bytes per entry per attribute (goal: at most 2). One
# bar per configuration, labelled with its figure. Right: the query rows, median time of each
# predicate over attrs3 by AUTO, STANDALONE and SCAN, and by AUTO without the stand-alone
# index, over attrs3 (per-attribute filters) and over pair (with the composite) (when there
# are query rows).
# Usage: gnuplot -e "in='results/attributes.csv'; out='results/attributes'" plots/attributes.gp
if (!exists("in")) in = 'results/attributes.csv'
if (!exists("out")) out = 'results/attributes'
set datafile separator ','
set datafile columnheaders
# rows(cond): the CSV rows (and the header) for which the awk condition holds; c("name") is
# the cell of column "name". cell(cond, name): column "name" of the first row where cond holds.
rows(cond) = "< awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;print;next} ".cond."' ".in
cell(cond, name) = system("awk -F, 'function c(n){return $(h[n])} NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} (".cond."){print c(\"".name."\");exit}' ".in)
ingest = rows('c("kind")=="ingest"')
byq(m) = rows('c("kind")=="query" && c("config")=="attrs3" && c("method")=="'.m.'"')
pairq = rows('c("kind")=="query" && c("config")=="pair"')
filtq = rows('c("kind")=="query" && c("config")=="attrs3-filters"')
# The x of a query, the same in both configurations' rows.
qx(s) = s eq "tag" ? 0 : s eq "age" ? 1 : s eq "and" ? 2 : s eq "or" ? 3 : s eq "in" ? 4 : s eq "absent" ? 5 : s eq "and_in" ? 6 : 7
nq = int(system("awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} $(h[\"kind\"])==\"query\"{n++} END{print n+0}' ".in))
params = sprintf("%s engine, scale %s, N = %s, random insert order, lean index; ingest: median of %s build(s)", \
  cell('1', "engine"), cell('1', "scale"), cell('1', "n"), cell('1', "reps"))
set style fill solid 0.6
set boxwidth 0.6
set grid y
set yrange [0:*]
unset key
do for [t=1:2] {
  if (t == 1) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1800,520 font ",10" } else { set terminal png size 1800,520 }
    set output out.'.png'
  } else {
    set terminal svg size 1800,520 dynamic font ",10"
    set output out.'.svg'
  }
  set multiplot layout 1,3 title "Beyond the paper: declared attributes, whole value vs three JSON attributes (and a composite of two)\n".params
  set xrange [-0.6:2.6]
  set yrange [0:*]
  set title 'ingest (puts + final flush)'
  set ylabel 'microseconds per put'
  plot ingest using 0:"ingest_us_per_put":xtic(strcol("config")) with boxes lc 1, \
       ingest using 0:"ingest_us_per_put":(sprintf("%.2fx", column("ingest_ratio"))) with labels offset 0,1 notitle
  set title 'index memory (goal: at most 2 bytes per entry per attribute)'
  set ylabel 'index\_bytes per entry per attribute'
  plot ingest using 0:"index_bytes_per_entry_attribute":xtic(strcol("config")) with boxes lc 2, \
       ingest using 0:"index_bytes_per_entry_attribute":(sprintf("%.2f", column("index_bytes_per_entry_attribute"))) with labels offset 0,1 notitle, \
       2 with lines lw 2 dt 2 lc rgb "red"
  set title 'queries over attrs3, and over pair by auto (median, warm)'
  set ylabel 'milliseconds'
  set xrange [-0.6:7.6]
  if (nq > 0) {
    set logscale y
    set yrange [*:*]
    set key top left
    plot byq("auto") using (qx(strcol("query"))):(column("time_s")*1000):xtic(strcol("query")) with linespoints lw 2 title "auto", \
         byq("standalone") using (qx(strcol("query"))):(column("time_s")*1000) with linespoints lw 2 title "standalone", \
         byq("scan") using (qx(strcol("query"))):(column("time_s")*1000) with linespoints lw 2 title "scan (the floor)", \
         filtq using (qx(strcol("query"))):(column("time_s")*1000) with points pt 5 ps 1.5 title "auto, no stand-alone index (per-attribute filters)", \
         pairq using (qx(strcol("query"))):(column("time_s")*1000) with points pt 7 ps 1.5 title "auto, no stand-alone index, composite tag\\_age declared"
    unset logscale y
    unset key
  } else {
    set label 1 "no query rows" at graph 0.5, 0.5 center
    plot NaN notitle
    unset label 1
  }
  unset multiplot
  set output
}
