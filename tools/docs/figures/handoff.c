/* tools/docs/figures/handoff.c — a server-like cross-thread pattern, beyond the
 * bench's xthread workload: requests are allocated by an acceptor thread,
 * handed through a queue to one of several workers, which allocates a
 * response, frees the request, and hands the response to a writer thread
 * that frees it. Every object is freed by a thread other than the one that
 * allocated it, sizes vary (64 B .. 4 KiB requests, 32 B .. 1 KiB
 * responses), and the queues keep a few thousand objects in flight. Not part
 * of any allocator layer: it calls malloc/free, so it measures whatever
 * malloc LD_PRELOAD puts under it (docs/stage3.md quotes its figures).
 *
 * usage: handoff [WORKERS [REQUESTS]]   (defaults: 4 workers, 2,000,000)
 * prints: wall_ns=... requests=... peak_rss_kib=... */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* A bounded queue of pointers, one mutex and two condition variables: the
 * program's own synchronisation, the same for every allocator. */
#define QUEUE_SLOTS 1024
typedef struct queue {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    void *slots[QUEUE_SLOTS];
    size_t head, count;
} queue;

static void queue_init(queue *q) {
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    q->head = q->count = 0;
}

static void queue_push(queue *q, void *p) {
    pthread_mutex_lock(&q->lock);
    while (q->count == QUEUE_SLOTS)
        pthread_cond_wait(&q->not_full, &q->lock);
    q->slots[(q->head + q->count++) % QUEUE_SLOTS] = p;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
}

static void *queue_pop(queue *q) {
    pthread_mutex_lock(&q->lock);
    while (q->count == 0)
        pthread_cond_wait(&q->not_empty, &q->lock);
    void *p = q->slots[q->head];
    q->head = (q->head + 1) % QUEUE_SLOTS;
    q->count--;
    pthread_cond_signal(&q->not_full);
    pthread_mutex_unlock(&q->lock);
    return p;
}

typedef struct message {
    size_t size;
    uint64_t checksum;
} message;

static queue requests, responses;
static long total_requests;
static int workers;
static volatile uint64_t sink;

static uint32_t next_random(uint32_t *x) {
    *x = *x * 1103515245u + 12345u;
    return *x >> 8;
}

static void *acceptor(void *arg) {
    (void)arg;
    uint32_t x = 1;
    for (long i = 0; i < total_requests; i++) {
        size_t size = 64 + next_random(&x) % 4033;
        message *m = malloc(size);
        if (m == NULL)
            abort();
        m->size = size;
        m->checksum = (uint64_t)i;
        memset(m + 1, (int)i, size - sizeof *m);
        queue_push(&requests, m);
    }
    for (int w = 0; w < workers; w++)
        queue_push(&requests, NULL); /* one stop sign per worker */
    return NULL;
}

static void *worker(void *arg) {
    uint32_t x = (uint32_t)(uintptr_t)arg * 7919u + 3;
    for (;;) {
        message *request = queue_pop(&requests);
        if (request == NULL)
            break;
        size_t size = 32 + next_random(&x) % 993;
        message *response = malloc(size);
        if (response == NULL)
            abort();
        response->size = size;
        response->checksum = request->checksum ^ ((unsigned char *)(request + 1))[0];
        free(request);
        queue_push(&responses, response);
    }
    queue_push(&responses, NULL);
    return NULL;
}

static void *writer(void *arg) {
    (void)arg;
    uint64_t sum = 0;
    for (int stopped = 0; stopped < workers;) {
        message *response = queue_pop(&responses);
        if (response == NULL) {
            stopped++;
            continue;
        }
        sum += response->checksum;
        free(response);
    }
    sink = sum;
    return NULL;
}

int main(int argc, char **argv) {
    workers = argc > 1 ? atoi(argv[1]) : 4;
    total_requests = argc > 2 ? atol(argv[2]) : 2000000;
    if (workers < 1 || workers > 64 || total_requests < 1) {
        fprintf(stderr, "usage: handoff [WORKERS 1..64 [REQUESTS]]\n");
        return 2;
    }
    queue_init(&requests);
    queue_init(&responses);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pthread_t acceptor_thread, writer_thread, worker_threads[64];
    pthread_create(&acceptor_thread, NULL, acceptor, NULL);
    for (int w = 0; w < workers; w++)
        pthread_create(&worker_threads[w], NULL, worker, (void *)(uintptr_t)w);
    pthread_create(&writer_thread, NULL, writer, NULL);
    pthread_join(acceptor_thread, NULL);
    for (int w = 0; w < workers; w++)
        pthread_join(worker_threads[w], NULL);
    pthread_join(writer_thread, NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    long long ns = (long long)(end.tv_sec - start.tv_sec) * 1000000000LL + (end.tv_nsec - start.tv_nsec);
    printf("wall_ns=%lld requests=%ld ns_per_request=%.1f peak_rss_kib=%ld\n", ns, total_requests,
           (double)ns / (double)total_requests, usage.ru_maxrss);
    return 0;
}
