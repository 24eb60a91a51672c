// A producer and a consumer thread over a bounded queue (a pthread mutex and two condition
// variables, that is futexes): the producer makes ITEMS items, each after WORK rounds of arithmetic,
// the consumer takes them and does as much work on each. Prints the wall time in ns, the items
// passed and a checksum ("ns items checksum"). Usage: multios-prodcons ITEMS WORK [SLOTS]
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t *ring;
static long slots, head, tail, count;
static long items;
static int work;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER, not_empty = PTHREAD_COND_INITIALIZER;

static uint64_t churn(uint64_t x) {
	for (int i = 0; i < work; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

static void *produce(void *arg) {
	(void)arg;
	uint64_t x = 1;
	for (long n = 0; n < items; n++) {
		x = churn(x + (uint64_t)n);
		pthread_mutex_lock(&lock);
		while (count == slots) pthread_cond_wait(&not_full, &lock);
		ring[head] = x;
		head = (head + 1) % slots;
		count++;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&lock);
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3) { fprintf(stderr, "usage: %s ITEMS WORK [SLOTS]\n", argv[0]); return 2; }
	items = atol(argv[1]);
	work = atoi(argv[2]);
	slots = argc > 3 ? atol(argv[3]) : 64;
	if (items < 1 || work < 0 || slots < 1) { fprintf(stderr, "ITEMS >= 1, WORK >= 0, SLOTS >= 1\n"); return 2; }
	ring = calloc((size_t)slots, sizeof *ring);
	if (!ring) return 1;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pthread_t t;
	if (pthread_create(&t, 0, produce, 0)) return 1;
	uint64_t sum = 0;
	for (long n = 0; n < items; n++) {
		pthread_mutex_lock(&lock);
		while (count == 0) pthread_cond_wait(&not_empty, &lock);
		uint64_t x = ring[tail];
		tail = (tail + 1) % slots;
		count--;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&lock);
		sum += churn(x);
	}
	pthread_join(t, 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	long long ns = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
	printf("%lld %ld %llu\n", ns, items, (unsigned long long)sum);
	return 0;
}
