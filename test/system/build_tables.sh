#!/usr/bin/env bash
# The committed size-class tables (allocator/small/sizeclass_tables.h) are what their generator
# writes today (`make sizeclass-tables` rewrites them).
source "$(dirname "$0")/../lib/common.sh" || exit 1
cd "$BOBOX_ROOT"
tmp=$TMP/tables.h
python3 scripts/gen/gen-sizeclass.py "$tmp" >/dev/null || { echo "the generator failed"; exit 1; }
diff -u allocator/small/sizeclass_tables.h "$tmp" || { echo "stale tables: run make sizeclass-tables"; exit 1; }
echo "the committed tables match the generator"
