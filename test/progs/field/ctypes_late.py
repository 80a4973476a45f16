# ctypes_late.py SO: loads the allocator into a running python3 with ctypes (late, by dlopen)
# and keeps working: what glibc's malloc handed out before stays python's to free.
import ctypes
import sys
import threading

so = sys.argv[1]
# Before the allocator arrives: buffers from glibc's malloc (bytearrays over 512 bytes).
before = [bytearray(b"%d" % i * (600 + i % 300)) for i in range(3000)]
big_before = [bytearray(1 << 20) for _ in range(4)]

lib = ctypes.CDLL(so)                                   # RTLD_LOCAL, as ctypes does by default
glob = ctypes.CDLL(so, mode=ctypes.RTLD_GLOBAL)        # and once more into the global scope
lib.malloc.restype = lib.realloc.restype = ctypes.c_void_p
lib.malloc.argtypes = [ctypes.c_size_t]
lib.realloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
lib.free.argtypes = lib.bobox_owns.argtypes = [ctypes.c_void_p]

# Its own functions work on their own pointers.
ptrs = [lib.malloc(16 + i * 13) for i in range(2000)]
assert all(ptrs) and all(lib.bobox_owns(p) for p in ptrs)
ptrs = [lib.realloc(p, 5000 + i) for i, p in enumerate(ptrs)]
for p in ptrs:
    lib.free(p)

def address(buf):
    return ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))

late_owns = sum(lib.bobox_owns(address(b)) for b in before[::100])

# Python keeps allocating and freeing with its own (glibc's) malloc, across threads too.
total = sum(len(b) for b in before) + sum(len(b) for b in big_before)
del before, big_before
import decimal, json, sqlite3  # extension modules loaded after the allocator
def work(k, out):
    d = {str(i): [i] * (i % 7) for i in range(20000)}
    out[k] = len(json.dumps(d)) + int(decimal.Decimal(k) ** 3)
results = {}
threads = [threading.Thread(target=work, args=(k, results)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()
con = sqlite3.connect(":memory:")
con.execute("create table t(x)")
con.executemany("insert into t values (?)", [(("v%d" % i) * 50,) for i in range(5000)])
rows = con.execute("select count(*), sum(length(x)) from t").fetchone()
print("owned=%d of 30 earlier buffers" % late_owns, file=sys.stderr)
print("before=%d threads=%s sqlite=%s" % (total, sorted(results.items()), rows))
