/* check_numa.c: unit tests of the NUMA policy (src/numa.c) against fake
 * topologies written as sysfs trees in a temporary directory: 2 and 4
 * nodes, holes in the node numbering, a cpuset that allows only some nodes,
 * absent nodes; and the real system calls (mbind, move_pages) on this
 * machine's node 0, with their error paths for nodes that do not exist.
 * Each test runs in its own forked process (Check), so installing a fake
 * topology does not leak into the next test. */
#define _GNU_SOURCE
#include <check.h>

#include "unit/unit_main.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "numa.h"
#include "os_numa.h"

static xa_numa_topo t; /* big: static, not on the stack */
static char root[256];

static void put_file(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    /* mkdir -p of the parent */
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void make_root(void)
{
    strcpy(root, "/tmp/xa-numa-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
}

static void cleanup_root(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

/* A node with its cpulist and distance row. */
static void put_node(int id, const char *cpus, const char *dist)
{
    char rel[128];
    snprintf(rel, sizeof rel, "sys/devices/system/node/node%d/cpulist", id);
    put_file(rel, cpus);
    snprintf(rel, sizeof rel, "sys/devices/system/node/node%d/distance", id);
    put_file(rel, dist);
}

static void load(void)
{
    xa_numa_topo_reset(&t);
    ck_assert_int_eq(xa_numa_topo_read(&t, root), 0);
}

static void two_nodes(void)
{
    make_root();
    put_file("sys/devices/system/node/online", "0-1\n");
    put_node(0, "0-1\n", "10 20\n");
    put_node(1, "2-3\n", "20 10\n");
    load();
}

/* Nodes 0 and 1 are close to each other, as are 2 and 3 (two sockets of
 * two dies each). */
static void four_nodes(void)
{
    make_root();
    put_file("sys/devices/system/node/online", "0-3\n");
    put_node(0, "0\n", "10 12 32 32\n");
    put_node(1, "1\n", "12 10 32 32\n");
    put_node(2, "2\n", "32 32 10 12\n");
    put_node(3, "3\n", "32 32 12 10\n");
    load();
}

START_TEST(node_lists_parse_like_sysfs)
{
    unsigned long m[XA_NUMA_LONGS(XA_NUMA_MAX_NODE_ID)];
    memset(m, 0, sizeof m);
    ck_assert_int_eq(xa_numa_parse_list("0\n", m, 1024), 1);
    memset(m, 0, sizeof m);
    ck_assert_int_eq(xa_numa_parse_list("0,2-3,8\n", m, 1024), 4);
    ck_assert(m[0] == ((1UL << 0) | (1UL << 2) | (1UL << 3) | (1UL << 8)));
    memset(m, 0, sizeof m);
    ck_assert_int_eq(xa_numa_parse_list("\n", m, 1024), 0); /* node without CPUs */
    ck_assert_int_eq(xa_numa_parse_list("x", m, 1024), -1);
    ck_assert_int_eq(xa_numa_parse_list("3-1", m, 1024), -1);
    ck_assert_int_eq(xa_numa_parse_list("1,", m, 1024), -1);
    memset(m, 0, sizeof m);
    /* bits past nbits are ignored, not written */
    ck_assert_int_eq(xa_numa_parse_list("60-70", m, 64), 4);
    ck_assert_uint_eq(m[1], 0);
}
END_TEST

START_TEST(two_nodes_give_two_slots_and_cpu_map)
{
    two_nodes();
    xa_numa_topo_finish(&t);
    ck_assert_int_eq(t.nonline, 2);
    ck_assert_int_eq(t.nslots, 2);
    ck_assert_int_eq(t.cpu_slot[0], 0);
    ck_assert_int_eq(t.cpu_slot[1], 0);
    ck_assert_int_eq(t.cpu_slot[2], 1);
    ck_assert_int_eq(t.cpu_slot[3], 1);
    ck_assert_int_eq(t.ncpus, 4); /* CPU 4 is not one of the machine's */
    xa_numa_install(&t, XA_NUMA_ON);
    ck_assert(xa_numa_active);
    ck_assert_int_eq(xa_numa_slot_of_cpu(3), 1);
    ck_assert_int_eq(xa_numa_slot_of_cpu(4), -1);
    ck_assert_int_eq(xa_numa_nodes, 2);
    ck_assert_int_eq(xa_numa_distance(0, 1), 20);
    ck_assert_int_eq(xa_numa_distance(1, 1), 10);
    ck_assert_int_eq(xa_numa_distance(0, 2), -1);
    /* arenas:N spread evenly: arena i on slot i % 2 */
    for (unsigned i = 0; i < 8; i++)
        ck_assert_int_eq(xa_numa_arena_slot(i), (int)(i % 2));
    unsigned step;
    ck_assert_uint_eq(xa_numa_arenas_of_slot(1, 8, &step), 1);
    ck_assert_uint_eq(step, 2);
    /* one arena only: both slots use arena 0 */
    ck_assert_uint_eq(xa_numa_arenas_of_slot(1, 1, &step), 0);
    cleanup_root();
}
END_TEST

START_TEST(four_nodes_order_neighbours_by_distance)
{
    four_nodes();
    xa_numa_topo_finish(&t);
    xa_numa_install(&t, XA_NUMA_ON);
    ck_assert_int_eq(xa_numa_nodes, 4);
    int order[8];
    ck_assert_int_eq(xa_numa_slots_by_distance(2, order, 8), 4);
    ck_assert_int_eq(order[0], 2);
    ck_assert_int_eq(order[1], 3);
    ck_assert_int_lt(order[2], 2);
    /* 3 arenas for 4 nodes: node 3 borrows the arena of its neighbour 2 */
    unsigned step;
    ck_assert_uint_eq(xa_numa_arenas_of_slot(3, 3, &step), 2);
    ck_assert_uint_eq(xa_numa_arenas_of_slot(0, 3, &step), 0);
    for (int c = 0; c < 4; c++)
        ck_assert_int_eq(xa_numa_slot_of_cpu(c), c);
    ck_assert_int_eq(xa_numa_slot_of_cpu(-1), -1);
    ck_assert_int_eq(xa_numa_slot_of_cpu(XA_NUMA_MAX_CPUS), -1);
    cleanup_root();
}
END_TEST

START_TEST(holes_in_node_numbering_map_to_dense_slots)
{
    make_root();
    put_file("sys/devices/system/node/online", "0,2,5\n");
    put_node(0, "0-1\n", "10 20 30\n");
    put_node(2, "2-3\n", "20 10 30\n");
    put_node(5, "4-5\n", "30 30 10\n");
    load();
    xa_numa_topo_finish(&t);
    xa_numa_install(&t, XA_NUMA_ON);
    ck_assert_int_eq(xa_numa_nodes, 3);
    ck_assert_int_eq(xa_numa_node_of_slot(0), 0);
    ck_assert_int_eq(xa_numa_node_of_slot(1), 2);
    ck_assert_int_eq(xa_numa_node_of_slot(2), 5);
    ck_assert_int_eq(xa_numa_node_of_slot(3), -1);
    ck_assert_int_eq(xa_numa_slot_of_node(5), 2);
    ck_assert_int_eq(xa_numa_slot_of_node(1), -1);
    ck_assert_int_eq(xa_numa_slot_of_cpu(5), 2);
    ck_assert_int_eq(xa_numa_distance(1, 2), 30);
    char buf[256];
    xa_numa_describe(buf, sizeof buf);
    ck_assert_msg(strstr(buf, "arenas on nodes 0,2,5") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "online 0,2,5") != NULL, "%s", buf);
    /* a tiny buffer is cut, never overrun */
    char small[8];
    size_t n = xa_numa_describe(small, sizeof small);
    ck_assert_uint_gt(n, sizeof small);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    cleanup_root();
}
END_TEST

START_TEST(cpuset_without_some_nodes_keeps_arenas_on_allowed_ones)
{
    four_nodes();
    put_file("status", "Name:\tx\nCpus_allowed_list:\t0-3\nMems_allowed:\t0a\n"
                       "Mems_allowed_list:\t1,3\nvoluntary_ctxt_switches:\t1\n");
    char path[300];
    snprintf(path, sizeof path, "%s/status", root);
    ck_assert_int_eq(xa_numa_topo_restrict_status(&t, path), 0);
    xa_numa_topo_finish(&t);
    ck_assert_int_eq(t.nallowed, 2);
    xa_numa_install(&t, XA_NUMA_ON);
    ck_assert_int_eq(xa_numa_nodes, 2);
    ck_assert_int_eq(xa_numa_node_of_slot(0), 1);
    ck_assert_int_eq(xa_numa_node_of_slot(1), 3);
    /* CPUs of disallowed nodes use the nearest allowed node */
    ck_assert_int_eq(xa_numa_slot_of_cpu(0), 0); /* node 0 -> node 1 */
    ck_assert_int_eq(xa_numa_slot_of_cpu(2), 1); /* node 2 -> node 3 */
    for (int s = 0; s < xa_numa_nodes; s++) {
        int node = xa_numa_node_of_slot(s);
        ck_assert(node == 1 || node == 3);
    }
    char buf[256];
    xa_numa_describe(buf, sizeof buf);
    ck_assert_msg(strstr(buf, "allowed 1,3") != NULL, "%s", buf);
    cleanup_root();
}
END_TEST

START_TEST(one_allowed_node_means_no_placement)
{
    /* numactl --membind=1 on two nodes: the task policy already puts every
     * page on node 1; a per-chunk policy could only break that. */
    two_nodes();
    ck_assert_int_eq(xa_numa_topo_restrict_list(&t, "1"), 0);
    xa_numa_topo_finish(&t);
    xa_numa_install(&t, XA_NUMA_ON);
    ck_assert(!xa_numa_active);
    ck_assert_int_eq(xa_numa_nodes, 1);
    ck_assert_int_eq(xa_numa_node_of_slot(0), 1);
    ck_assert_int_eq(xa_numa_current_node(), 0);
    ck_assert_int_eq(xa_numa_arena_slot(3), -1);
    xa_numa_install(&t, XA_NUMA_INTERLEAVE);
    ck_assert(!xa_numa_active);
    cleanup_root();
}
END_TEST

START_TEST(restriction_to_no_online_node_is_refused)
{
    four_nodes();
    ck_assert_int_eq(xa_numa_topo_restrict_list(&t, "7-9"), EINVAL);
    ck_assert_int_eq(xa_numa_topo_restrict_list(&t, "garbage"), EINVAL);
    xa_numa_topo_finish(&t);
    ck_assert_int_eq(t.nallowed, 4);
    ck_assert_int_eq(t.nslots, 4);
    char path[300];
    snprintf(path, sizeof path, "%s/no-such-status", root);
    ck_assert_int_eq(xa_numa_topo_restrict_status(&t, path), ENOENT);
    cleanup_root();
}
END_TEST

START_TEST(absent_node_directory_is_a_node_without_cpus)
{
    make_root();
    put_file("sys/devices/system/node/online", "0-2\n");
    put_node(0, "0\n", "10 20 20\n");
    put_node(2, "1\n", "20 20 10\n");
    load();
    ck_assert(t.absent[1]);
    ck_assert(!t.has_cpus[1]);
    ck_assert_int_eq(t.dist[1][0], 20); /* default distances */
    xa_numa_topo_finish(&t);
    ck_assert_int_eq(t.nslots, 2);
    xa_numa_install(&t, XA_NUMA_ON);
    ck_assert_int_eq(xa_numa_slot_of_node(1), -1);
    ck_assert_int_eq(xa_numa_node_of_slot(1), 2);
    cleanup_root();
}
END_TEST

START_TEST(distance_rows_of_the_wrong_length_are_ignored)
{
    make_root();
    put_file("sys/devices/system/node/online", "0-1\n");
    put_node(0, "0\n", "10 20 30\n");
    put_node(1, "1\n", "oops\n");
    load();
    ck_assert_int_eq(t.dist[0][1], 20);
    ck_assert_int_eq(t.dist[1][0], 20);
    ck_assert_int_eq(t.dist[1][1], 10);
    cleanup_root();
}
END_TEST

START_TEST(no_node_directory_is_one_node)
{
    make_root();
    xa_numa_topo_reset(&t);
    ck_assert_int_eq(xa_numa_topo_read(&t, root), ENOENT);
    put_file("sys/devices/system/node/online", "bad\n");
    ck_assert_int_eq(xa_numa_topo_read(&t, root), EINVAL);
    xa_numa_topo_finish(&t);
    ck_assert_int_eq(t.nonline, 1);
    ck_assert_int_eq(t.nslots, 1);
    xa_numa_install(&t, XA_NUMA_ON);
    ck_assert(!xa_numa_active);
    int order[4];
    ck_assert_int_eq(xa_numa_slots_by_distance(0, order, 4), 1);
    ck_assert_int_eq(xa_numa_slots_by_distance(1, order, 4), 0);
    cleanup_root();
}
END_TEST

START_TEST(numa_off_makes_one_set_of_arenas)
{
    four_nodes();
    xa_numa_topo_finish(&t);
    xa_numa_install(&t, XA_NUMA_OFF);
    ck_assert(!xa_numa_active);
    ck_assert_int_eq(xa_numa_nodes, 1);
    unsigned step;
    ck_assert_uint_eq(xa_numa_arenas_of_slot(2, 16, &step), 0);
    ck_assert_uint_eq(step, 1);
    xa_numa_thread th = {0, 0};
    ck_assert_int_eq(xa_numa_recheck(&th), -1);
    /* inactive placement is a no-op that succeeds */
    ck_assert_int_eq(xa_numa_place_chunk(&th, 4096, 3), 0);
    xa_numa_install(&t, XA_NUMA_INTERLEAVE);
    ck_assert(xa_numa_active);
    ck_assert_int_eq(xa_numa_nodes, 1);
    cleanup_root();
}
END_TEST

/* ---- real system calls on this machine (node 0 exists) ---- */

/* A fake two-node topology whose node 0 is real and whose CPUs all belong
 * to node 0: placement on slot 0 works, on slot 1 the kernel says no. */
static void host_plus_fake_node(void)
{
    make_root();
    put_file("sys/devices/system/node/online", "0-1\n");
    put_node(0, "0-4095\n", "10 20\n");
    put_node(1, "\n", "20 10\n");
    load();
    /* node 1 has no CPU, so it would get no arenas; make it a slot by
     * giving it one CPU nobody runs on */
    t.has_cpus[1] = true;
    t.cpu_online[4095] = 1;
    xa_numa_topo_finish(&t);
    xa_numa_install(&t, XA_NUMA_ON);
    ck_assert_int_eq(xa_numa_nodes, 2);
}

static char *map(size_t size)
{
    char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(p != MAP_FAILED);
    return p;
}

START_TEST(placement_on_a_real_node_succeeds_and_is_counted)
{
    host_plus_fake_node();
    size_t size = 64 * 4096;
    char *p = map(size);
    errno = 1234;
    ck_assert_int_eq(xa_numa_place_chunk(p, size, 0), 0);
    ck_assert_int_eq(errno, 1234); /* errno preserved */
    memset(p, 1, size / 2);
    xa_numa_counters c;
    xa_numa_counters_get(0, &c);
    ck_assert_uint_eq(c.chunks_placed, 1);
    ck_assert_uint_eq(c.bytes_placed, size);
    ck_assert_uint_eq(c.place_errors, 0);
    xa_numa_query_result q;
    ck_assert_int_eq(xa_numa_query(p, size, 4096, 0, &q), 0);
    ck_assert_uint_eq(q.present, 32);
    ck_assert_uint_eq(q.on_node, 32);
    ck_assert_uint_eq(q.off_node, 0);
    ck_assert_uint_eq(q.per_slot[0], 32);
    /* the same pages, asked as slot 1's: all off their node */
    ck_assert_int_eq(xa_numa_query(p, size, 4096, 1, &q), 0);
    ck_assert_uint_eq(q.off_node, 32);
    xa_numa_counters_get(1, &c);
    ck_assert_uint_eq(c.pages_checked, 32);
    ck_assert_uint_eq(c.pages_off_node, 32);
    /* one page per 2 MiB stride: one page looked at */
    ck_assert_int_eq(xa_numa_query(p, size, (size_t)2 << 20, -1, &q), 0);
    ck_assert_uint_eq(q.present, 1);
    ck_assert_int_eq(xa_numa_query(p, size, 1000, 0, &q), EINVAL);
    ck_assert_int_eq(xa_numa_query(p, size, 4096, 9, &q), EINVAL);
    munmap(p, size);
    cleanup_root();
}
END_TEST

START_TEST(placement_on_an_absent_node_fails_softly)
{
    host_plus_fake_node();
    size_t size = 16 * 4096;
    char *p = map(size);
    ck_assert_int_ne(xa_numa_place_chunk(p, size, 1), 0); /* node 1: EINVAL */
    xa_numa_place(p, size, 1);                            /* no result, no crash */
    ck_assert_int_eq(xa_numa_place_chunk(p, size, 7), EINVAL);
    memset(p, 2, size); /* the memory is still usable */
    xa_numa_counters c;
    xa_numa_counters_get(1, &c);
    ck_assert_uint_eq(c.place_errors, 2);
    ck_assert_uint_eq(c.chunks_placed, 0);
    xa_numa_counters_get(-1, &c);
    ck_assert_uint_eq(c.place_errors, 0);
    /* interleave over {0, 1}: chunks go to the nodes in turn, so the
     * first lands on node 0 and the second is refused (node 1 is absent) */
    xa_numa_install(&t, XA_NUMA_INTERLEAVE);
    ck_assert_int_eq(xa_numa_place_chunk(p, size, 0), 0);
    ck_assert_int_ne(xa_numa_place_chunk(p, size, 0), 0);
    ck_assert_int_eq(xa_numa_place_chunk(p, size, 0), 0);
    xa_numa_counters_get(0, &c);
    ck_assert_uint_eq(c.chunks_placed, 2);
    ck_assert_uint_eq(c.place_errors, 1);
    /* a mapping bigger than a chunk is interleaved page by page; the
     * kernel keeps the nodes it has (the mask is cut to mems_allowed) */
    size_t big = (size_t)4 << 20;
    char *q = map(big);
    ck_assert_int_eq(xa_numa_place_chunk(q, big, 0), 0);
    munmap(q, big);
    /* interleave over {0} alone is inactive: nothing to spread */
    ck_assert_int_eq(xa_numa_topo_restrict_list(&t, "0"), 0);
    xa_numa_topo_finish(&t);
    xa_numa_install(&t, XA_NUMA_INTERLEAVE);
    ck_assert(!xa_numa_active);
    munmap(p, size);
    cleanup_root();
}
END_TEST

START_TEST(recheck_reports_the_slot_once_then_only_changes)
{
    host_plus_fake_node();
    xa_numa_thread th = {0, 0};
    ck_assert_int_eq(xa_numa_recheck(&th), 0); /* first call: where we run */
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(xa_numa_recheck(&th), -1);
    ck_assert_int_eq(xa_numa_current_node(), 0);
    /* a thread that believed it was on slot 1 is told it is on 0, within
     * XA_NUMA_RECHECK_EVERY calls */
    th.slot = 2;
    int seen = -1, calls = 0;
    while (seen < 0 && calls < XA_NUMA_RECHECK_EVERY + 1) {
        seen = xa_numa_recheck(&th);
        calls++;
    }
    ck_assert_int_eq(seen, 0);
    cleanup_root();
}
END_TEST

START_TEST(cpu_now_agrees_with_the_kernel)
{
    /* Pinned to one CPU, so that the answer cannot change between calls:
     * the rseq read and getcpu(2) must give the same CPU. */
    cpu_set_t set;
    CPU_ZERO(&set);
    ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            last = c;
    ck_assert_int_ge(last, 0);
    CPU_ZERO(&set);
    CPU_SET(last, &set);
    ck_assert_int_eq(sched_setaffinity(0, sizeof set, &set), 0);
    unsigned cpu = 0;
    ck_assert_int_eq((int)syscall(SYS_getcpu, &cpu, NULL, NULL), 0);
    ck_assert_int_eq(xa_os_cpu_now(), (int)cpu);
    ck_assert_int_eq(xa_os_cpu_now(), last);
    /* glibc 2.35 and later register rseq unless a tunable turns it off */
    const char *tun = getenv("GLIBC_TUNABLES");
    if (!tun || !strstr(tun, "rseq=0"))
        ck_assert(xa_os_cpu_now_is_cheap());
}
END_TEST

START_TEST(this_machine_boots_as_before)
{
    /* The real boot on this one-node machine: one slot, inactive, and the
     * legacy calls do nothing. */
    xa_config_reset_for_test();
    xa_numa_boot();
    ck_assert_int_eq(xa_numa_online_count(), 1);
    ck_assert_int_eq(xa_numa_nodes, 1);
    ck_assert(!xa_numa_active);
    ck_assert_int_eq(xa_numa_current_node(), 0);
    ck_assert_int_eq(xa_numa_node_of_slot(0), 0);
    char buf[256];
    xa_numa_describe(buf, sizeof buf);
    ck_assert_msg(strstr(buf, "on (inactive)") == buf, "%s", buf);
}
END_TEST

static Suite *numa_suite(void)
{
    Suite *s = suite_create("numa");
    TCase *tc = tcase_create("topology");
    tcase_add_test(tc, node_lists_parse_like_sysfs);
    tcase_add_test(tc, two_nodes_give_two_slots_and_cpu_map);
    tcase_add_test(tc, four_nodes_order_neighbours_by_distance);
    tcase_add_test(tc, holes_in_node_numbering_map_to_dense_slots);
    tcase_add_test(tc, cpuset_without_some_nodes_keeps_arenas_on_allowed_ones);
    tcase_add_test(tc, one_allowed_node_means_no_placement);
    tcase_add_test(tc, restriction_to_no_online_node_is_refused);
    tcase_add_test(tc, absent_node_directory_is_a_node_without_cpus);
    tcase_add_test(tc, distance_rows_of_the_wrong_length_are_ignored);
    tcase_add_test(tc, no_node_directory_is_one_node);
    tcase_add_test(tc, numa_off_makes_one_set_of_arenas);
    suite_add_tcase(s, tc);
    TCase *sys = tcase_create("system");
    tcase_add_test(sys, placement_on_a_real_node_succeeds_and_is_counted);
    tcase_add_test(sys, placement_on_an_absent_node_fails_softly);
    tcase_add_test(sys, recheck_reports_the_slot_once_then_only_changes);
    tcase_add_test(sys, cpu_now_agrees_with_the_kernel);
    tcase_add_test(sys, this_machine_boots_as_before);
    suite_add_tcase(s, sys);
    return s;
}

XA_UNIT_MAIN(numa_suite)
