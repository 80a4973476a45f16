// A service for the live statistics test: holds 20 MB of small objects, 8 MB of medium ones
// and one 32 MB large object, frees 1000 objects of another thread (remote frees), prints
// "ready", then keeps allocating and freeing a little every 20 ms until `seconds` pass.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *objs[1000];
static void *make(void *arg) {
    (void)arg;
    // A heap of its own (it would share its CPU's, making 1,000 calls): abandoned at its exit.
    int (*own_heap)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "bobox_thread_own_heap");
    if (own_heap) own_heap();
    for (int i = 0; i < 1000; i++) objs[i] = malloc(100);
    return NULL;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    static void *small[20 * 1024 * 1024 / 256], *medium[8 * 4];
    for (size_t i = 0; i < sizeof small / sizeof *small; i++) memset(small[i] = malloc(256), 1, 256);
    for (size_t i = 0; i < sizeof medium / sizeof *medium; i++) memset(medium[i] = malloc(256 * 1024), 1, 256 * 1024);
    char *large = malloc(32 << 20);
    memset(large, 1, 32 << 20);
    pthread_t t;
    pthread_create(&t, NULL, make, NULL);
    pthread_join(t, NULL);
    for (int i = 0; i < 1000; i++) free(objs[i]);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    struct timespec start, now, pause = {0, 20 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        free(malloc(4000));
        nanosleep(&pause, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - start.tv_sec + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    puts(large[12345] == 1 && ((char *)small[7])[3] == 1 ? "done" : "corrupt");
    return 0;
}
