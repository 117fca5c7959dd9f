/* tests/harden/suidprobe.c: run set-uid root by an unprivileged user
 * (tests/harden/setuid.sh), linked with the library. Proves that in
 * secure mode (AT_SECURE) the environment does not configure xalloc:
 * XALLOC_CONF and XALLOC_CONF_FILE (which ask for junk and verbose and
 * a statistics directory owned by the user) are ignored, no statistics
 * file appears in that directory, and the file xalloc does create lies
 * where the real user cannot replace it (a directory the real user
 * cannot write, or a sticky one, and owned by the effective user).
 * argv[1]: the user's directory; argv[2]: "secure" or "plain" (the same
 * program without set-uid, as the control: there the environment must
 * apply); argv[3] present: also wait while setuid.sh, as the real user,
 * asks through the statistics file for decay_ms:7, which must not take.
 * Exit 0 when every check holds. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xalloc.h"

static int fails;
#define CHECK(c, ...) ((c) ? 0 : (fails++, fprintf(stderr, "FAIL: " __VA_ARGS__), fputc('\n', stderr)))

/* The statistics file is made on a slow-path tick: allocate until it is. */
static void churn(void)
{
    for (int r = 0; r < 40; r++) {
        void *p[512];
        for (int i = 0; i < 512; i++)
            p[i] = malloc((size_t)(i % 40 + 1) * 300);
        for (int i = 0; i < 512; i++)
            free(p[i]);
        usleep(5000);
    }
}

static int files_in(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strncmp(e->d_name, "xalloc", 6) == 0;
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    const char *udir = argc > 1 ? argv[1] : "/nonexistent";
    int secure = argc > 2 && !strcmp(argv[2], "secure");
    char val[256];
    const char *src = "";
    churn();
    CHECK((getauxval(AT_SECURE) != 0) == secure, "AT_SECURE is %lu", getauxval(AT_SECURE));
    xalloc_config_get("junk", val, sizeof val, &src);
    printf("junk=%s (%s)\n", val, src);
    if (secure)
        CHECK(!strcmp(val, "false") && !strcmp(src, "default"), "junk=%s from %s", val, src);
    else
        CHECK(!strcmp(val, "true"), "control: junk=%s, the environment did not apply", val);
    xalloc_config_get("stats_dir", val, sizeof val, &src);
    printf("stats_dir=%s (%s)\n", val, src);
    int in_user_dir = files_in(udir);
    printf("statistics files in the user's directory: %d\n", in_user_dir);
    if (secure) {
        CHECK(val[0] == 0, "stats_dir=%s taken from the environment", val);
        CHECK(in_user_dir == 0, "a statistics file was made in the user's directory");
        /* Where did it go? It must be where the real user cannot swap it. */
        char path[128];
        struct stat st, dst;
        const char *dirs[2] = {"/run/xalloc", "/dev/shm"};
        int found = 0;
        for (int i = 0; i < 2; i++) {
            if (i == 0)
                snprintf(path, sizeof path, "/run/xalloc/%d", (int)getpid());
            else
                snprintf(path, sizeof path, "/dev/shm/xalloc.%d", (int)getpid());
            if (lstat(path, &st) != 0)
                continue;
            found = 1;
            stat(dirs[i], &dst);
            int user_can_write = access(dirs[i], W_OK) == 0; /* real uid */
            printf("statistics file %s: owner %u mode %o; directory sticky %d, writable by the "
                   "real user %d\n",
                   path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
                   !!(dst.st_mode & S_ISVTX), user_can_write);
            CHECK(S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0,
                  "%s: not a private regular file of the effective user", path);
            CHECK(!user_can_write || (dst.st_mode & S_ISVTX),
                  "%s: in a directory the real user can write and rename in", path);
        }
        printf("statistics file made: %s\n", found ? "yes" : "no");
    } else {
        CHECK(in_user_dir == 1, "control: no statistics file in the user's stats_dir");
    }
    if (argc > 3) {
        /* setuid.sh asks, as the real user, through the statistics file for
         * decay_ms:7 meanwhile (xalloc-stat --set): a secure process must
         * not take it. */
        printf("ready\n");
        fflush(stdout);
        for (int i = 0; i < 40; i++)
            churn();
        xalloc_config_get("decay_ms", val, sizeof val, &src);
        printf("decay_ms=%s (%s) after the real user's request\n", val, src);
        CHECK(strcmp(val, "7") != 0, "the real user changed decay_ms through the statistics file");
    }
    return fails ? 1 : 0;
}
