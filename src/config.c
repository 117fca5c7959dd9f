/* config.c: the tuning layer. Expands the option table (options.def) into
 * defaults, a parser for XALLOC_CONF and the configuration file, range
 * checks, the verbose dump, introspection and xalloc_config_get/set.
 *
 * Layer: side module. Calls os (raw open/read/write, environ, exe name)
 * and nothing above it. It runs before the allocator exists, so it never
 * allocates and never touches stdio: the file goes into a static buffer,
 * values are parsed as slices of their source, messages are built on the
 * stack and written with one write(2) each. Bad input never stops the
 * process unless abort_on_error is set: each error is one line on stderr
 * and the previous value (normally the default) stays. */
#include "config.h"

#include <errno.h>
#include <stddef.h>

#include "common.h"
#include "os.h"
#include "xalloc.h"

/* ---- the table ---- */

enum opt_type { XA_T_BOOL, XA_T_INT, XA_T_SIZE, XA_T_DURATION, XA_T_ENUM, XA_T_STRING };

#define XA_OF_RUNTIME 1u
#define XA_OF_ONOFF 2u
#define XA_OF_PROF 4u
#define XA_OF_PER_CPU 8u
#define XA_OF_ABSPATH 16u

struct opt_desc {
    const char *name;
    const char *def;
    const char *values; /* ENUM: "a|b|c" */
    const char *doc;
    int64_t min, max;
    uint32_t offset; /* of the field in struct xa_options */
    uint16_t size;
    uint8_t type, flags;
};

#define XA_FIELD_SIZE(n) sizeof(((struct xa_options *)0)->n)

static const struct opt_desc opts[] = {
#define XA_OPTION(n, t, d, lo, hi, v, f, doc_)                                 \
    {#n, d, v, doc_, lo, hi, offsetof(struct xa_options, n), XA_FIELD_SIZE(n), \
     XA_T_##t, f},
#include "options.def"
#undef XA_OPTION
};

enum {
#define XA_OPTION(n, ...) XA_OI_##n,
#include "options.def"
#undef XA_OPTION
    NOPT
};
/* Options set by one xalloc_config_set() call are tracked in a 64-bit mask. */
_Static_assert(NOPT <= 64, "too many options for the set mask");

/* A row's type must match the width of its xa_options field, since values
 * are stored through the offset. */
#define XA_SIZE_OK_BOOL(s) ((s) == sizeof(bool))
#define XA_SIZE_OK_INT(s) ((s) == sizeof(int64_t))
#define XA_SIZE_OK_SIZE(s) ((s) == sizeof(uint64_t))
#define XA_SIZE_OK_DURATION(s) ((s) == sizeof(int64_t))
#define XA_SIZE_OK_ENUM(s) ((s) == sizeof(int))
#define XA_SIZE_OK_STRING(s) ((s) > 1)
#define XA_OPTION(n, t, ...)                                                   \
    _Static_assert(XA_SIZE_OK_##t(XA_FIELD_SIZE(n)),                            \
                   "xa_options." #n " does not fit type " #t);
#include "options.def"
#undef XA_OPTION

struct xa_options xa_opt;

/* Where each effective value came from. */
enum { SRC_DEFAULT, SRC_FILE, SRC_ENV, SRC_RUNTIME };
static uint8_t opt_src[NOPT];
static uint32_t opt_line[NOPT];
static char file_src[512];  /* path of the file that set values */
static char file_buf[XA_CONF_FILE_MAX + 1]; /* +1 detects oversized files */
static int init_state;      /* 0 not started, 1 running, 2 done */
static void (*msg_hook)(const char *line, size_t len);

/* ---- small string helpers (no libc: this runs before malloc exists) ---- */

static size_t cstrlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

/* Copies a C string, truncating; always NUL-terminates when len > 0. */
static void copy_cstr(char *dst, const char *src, size_t len)
{
    size_t i = 0;
    if (!len)
        return;
    for (; src[i] && i + 1 < len; i++)
        dst[i] = src[i];
    dst[i] = 0;
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' ||
           c == '\n';
}

static void trim(const char **p, size_t *n)
{
    while (*n && is_space(**p))
        (*p)++, (*n)--;
    while (*n && is_space((*p)[*n - 1]))
        (*n)--;
}

/* Case-insensitive comparison of a slice with a C string. */
static bool slice_ieq(const char *p, size_t n, const char *s)
{
    size_t i = 0;
    for (; i < n; i++)
        if (!s[i] || lower((unsigned char)p[i]) != lower((unsigned char)s[i]))
            return false;
    return s[i] == 0;
}

static bool slice_eq(const char *p, size_t n, const char *s)
{
    size_t i = 0;
    for (; i < n; i++)
        if (!s[i] || p[i] != s[i])
            return false;
    return s[i] == 0;
}

/* Bounded string builder: always NUL-terminated, silently truncates. */
struct sb {
    char *buf;
    size_t cap, len;
};

static void sb_mem(struct sb *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n && s->len + 1 < s->cap; i++)
        s->buf[s->len++] = p[i];
    if (s->cap)
        s->buf[s->len] = 0;
}

static void sb_str(struct sb *s, const char *p)
{
    sb_mem(s, p, cstrlen(p));
}

static void sb_u64(struct sb *s, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    sb_mem(s, tmp + i, sizeof tmp - i);
}

static void sb_i64(struct sb *s, int64_t v)
{
    if (v < 0) {
        sb_str(s, "-");
        sb_u64(s, (uint64_t)0 - (uint64_t)v);
    } else {
        sb_u64(s, (uint64_t)v);
    }
}

/* Appends bytes made safe for a terminal and a log line: printable ASCII
 * as is, everything else (binary, newlines, UTF-8) as \xNN. At most limit
 * input bytes; more is shown as "...". */
static void sb_escaped(struct sb *s, const char *p, size_t n, size_t limit)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        if (i == limit) {
            sb_str(s, "...");
            return;
        }
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            sb_mem(s, (const char *)&c, 1);
        } else if (c == '\\') {
            sb_str(s, "\\\\");
        } else {
            char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            sb_mem(s, e, 4);
        }
    }
}

