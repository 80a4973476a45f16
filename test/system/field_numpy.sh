#!/usr/bin/env bash
# Guards against: python3 with numpy failing or computing differently under the preload or bobox-run.
# (C extensions, BLAS, 64-byte aligned buffers.)
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib
PY=/usr/bin/python3   # Debian's, with python3-numpy
[ -x "$PY" ] || fail "$PY is missing (scripts/deps.sh installs python3)"
"$PY" -c 'import numpy' 2>/dev/null || fail "numpy does not import in $PY (scripts/deps.sh installs python3-numpy)"
code='
import numpy as np
a = np.arange(1000000, dtype=np.float64).reshape(1000, 1000) % 97
b = a @ a.T
parts = [np.sort(np.sin(np.arange(n) * 0.5)).sum() for n in range(1, 2000, 7)]
print(b.trace(), b.sum(), round(sum(parts), 6), np.linalg.norm(a[:200, :200]).round(6))
print(np.unique(np.concatenate([np.arange(i, 3 * i) for i in range(1, 300)])).size)
'
compare_preload numpy "$PY" -c "$code"
compare_run numpy "$PY" -c "$code"
echo PASS
