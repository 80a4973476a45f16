/* alloc_gen_lines: writes a deterministic text file of about BYTES bytes to stdout, for the
 * `sort` system test (test/system/alloc_real_sort.sh).
 * Lines have 1..200 characters, many share long prefixes and some repeat exactly, with
 * numeric fields so that `sort -n` / `-k` orderings are meaningful too.
 * Usage: alloc_gen_lines BYTES [SEED] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t state;
static uint64_t next(void)
{
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ull;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s BYTES [SEED]\n", argv[0]);
        return 2;
    }
    unsigned long long target = strtoull(argv[1], NULL, 10);
    state = 0x9E3779B97F4A7C15ull ^ (argc > 2 ? strtoull(argv[2], NULL, 10) : 1);
    static const char alpha[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-";
    static char buf[1 << 16];
    size_t pos = 0;
    unsigned long long written = 0;
    char line[256];
    char prev[256];
    int prev_len = 0;
    while (written < target) {
        uint64_t r = next();
        int len = 0;
        if ((r & 15) == 0 && prev_len > 0) { /* exact duplicate of the previous line */
            for (int i = 0; i < prev_len; i++) line[i] = prev[i];
            len = prev_len;
        } else {
            int shared = (r >> 4 & 3) == 0 && prev_len > 10 ? (int)((r >> 8) % (uint64_t)prev_len) : 0;
            for (int i = 0; i < shared; i++) line[len++] = prev[i];
            len += snprintf(line + len, 32, "%llu ", (unsigned long long)(next() % 1000003));
            int extra = (int)(next() % 180);
            for (int i = 0; i < extra && len < 250; i++) line[len++] = alpha[next() % (sizeof alpha - 1)];
        }
        for (int i = 0; i < len; i++) prev[i] = line[i];
        prev_len = len;
        if (pos + (size_t)len + 1 > sizeof buf) {
            fwrite(buf, 1, pos, stdout);
            pos = 0;
        }
        for (int i = 0; i < len; i++) buf[pos++] = line[i];
        buf[pos++] = '\n';
        written += (unsigned long long)len + 1;
    }
    fwrite(buf, 1, pos, stdout);
    return ferror(stdout) ? 1 : 0;
}