#define VALUE_SHOWN 64 /* bytes of a bad value echoed in a message */

static void sb_quoted(struct sb *s, const char *p, size_t n)
{
    sb_str(s, "'");
    sb_escaped(s, p, n, VALUE_SHOWN);
    sb_str(s, "'");
}

/* ---- values: parse, store, format ---- */

enum { PV_OK, PV_BAD, PV_RANGE };

/* Decimal digits at p; *used gets their count. Returns false on overflow. */
static bool parse_digits(const char *p, size_t n, uint64_t *out, size_t *used)
{
    uint64_t v = 0;
    bool ok = true;
    size_t i = 0;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
        unsigned d = (unsigned)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            ok = false;
        else
            v = v * 10 + d;
    }
    *out = v;
    *used = i;
    return ok;
}

static int check_range(const struct opt_desc *d, uint64_t v, bool overflow,
                       int64_t *out)
{
    if (overflow || v > (uint64_t)INT64_MAX || (int64_t)v < d->min ||
        (int64_t)v > d->max)
        return PV_RANGE;
    *out = (int64_t)v;
    return PV_OK;
}

static int parse_bool(const char *p, size_t n, int64_t *out)
{
    static const char *const yes[] = {"true", "on", "yes", "1"};
    static const char *const no[] = {"false", "off", "no", "0"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (slice_ieq(p, n, yes[i])) {
            *out = 1;
            return PV_OK;
        }
        if (slice_ieq(p, n, no[i])) {
            *out = 0;
            return PV_OK;
        }
    }
    return PV_BAD;
}

static int parse_enum(const char *values, const char *p, size_t n, int64_t *out)
{
    const char *v = values;
    for (int64_t idx = 0;; idx++) {
        size_t len = 0;
        while (v[len] && v[len] != '|')
            len++;
        if (len == n) {
            size_t i = 0;
            while (i < n && lower((unsigned char)p[i]) == v[i])
                i++;
            if (i == n) {
                *out = idx;
                return PV_OK;
            }
        }
        if (!v[len])
            return PV_BAD;
        v += len + 1;
    }
}

static int parse_number(const struct opt_desc *d, const char *p, size_t n,
                        int64_t *out)
{
    uint64_t v;
    size_t used;
    bool neg = false;
    if (d->type == XA_T_INT && n && (p[0] == '-' || p[0] == '+')) {
        neg = p[0] == '-';
        p++, n--;
    }
    bool ok = parse_digits(p, n, &v, &used);
    if (!used)
        return PV_BAD;
    const char *suf = p + used;
    size_t sn = n - used;
    uint64_t mul = 1;
    if (d->type == XA_T_INT) {
        if (sn)
            return PV_BAD;
        if (neg) {
            if (!ok || v > (uint64_t)INT64_MAX + 1)
                return PV_RANGE;
            int64_t sv = v ? -(int64_t)(v - 1) - 1 : 0;
            if (sv < d->min || sv > d->max)
                return PV_RANGE;
            *out = sv;
            return PV_OK;
        }
    } else if (d->type == XA_T_SIZE) {
        static const char *const sfx[] = {"", "b", "k", "kb", "kib", "m", "mb",
                                          "mib", "g", "gb", "gib"};
        static const uint8_t shift[] = {0, 0, 10, 10, 10, 20, 20, 20, 30, 30, 30};
        size_t i = 0;
        while (i < sizeof shift && !slice_ieq(suf, sn, sfx[i]))
            i++;
        if (i == sizeof shift)
            return PV_BAD;
        mul = (uint64_t)1 << shift[i];
    } else { /* DURATION */
        if (slice_ieq(suf, sn, "s"))
            mul = 1000;
        else if (sn && !slice_ieq(suf, sn, "ms"))
            return PV_BAD;
    }
    if (v > UINT64_MAX / mul)
        ok = false;
    return check_range(d, v * mul, !ok, out);
}

