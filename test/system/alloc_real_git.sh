#!/usr/bin/env bash
# test: slow=60
# Real program: git on a generated repository (300 files in 10 directories; 53 commits: 40 on
# main with edits, adds, deletes and renames, 8 on a topic branch that edits a file main
# renames, a merge that must follow that rename, 3 after it; an annotated tag). The repository
# is built twice, without and with LD_PRELOAD=libbobox.so (every git and awk process
# preloaded): the commit ids must be identical, which proves every object byte-identical.
# Then, on each copy in its own mode: git log -p/--stat/--graph/--follow, pickaxe -S/-G, diffs
# between commits (myers, histogram, patience, word-diff, dirstat), blame -M -C, git grep
# --threads=4 over the work tree and several revisions, archive, fast-export, shortlog,
# repack -adf --threads=1 (the pack name, a hash of its content, must match), gc --aggressive
# (the list of objects), fsck --full --strict. All outputs and exit codes must be identical.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
command -v git >/dev/null || { echo "git not installed (scripts/deps.sh installs it)"; exit 77; }
NFILES=${ALLOC_GIT_FILES:-300}
NCOMMITS=${ALLOC_GIT_COMMITS:-40}

# deterministic, isolated git: no user/system config, fixed identity and dates, no auto gc
export HOME=$TMP/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$TMP/home/.gitconfig
export GIT_AUTHOR_NAME="A U Thor" GIT_AUTHOR_EMAIL=author@example.com
export GIT_COMMITTER_NAME="C O Mitter" GIT_COMMITTER_EMAIL=committer@example.com
export LC_ALL=C TZ=UTC GIT_PAGER=cat PAGER=cat GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES \
      GIT_TRACE GIT_EDITOR GIT_SEQUENCE_EDITOR
mkdir -p "$HOME"
cat >"$GIT_CONFIG_GLOBAL" <<'EOF'
[init]
	defaultBranch = main
[gc]
	auto = 0
[maintenance]
	auto = false
[core]
	pager = cat
[color]
	ui = false
[advice]
	detachedHead = false
EOF
echo "$(git --version)"

# file contents: edit.awk rewrites each file given, changing, inserting and deleting lines as a
# deterministic function of (commit, file name, line); with -v new=1 it creates the files
cat >"$TMP/edit.awk" <<'EOF'
function h(x) { x = x % 2147483647; if (x < 0) x += 2147483647; return (x * 48271) % 2147483647 }
function hs(s,  i, x) { x = 7; for (i = 1; i <= length(s); i++) x = h(x * 31 + index(W, substr(s, i, 1))); return x }
function line(n, salt,  k, s, x) {
    x = h(n * 7919 + salt); s = sprintf("%s_%d(", words[x % nw + 1], x % 97)
    for (k = 0; k < 3 + x % 9; k++) { x = h(x + k); s = s sprintf("%s%s", k ? ", " : "", words[x % nw + 1]) }
    return s ");"
}
BEGIN {
    W = "abcdefghijklmnopqrstuvwxyz0123456789_/."
    nw = split("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi " \
               "omicron pi rho sigma tau upsilon phi chi psi omega buffer arena chunk slab " \
               "page span heap thread cache bin size class free list owner remote", words, " ")
    if (new) {
        for (f = 1; f < ARGC; f++) {
            salt = hs(ARGV[f]) + c * 104729; n = 40 + salt % 120
            printf "/* %s, created in commit %d */\n", ARGV[f], c >ARGV[f]
            for (i = 1; i <= n; i++) print "    " line(i, salt) >ARGV[f]
            close(ARGV[f])
        }
        exit
    }
}
FNR == 1 { if (out != "") close(out); out = FILENAME ".new"; salt = hs(FILENAME) + c * 104729 }
{
    x = h(FNR * 7919 + salt)
    if (x % 31 == 2 && FNR > 1) next                       # delete
    if (x % 9 == 0 && FNR > 1) print "    " line(FNR + 100000, salt) >out  # replace
    else print >out
    if (x % 23 == 1) print "    " line(FNR + 200000, salt) " /* added in " c " */" >out
}
EOF

