#!/usr/bin/env bash
# The allocator's layering (allocator/layers.txt), checked three ways:
#  1. includes: a file under allocator/F/ includes only headers of F or of a layer below F;
#  2. calls: every bx_ or bobox_ symbol an object of libbobox.so takes from another object
#     is defined in its own folder or below (catches a declaration written outside a header);
#  3. the README's layout table lists the layers in that order, each with its files.
# Usage: scripts/test/check-layers.sh [OBJ_DIR]   (default build/so); --table prints the table.
set -uo pipefail
cd "$(dirname "$0")/../.."
LAYERS=allocator/layers.txt
mapfile -t order < <(awk '!/^#/ && NF {print $1}' "$LAYERS")
declare -A rank
for i in "${!order[@]}"; do rank[${order[$i]}]=$i; done

table() {
    echo "| layer | files (.c, .h) | holds |"
    echo "| --- | --- | --- |"
    awk '!/^#/ && NF' "$LAYERS" | while read -r layer what; do
        files=$(cd allocator/$layer && ls *.c *.h 2>/dev/null | sed 's/\.[ch]$//' | sort -u | sed 's/.*/`&`/' | paste -sd, - | sed 's/,/, /g')
        echo "| \`$layer/\` | $files | $what |"
    done
}
if [ "${1:-}" = --table ]; then table; exit 0; fi
OBJ=${1:-build/so}
bad=0
fail() { echo "layers: $*"; bad=$((bad + 1)); }

for d in allocator/*/; do
    d=$(basename "$d")
    [ -n "${rank[$d]:-}" ] || fail "allocator/$d/ is not in $LAYERS"
done
for layer in "${order[@]}"; do [ -d "allocator/$layer" ] || fail "$LAYERS names $layer/, which does not exist"; done
for f in allocator/*/*.[ch]; do [ -e "$f" ] || continue
    own=$(basename "$(dirname "$f")")
    while IFS=: read -r line inc; do
        dir=${inc%%/*}
        if [ "$dir" = "$inc" ]; then
            [ "$inc" = bobox.h ] || fail "$f:$line includes \"$inc\" without its folder"
        elif [ -z "${rank[$dir]:-}" ]; then
            fail "$f:$line includes \"$inc\" from no layer"
        elif [ "${rank[$dir]}" -gt "${rank[$own]}" ]; then
            fail "$f:$line: $own/ includes \"$inc\" from $dir/, a layer above it"
        fi
    done < <(grep -n '^#include "' "$f" | sed -E 's/^([0-9]+):#include "([^"]+)".*/\1:\2/')
done

# Calls between objects: who defines each global symbol, who takes it.
if ! ls "$OBJ"/*/*.o >/dev/null 2>&1; then fail "no objects in $OBJ (build first)"; else
    declare -A where
    for o in "$OBJ"/*/*.o; do
        layer=$(basename "$(dirname "$o")")
        while read -r sym; do where[$sym]=$layer; done < <(nm --defined-only "$o" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
    done
    for o in "$OBJ"/*/*.o; do
        layer=$(basename "$(dirname "$o")")
        for sym in $(nm -u "$o" | awk '{print $2}'); do
            to=${where[$sym]:-}
            [ -n "$to" ] || continue
            [ "${rank[$to]}" -le "${rank[$layer]}" ] || fail "${o#$OBJ/} ($layer/) calls $sym of $to/, a layer above it"
        done
    done
fi

expected=$(table)
actual=$(sed -n '/^## Layout/,/^## /p' README.md | grep -E '^\| (`[a-z]+/`|layer|---)')
if [ "$expected" != "$actual" ]; then
    fail "README.md's layout table differs from $LAYERS and the files (scripts/test/check-layers.sh --table prints it):"
    diff <(echo "$actual") <(echo "$expected") | sed 's/^/    /'
fi
[ $bad -eq 0 ] && { echo "layers: ${#order[@]} layers, includes and calls go down only"; exit 0; }
echo "layers: $bad problem(s)"; exit 1