/* Parses a non-string value; *out is the value to store. */
static int parse_value(const struct opt_desc *d, const char *p, size_t n,
                       int64_t *out)
{
    switch (d->type) {
    case XA_T_BOOL:
        return parse_bool(p, n, out);
    case XA_T_ENUM: {
        int rc = parse_enum(d->values, p, n, out);
        /* An enum whose first values are off|on (background_thread) also
         * takes the boolean words, so configurations written when it was a
         * boolean keep their meaning. */
        if (rc != PV_OK && slice_eq(d->values, 7, "off|on|") && parse_bool(p, n, out) == PV_OK)
            return PV_OK;
        return rc;
    }
    default:
        return parse_number(d, p, n, out);
    }
}

/* Stores are atomic so that xalloc_config_set() may run while other threads
 * read xa_opt; the fields are naturally aligned scalars. */
static void store_num(struct xa_options *o, const struct opt_desc *d, int64_t v)
{
    char *f = (char *)o + d->offset;
    switch (d->type) {
    case XA_T_BOOL:
        __atomic_store_n((bool *)(void *)f, v != 0, __ATOMIC_RELAXED);
        break;
    case XA_T_ENUM:
        __atomic_store_n((int *)(void *)f, (int)v, __ATOMIC_RELAXED);
        break;
    default:
        __atomic_store_n((int64_t *)(void *)f, v, __ATOMIC_RELAXED);
        break;
    }
}

static int64_t load_num(const struct xa_options *o, const struct opt_desc *d)
{
    const char *f = (const char *)o + d->offset;
    switch (d->type) {
    case XA_T_BOOL:
        return __atomic_load_n((const bool *)(const void *)f, __ATOMIC_RELAXED);
    case XA_T_ENUM:
        return __atomic_load_n((const int *)(const void *)f, __ATOMIC_RELAXED);
    default:
        return __atomic_load_n((const int64_t *)(const void *)f, __ATOMIC_RELAXED);
    }
}

static void store_string(struct xa_options *o, const struct opt_desc *d,
                         const char *p, size_t n)
{
    char *f = (char *)o + d->offset;
    size_t i = 0;
    for (; i < n && i + 1 < d->size; i++)
        f[i] = p[i];
    f[i] = 0;
}

static void sb_size(struct sb *s, uint64_t v)
{
    static const char unit[] = "gmk";
    for (int i = 0; i < 3 && v; i++) {
        uint64_t m = (uint64_t)1 << (30 - 10 * i);
        if (v % m == 0) {
            sb_u64(s, v / m);
            sb_mem(s, &unit[i], 1);
            return;
        }
    }
    sb_u64(s, v);
}

static void sb_number(struct sb *s, const struct opt_desc *d, int64_t v)
{
    if (d->type == XA_T_SIZE)
        sb_size(s, (uint64_t)v);
    else
        sb_i64(s, v);
}

/* The effective value as the table prints it ("never", "8", "256k"). */
static void sb_value(struct sb *s, const struct opt_desc *d,
                     const struct xa_options *o)
{
    if (d->type == XA_T_STRING) {
        sb_str(s, (const char *)o + d->offset);
        return;
    }
    int64_t v = load_num(o, d);
    if (d->type == XA_T_BOOL) {
        if (d->flags & XA_OF_ONOFF)
            sb_str(s, v ? "on" : "off");
        else
            sb_str(s, v ? "true" : "false");
    } else if (d->type == XA_T_ENUM) {
        const char *e = d->values;
        for (int64_t i = 0; i < v && *e; e++)
            if (*e == '|')
                i++;
        size_t len = 0;
        while (e[len] && e[len] != '|')
            len++;
        sb_mem(s, e, len);
    } else {
        sb_number(s, d, v);
    }
}

/* The value for a message or a dump line: escaped, "" when empty. */
static void sb_value_shown(struct sb *s, const struct opt_desc *d,
                           const struct xa_options *o)
{
    char tmp[300];
    struct sb t = {tmp, sizeof tmp, 0};
    sb_value(&t, d, o);
    if (!t.len)
        sb_str(s, "\"\"");
    else
        sb_escaped(s, tmp, t.len, sizeof tmp);
}

static int64_t ncpus_default(const struct opt_desc *d, int64_t per_cpu)
{
    int64_t n = per_cpu * xa_os_ncpus();
    return n < d->min ? d->min : n > d->max ? d->max : n;
}

