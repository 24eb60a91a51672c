/* Issue #16 (stress-ng's sock, shm-sysv and mremap stressors in the LWK): mmap of files the host
 * cannot map (a socket killed the VMM: the failed MAP_FIXED left a hole; a pipe and a procfs file
 * were copied with pread where Linux says ENODEV), shmat over memory already mapped without
 * SHM_REMAP (it replaced a heap page), and mremap with MREMAP_DONTUNMAP (the old address came
 * back as the new one). Prints lines that must be the same natively and in the LWK. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static void try_map(const char *what, int fd, int prot, int flags) {
    void *p = mmap(NULL, 4096, prot, flags, fd, 0);
    printf("mmap(%s) = %s\n", what, p == MAP_FAILED ? strerrorname_np(errno) : "a mapping");
    if (p != MAP_FAILED)
        munmap(p, 4096);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    try_map("tcp socket, private, read-write", s, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    try_map("tcp socket, shared, read-write", s, PROT_READ | PROT_WRITE, MAP_SHARED);
    int p[2];
    if (pipe(p))
        return 2;
    try_map("pipe", p[0], PROT_READ, MAP_PRIVATE);
    int st = open("/proc/self/status", O_RDONLY);
    try_map("/proc/self/status", st, PROT_READ, MAP_PRIVATE);
    printf("still alive\n");

    char *heap = malloc(64 << 10);
    memset(heap, 'A', 64 << 10);
    int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    void *at = shmat(id, heap + 8192 + 0x331, SHM_RND);
    printf("shmat over the heap without SHM_REMAP = %s; heap intact: %s\n",
           at == (void *)-1 ? strerrorname_np(errno) : "attached", heap[8192 + 0x331] == 'A' ? "yes" : "no");
    if (at != (void *)-1)
        shmdt(at);
    shmctl(id, IPC_RMID, NULL);
    free(heap);

    char *a = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(a, 7, 4096);
    char *b = (char *)syscall(SYS_mremap, a, 4096, 4096, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0);
    printf("mremap DONTUNMAP: %s\n", b == a ? "the old address came back" : "moved or refused");
    return 0;
}
