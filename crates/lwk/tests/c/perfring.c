/* Issue #14: a perf_event ring buffer read by the program itself. On this kernel the buffer is a
 * VM_PFNMAP|VM_IO mapping (VmFlags "pf io"); in the LWK the guest reads the kernel's pages with no
 * copy. Samples cpu-clock on itself while it computes, then walks the records it finds. */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

volatile unsigned long sink;

int main(void) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = 200000; /* ns of task clock */
    a.sample_type = PERF_SAMPLE_TID;
    a.disabled = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd < 0) {
        perror("perf_event_open");
        return 1;
    }
    size_t len = (1 + 8) * 4096;
    struct perf_event_mmap_page *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    printf("ring mapped, data_offset %llu data_size %llu\n", (unsigned long long)m->data_offset,
           (unsigned long long)m->data_size);
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    for (unsigned long i = 0; i < 100000000ul; i++) sink += i;
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    unsigned long long head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
    char *data = (char *)m + m->data_offset;
    unsigned long long pos = 0, samples = 0, own = 0, other = 0;
    while (pos < head && pos < m->data_size) {
        struct perf_event_header *h = (struct perf_event_header *)(data + pos);
        if (h->size == 0) break;
        if (h->type == PERF_RECORD_SAMPLE) {
            unsigned *pidtid = (unsigned *)(h + 1);
            samples++;
            own += pidtid[0] == (unsigned)getpid();
        } else {
            other++;
        }
        pos += h->size;
    }
    __atomic_store_n(&m->data_tail, head, __ATOMIC_RELEASE);
    unsigned long long id = 0;
    printf("PERF_EVENT_IOC_ID: %d\n", ioctl(fd, PERF_EVENT_IOC_ID, &id));
    printf("samples found: %s, all of this process: %s, records walked to data_head: %s\n",
           samples > 10 ? "yes" : "no", samples == own ? "yes" : "no", pos == head ? "yes" : "no");
    munmap(m, len);
    close(fd);
    return 0;
}