static void set_defaults(struct xa_options *o)
{
    for (int i = 0; i < NOPT; i++) {
        const struct opt_desc *d = &opts[i];
        const char *def = d->def;
        size_t n = cstrlen(def);
        int64_t v = 0;
        if (d->type == XA_T_STRING) {
            store_string(o, d, def, n);
            continue;
        }
        if (d->flags & XA_OF_PER_CPU) {
            uint64_t k;
            size_t used;
            parse_digits(def, n, &k, &used);
            v = ncpus_default(d, (int64_t)k);
        } else if (parse_value(d, def, n, &v) != PV_OK) {
            xa_assert(!"option default does not parse");
        }
        store_num(o, d, v);
    }
}

/* ---- messages ---- */

#define MSG_MAX 768

struct pctx {
    struct xa_options *opt; /* values being built */
    bool track;             /* record provenance in opt_src/opt_line */
    uint8_t kind;           /* SRC_FILE, SRC_ENV or SRC_RUNTIME */
    const char *name;       /* source in messages: "XALLOC_CONF", a path */
    uint32_t lineno;        /* current line of a file; 0 otherwise */
    uint32_t seen[NOPT];    /* where set in the current scope (1 + line) */
    uint64_t set_mask;      /* options set by this source */
    int errors;
    char *out;              /* runtime: the first message goes here */
    size_t out_len;
};

static void emit_line(const char *buf, size_t len)
{
    if (msg_hook)
        msg_hook(buf, len);
    else
        xa_os_write_stderr(buf, len);
}

/* Messages are built in m with room kept for the final newline. */
struct msg {
    struct sb sb;
    char buf[MSG_MAX];
};

static void msg_begin(struct pctx *c, struct msg *m)
{
    m->sb = (struct sb){m->buf, MSG_MAX - 1, 0};
    m->buf[0] = 0;
    if (!c->out)
        sb_str(&m->sb, "xalloc: ");
    sb_escaped(&m->sb, c->name, cstrlen(c->name), 300);
    if (c->lineno) {
        sb_str(&m->sb, ":");
        sb_u64(&m->sb, c->lineno);
    }
    sb_str(&m->sb, ": ");
}

/* Ends an error message: counted, then written (or kept for the caller of
 * xalloc_config_set, who gets the first one). */
static void msg_error(struct pctx *c, struct msg *m)
{
    c->errors++;
    if (c->out) {
        if (c->errors == 1 && c->out_len)
            copy_cstr(c->out, m->buf, c->out_len);
        return;
    }
    m->buf[m->sb.len++] = '\n';
    emit_line(m->buf, m->sb.len);
}

static void msg_using(struct pctx *c, struct msg *m, const struct opt_desc *d)
{
    sb_str(&m->sb, "; using ");
    sb_value_shown(&m->sb, d, c->opt);
    msg_error(c, m);
}

static const char *errno_text(int e)
{
    switch (e) {
    case ENOENT: return "no such file";
    case EACCES: return "permission denied";
    case EISDIR: return "is a directory";
    case ENOTDIR: return "a path component is not a directory";
    case ELOOP: return "too many symbolic links";
    case ENAMETOOLONG: return "path too long";
    case EIO: return "input/output error";
    case EMFILE: case ENFILE: return "too many open files";
    case ENOMEM: return "out of memory";
    case EPERM: return "operation not permitted";
    case ENXIO: case ENODEV: return "no such device";
    default: return "error";
    }
}

/* ---- unknown keys: suggest the nearest name ---- */

#define KEY_CMP_MAX 32

/* Optimal string alignment distance, case-insensitive, on short keys. */
static unsigned edit_distance(const char *a, size_t an, const char *b, size_t bn)
{
    unsigned row[3][KEY_CMP_MAX + 1];
    unsigned *pp = row[0], *prev = row[1], *cur = row[2];
    for (size_t j = 0; j <= bn; j++)
        prev[j] = (unsigned)j;
    for (size_t i = 1; i <= an; i++) {
        cur[0] = (unsigned)i;
        for (size_t j = 1; j <= bn; j++) {
            int ca = lower((unsigned char)a[i - 1]), cb = lower((unsigned char)b[j - 1]);
            unsigned v = prev[j - 1] + (ca != cb);
            v = XA_MIN(v, prev[j] + 1);
            v = XA_MIN(v, cur[j - 1] + 1);
            if (i > 1 && j > 1 && ca == lower((unsigned char)b[j - 2]) &&
                lower((unsigned char)a[i - 2]) == cb)
                v = XA_MIN(v, pp[j - 2] + 1);
            cur[j] = v;
        }
        unsigned *t = pp;
        pp = prev, prev = cur, cur = t;
    }
    return prev[bn];
}

