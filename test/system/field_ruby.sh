#!/usr/bin/env bash
# Guards against: ruby (own heap pages, GC, threads) failing under the preload or bobox-run.
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_cmd ruby
code='
h = {}
200_000.times { |i| h["k#{i % 30_000}"] = (h["k#{i % 30_000}"] || "") + i.to_s[-1] }
threads = 4.times.map { |t| Thread.new { (1..50_000).map { |i| (i * t).to_s * 3 }.join.size } }
puts h.size, h.values.map(&:size).sum, threads.map(&:value).inspect
puts (1..2000).map { |i| [i] * (i % 50) }.flatten.sort.uniq.size
GC.start
puts GC.count > 0
'
compare_preload ruby ruby -e "$code"
compare_run ruby ruby -e "$code"
echo PASS
