#!/usr/bin/env bash
# test: slow=50
# Real program: perl on a generated workload (word counts, 200k bigrams in hashes of hashes, regex
# substitutions/captures/tr, multi-key sorts of nested records, growing strings, sprintf,
# pack/unpack, a tree of blessed objects and closures freed by refcount, and, when perl has
# ithreads, 4 threads that clone the interpreter and a Thread::Queue pipeline). stdout and
# stderr with LD_PRELOAD=libbobox.so must be byte-identical to a run without it; the output
# is built from md5 digests of sorted data, so it depends neither on hash seed nor addresses.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
PERL=/usr/bin/perl
[ -x "$PERL" ] || PERL=$(command -v perl) || { echo "perl not installed (scripts/deps.sh installs it)"; exit 77; }
"$PERL" -MDigest::MD5 -e 1 2>/dev/null || fail "$PERL cannot load Digest::MD5 (core module)"
WORDS=${ALLOC_PERL_WORDS:-300000}
THREADS=${ALLOC_PERL_THREADS:-4}
export LC_ALL=C
unset PERL5LIB PERL5OPT PERL_HASH_SEED PERL_PERTURB_KEYS
cd "$TMP" || fail "cd $TMP"
echo "perl $("$PERL" -e 'print $^V'), $("$PERL" -V:useithreads)"
"$PERL" -MConfig -e 'exit($Config{useithreads} ? 0 : 1)' ||
    echo "note: this perl has no ithreads, the thread part of the workload is not run"
cat >work.pl <<'PERL'
# bobox alloc_real_perl workload: hashes, strings, regexes, sorts, nested structures, objects,
# ithreads. Output depends only on the input size: never print addresses or unsorted keys.
use strict;
use warnings;
use Config;
use Digest::MD5 qw(md5_hex);

my $N = shift // 300000;      # words of generated text
my $T = shift // 4;           # threads
my $seed = 12345;
sub rnd { $seed = ($seed * 1103515245 + 12345) % 2147483648; return $seed >> 8; }
sub digest_hash { my $h = shift; md5_hex(join "\n", map { "$_=$h->{$_}" } sort keys %$h) }

# vocabulary and text
my @syl = qw(ka lo mi ne ru sa ti vo ze bu da fe gi ho ju pla stre xo);
my @vocab = map { my $w = ''; $w .= $syl[rnd() % @syl] for 0 .. rnd() % 4; $w } 1 .. 6000;
my @lines;
my $words = 0;
while ($words < $N) {
    my $n = 4 + rnd() % 12;
    push @lines, join ' ', map {
        my $w = $vocab[int((rnd() % 6000) * (rnd() % 6000) / 6000)];      # skewed: many repeats
        rnd() % 20 ? $w : $w . (rnd() % 20000)                             # and many rare words
    } 1 .. $n;
    $words += $n;
}
my $text = join "\n", @lines;
printf "text: %d lines, %d bytes, md5 %s\n", scalar @lines, length $text, md5_hex($text);

# 1. word counts, sorted by count then word
my %count;
$count{$_}++ for split /\s+/, $text;
my @top = (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count)[0 .. 9];
printf "distinct words: %d, counts md5 %s\n", scalar keys %count, digest_hash(\%count);
printf "  %-14s %6d\n", $_, $count{$_} for @top;

# 2. hash of hashes: bigrams, then the most frequent successor of each word
my %bi;
for my $line (@lines) {
    my @w = split ' ', $line;
    $bi{$w[$_]}{$w[$_ + 1]}++ for 0 .. $#w - 1;
}
my %succ;
for my $w (keys %bi) {
    my $h = $bi{$w};
    ($succ{$w}) = sort { $h->{$b} <=> $h->{$a} || $a cmp $b } keys %$h;
}
my $nbi = 0; $nbi += keys %{$bi{$_}} for keys %bi;
printf "bigrams: %d, successors md5 %s\n", $nbi, digest_hash(\%succ);
undef %bi; undef %succ;

# 3. regexes: substitutions with captures, case changes, tr, global matches, split/join
(my $t2 = $text) =~ s/\b(\w)(\w*?)(o+)\b/\U$1\E$2<$3>/g;
my $matches = () = $text =~ /\b(?:ka|lo|mi)\w*(?:ru|sa)\b/g;
(my $t3 = $text) =~ tr/a-m/n-z/;
my %shape;
$shape{join '', map { /[aeiou]/ ? 'v' : 'c' } split //, $_}++ for keys %count;
my @csv = map { join ',', map { qq("$_") } split ' ' } @lines[0 .. 1999];
my $csv = join "\n", @csv;
my @fields = $csv =~ /"([^"]*)"/g;
printf "regex: %d matches, subst md5 %s, tr md5 %s, shapes %d md5 %s, csv fields %d\n",
    $matches, md5_hex($t2), md5_hex($t3), scalar keys %shape, digest_hash(\%shape), scalar @fields;
undef $t2; undef $t3; undef @csv; undef $csv; undef @fields;