static bool iprefix(const char *a, size_t an, const char *b, size_t bn)
{
    if (an > bn)
        return false;
    for (size_t i = 0; i < an; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return false;
    return true;
}

/* True if name occurs in key, case-insensitively. */
static bool icontains(const char *key, size_t kn, const char *name, size_t nn)
{
    for (size_t i = 0; i + nn <= kn; i++)
        if (iprefix(name, nn, key + i, kn - i))
            return true;
    return false;
}

/* Length of the common prefix up to and including its last '_'. */
static size_t common_word(const char *a, size_t an, const char *b, size_t bn)
{
    size_t w = 0;
    for (size_t i = 0; i < an && i < bn && lower((unsigned char)a[i]) == b[i]; i++)
        if (b[i] == '_')
            w = i + 1;
    return w;
}

/* Nearest option among the close ones: a small edit distance, a name
 * inside the key ("thp_mode" -> "thp"), a key that starts a name ("decay"
 * -> "decay_ms"), or the same first word ("tcache_size" -> "tcache_max");
 * -1 if nothing is close. */
static int suggest(const char *key, size_t kn)
{
    if (kn > KEY_CMP_MAX)
        return -1;
    int best = -1;
    unsigned best_d = ~0u;
    for (int i = 0; i < NOPT; i++) {
        const char *name = opts[i].name;
        size_t nn = cstrlen(name);
        bool related = (nn >= 3 && icontains(key, kn, name, nn)) ||
                       (kn >= 3 && iprefix(key, kn, name, nn)) ||
                       common_word(key, kn, name, nn) >= 4;
        if (!related && (kn > nn + 2 || nn > kn + 2))
            continue; /* too far apart for a typo: skip the distance */
        unsigned d = edit_distance(key, kn, name, nn);
        bool close = related || d <= (nn <= 4 ? 1u : 2u);
        if (close && d < best_d)
            best = i, best_d = d;
    }
    return best;
}

static void report_unknown(struct pctx *c, const char *key, size_t kn)
{
    struct msg m;
    msg_begin(c, &m);
    sb_str(&m.sb, "unknown option ");
    sb_quoted(&m.sb, key, kn);
    int s = suggest(key, kn);
    if (s >= 0) {
        sb_str(&m.sb, " (did you mean '");
        sb_str(&m.sb, opts[s].name);
        sb_str(&m.sb, "'?)");
    } else {
        sb_str(&m.sb, " (known:");
        for (int i = 0; i < NOPT; i++) {
            sb_str(&m.sb, i ? ", " : " ");
            sb_str(&m.sb, opts[i].name);
        }
        sb_str(&m.sb, ")");
    }
    msg_error(c, &m);
}

/* ---- items, lists, files ---- */

static int find_option(const char *key, size_t kn)
{
    for (int i = 0; i < NOPT; i++)
        if (slice_eq(key, kn, opts[i].name))
            return i;
    return -1;
}

static void report_bad_value(struct pctx *c, const struct opt_desc *d,
                             const char *v, size_t vn, int why)
{
    struct msg m;
    msg_begin(c, &m);
    sb_str(&m.sb, d->name);
    sb_str(&m.sb, ": ");
    sb_quoted(&m.sb, v, vn);
    if (why == PV_RANGE) {
        sb_str(&m.sb, " is out of range ");
        sb_number(&m.sb, d, d->min);
        sb_str(&m.sb, "..");
        sb_number(&m.sb, d, d->max);
    } else {
        switch (d->type) {
        case XA_T_BOOL:
            sb_str(&m.sb, " is not a boolean (true|false|on|off|yes|no|1|0)");
            break;
        case XA_T_INT:
            sb_str(&m.sb, " is not an integer");
            break;
        case XA_T_SIZE:
            sb_str(&m.sb, " is not a size (bytes, or with a k, m or g suffix)");
            break;
        case XA_T_DURATION:
            sb_str(&m.sb, " is not a duration (ms, or with an ms or s suffix)");
            break;
        case XA_T_ENUM:
            sb_str(&m.sb, " is not one of ");
            sb_str(&m.sb, d->values);
            break;
        default:
            break;
        }
    }
    msg_using(c, &m, d);
}

/* Checks a string value; appends the complaint to m, false if none. */
static bool string_problem(struct sb *m, const struct opt_desc *d,
                           const char *v, size_t vn)
{
    if (vn + 1 > d->size) {
        sb_str(m, " is longer than ");
        sb_u64(m, d->size - 1u);
        sb_str(m, " bytes");
        return true;
    }
    for (size_t i = 0; i < vn; i++) {
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
            sb_str(m, " contains control characters");
            return true;
        }
    }
    if ((d->flags & XA_OF_ABSPATH) && vn && v[0] != '/') {
        sb_str(m, " is not an absolute path");
        return true;
    }
    return false;
}

static void runtime_refused(struct pctx *c, const struct opt_desc *d)
{
    struct msg m;
    msg_begin(c, &m);
    sb_str(&m.sb, d->name);
    sb_str(&m.sb, ": cannot change at run time (only");
    const char *sep = " ";
    for (int i = 0; i < NOPT; i++) {
        if (opts[i].flags & XA_OF_RUNTIME) {
            sb_str(&m.sb, sep);
            sb_str(&m.sb, opts[i].name);
            sep = ", ";
        }
    }
    sb_str(&m.sb, " can)");
    msg_using(c, &m, d);
}

