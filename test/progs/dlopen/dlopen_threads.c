/* Four threads each dlopen 24 TLS modules, call into them, provoke a dlerror, and dlclose
 * them, three times over. Usage: dlopen_threads DIR (holding libtls0.so .. libtls23.so). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define LIBS 24
static const char *dir;
static void *worker(void *arg) {
    long id = (long)arg, sum = 0;
    for (int round = 0; round < 3; round++) {
        void *h[LIBS];
        for (int i = 0; i < LIBS; i++) {
            char path[512];
            snprintf(path, sizeof path, "%s/libtls%d.so", dir, i);
            if (!(h[i] = dlopen(path, RTLD_NOW | RTLD_LOCAL))) { fprintf(stderr, "%s\n", dlerror()); exit(2); }
            int (*f)(int) = (int (*)(int))dlsym(h[i], "tls_touch");
            sum += f((int)(id + i) & 63);
        }
        if (!dlopen("/nonexistent/libnothing.so", RTLD_NOW)) sum += dlerror() != NULL;
        for (int i = LIBS - 1; i >= 0; i--) dlclose(h[i]);
    }
    return (void *)sum;
}
int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    pthread_t t[4];
    long total = 0;
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++) { void *r; pthread_join(t[i], &r); total += (long)r; }
    printf("total %ld\n", total);
    return 0;
}