# 4. nested records: array of hashes of arrays, multi-key sort, delete and rebuild
my @rec;
for my $i (0 .. 59999) {
    push @rec, { id => $i, name => $vocab[rnd() % @vocab], score => rnd() % 1000,
                 tags => [ map { $syl[rnd() % @syl] } 0 .. rnd() % 6 ],
                 meta => { n => $i % 97, s => sprintf("%05d-%s", $i, $syl[$i % @syl]) } };
}
my @sorted = sort { $a->{score} <=> $b->{score} || $a->{name} cmp $b->{name} || $a->{id} <=> $b->{id} } @rec;
my %by_tag;
for my $r (@rec) { push @{ $by_tag{$_} }, $r->{id} for @{ $r->{tags} } }
@rec = grep { $_->{id} % 3 } @rec;
push @{ $_->{tags} }, 'extra' x (1 + $_->{id} % 5) for @rec;
printf "records: %d left, sorted md5 %s, tags md5 %s, rebuilt md5 %s\n", scalar @rec,
    md5_hex(join ',', map { $_->{id} } @sorted),
    md5_hex(join ';', map { "$_:" . scalar @{ $by_tag{$_} } . ":" . join(',', @{ $by_tag{$_} }[0 .. 4]) } sort keys %by_tag),
    md5_hex(join ';', map { "$_->{meta}{s}/" . join('+', @{ $_->{tags} }) } @rec);
undef @sorted; undef %by_tag; undef @rec;

# 5. strings: growing buffers, sprintf, substr, reverse, x, pack/unpack, numeric sort
my $buf = '';
$buf .= sprintf("%08x|%-10s|%7.3f\n", rnd(), $vocab[$_ % @vocab], $_ / 7) for 1 .. 80000;
substr($buf, $_ * 1000, 10) = uc substr($buf, $_ * 1000, 10) for 0 .. 999;
my $rev = reverse $buf;
my @nums = map { rnd() % 1000000 } 1 .. 200000;
my @ns = sort { $a <=> $b } @nums;
my $packed = pack 'N*', @ns;
my @back = unpack 'N*', $packed;
my $big = join('', map { chr(65 + $_ % 26) x ($_ % 50) } 1 .. 20000);
printf "strings: buf %d md5 %s, rev md5 %s, numsort md5 %s (%d), big %d md5 %s\n",
    length $buf, md5_hex($buf), md5_hex($rev), md5_hex($packed), scalar @back, length $big, md5_hex($big);
undef $buf; undef $rev; undef @nums; undef @ns; undef $packed; undef @back; undef $big;

# 6. objects and closures: a binary search tree of blessed hashes, freed by refcount
package Node { sub new { my ($c, $k) = @_; bless { k => $k, l => undef, r => undef }, $c } }
my $root;
for my $k (map { rnd() % 100000 } 1 .. 60000) {
    my $ref = \$root;
    while ($$ref) { last if $$ref->{k} == $k; $ref = $k < $$ref->{k} ? \$$ref->{l} : \$$ref->{r} }
    $$ref //= Node->new($k);
}
my @inorder;
my $walk; $walk = sub { my $n = shift or return; $walk->($n->{l}); push @inorder, $n->{k}; $walk->($n->{r}) };
$walk->($root);
my @adders = map { my $x = $_; sub { $x += shift } } 1 .. 10000;
my $acc = 0; $acc += $_->(3) for @adders;
printf "tree: %d keys, md5 %s, closures %d\n", scalar @inorder, md5_hex(join ',', @inorder), $acc;
undef $root; undef $walk; @inorder = ();

# 7. ithreads: each thread clones the interpreter, counts words of its share of the lines and
# returns a hash; a Thread::Queue pipeline passes strings between threads.
if ($Config{useithreads}) {
    require threads; require Thread::Queue;
    my @thr = map {
        my $k = $_;
        threads->create(sub {
            my %c; my @mine = @lines[grep { $_ % $T == $k } 0 .. $#lines];
            for my $l (@mine) { $c{$_}++ for split ' ', $l; $c{lc reverse $l}++ }
            my %long = map { $_ => $c{$_} } grep { length > 6 } keys %c;
            return \%long;
        })
    } 0 .. $T - 1;
    my %merged;
    for my $t (@thr) { my $h = $t->join; $merged{$_} += $h->{$_} for keys %$h }
    my $q = Thread::Queue->new; my $r = Thread::Queue->new;
    my @workers = map { threads->create(sub {
        my %seen;
        while (defined(my $s = $q->dequeue)) { $seen{$_}++ for split ' ', $s; $r->enqueue(join '|', sort split ' ', $s) }
        return scalar keys %seen;
    }) } 1 .. $T;
    $q->enqueue($_) for @lines[0 .. 19999];
    $q->end;
    my $distinct = 0; $distinct += $_->join for @workers;
    $r->end;
    my @res; while (defined(my $s = $r->dequeue)) { push @res, $s }
    printf "threads: %d, merged %d md5 %s, queue %d results md5 %s\n", $T, scalar keys %merged,
        digest_hash(\%merged), scalar @res, md5_hex(join "\n", sort @res);
} else {
    print "threads: perl without ithreads\n";
}
print "done\n";
PERL
check_loaded_into "$PERL" -e 'my %h = map { $_ => [$_] } 1 .. 1000'

note "perl workload ($WORDS words, $THREADS threads) without the preload"
run_plain plain.out plain.err "$PERL" work.pl "$WORDS" "$THREADS"
grep -q '^done$' plain.out || { cat plain.out plain.err; fail "the perl workload did not finish without the preload"; }
note "perl workload with the preload"
run_preload bobox.out bobox.err "$PERL" work.pl "$WORDS" "$THREADS"
same_output plain.out bobox.out "perl output"
same_output plain.err bobox.err "perl stderr"
note "perl workload with the preload, different hash seed"
PERL_HASH_SEED=7 run_preload bobox7.out bobox7.err "$PERL" work.pl "$WORDS" "$THREADS"
same_output plain.out bobox7.out "perl output (PERL_HASH_SEED=7)"
cat plain.out
echo "PASS"