/* One "key:value" (or "key=value"). */
static void parse_item(struct pctx *c, const char *p, size_t n)
{
    trim(&p, &n);
    if (!n)
        return; /* empty items (",,", a trailing comma) are harmless */
    size_t k = 0;
    while (k < n && p[k] != ':' && p[k] != '=')
        k++;
    const char *key = p, *val = p + k + 1;
    size_t kn = k, vn = k < n ? n - k - 1 : 0;
    bool has_value = k < n;
    trim(&key, &kn);
    trim(&val, &vn);
    struct msg m;
    if (!kn) {
        msg_begin(c, &m);
        sb_str(&m.sb, "missing option name in ");
        sb_quoted(&m.sb, p, n);
        sb_str(&m.sb, "; ignored");
        msg_error(c, &m);
        return;
    }
    int i = find_option(key, kn);
    if (i < 0) {
        report_unknown(c, key, kn);
        return;
    }
    const struct opt_desc *d = &opts[i];
    if (c->kind == SRC_RUNTIME && !(d->flags & XA_OF_RUNTIME)) {
        runtime_refused(c, d);
        return;
    }
    if (!has_value || (!vn && d->type != XA_T_STRING)) {
        msg_begin(c, &m);
        sb_str(&m.sb, d->name);
        sb_str(&m.sb, ": missing value (expected ");
        sb_str(&m.sb, d->name);
        sb_str(&m.sb, ":VALUE)");
        msg_using(c, &m, d);
        return;
    }
    if (d->type == XA_T_STRING) {
        msg_begin(c, &m);
        sb_str(&m.sb, d->name);
        sb_str(&m.sb, ": ");
        sb_quoted(&m.sb, val, vn);
        if (string_problem(&m.sb, d, val, vn)) {
            msg_using(c, &m, d);
            return;
        }
        store_string(c->opt, d, val, vn);
    } else {
        int64_t v;
        int r = parse_value(d, val, vn, &v);
        if (r != PV_OK) {
            report_bad_value(c, d, val, vn, r);
            return;
        }
        store_num(c->opt, d, v);
    }
    if (c->seen[i]) {
        /* Later wins, as between sources; but say so, it is often a typo. */
        msg_begin(c, &m);
        sb_str(&m.sb, d->name);
        sb_str(&m.sb, ": set more than once");
        if (c->kind == SRC_FILE) {
            sb_str(&m.sb, " (first at line ");
            sb_u64(&m.sb, c->seen[i] - 1);
            sb_str(&m.sb, ")");
        }
        msg_using(c, &m, d);
    }
    c->seen[i] = c->lineno + 1;
    c->set_mask |= (uint64_t)1 << i;
    if (c->track) {
        opt_src[i] = c->kind;
        opt_line[i] = c->lineno;
    }
}

/* "key:value,key:value" */
static void parse_list(struct pctx *c, const char *p, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || p[i] == ',') {
            parse_item(c, p + start, i - start);
            start = i + 1;
        }
    }
}

/* The executable name is read only if the file has a section. */
struct exe_ref {
    const char *name;
    char buf[256];
};

static bool exe_matches(struct exe_ref *e, const char *p, size_t n)
{
    if (!e->name) {
        e->buf[0] = 0;
        e->name = xa_os_exe_name(e->buf, sizeof e->buf);
        if (!e->name)
            e->name = "";
    }
    return slice_eq(p, n, e->name);
}

/* Pass 0 applies the lines before any section, pass 1 those of sections
 * naming this executable, so a matching section overrides the global lines
 * wherever it stands. Problems are reported only for lines that apply to
 * this process (plus malformed section headers, once), so one service's
 * section does not make every other process on the host complain. */
static void parse_file_pass(struct pctx *c, const char *buf, size_t len,
                            struct exe_ref *exe, int pass)
{
    bool in_section = false, match = false;
    uint32_t lineno = 0;
    struct msg m;
    for (size_t pos = 0; pos < len;) {
        size_t end = pos;
        bool nul = false;
        while (end < len && buf[end] != '\n') {
            nul |= buf[end] == 0;
            end++;
        }
        const char *line = buf + pos;
        size_t n = end - pos;
        pos = end + 1;
        lineno++;
        c->lineno = lineno;
        bool applies = pass == 0 ? !in_section : in_section && match;
        if (n > XA_CONF_LINE_MAX || nul) {
            if (applies) {
                msg_begin(c, &m);
                if (nul) {
                    sb_str(&m.sb, "line contains a NUL byte; skipped");
                } else {
                    sb_str(&m.sb, "line longer than ");
                    sb_u64(&m.sb, XA_CONF_LINE_MAX);
                    sb_str(&m.sb, " bytes; skipped");
                }
                msg_error(c, &m);
            }
            continue;
        }
        for (size_t i = 0; i < n; i++)
            if (line[i] == '#')
                n = i;
        trim(&line, &n);
        if (!n)
            continue;
        if (line[0] == '[') {
            const char *name = line + 1;
            size_t nn = 0;
            if (n >= 2 && line[n - 1] == ']') {
                nn = n - 2;
                trim(&name, &nn);
            }
            /* A malformed header still opens a section, one that matches
             * nothing: its options were not meant for every program. */
            in_section = true;
            match = nn && exe_matches(exe, name, nn);
            if (!nn && pass == 0) {
                msg_begin(c, &m);
                sb_str(&m.sb, "malformed section header ");
                sb_quoted(&m.sb, line, n);
                sb_str(&m.sb, "; its options are ignored");
                msg_error(c, &m);
            }
            continue;
        }
        if (applies)
            parse_list(c, line, n);
    }
    c->lineno = 0;
}

