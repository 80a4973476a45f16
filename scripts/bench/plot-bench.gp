# Called by scripts/bench/bench-report.py:
#   gnuplot -e "datafile='..'; outfile='..'; ncols=N; colors='#rrggbb ..'" plot-bench.gp
# The data file holds two blocks (time, peak RSS), each a row per workload and a column per
# allocator, already divided by mimalloc's median (for fixed-time workloads, of time per operation).
set terminal pngcairo size 2000,1100 font ",10"  # up to 8 bars per workload
set output outfile
set multiplot layout 2,1 title "bobox-malloc benchmarks: relative to mimalloc (lower is better)"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 2
set grid ytics
set key outside right top
set xtics rotate by -30 nomirror
set datafile missing "NaN"
set ylabel "wall time / mimalloc"
plot for [c=2:ncols+1] datafile index 0 using c:xtic(1) title columnheader(c) lc rgb word(colors, c-1), 1 with lines dt 2 lc "black" notitle
set ylabel "peak RSS / mimalloc"
plot for [c=2:ncols+1] datafile index 1 using c:xtic(1) title columnheader(c) lc rgb word(colors, c-1), 1 with lines dt 2 lc "black" notitle
unset multiplot
