/* Deterministic inputs for the real-program workloads (j).
 *   gendata words N   N lines of 1-8 random words (input for sort)
 *   gendata csrc N    a C file with N functions (input for gcc -O2)
 *   gendata sql N     an SQL script inserting N rows, indexing and querying (sqlite3)
 * Output goes to stdout. */
#include "common.h"

static const char *const syl[] = {"ka", "lo", "mi", "ne", "ru", "sta", "vo", "bri", "xe",
                                  "dun", "pha", "qui", "zor", "tel", "gam", "op"};

static void word(uint64_t *rs, char *buf, size_t cap)
{
    size_t n = 0;
    int k = 1 + (int)(rng_next(rs) % 4);
    buf[0] = 0;
    for (int i = 0; i < k && n + 4 < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s", syl[rng_next(rs) % 16]);
}

static void words(long n, uint64_t *rs)
{
    char w[64];
    for (long i = 0; i < n; i++) {
        int k = 1 + (int)(rng_next(rs) % 8);
        for (int j = 0; j < k; j++) {
            word(rs, w, sizeof w);
            printf(j ? " %s" : "%s", w);
        }
        printf(" %lu\n", (unsigned long)(rng_next(rs) % 100000));
    }
}

static void csrc(long n, uint64_t *rs)
{
    printf("#include <stddef.h>\nstruct s { int a, b; double c; const char *name; };\n");
    for (long i = 0; i < n; i++) {
        int k = 2 + (int)(rng_next(rs) % 6);
        printf("static struct s tab%ld[%d] = {", i, k);
        for (int j = 0; j < k; j++)
            printf("{%d, %d, %d.5, \"n%ld_%d\"},", j, (int)(rng_next(rs) % 100), j, i, j);
        printf("};\n");
        printf("double f%ld(int x, double y) {\n  double acc = y;\n", i);
        printf("  for (int i = 0; i < x; i++) {\n    switch ((i + x) %% %d) {\n", k);
        for (int j = 0; j < k; j++)
            printf("    case %d: acc += tab%ld[%d].a * y - tab%ld[%d].c / (1 + i); break;\n",
                   j, i, j, i, j);
        printf("    default: acc -= i;\n    }\n");
        printf("    if (acc > %d) acc = acc / 2 + x;\n  }\n", (int)(rng_next(rs) % 1000));
        if (i > 0)
            printf("  if (x > 1) acc += f%ld(x / 2, acc);\n", (long)(rng_next(rs) % (uint64_t)i));
        printf("  return acc;\n}\n");
    }
    printf("double run(int x) { double t = 0;\n");
    for (long i = 0; i < n; i++)
        printf("  t += f%ld(x, t);\n", i);
    printf("  return t; }\n");
}

static void sql(long n, uint64_t *rs)
{
    char w[64], v[64];
    printf("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, tag TEXT, qty INT, price REAL);\n"
           "BEGIN;\n");
    for (long i = 0; i < n; i++) {
        word(rs, w, sizeof w);
        word(rs, v, sizeof v);
        printf("INSERT INTO item(name, tag, qty, price) VALUES('%s %s %ld', '%s', %d, %d.%02d);\n",
               w, v, i, v, (int)(rng_next(rs) % 1000), (int)(rng_next(rs) % 500),
               (int)(rng_next(rs) % 100));
    }
    printf("COMMIT;\nCREATE INDEX item_tag ON item(tag, qty);\n"
           "SELECT tag, count(*), sum(qty), avg(price) FROM item GROUP BY tag ORDER BY 2 DESC LIMIT 5;\n"
           "SELECT count(*) FROM (SELECT DISTINCT name FROM item);\n"
           "SELECT a.tag, count(*) FROM item a JOIN item b ON a.id = b.id + 1 AND a.tag = b.tag GROUP BY a.tag LIMIT 3;\n");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s words|csrc|sql N\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]);
    uint64_t rs = rng_seed(42);
    if (!strcmp(argv[1], "words"))
        words(n, &rs);
    else if (!strcmp(argv[1], "csrc"))
        csrc(n, &rs);
    else if (!strcmp(argv[1], "sql"))
        sql(n, &rs);
    else
        die("unknown kind");
    return 0;
}