static int parse_file_text(const char *buf, size_t len, const char *exe_name)
{
    struct pctx c = {.opt = &xa_opt, .track = true, .kind = SRC_FILE,
                     .name = file_src};
    struct exe_ref exe = {.name = exe_name};
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < NOPT; i++)
            c.seen[i] = 0;
        parse_file_pass(&c, buf, len, &exe, pass);
    }
    return c.errors;
}

static int file_problem(const char *what, int err)
{
    struct pctx c = {.name = file_src};
    struct msg m;
    msg_begin(&c, &m);
    sb_str(&m.sb, what);
    if (!err) {
        sb_u64(&m.sb, XA_CONF_FILE_MAX);
        sb_str(&m.sb, " bytes");
    } else {
        sb_str(&m.sb, " (");
        sb_str(&m.sb, errno_text(err));
        sb_str(&m.sb, ")");
    }
    sb_str(&m.sb, "; file ignored");
    msg_error(&c, &m);
    return 1;
}

static int parse_file(const char *path, bool explicit_path, const char *exe)
{
    copy_cstr(file_src, path, sizeof file_src);
    int fd = xa_os_open_read(path);
    if (fd < 0) {
        if (fd == -ENOENT && !explicit_path)
            return 0; /* no /etc/xalloc.conf is the normal case */
        return file_problem("cannot open", -fd);
    }
    size_t total = 0;
    int err = 0;
    while (total < sizeof file_buf) {
        ssize_t r = xa_os_read(fd, file_buf + total, sizeof file_buf - total);
        if (r < 0) {
            err = (int)-r;
            break;
        }
        if (r == 0)
            break;
        total += (size_t)r;
    }
    xa_os_close(fd);
    if (err)
        return file_problem("cannot read", err);
    if (total > XA_CONF_FILE_MAX)
        return file_problem("larger than ", 0);
    return parse_file_text(file_buf, total, exe);
}

/* ---- sources and start-up ---- */

static void reset_all(void)
{
    set_defaults(&xa_opt);
    for (int i = 0; i < NOPT; i++) {
        opt_src[i] = SRC_DEFAULT;
        opt_line[i] = 0;
    }
    file_src[0] = 0;
}

int xa_config_parse_sources(const char *file_path, bool file_explicit,
                            const char *env, const char *exe)
{
    reset_all();
    int errors = 0;
    if (file_path)
        errors += parse_file(file_path, file_explicit, exe);
    if (env) {
        struct pctx c = {.opt = &xa_opt, .track = true, .kind = SRC_ENV,
                         .name = "XALLOC_CONF"};
        parse_list(&c, env, cstrlen(env));
        errors += c.errors;
    }
    return errors;
}

int xa_config_parse_file_buffer(const char *buf, size_t len,
                                const char *source_name, const char *exe)
{
    copy_cstr(file_src, source_name, sizeof file_src);
    if (len > XA_CONF_FILE_MAX)
        return file_problem("larger than ", 0);
    return parse_file_text(buf, len, exe);
}

int xa_config_load(bool secure, const char *conf_env, const char *conf_file_env,
                   const char *exe)
{
    if (secure) /* as secure_getenv: users must not tune privileged processes */
        conf_env = conf_file_env = NULL;
    const char *path = XA_CONF_DEFAULT_FILE;
    if (conf_file_env)
        path = conf_file_env[0] ? conf_file_env : NULL;
    int errors = xa_config_parse_sources(path, conf_file_env != NULL, conf_env, exe);
    if (errors && xa_opt.abort_on_error) {
        struct pctx c = {.name = "config"};
        struct msg m;
        msg_begin(&c, &m);
        sb_u64(&m.sb, (uint64_t)errors);
        sb_str(&m.sb, errors == 1 ? " error" : " errors");
        sb_str(&m.sb, " and abort_on_error is set; aborting");
        msg_error(&c, &m);
        xa_os_abort();
    }
    if (xa_opt.verbose)
        xa_config_dump();
    return errors;
}

