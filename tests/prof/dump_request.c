/* dump_request.c: asks a live process for a heap profile through its
 * statistics file's request area (XALLOC_STATS_CMD_DUMP), as
 * `xalloc-stat --dump PID` does, and prints the process's answer (the path
 * of the dump) on stdout. The test uses it so that the request protocol is
 * tested whether or not this xalloc-stat has --dump yet.
 * Usage: dump_request PID [STATS_DIR]. Exit 0 when the process wrote a
 * dump, 1 when it refused or failed, 2 on usage or access errors. */
#include <stdio.h>
#include <stdlib.h>

#include "statfile.h"

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: dump_request PID [STATS_DIR]\n");
        return 2;
    }
    long pid = strtol(argv[1], NULL, 10);
    struct xs_file f;
    char note[256], err[512], msg[256];
    enum xs_status st = xs_open_pid(pid, argc == 3 ? argv[2] : NULL, true, &f, note,
                                    sizeof note, err, sizeof err);
    if (st != XS_OK) {
        fprintf(stderr, "dump_request: %s\n", err);
        return 2;
    }
    uint64_t result = 0;
    st = xs_request(&f, XALLOC_STATS_CMD_DUMP, NULL, 20000, &result, msg, sizeof msg);
    xs_close(&f);
    if (st != XS_OK) {
        fprintf(stderr, "dump_request: %s\n", msg);
        return 1;
    }
    printf("%s\n", msg);
    return 0;
}
