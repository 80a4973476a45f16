# pin.sh - sourced by test/system/pin_*.sh. On top of common.sh:
#   FIX                   the topology fixtures (test/fixtures/topo)
#   ALLOWED, NCPU         the CPUs this process may use, as a list, and how many
#   plan_cpus, plan_masks what `bobox-run --plan` says
#   check_pinned, check_unpinned, root_pid, value, in_list: reading pin_threads' lines
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
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
