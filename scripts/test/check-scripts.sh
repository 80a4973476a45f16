#!/usr/bin/env bash
# The test scripts can fail: a script whose helpers are missing must stop, not go on to print
# PASS with `fail` and `$TMP` undefined (as hardening_checked_exit.sh once did). Checks, in
# test/system/*.sh, test/lib/*.sh and scripts/test/*.sh:
#  1. bash -n: each parses;
#  2. every `source`/`.` line names a file that exists (its path resolved from $(dirname "$0"),
#     $(dirname "${BASH_SOURCE[0]}"), $BOBOX_ROOT or $ROOT) and ends in `|| exit N`;
#  3. every `exec` of a script of the tree names one that exists;
#  4. each test/system script starts by sourcing a helper of test/lib (which sources common.sh:
#     set -u and the command-not-found handler) or is one `exec` of another test script.
# Usage: scripts/test/check-scripts.sh [ROOT]   (default: this tree)
set -uo pipefail
ROOT=$(cd "${1:-$(dirname "$0")/../..}" && pwd) || exit 2
bad=0
fail() { echo "scripts: $*"; bad=$((bad + 1)); }

# resolve FILE EXPR: EXPR's path with the known prefixes expanded; empty when one is left
resolve() {
    local dir p
    dir=$(dirname "$1") p=$2
    p=${p//\"/}
    p=${p//'$(dirname $0)'/$dir}
    p=${p//'$(dirname ${BASH_SOURCE[0]})'/$dir}
    p=${p//'$BOBOX_ROOT'/$ROOT}
    p=${p//'${BOBOX_ROOT}'/$ROOT}
    p=${p//'$ROOT'/$ROOT}
    [[ $p == *'$'* || $p == *'`'* ]] && return
    echo "$p"
}

files=("$ROOT"/test/system/*.sh "$ROOT"/test/lib/*.sh "$ROOT"/scripts/test/*.sh)
[ -e "${files[0]}" ] || { echo "scripts: no test scripts under $ROOT"; exit 1; }
n=0
for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    rel=${f#"$ROOT"/}
    err=$(bash -n "$f" 2>&1) || fail "$rel does not parse: $err"
    while IFS= read -r line; do
        lineno=${line%%:*} text=${line#*:}
        if [[ $text =~ ^[[:space:]]*(source|\.)[[:space:]]+(.*)$ ]]; then
            # the path is what comes before "||" (it may hold quotes in quotes)
            expr=${BASH_REMATCH[2]%%||*} rest=
            [[ ${BASH_REMATCH[2]} == *'||'* ]] && rest="||${BASH_REMATCH[2]#*||}"
            expr=${expr%"${expr##*[![:space:]]}"}
            path=$(resolve "$f" "$expr")
            if [ -z "$path" ]; then fail "$rel:$lineno: sources $expr, a path this check cannot resolve"
            elif [ ! -f "$path" ]; then fail "$rel:$lineno: sources $expr, which does not exist"
            fi
            [[ $rest =~ ^[[:space:]]*\|\|[[:space:]]*exit[[:space:]]+[1-9][0-9]*[[:space:]]*$ ]] ||
                fail "$rel:$lineno: 'source $expr' does not end in '|| exit 1': a missing file would not stop the script"
        elif [[ $text =~ ^[[:space:]]*exec[[:space:]]+(bash[[:space:]]+)?(\"[^[:space:]]*\")([[:space:]]|$) ]]; then
            expr=${BASH_REMATCH[2]}
            path=$(resolve "$f" "$expr")
            [ -n "$path" ] && [ ! -f "$path" ] && fail "$rel:$lineno: execs $expr, which does not exist"
        fi
    done < <(grep -nE '^[[:space:]]*(source|\.|exec)[[:space:]]' "$f")
    # The first command of the script (not a comment, not blank).
    first=$(grep -vE '^[[:space:]]*(#|$)' "$f" | head -1)
    if [[ $rel == test/system/* ]]; then
        if [[ $first =~ ^source\ \"\$\(dirname\ \"\$0\"\)/\.\./lib/[a-z_]+\.sh\" ]]; then :
        elif [[ $first =~ ^exec\ bash\ \"\$\(dirname\ \"\$0\"\)/[a-z_]+\.sh\" ]]; then :
        else fail "$rel: its first command is not 'source \"\$(dirname \"\$0\")/../lib/....sh\" || exit 1' (nor one exec of a test script): '$first'"
        fi
    elif [[ $rel == test/lib/* && $rel != test/lib/common.sh ]]; then
        grep -qx 'source "$(dirname "${BASH_SOURCE\[0\]}")/common.sh" || exit 1' "$f" ||
            fail "$rel does not source common.sh"
    fi
done
[ $bad -eq 0 ] && { echo "scripts: $n scripts parse, each source and exec names a file that exists, each test loads the helpers or stops"; exit 0; }
echo "scripts: $bad problem(s)"; exit 1
