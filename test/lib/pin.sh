# pin.sh - sourced by test/system/pin_*.sh. On top of common.sh:
#   FIX                   the topology fixtures (test/fixtures/topo)
#   ALLOWED, NCPU         the CPUs this process may use, as a list, and how many
#   plan_cpus, plan_masks what `bobox-run --plan` says
#   check_pinned, check_unpinned, root_pid, value, in_list: reading pin_threads' lines
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" || exit 1
FIX=$BOBOX_ROOT/test/fixtures/topo
unset BOBOX_PIN BOBOX_PIN_SKIP BOBOX_PIN_VERBOSE BOBOX_PIN_DRYRUN BOBOX_FSROOT BOBOX_PIN_ALLOWED \
      BOBOX_PIN_OMP_PLACES OMP_PROC_BIND OMP_PLACES GOMP_CPU_AFFINITY KMP_AFFINITY LD_PRELOAD
need "$PIN" "$RUN"

# The CPUs this process may use, as a list, and how many.
ALLOWED=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
NCPU=$(nproc)

# plan_cpus N [bobox-run options]: the cpu column of `bobox-run --plan N`, space-separated
plan_cpus() { local n=$1; shift; "$RUN" "$@" --plan "$n" | awk 'NR > 2 { print $2 }' | tr '\n' ' ' | sed 's/ $//'; }

# plan_masks N [bobox-run options]: what each thread of `bobox-run --plan N` is bound to: its
# "bound to" column where the plan has one (places, oversubscription), else its CPU
plan_masks() {
    local n=$1; shift
    "$RUN" "$@" --plan "$n" | awk 'NR == 2 { wide = /bound to/ } NR > 2 { print (wide && NF > 2 ? $NF : $2) }' |
        tr '\n' ' ' | sed 's/ $//'
}

# value KEY LINE: the value of KEY=... in a line of key=value pairs
value() { sed -nE "s/^(.* )?$1=([^ ]*).*/\2/p" <<<"$2"; }

