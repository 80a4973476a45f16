# Two Ruby threads building and dropping strings, arrays and hashes (scripts/bench/profile-real.sh).
# Usage: ruby ruby_threads.rb [ITERATIONS per thread, default 300000]
def work(seed, n)
  r = Random.new(seed)
  keep = []
  n.times do |i|
    s = "item-#{i}-" * (1 + r.rand(8))
    h = { name: s, list: Array.new(1 + r.rand(16)) { |k| k.to_s * (1 + r.rand(4)) }, n: i }
    keep << h
    keep.shift if keep.size > 20_000
    keep[r.rand(keep.size)][:list] << s.upcase if i % 3 == 0
  end
  keep.size
end
ts = 2.times.map { |t| Thread.new { work(t + 1, (ARGV[0] || 300_000).to_i) } }
p ts.map(&:value)
