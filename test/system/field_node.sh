#!/usr/bin/env bash
# Guards against: node (V8, worker threads, libuv's pool) failing under the preload or bobox-run.
# Debian's /usr/bin/node, whatever comes first in PATH.
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib
NODE=/usr/bin/node
[ -x "$NODE" ] || fail "$NODE is missing (scripts/deps.sh installs nodejs)"
code='
const crypto = require("crypto"), zlib = require("zlib");
const m = new Map();
for (let i = 0; i < 200000; i++) m.set("k" + (i % 30000), (m.get("k" + (i % 30000)) || "") + (i % 10));
const big = Buffer.alloc(8 << 20, 7);
const z = zlib.gzipSync(big), back = zlib.gunzipSync(z);
let pending = 8, digests = [];
for (let i = 0; i < 8; i++)   // the thread pool
  crypto.pbkdf2("pw" + i, "salt", 2000, 32, "sha256", (e, k) => {
    digests[i] = k.toString("hex").slice(0, 8);
    if (--pending === 0) console.log(m.size, back.equals(big), digests.join(","));
  });
'
compare_preload node "$NODE" -e "$code"
compare_run node "$NODE" -e "$code"
echo PASS
