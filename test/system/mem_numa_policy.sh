#!/usr/bin/env bash
# BOBOX_MEM and bobox-run --mem: the NUMA policy the kernel holds for a large object
# (get_mempolicy MPOL_F_ADDR) is the one asked for, also for a large object taken again from the
# cache and one grown by realloc (mremap keeps the mapping's policy), while small and medium
# objects keep the default; bad values are reported once and the default is used; bobox-run
# refuses them with exit 2. Where pages actually land is checked on several nodes by
# vm_numa (test/vm/vm_numa.c). Also bobox-run --profile: the profile appears and google-pprof
# reads it and names the function that leaked. About 2 seconds.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog mem_policy
RUN=$BUILD/bobox-run
[ -x "$RUN" ] || fail "$RUN is missing (run make)"
P=$PROGS/mem_policy
unset BOBOX_MEM BOBOX_PROF

# the nodes this process may use, as the kernel lists them (Mems_allowed_list)
allowed=$(sed -n 's/^Mems_allowed_list:[[:space:]]*//p' /proc/self/status)
first=${allowed%%[,-]*}
nodes_of() { # "0-2,5" -> "0,1,2,5", the form mem_policy prints
    tr ',' '\n' <<<"$1" | awk -F- '{ e = NF > 1 ? $2 : $1; for (i = $1; i <= e; i++) printf "%s%d", n++ ? "," : "", i }'
}
all=$(nodes_of "$allowed")

expect() { # what out mode nodes
    local line; line=$(grep -E "^$1 " <<<"$2") || fail "no line for $1 in: $2"
    [ "$line" = "$1 mode=$3 nodes=$4" ] || fail "$1: got '$line', want mode=$3 nodes=$4 (BOBOX_MEM=${mem:-unset})"
}
large_policy() { # mode nodes out
    local w
    for w in large large-reused large-grown; do expect "$w" "$3" "$1" "$2"; done
}
not_policy() { # mode out: small and medium objects do not have it
    local w line
    for w in small medium; do
        line=$(grep "^$w " <<<"$2")
        [[ $line != *"mode=$1 "* ]] || fail "$w object got the large objects' policy: $line"
    done
}

note "default"
mem=; out=$(LD_PRELOAD=$SO "$P") || fail "mem_policy failed"
grep -q '^large-reused ' <<<"$out" || fail "the freed large object was not taken again from the cache: $out"
line=$(grep '^large ' <<<"$out")
[[ $line == "large mode=0 nodes=-" || $line == "large mode=1 nodes="[0-9]* ]] || fail "default large policy: $line"

for case in "interleave 3 $all" "interleave:$first 3 $first" "interleave:all 3 $all" "bind 2 $first" \
            "bind:$first 2 $first" "preferred:$first 1 $first" "preferred 1 $first"; do
    read -r mem mode nodes <<<"$case"
    # bind and preferred without a list: the node of the allocating thread, whichever it is
    out=$(BOBOX_MEM=$mem LD_PRELOAD=$SO "$P" 2>"$TMP/err") ||
        fail "mem_policy failed under BOBOX_MEM=$mem: $(cat "$TMP/err")"
    [ ! -s "$TMP/err" ] || fail "BOBOX_MEM=$mem: unexpected message: $(cat "$TMP/err")"
    if [ "$mem" = bind ] || [ "$mem" = preferred ]; then
        node=$(sed -nE 's/^large mode=[0-9]+ nodes=([0-9]+)$/\1/p' <<<"$out")
        [ -n "$node" ] || fail "BOBOX_MEM=$mem: not bound to one node: $out"
        nodes=$node
    fi
    large_policy "$mode" "$nodes" "$out"
    not_policy "$mode" "$out"
    echo "BOBOX_MEM=$mem: large objects mode $mode nodes $nodes"
done

note "bad values: reported once, the default used"
bad_node=$(( $(tr ',-' '\n\n' <<<"$allowed" | sort -n | tail -1) + 1 ))
for mem in sideways interleave: "bind:$bad_node" "preferred:0,$bad_node" bind:1-0 local:0 "interleave:0,x"; do
    out=$(BOBOX_MEM=$mem BOBOX_VERBOSE=1 LD_PRELOAD=$SO "$P" 2>"$TMP/err") || fail "mem_policy failed under BOBOX_MEM=$mem"
    [ "$(grep -c "ignoring BOBOX_MEM=$mem" "$TMP/err")" = 1 ] || fail "BOBOX_MEM=$mem not reported once: $(cat "$TMP/err")"
    grep -q "BOBOX_MEM=local$" "$TMP/err" || fail "BOBOX_MEM=$mem: the default is not in force: $(cat "$TMP/err")"
    line=$(grep '^large ' <<<"$out")
    [[ $line == "large mode=0 nodes=-" || $line == "large mode=1 nodes="[0-9]* ]] || fail "BOBOX_MEM=$mem changed the policy: $line"
done
grep -q "node $bad_node is not one this process may use" < <(BOBOX_MEM=bind:$bad_node LD_PRELOAD=$SO "$P" 2>&1 >/dev/null) ||
    fail "a node outside the allowed set is not named"

note "bobox-run --mem"
out=$("$RUN" --mem=interleave -- "$P") || fail "bobox-run --mem=interleave failed"
mem=interleave large_policy 3 "$all" "$out"
for mem in sideways "bind:$bad_node" "preferred:0,$bad_node" ""; do
    "$RUN" --mem="$mem" -- "$P" >/dev/null 2>"$TMP/err"; rc=$?
    [ $rc = 2 ] && grep -q -- "--mem" "$TMP/err" || fail "bobox-run --mem=$mem: exit $rc, $(cat "$TMP/err")"
done
"$RUN" --no-alloc --mem=bind -- true 2>/dev/null; [ $? = 2 ] || fail "--mem with --no-alloc should exit 2"
"$RUN" --help | grep -q -- "--mem=POLICY" || fail "--help does not describe --mem"

note "bobox-run --profile"
command -v google-pprof >/dev/null || fail "google-pprof missing (scripts/deps.sh installs google-perftools)"
need_prog prof_sites
out=$("$RUN" --profile="$TMP/prof" -- "$PROGS/prof_sites") || fail "bobox-run --profile failed"
[ "$out" = 6 ] || fail "prof_sites printed '$out' under --profile, expected 6"
heap=$(ls "$TMP"/prof.*.heap 2>/dev/null)
[ "$(wc -w <<<"$heap")" = 1 ] || fail "expected one profile $TMP/prof.PID.heap, got: '$heap'"
google-pprof --text "$PROGS/prof_sites" "$heap" >"$TMP/text" 2>"$TMP/text.err" ||
    fail "google-pprof cannot read $heap: $(cat "$TMP/text.err")"
cat "$TMP/text"
grep -qw leak_some "$TMP/text" || fail "the profile does not show prof_sites' leak (leak_some): $(head -5 "$TMP/text")"
"$RUN" --profile= -- true 2>/dev/null; [ $? = 2 ] || fail "--profile= without a prefix should exit 2"
"$RUN" --help | grep -q -- "--profile=PREFIX" || fail "--help does not describe --profile"
echo "ok"
