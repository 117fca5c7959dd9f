/* numa.c: node count from sysfs, node of the current CPU from getcpu,
 * placement with mbind. Layer: beside pages, uses os and config only. */
#include "numa.h"

#include "config.h"
#include "os.h"

int xa_numa_nodes = 1;
bool xa_numa_active;
static unsigned long online_mask[16];

/* Parses a sysfs cpulist-style string ("0", "0-3", "0,2-3"). */
static int parse_nodelist(const char *s, unsigned long *mask, int maxnode)
{
    int count = 0;
    while (*s) {
        int a = 0, b;
        if (*s < '0' || *s > '9')
            break;
        while (*s >= '0' && *s <= '9')
            a = a * 10 + (*s++ - '0');
        b = a;
        if (*s == '-') {
            s++;
            b = 0;
            while (*s >= '0' && *s <= '9')
                b = b * 10 + (*s++ - '0');
        }
        for (int n = a; n <= b && n < maxnode; n++) {
            mask[n / (8 * sizeof(long))] |= 1UL << (n % (8 * sizeof(long)));
            count++;
        }
        if (*s == ',')
            s++;
        else
            break;
    }
    return count;
}

void xa_numa_boot(void)
{
    char buf[256];
    int fd = xa_os_open_read("/sys/devices/system/node/online");
    if (fd >= 0) {
        ssize_t n = xa_os_read(fd, buf, sizeof buf - 1);
        xa_os_close(fd);
        if (n > 0) {
            buf[n] = 0;
            int count = parse_nodelist(buf, online_mask, 16 * 8 * (int)sizeof(long));
            if (count > 0)
                xa_numa_nodes = count;
        }
    }
    xa_numa_active = xa_numa_nodes > 1 && xa_opt.numa != XA_NUMA_OFF;
}

int xa_numa_current_node(void)
{
    if (!xa_numa_active)
        return 0;
    int node = 0;
    xa_os_current_cpu(&node);
    return node < 0 ? 0 : node;
}

void xa_numa_place(void *p, size_t size, int node)
{
    if (!xa_numa_active)
        return;
    if (xa_opt.numa == XA_NUMA_INTERLEAVE)
        xa_os_interleave(p, size, online_mask, 16 * 8 * sizeof(long));
    else if (node >= 0)
        xa_os_bind_node(p, size, node);
}