# in_list CPU LIST: CPU is in the list (0-3,8)
in_list() {
    local r a b
    for r in ${2//,/ }; do
        a=${r%-*} b=${r#*-}
        [ "$1" -ge "$a" ] && [ "$1" -le "$b" ] && return 0
    done
    return 1
}

# check_pinned OUTPUT "CPU0 CPU1 ...": thread k's affinity (and the CPU it started on, where
# the program reports one) is exactly CPU k of the list.
check_pinned() {
    local out=$1 line k allowed start; local -a want=($2)
    local seen=0
    while IFS= read -r line; do
        [[ $line == *thread=* ]] || continue
        k=$(value thread "$line"); allowed=$(value allowed "$line"); start=$(value start_cpu "$line")
        [ "$k" -lt ${#want[@]} ] || fail "thread $k beyond the expected list: $line"
        [ "$allowed" = "${want[$k]}" ] || fail "thread $k: affinity $allowed, expected ${want[$k]}: $line"
        if [ -n "$start" ] && ! in_list "$start" "${want[$k]}"; then
            fail "thread $k started on CPU $start before its start routine, expected ${want[$k]}"
        fi
        seen=$((seen + 1))
    done <<<"$out"
    [ "$seen" -eq ${#want[@]} ] || fail "saw $seen threads, expected ${#want[@]}"
}

# check_unpinned OUTPUT: every thread still has the whole allowed set
check_unpinned() {
    local line
    while IFS= read -r line; do
        [[ $line == *thread=* ]] || continue
        [ "$(value allowed "$line")" = "$ALLOWED" ] || fail "thread pinned although it should not be: $line"
    done <<<"$1"
}

# root_pid OUTPUT: the pid of the process whose parent printed nothing (the top of the tree)
root_pid() {
    local pids; pids=" $(sed -nE 's/^pid=([0-9]+) .*/\1/p' <<<"$1" | sort -u | tr '\n' ' ') "
    sed -nE 's/^pid=([0-9]+) ppid=([0-9]+) .*/\1 \2/p' <<<"$1" | while read -r p pp; do
        [[ $pids == *" $pp "* ]] || { echo "$p"; break; }
    done
}

# ---- the plan's order computed here, from sysfs, apart from pinning/plan.c ----------------
# expected_order POLICY [FSROOT]: the CPUs of one whole round-by-round plan, as the README and
# docs/pinning-order.md state it: one CPU of every allowed core before any core's second (its
# lowest allowed CPU first), and within a round the cores grouped package > NUMA node > L3 >
# L2 (a node holding whole packages is the outer level), scatter dealing them out round-robin
# at every level, compact taking the groups one after another. The allowed CPUs are this
# process's (or FSROOT's online ones). Prints nothing on a hybrid part (P-cores first: not
# modelled here).
expected_order() {
    local policy=$1 root=${2:-} sys allowed=$ALLOWED
    sys=$root/sys/devices/system
    [ -n "$root" ] && allowed=all
    [ -e "$root/sys/devices/cpu_atom" ] && return 0
    # one "path:value" line per file (old kernels have masks where new ones have lists)
    grep -H . "$sys"/cpu/online "$sys"/cpu/cpu[0-9]*/online \
        "$sys"/cpu/cpu[0-9]*/topology/{physical_package_id,thread_siblings_list,thread_siblings} \
        "$sys"/cpu/cpu[0-9]*/cache/index[0-9]*/{level,shared_cpu_list,shared_cpu_map} \
        "$sys"/node/node[0-9]*/{cpulist,cpumap} 2>/dev/null |
    awk -v policy="$policy" -v allowed_list="$allowed" '
        # a sysfs list ("0-3,8"), or a mask ("m:00000000,00100001"), into set[cpu] = 1
        function members(v, set,    n, i, part, ab, c, d, b) {
            split("", set)
            if (substr(v, 1, 2) != "m:") {
                n = split(v, part, ",")
                for (i = 1; i <= n; i++) {
                    if (split(part[i], ab, "-") == 1) ab[2] = ab[1]
                    for (c = ab[1] + 0; c <= ab[2] + 0; c++) set[c] = 1
                }
                return
            }
            v = substr(v, 3); gsub(",", "", v); n = length(v)
            for (i = n; i >= 1; i--) {
                d = index("0123456789abcdef", tolower(substr(v, i, 1))) - 1
                for (b = 0; b < 4; b++) if (int(d / 2 ^ b) % 2) set[(n - i) * 4 + b] = 1
            }
        }
        # the lowest online CPU of a set (a stale sysfs list may name offline CPUs), or -1
        function lowest(set,    c, m) {
            m = -1
            for (c in set) if ((c + 0) in online && (m < 0 || c + 0 < m)) m = c + 0
            return m
        }
        {
            i = index($0, ":"); path = substr($0, 1, i - 1); v = substr($0, i + 1)
            n = split(path, f, "/"); file = f[n]
            if (file ~ /^(thread_siblings|shared_cpu_map|cpumap)$/) v = "m:" v   # a mask, not a list
            if (file == "online" && f[n - 1] == "cpu") { members(v, s); for (c in s) online[c] = 1; have_online = 1; next }
            cpu = -1
            for (k = n - 1; k >= 1 && cpu < 0; k--) if (f[k] ~ /^cpu[0-9]+$/) cpu = substr(f[k], 4) + 0
            if (file == "online") { if (v == 1) cpu_on[cpu] = 1; else cpu_off[cpu] = 1; next }
            if (file == "physical_package_id") { pkg[cpu] = v + 0; present[cpu] = 1 }
            else if (file == "thread_siblings_list" || (file == "thread_siblings" && !(cpu in sib))) sib[cpu] = v
            else if (file == "level") level[path] = v
            else if (file ~ /^shared_cpu_(list|map)$/) {
                sub(/\/[^\/]*$/, "", path); if (file == "shared_cpu_list" || !(path in shared)) shared[path] = v
                cache_cpu[path] = cpu
            } else if (file ~ /^cpu(list|map)$/) {
                nd = substr(f[n - 1], 5) + 0; if (file == "cpulist" || !(nd in node_set)) node_set[nd] = v
            }
        }
        END {
            if (!have_online) for (c in present) if (!(c in cpu_off)) online[c] = 1
            for (nd in node_set) { members(node_set[nd], s); for (c in s) node[c] = nd + 0 }
            for (p in shared) {
                d = p; sub(/\/[^\/]*$/, "", d)
                members(shared[p], s)
                if (level[p "/level"] == 2) l2[cache_cpu[p]] = lowest(s)
                if (level[p "/level"] == 3) l3[cache_cpu[p]] = lowest(s)
            }
            if (allowed_list == "all") for (c in online) allowed[c] = 1
            else { members(allowed_list, s); for (c in s) if (c in online) allowed[c] = 1 }
            n = 0
            for (c in allowed) {
                c += 0; cpu_at[++n] = c
                if (!(c in node)) node[c] = 0
                if (!(c in l2)) l2[c] = -1
                if (!(c in l3)) l3[c] = -1
                members(sib[c], s); s[c] = 1; core[c] = lowest(s)
                rank[c] = 0   # allowed siblings below it: its round
                for (d in s) if (d + 0 < c && (d + 0) in allowed) rank[c]++
            }
            outer_is_node = 0
            for (a = 1; a <= n; a++) for (b = 1; b <= n; b++)
                if (node[cpu_at[a]] == node[cpu_at[b]] && pkg[cpu_at[a]] != pkg[cpu_at[b]]) outer_is_node = 1
            for (a = 1; a <= n; a++) {   # the levels of each CPU, outermost first
                c = cpu_at[a]
                key[c, 1] = outer_is_node ? node[c] : pkg[c]
                key[c, 2] = outer_is_node ? pkg[c] : node[c]
                key[c, 3] = l3[c]; key[c, 4] = l2[c]; key[c, 5] = core[c]
            }
            out = ""
            for (r = 0; ; r++) {
                m = 0
                for (a = 1; a <= n; a++) if (rank[cpu_at[a]] == r) member[++m] = cpu_at[a]
                if (!m) break
                for (a = 1; a <= m; a++) pos[member[a]] = 0
                if (policy == "compact") {
                    for (a = 1; a <= m; a++) for (b = 1; b <= m; b++) {
                        x = member[a]; y = member[b]
                        for (l = 1; l <= 5 && key[y, l] == key[x, l]; l++) ;
                        if (l <= 5 && key[y, l] < key[x, l]) pos[x]++
                    }
                } else {
                    # From the innermost level out: within a group, its children dealt out in
                    # turn (the first of each child, in id order, then the second of each...).
                    for (L = 4; L >= 0; L--) {
                        for (a = 1; a <= m; a++) {
                            x = member[a]; cidx[x] = 0; split("", seen)
                            for (b = 1; b <= m; b++) {
                                y = member[b]
                                for (l = 1; l <= L && key[y, l] == key[x, l]; l++) ;
                                if (l <= L) continue                     # another group
                                if (key[y, L + 1] < key[x, L + 1] && !(key[y, L + 1] in seen)) {
                                    seen[key[y, L + 1]] = 1; cidx[x]++
                                }
                            }
                        }
                        for (a = 1; a <= m; a++) {
                            x = member[a]; np[x] = 0
                            for (b = 1; b <= m; b++) {
                                y = member[b]
                                for (l = 1; l <= L && key[y, l] == key[x, l]; l++) ;
                                if (l <= L) continue
                                if (pos[y] < pos[x] || (pos[y] == pos[x] && cidx[y] < cidx[x])) np[x]++
                            }
                        }
                        for (a = 1; a <= m; a++) pos[member[a]] = np[member[a]]
                    }
                }
                for (p = 0; p < m; p++) for (a = 1; a <= m; a++) if (pos[member[a]] == p) out = out " " member[a]
            }
            print substr(out, 2)
        }'
}

# check_order OUTPUT POLICY: threads 0..NCPU-1 of OUTPUT (pin_threads, pin_cxx or pin_omp
# lines) run where expected_order says: their affinity, and the CPU they started on (or were
# on), against an order computed here rather than asked of bobox-run --plan.
check_order() {
    local out=$1 policy=$2 k line ran; local -a want
    want=($(expected_order "$policy"))
    if [ ${#want[@]} -eq 0 ]; then echo "independent order: not computed on a hybrid part"; return 0; fi
    [ ${#want[@]} -eq "$NCPU" ] || fail "the order computed from /sys has ${#want[@]} CPUs, $NCPU are allowed: ${want[*]}"
    for ((k = 0; k < NCPU; k++)); do
        line=$(grep -E "(^| )thread=$k " <<<"$out" | head -1)
        [ -n "$line" ] || fail "$policy: no line for thread $k"
        [ "$(value allowed "$line")" = "${want[$k]}" ] ||
            fail "$policy: thread $k runs on $(value allowed "$line"), the order from /sys says ${want[$k]} (${want[*]}): $line"
        ran=$(value start_cpu "$line"); ran=${ran:-$(value cpu "$line")}
        [ "$ran" = "${want[$k]}" ] || fail "$policy: thread $k was on CPU $ran, the order from /sys says ${want[$k]}: $line"
    done
    echo "$policy: threads 0-$((NCPU - 1)) on ${want[*]}, as computed from /sys"
}