# gen_repo DIR: builds the repository (run once plain and once with LD_PRELOAD exported)
gen_repo() {
    set -e
    mkdir -p "$1"; cd "$1"
    git init -q .
    local c=0 t=1700000000 files i k n f
    commit() { # message
        c=$((c + 1)); t=$((t + 3600 + c * 17))
        export GIT_AUTHOR_DATE="@$t +0000" GIT_COMMITTER_DATE="@$((t + 60)) +0000"
        git add -A
        git commit -q -m "$1" -m "commit $c: $(git diff --cached --shortstat)"
    }
    files=()
    for ((i = 0; i < NFILES; i++)); do files+=("src/d$((i % 10))/file$i.c"); done
    mkdir -p src/d{0..9}
    awk -v new=1 -v c=0 -f "$TMP/edit.awk" "${files[@]}"
    printf 'CFLAGS = -O2\nall:\n\t@echo $(wildcard src/*/*.c)\n' >Makefile
    commit "initial import"
    for ((n = 1; n <= NCOMMITS; n++)); do
        # main never edits src/d7 (the topic branch does) nor file7.c, which it renames below
        mapfile -t files < <(git ls-files src | grep -v -e '^src/d7/' -e '^src/moved/file7\.c$')
        local edit=()
        for ((k = 0; k < 12; k++)); do edit+=("${files[$(((n * 37 + k * 13) % ${#files[@]}))]}"); done
        mapfile -t edit < <(printf '%s\n' "${edit[@]}" | sort -u)
        awk -v c=$n -f "$TMP/edit.awk" "${edit[@]}"
        for f in "${edit[@]}"; do mv "$f.new" "$f"; done
        if ((n % 3 == 0)); then
            f=${files[$(((n * 53) % ${#files[@]}))]}
            mkdir -p src/moved; git mv "$f" "src/moved/r${n}_$(basename "$f")"
        fi
        if ((n % 5 == 0)); then
            awk -v new=1 -v c=$n -f "$TMP/edit.awk" "src/d$((n % 7))/new$n.c" "src/d$((n % 6))/new${n}b.c"
            git rm -qf "${files[$(((n * 71 + 5) % ${#files[@]}))]}"
        fi
        if ((n == 25)); then mkdir -p src/moved; git mv src/d7/file7.c src/moved/file7.c; fi
        commit "main change $n"
        if ((n == 15)); then
            git switch -q -c topic
            for ((k = 1; k <= 8; k++)); do
                mapfile -t edit < <(git ls-files src/d7 | grep -vx src/d7/file7.c | awk -v k=$k 'NR % 4 == k % 4')
                awk -v c=$((1000 + k)) -f "$TMP/edit.awk" "${edit[@]}" src/d7/file7.c
                for f in "${edit[@]}" src/d7/file7.c; do mv "$f.new" "$f"; done
                ((k == 4)) && awk -v new=1 -v c=$k -f "$TMP/edit.awk" src/d7/topic$k.c
                commit "topic change $k"
            done
            git switch -q main
        fi
    done
    export GIT_AUTHOR_DATE="@$((t + 7200)) +0000" GIT_COMMITTER_DATE="@$((t + 7300)) +0000"
    git merge -q --no-ff -m "merge topic" topic
    [ -f src/moved/file7.c ] && [ ! -e src/d7/file7.c ] || { echo "merge did not follow the rename"; exit 1; }
    for ((k = 1; k <= 3; k++)); do
        awk -v c=$((2000 + k)) -f "$TMP/edit.awk" src/moved/file7.c src/d7/file17.c
        mv src/moved/file7.c.new src/moved/file7.c; mv src/d7/file17.c.new src/d7/file17.c
        commit "after merge $k"
    done
    git tag -a -m "release" v1.0
}

# ops DIR OUT MODE: git commands on the repository, outputs and exit codes appended to OUT
ops() {
    local dir=$1 out=$2 mode=$3
    local pre=(); [ "$mode" = preload ] && pre=(env "LD_PRELOAD=$SO")
    op() {
        echo "### git $* " >>"$out"
        "${pre[@]}" timeout --kill-after=5 "$CMD_TIMEOUT" git -C "$dir" "$@" >>"$out" 2>"$TMP/op.err"
        local rc=$?
        cat "$TMP/op.err" >>"$out"
        echo "### rc=$rc" >>"$out"
        if grep -q "cannot be preloaded" "$TMP/op.err"; then fail "ld.so could not preload $SO"; fi
        if [ $rc -ge 124 ]; then
            tail -5 "$TMP/op.err"
            fail "$mode: 'git $*' $( [ $rc -gt 128 ] && echo "killed by signal $((rc - 128))" || echo "timed out or died (rc=$rc)")"
        fi
    }
    opsum() { # like op, but only the sha256 of stdout (huge outputs)
        echo "### git $* | sha256sum" >>"$out"
        "${pre[@]}" timeout --kill-after=5 "$CMD_TIMEOUT" git -C "$dir" "$@" 2>"$TMP/op.err" >"$TMP/op.big"
        local rc=$?
        { echo "$(wc -c <"$TMP/op.big") bytes $(sha256sum <"$TMP/op.big" | cut -c1-32)"; cat "$TMP/op.err"; echo "### rc=$rc"; } >>"$out"
        if [ $rc -ge 124 ]; then
            tail -5 "$TMP/op.err"
            fail "$mode: 'git $*' $( [ $rc -gt 128 ] && echo "killed by signal $((rc - 128))" || echo "timed out or died (rc=$rc)")"
        fi
    }
    local first; first=$(git -C "$dir" rev-list --max-parents=0 HEAD)
    op rev-list --count --all
    op log --graph --oneline --decorate --all
    opsum log -p -M --stat --format=fuller --all
    opsum log -p -M -C --find-copies-harder --first-parent --numstat main
    op log --follow --format='%h %s' -- src/moved/file7.c
    op log -S'omega_4' --format='%h %s' --all
    op log -G'thread.*remote' --format='%h %s' --all
    op diff --stat -M "$first" HEAD
    opsum diff -M "$first" HEAD
    opsum diff --histogram HEAD~20 HEAD
    opsum diff --patience --word-diff HEAD~10 HEAD
    op diff --dirstat=files,1 main~30 topic
    op blame -M -C -w src/moved/file7.c
    opsum blame -M -C --line-porcelain src/d7/file17.c
    op grep -n --threads=4 -e 'omega_1[0-9](' -e 'remote_3'
    op grep -c --threads=4 -E '(slab|arena)_[0-9]+\(.*owner' HEAD main~10 main~20 main~30 topic
    op grep -l --threads=4 -i -w 'chunk' v1.0 -- 'src/d3/*'
    opsum archive --format=tar HEAD
    opsum fast-export --all --signed-tags=verbatim
    op shortlog -sn --all
    op repack -adf --threads=1 --window=50 --depth=50 -q
    op -c core.abbrev=40 count-objects -v
    echo "### packs" >>"$out"; (cd "$dir/.git/objects/pack" && ls) >>"$out"
    op gc --aggressive --prune=now -q
    op cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype) %(objectsize)'
    op fsck --full --strict --no-dangling
}

note "generating the repository ($NFILES files, $NCOMMITS commits + topic branch) without the preload"
(gen_repo "$TMP/plain") >"$TMP/gen-plain.log" 2>&1   # not in a condition: set -e must apply
rc=$?
[ $rc -eq 0 ] || { tail -20 "$TMP/gen-plain.log"; fail "generating the repository failed (rc=$rc)"; }
note "generating it again with LD_PRELOAD (git, bash, awk)"
(export LD_PRELOAD=$SO; gen_repo "$TMP/bobox") >"$TMP/gen-bobox.log" 2>&1
rc=$?
if grep -q "cannot be preloaded" "$TMP/gen-bobox.log"; then fail "ld.so could not preload $SO"; fi
[ $rc -eq 0 ] || { tail -20 "$TMP/gen-bobox.log"; fail "generating the repository with the preload failed (rc=$rc)"; }
same_output "$TMP/gen-plain.log" "$TMP/gen-bobox.log" "repository generation output"
git -C "$TMP/plain" log --format='%H %P %s' --all >"$TMP/ids-plain"
git -C "$TMP/bobox" log --format='%H %P %s' --all >"$TMP/ids-bobox"
same_output "$TMP/ids-plain" "$TMP/ids-bobox" "commit ids of the generated repository"
echo "repository: $(wc -l <"$TMP/ids-plain") commits, $(git -C "$TMP/plain" ls-files | wc -l) files, HEAD $(git -C "$TMP/plain" rev-parse --short HEAD)"
check_loaded_into git -C "$TMP/plain" log --oneline -1

note "git operations without the preload"
ops "$TMP/plain" "$TMP/ops-plain.out" plain
note "git operations with the preload"
ops "$TMP/bobox" "$TMP/ops-bobox.out" preload
sed "s#$TMP/plain#REPO#g" "$TMP/ops-plain.out" >"$TMP/ops-plain.norm"
sed "s#$TMP/bobox#REPO#g" "$TMP/ops-bobox.out" >"$TMP/ops-bobox.norm"
same_output "$TMP/ops-plain.norm" "$TMP/ops-bobox.norm" "git operations output"
grep -c '^### rc=0$' "$TMP/ops-plain.out" | sed 's/$/ git commands with rc=0/'
if grep '^### rc=[1-9]' "$TMP/ops-plain.out"; then
    grep -B3 '^### rc=[1-9]' "$TMP/ops-plain.out" | head -20
    fail "a git command failed without the preload too (test setup problem)"
fi
echo "PASS"