void xa_config_init(void)
{
    int state = 0;
    if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == 2)
        return;
    if (__atomic_compare_exchange_n(&init_state, &state, 1, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        const char *env = NULL, *file = NULL;
        bool secure = xa_os_secure_mode();
        if (!secure) {
            env = xa_os_getenv("XALLOC_CONF");
            file = xa_os_getenv("XALLOC_CONF_FILE");
        }
        xa_config_load(secure, env, file, NULL);
        __atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
        return;
    }
    /* Another thread is parsing (a few microseconds): wait for its values. */
    while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
        __asm__ __volatile__("" ::: "memory");
}

/* Parsed before main() even if the program never allocates, so that
 * "XALLOC_CONF=... LD_PRELOAD=libxalloc.so.1 /bin/true" reports errors and
 * verbose prints. Unit tests drive the parser themselves. */
__attribute__((constructor)) static void config_ctor(void)
{
    if (!xa_config_test)
        xa_config_init();
}

int xa_config_validate(const char *conf_string)
{
    struct xa_options scratch;
    set_defaults(&scratch);
    struct pctx c = {.opt = &scratch, .kind = SRC_ENV, .name = "XALLOC_CONF"};
    if (conf_string)
        parse_list(&c, conf_string, cstrlen(conf_string));
    return c.errors;
}

void xa_config_reset_for_test(void)
{
    reset_all();
    __atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
}

void xa_config_set_message_hook(void (*hook)(const char *line, size_t len))
{
    msg_hook = hook;
}

/* ---- introspection ---- */

static const char *source_name(int i)
{
    switch (__atomic_load_n(&opt_src[i], __ATOMIC_RELAXED)) {
    case SRC_FILE: return file_src;
    case SRC_ENV: return "XALLOC_CONF";
    case SRC_RUNTIME: return "runtime";
    default: return "default";
    }
}

void xa_config_dump(void)
{
    for (int i = 0; i < NOPT; i++) {
        char buf[MSG_MAX];
        struct sb s = {buf, sizeof buf - 1, 0};
        sb_str(&s, "xalloc: config: ");
        sb_str(&s, opts[i].name);
        sb_str(&s, "=");
        sb_value_shown(&s, &opts[i], &xa_opt);
        sb_str(&s, " (");
        const char *src = source_name(i);
        sb_escaped(&s, src, cstrlen(src), 300);
        if (opt_src[i] == SRC_FILE && opt_line[i]) {
            sb_str(&s, ":");
            sb_u64(&s, opt_line[i]);
        }
        sb_str(&s, ")");
        buf[s.len++] = '\n';
        emit_line(buf, s.len);
    }
}

int xa_config_option_count(void)
{
    return NOPT;
}

bool xa_config_option_info(int i, const char **name, char *value,
                           size_t value_len, const char **source,
                           const char **doc)
{
    if (i < 0 || i >= NOPT)
        return false;
    if (name)
        *name = opts[i].name;
    if (value && value_len) {
        struct sb s = {value, value_len, 0};
        value[0] = 0;
        sb_value(&s, &opts[i], &xa_opt);
    }
    if (source)
        *source = source_name(i);
    if (doc)
        *doc = opts[i].doc;
    return true;
}

/* ---- public API ---- */

XA_EXPORT int xalloc_config_get(const char *name, char *value, size_t value_len,
                                const char **source)
{
    if (!name)
        return -1;
    xa_config_init();
    int i = find_option(name, cstrlen(name));
    if (i < 0)
        return -1;
    xa_config_option_info(i, NULL, value, value_len, source, NULL);
    return 0;
}

void (*xa_config_on_change)(void);

XA_EXPORT int xalloc_config_set(const char *key_value, char *msg, size_t msg_len)
{
    char none;
    if (!msg || !msg_len)
        msg = &none, msg_len = 1;
    msg[0] = 0;
    xa_config_init();
    /* Validate every item against a copy first: all or nothing. */
    struct xa_options scratch = xa_opt;
    struct pctx c = {.opt = &scratch, .kind = SRC_RUNTIME,
                     .name = "xalloc_config_set", .out = msg, .out_len = msg_len};
    if (key_value)
        parse_list(&c, key_value, cstrlen(key_value));
    if (c.errors)
        return -1;
    if (!c.set_mask) {
        copy_cstr(msg, "xalloc_config_set: no option given (expected key:value)",
                   msg_len);
        return -1;
    }
    for (int i = 0; i < NOPT; i++) {
        if (!(c.set_mask & ((uint64_t)1 << i)))
            continue;
        store_num(&xa_opt, &opts[i], load_num(&scratch, &opts[i]));
        __atomic_store_n(&opt_line[i], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&opt_src[i], SRC_RUNTIME, __ATOMIC_RELAXED);
    }
    /* Let the core act on the change now (start the background thread,
     * re-time decay) rather than at its next slow path. */
    void (*hook)(void) = __atomic_load_n(&xa_config_on_change, __ATOMIC_ACQUIRE);
    if (hook)
        hook();
    return 0;
}
