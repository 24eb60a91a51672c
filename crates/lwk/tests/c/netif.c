/* Issue #15: the network-interface ioctls Open MPI's and PMIx's interface lists make (SIOCGIFCONF
 * and the SIOCGIF* reads of each interface, SIOCETHTOOL), and sched_getaffinity at the lengths
 * hwloc and CPython ask with. Prints results and errnos only (no CPU masks: the LWK's partition is
 * not the machine), so the output is the same natively and in the LWK. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static void show(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %ld\n", what, r);
}

int main(void) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) {
        perror("socket");
        return 1;
    }
    /* The length alone (NULL buffer), then the list. */
    struct ifconf ifc = {.ifc_len = 0, .ifc_buf = NULL};
    show("SIOCGIFCONF NULL", ioctl(s, SIOCGIFCONF, &ifc));
    printf("needed %d\n", ifc.ifc_len);
    struct ifreq reqs[32];
    ifc.ifc_len = sizeof reqs;
    ifc.ifc_req = reqs;
    show("SIOCGIFCONF", ioctl(s, SIOCGIFCONF, &ifc));
    int n = ifc.ifc_len / (int)sizeof(struct ifreq);
    printf("%d interfaces\n", n);
    for (int i = 0; i < n; i++) {
        struct ifreq r;
        char buf[64];
        const char *name = reqs[i].ifr_name;
        struct sockaddr_in *sin = (struct sockaddr_in *)&reqs[i].ifr_addr;
        printf("%s %s\n", name, inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf));
        unsigned long gets[] = {SIOCGIFFLAGS, SIOCGIFADDR, SIOCGIFNETMASK, SIOCGIFMTU, SIOCGIFHWADDR,
                                SIOCGIFINDEX, SIOCGIFMETRIC, SIOCGIFTXQLEN, SIOCGIFBRDADDR};
        for (unsigned k = 0; k < sizeof gets / sizeof *gets; k++) {
            memset(&r, 0, sizeof r);
            strncpy(r.ifr_name, name, IFNAMSIZ - 1);
            long rc = ioctl(s, gets[k], &r);
            snprintf(buf, sizeof buf, "  %s ioctl %#lx", name, gets[k]);
            show(buf, rc);
            if (rc == 0) {
                unsigned char *b = (unsigned char *)&r.ifr_ifru;
                printf("   ");
                for (int j = 0; j < 16; j++)
                    printf("%02x", b[j]);
                printf("\n");
            }
        }
        /* ethtool: the link state and the settings (speed) Open MPI reads; a setting command
         * must not pass. */
        struct ethtool_value link = {.cmd = ETHTOOL_GLINK};
        memset(&r, 0, sizeof r);
        strncpy(r.ifr_name, name, IFNAMSIZ - 1);
        r.ifr_data = (char *)&link;
        snprintf(buf, sizeof buf, "  %s ETHTOOL_GLINK", name);
        show(buf, ioctl(s, SIOCETHTOOL, &r));
        printf("   link %u\n", link.data);
        struct ethtool_cmd cmd = {.cmd = ETHTOOL_GSET};
        r.ifr_data = (char *)&cmd;
        snprintf(buf, sizeof buf, "  %s ETHTOOL_GSET", name);
        long rc = ioctl(s, SIOCETHTOOL, &r);
        show(buf, rc);
        if (rc == 0)
            printf("   speed %u duplex %u\n", ethtool_cmd_speed(&cmd), cmd.duplex);
    }
    /* A buffer the program does not own: EFAULT on both sides. */
    ifc.ifc_len = sizeof reqs;
    ifc.ifc_buf = (char *)8;
    show("SIOCGIFCONF bad buffer", ioctl(s, SIOCGIFCONF, &ifc));
    show("SIOCGIFCONF bad ifconf", ioctl(s, SIOCGIFCONF, (void *)8));
    /* A negative length: no entry written, length 0. */
    ifc.ifc_len = -5;
    ifc.ifc_req = reqs;
    show("SIOCGIFCONF negative", ioctl(s, SIOCGIFCONF, &ifc));
    printf("len %d\n", ifc.ifc_len);
    close(s);

    /* sched_getaffinity: hwloc asks with 8 bytes, CPython starts at 8 and doubles on EINVAL. */
    unsigned long mask[128];
    size_t lens[] = {0, 4, 8, 12, 16, 128, 1024};
    pid_t pids[] = {0, getpid(), (pid_t)syscall(SYS_gettid)};
    for (unsigned i = 0; i < 3; i++)
        for (unsigned j = 0; j < sizeof lens / sizeof *lens; j++) {
            char what[64];
            snprintf(what, sizeof what, "sched_getaffinity pid#%u len %zu", i, lens[j]);
            show(what, syscall(SYS_sched_getaffinity, pids[i], lens[j], mask));
        }
    show("sched_getaffinity bad buffer", syscall(SYS_sched_getaffinity, 0, 8, (void *)8));
    return 0;
}
