/* stats_report.c: renders a struct xalloc_stats as the text report, JSON,
 * Prometheus exposition, the configuration table or a one-line summary.
 * Side module (stats); compiled into the library and into xalloc-stat.
 * Calls nothing but the caller's line writer: every line is built in a
 * stack buffer, so it is usable inside the allocator, at exit and from a
 * tool that never links src/. Field lists come from the X-macros of
 * xalloc_stats.h, so a new field reaches every format at once. */
#include "stats_report.h"

#include <stdbool.h>

#include <stddef.h>

/* ---- field tables ---- */

struct field {
    const char *name;
    const char *unit; /* "bytes" or "count" */
    const char *doc;
    size_t offset;
};

#define TOTAL_ROW(n, u, d) {#n, #u, d, offsetof(struct xalloc_stats, n)},
#define ARENA_ROW(n, u, d) {#n, #u, d, offsetof(struct xalloc_stats_arena, n)},
#define CLASS_ROW(n, u, d) {#n, #u, d, offsetof(struct xalloc_stats_class, n)},
static const struct field total_fields[] = {XALLOC_STATS_TOTALS(TOTAL_ROW)};
static const struct field arena_fields[] = {XALLOC_STATS_ARENA(ARENA_ROW)};
static const struct field class_fields[] = {XALLOC_STATS_CLASS(CLASS_ROW)};
#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

/* Arena columns of the first text table; the other fields (including any
 * added later) go to the second. */
static const char *const arena_main_columns[] = {
    "node", "threads", "allocated", "active", "mapped",
    "dirty", "retained", "huge_backed", "chunks",
};

static uint64_t field_value(const void *base, const struct field *f)
{
    return *(const uint64_t *)((const char *)base + f->offset);
}

static int str_eq(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

static size_t str_len(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

static int is_bytes(const struct field *f)
{
    return str_eq(f->unit, "bytes");
}

/* Cumulative figures are Prometheus counters; the rest are gauges. */
static int is_counter(const char *name)
{
    static const char *const counters[] = {"nmalloc", "nfree", "nrealloc", "npurge", "purged",
                                           "purged_at_free", "purged_slow_path", "purged_thread",
                                           "purged_trim", "thp_promotions", "thp_demotions"};
    for (size_t i = 0; i < NFIELDS(counters); i++)
        if (str_eq(name, counters[i]))
            return 1;
    return 0;
}

/* ---- line building ---- */

struct out {
    xa_report_write_fn write;
    void *arg;
    char buf[512];
    size_t len;
};

static void put_str(struct out *o, const char *s)
{
    /* Truncates overlong lines rather than splitting them: a line is a record. */
    while (*s && o->len < sizeof(o->buf) - 2)
        o->buf[o->len++] = *s++;
}

static void put_char(struct out *o, char c)
{
    if (o->len < sizeof(o->buf) - 2)
        o->buf[o->len++] = c;
}

static void end_line(struct out *o)
{
    o->buf[o->len++] = '\n';
    o->buf[o->len] = '\0';
    o->write(o->arg, o->buf);
    o->len = 0;
}

static char *fmt_u64(char *buf, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return buf;
}

static void put_u64(struct out *o, uint64_t v)
{
    char b[24];
    put_str(o, fmt_u64(b, v));
}

static void put_i64(struct out *o, long v)
{
    if (v < 0) {
        put_char(o, '-');
        put_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(o, (uint64_t)v);
    }
}

/* Right-aligns s in width columns (left-aligns if width < 0). */
static void put_col(struct out *o, const char *s, int width)
{
    size_t n = str_len(s);
    size_t w = (size_t)(width < 0 ? -width : width);
    if (width > 0)
        for (size_t i = n; i < w; i++)
            put_char(o, ' ');
    put_str(o, s);
    if (width < 0)
        for (size_t i = n; i < w; i++)
            put_char(o, ' ');
}

char *xa_stats_report_bytes(char *buf, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    unsigned u = 0;
    uint64_t unit = 1;
    while (u + 1 < NFIELDS(units) && bytes / unit >= 1024) {
        unit <<= 10;
        u++;
    }
    char *p = buf;
    uint64_t whole = bytes / unit;
    if (u > 0) {
        /* One decimal, rounded; 1023.96 KiB prints as "1024.0 KiB". */
        uint64_t tenths = ((bytes % unit) * 10 + unit / 2) / unit;
        if (tenths == 10) {
            whole++;
            tenths = 0;
        }
        fmt_u64(p, whole);
        while (*p)
            p++;
        *p++ = '.';
        *p++ = (char)('0' + tenths);
    } else {
        fmt_u64(p, whole);
        while (*p)
            p++;
    }
    *p++ = ' ';
    for (const char *s = units[u]; *s;)
        *p++ = *s++;
    *p = '\0';
    return buf;
}

/* "12.5%" from num/den, or "-" when den is 0. */
static char *fmt_percent(char *buf, uint64_t num, uint64_t den)
{
    if (den == 0) {
        buf[0] = '-';
        buf[1] = '\0';
        return buf;
    }
    uint64_t permille = (num >= UINT64_MAX / 1000) ? num / (den / 1000 + 1)
                                                   : (num * 1000 + den / 2) / den;
    char *p = buf;
    fmt_u64(p, permille / 10);
    while (*p)
        p++;
    *p++ = '.';
    *p++ = (char)('0' + permille % 10);
    *p++ = '%';
    *p = '\0';
    return buf;
}

/* "3.2 s", "4m05s", "2h10m", "3d04h" */
static char *fmt_duration(char *buf, uint64_t ns)
{
    uint64_t s = ns / 1000000000u;
    char *p = buf;
    char n[24];
    if (s < 60) {
        fmt_u64(n, s);
        for (const char *q = n; *q;)
            *p++ = *q++;
        *p++ = '.';
        *p++ = (char)('0' + (ns / 100000000u) % 10);
        *p++ = ' ';
        *p++ = 's';
        *p = '\0';
        return buf;
    }
    uint64_t big, small;
    char bu, su;
    if (s < 3600) {
        big = s / 60, small = s % 60, bu = 'm', su = 's';
    } else if (s < 86400) {
        big = s / 3600, small = s / 60 % 60, bu = 'h', su = 'm';
    } else {
        big = s / 86400, small = s / 3600 % 24, bu = 'd', su = 'h';
    }
    fmt_u64(n, big);
    for (const char *q = n; *q;)
        *p++ = *q++;
    *p++ = bu;
    *p++ = (char)('0' + small / 10);
    *p++ = (char)('0' + small % 10);
    *p++ = su;
    *p = '\0';
    return buf;
}

static unsigned clamp_arenas(const struct xalloc_stats *s)
{
    return s->arenas_count > XALLOC_STATS_MAX_ARENAS ? XALLOC_STATS_MAX_ARENAS
                                                     : s->arenas_count;
}

static unsigned clamp_classes(const struct xalloc_stats *s)
{
    return s->classes_count > XALLOC_STATS_MAX_CLASSES ? XALLOC_STATS_MAX_CLASSES
                                                       : s->classes_count;
}

/* ---- per NUMA node: the arenas summed by their node (format 1.2) ---- */

/* Arena fields a node sums over its arenas. */
#define NODE_SUMMED(X)                                                          \
    X(threads, count, "threads bound to those arenas")                        \
    X(allocated, bytes, "bytes in live blocks of the node's arenas")          \
    X(active, bytes, "bytes of pages holding live blocks")                    \
    X(resident, bytes, "bytes of the node's arenas resident in RAM (estimate)") \
    X(dirty, bytes, "bytes free but resident")                                \
    X(pages_sampled, count, "resident pages last sampled for their node")     \
    X(pages_off_node, count, "of those, pages the kernel placed on another node")
#define NODE_FIELDS(X)                                                          \
    X(arenas, count, "arenas whose memory is bound to the node")              \
    NODE_SUMMED(X)

struct node_sum {
    uint64_t node;
#define NODE_MEMBER_(n, u, d) uint64_t n;
    NODE_FIELDS(NODE_MEMBER_)
};
#define NODE_ROW(n, u, d) {#n, #u, d, offsetof(struct node_sum, n)},
static const struct field node_fields[] = {NODE_FIELDS(NODE_ROW)};
#define MAX_REPORT_NODES 64

/* Sums s's arenas by node into out[], in order of node id; returns how
 * many nodes. Files before format 1.2 have no per-arena resident bytes:
 * 0 nodes, and the reports leave the section out. */
static unsigned node_sums(const struct xalloc_stats *s, struct node_sum *out)
{
    if (s->version_major != 1 || s->version_minor < 2)
        return 0;
    unsigned n = 0, na = clamp_arenas(s);
    for (unsigned a = 0; a < na; a++) {
        const struct xalloc_stats_arena *sa = &s->arenas[a];
        unsigned k = 0;
        while (k < n && out[k].node < sa->node)
            k++;
        if (k == n || out[k].node != sa->node) {
            if (n == MAX_REPORT_NODES)
                continue;
            for (unsigned j = n; j > k; j--)
                out[j] = out[j - 1];
            out[k] = (struct node_sum){.node = sa->node};
            n++;
        }
        struct node_sum *ns = &out[k];
        ns->arenas++;
#define NODE_ADD_(n, u, d) ns->n += sa->n;
        NODE_SUMMED(NODE_ADD_)
#undef NODE_ADD_
    }
    return n;
}

static int class_in_use(const struct xalloc_stats_class *c)
{
    return c->live || c->slabs || c->nmalloc;
}

static const char *program_of(const struct xa_report_info *info)
{
    return info->program && info->program[0] ? info->program : "?";
}

/* ---- text ---- */

static void text_value(struct out *o, const struct field *f, uint64_t v, int width)
{
    char b[32];
    put_col(o, is_bytes(f) ? xa_stats_report_bytes(b, v) : fmt_u64(b, v), width);
}

static int column_width(const struct field *f)
{
    int w = is_bytes(f) ? 10 : 7;
    int n = (int)str_len(f->name);
    return n + 1 > w ? n + 1 : w;
}

static void text_arena_table(struct out *o, const struct xalloc_stats *s, int main_table)
{
    unsigned na = clamp_arenas(s);
    const struct field *cols[NFIELDS(arena_fields)];
    size_t nc = 0;
    for (size_t i = 0; i < NFIELDS(arena_fields); i++) {
        int in_main = 0;
        for (size_t j = 0; j < NFIELDS(arena_main_columns); j++)
            in_main |= str_eq(arena_fields[i].name, arena_main_columns[j]);
        if (in_main == main_table)
            cols[nc++] = &arena_fields[i];
    }
    put_str(o, "  arena");
    for (size_t c = 0; c < nc; c++)
        put_col(o, cols[c]->name, column_width(cols[c]) + 1);
    end_line(o);
    for (unsigned a = 0; a < na; a++) {
        put_col(o, "", 2);
        char b[24];
        put_col(o, fmt_u64(b, a), 5);
        for (size_t c = 0; c < nc; c++)
            text_value(o, cols[c], field_value(&s->arenas[a], cols[c]),
                       column_width(cols[c]) + 1);
        end_line(o);
    }
}

static void text_config(struct out *o, const struct xa_report_info *info)
{
    int wn = 6, wv = 5;
    for (unsigned i = 0; i < info->config_count; i++) {
        int n = (int)str_len(info->config[i].name), v = (int)str_len(info->config[i].value);
        wn = n > wn ? n : wn;
        wv = v > wv ? v : wv;
    }
    put_str(o, "  ");
    put_col(o, "option", -(wn + 2));
    put_col(o, "value", -(wv + 2));
    put_str(o, "source");
    end_line(o);
    for (unsigned i = 0; i < info->config_count; i++) {
        const struct xalloc_stats_file_config *c = &info->config[i];
        put_str(o, "  ");
        put_col(o, c->name, -(wn + 2));
        put_col(o, c->value, -(wv + 2));
        put_str(o, c->source);
        end_line(o);
    }
}

static void text_title(struct out *o, const struct xalloc_stats *s,
                       const struct xa_report_info *info, const char *what)
{
    char b[32];
    put_str(o, what);
    if (info->pid) {
        put_str(o, " of pid ");
        put_i64(o, info->pid);
        put_str(o, " (");
        put_str(o, program_of(info));
        put_str(o, ")");
    }
    if (info->library_version && info->library_version[0]) {
        put_str(o, ", xalloc ");
        put_str(o, info->library_version);
    }
    if (s) {
        put_str(o, ", stats format ");
        put_u64(o, s->version_major);
        put_char(o, '.');
        put_u64(o, s->version_minor);
    }
    if (info->uptime_ns) {
        put_str(o, ", up ");
        put_str(o, fmt_duration(b, info->uptime_ns));
    }
    if (info->age_ns != UINT64_MAX) {
        put_str(o, ", snapshot ");
        put_str(o, fmt_duration(b, info->age_ns));
        put_str(o, " old");
    }
    end_line(o);
}

static void emit_text(struct out *o, const struct xalloc_stats *s,
                      const struct xa_report_info *info)
{
    char b[32], b2[32];
    text_title(o, s, info, "xalloc statistics");
    end_line(o);
    put_str(o, "Totals");
    end_line(o);
    for (size_t i = 0; i < NFIELDS(total_fields); i++) {
        const struct field *f = &total_fields[i];
        put_str(o, "  ");
        put_col(o, f->name, -13);
        text_value(o, f, field_value(s, f), 11);
        put_str(o, "  ");
        put_str(o, f->doc);
        end_line(o);
    }
    put_str(o, "  ");
    put_col(o, "utilisation", -13);
    put_col(o, fmt_percent(b, s->allocated, s->active), 11);
    put_str(o, "  allocated / active");
    end_line(o);
    const struct xa_report_kernel *k = info->kernel;
    if (k && k->valid) {
        put_str(o, "Kernel accounting (");
        put_str(o, k->scope);
        if (k->mappings) {
            put_str(o, ", ");
            put_u64(o, k->mappings);
            put_str(o, " mappings");
        }
        put_str(o, ")");
        end_line(o);
        put_str(o, "  ");
        if (k->size) { /* smaps_rollup gives no size */
            put_str(o, "size ");
            put_str(o, xa_stats_report_bytes(b, k->size));
            put_str(o, ", ");
        }
        put_str(o, "resident ");
        put_str(o, xa_stats_report_bytes(b2, k->rss));
        put_str(o, ", huge pages ");
        put_str(o, xa_stats_report_bytes(b, k->anon_huge));
        put_str(o, " (");
        put_str(o, fmt_percent(b2, k->anon_huge, k->rss));
        put_str(o, " of resident), swap ");
        put_str(o, xa_stats_report_bytes(b, k->swap));
        end_line(o);
    }
    end_line(o);

    unsigned na = clamp_arenas(s);
    put_str(o, "Arenas: ");
    put_u64(o, na);
    put_str(o, " on ");
    put_u64(o, s->nnodes);
    put_str(o, s->nnodes == 1 ? " NUMA node" : " NUMA nodes");
    end_line(o);
    if (na) {
        text_arena_table(o, s, 1);
        text_arena_table(o, s, 0);
    }
    end_line(o);

    struct node_sum nodes[MAX_REPORT_NODES];
    unsigned nn = node_sums(s, nodes);
    if (nn > 1) {
        put_str(o, "NUMA nodes (the arenas of each; off node: pages the kernel put elsewhere)");
        end_line(o);
        put_str(o, "   node");
        for (size_t i = 0; i < NFIELDS(node_fields); i++)
            put_col(o, node_fields[i].name, column_width(&node_fields[i]) + 1);
        end_line(o);
        for (unsigned j = 0; j < nn; j++) {
            put_col(o, fmt_u64(b, nodes[j].node), 7);
            for (size_t i = 0; i < NFIELDS(node_fields); i++)
                text_value(o, &node_fields[i], field_value(&nodes[j], &node_fields[i]),
                           column_width(&node_fields[i]) + 1);
            end_line(o);
        }
        end_line(o);
    }

    unsigned nc = clamp_classes(s), used = 0;
    for (unsigned i = 0; i < nc; i++)
        used += (unsigned)class_in_use(&s->classes[i]);
    put_str(o, "Size classes: ");
    put_u64(o, used);
    put_str(o, " of ");
    put_u64(o, nc);
    put_str(o, " in use");
    end_line(o);
    if (used) {
        put_str(o, "  class      size      live   live bytes     slabs  capacity    util"
                   "      nmalloc        nfree");
        end_line(o);
    }
    for (unsigned i = 0; i < nc; i++) {
        const struct xalloc_stats_class *c = &s->classes[i];
        if (!class_in_use(c))
            continue;
        put_col(o, fmt_u64(b, i), 7);
        put_col(o, c->size < 10240 ? fmt_u64(b, c->size) : xa_stats_report_bytes(b, c->size), 10);
        put_col(o, fmt_u64(b, c->live), 10);
        put_col(o, xa_stats_report_bytes(b, c->live * c->size), 13);
        put_col(o, fmt_u64(b, c->slabs), 10);
        put_col(o, fmt_u64(b, c->capacity), 10);
        put_col(o, fmt_percent(b, c->live, c->capacity), 8);
        put_col(o, fmt_u64(b, c->nmalloc), 13);
        put_col(o, fmt_u64(b, c->nfree), 13);
        end_line(o);
    }
    if (info->config_count) {
        end_line(o);
        put_str(o, "Configuration");
        end_line(o);
        text_config(o, info);
    }
}

static void emit_summary(struct out *o, const struct xalloc_stats *s,
                         const struct xa_report_info *info)
{
    char b[32];
    if (info->summary_header) {
        put_str(o, "    PID PROGRAM           ALLOCATED      ACTIVE    RESIDENT      MAPPED"
                   "       DIRTY  ARENAS THREADS");
        end_line(o);
    }
    put_col(o, fmt_u64(b, (uint64_t)info->pid), 7);
    put_char(o, ' ');
    char prog[17];
    const char *p = program_of(info);
    size_t n = 0;
    for (; p[n] && n < 16; n++)
        prog[n] = p[n];
    prog[n] = '\0';
    put_col(o, prog, -16);
    put_col(o, xa_stats_report_bytes(b, s->allocated), 12);
    put_col(o, xa_stats_report_bytes(b, s->active), 12);
    put_col(o, xa_stats_report_bytes(b, s->resident), 12);
    put_col(o, xa_stats_report_bytes(b, s->mapped), 12);
    put_col(o, xa_stats_report_bytes(b, s->dirty), 12);
    put_col(o, fmt_u64(b, s->narenas), 8);
    put_col(o, fmt_u64(b, s->threads), 8);
    end_line(o);
}

static void emit_config(struct out *o, const struct xa_report_info *info)
{
    text_title(o, (void *)0, info, "xalloc configuration");
    if (!info->config_count) {
        put_str(o, "  (no configuration published)");
        end_line(o);
        return;
    }
    text_config(o, info);
}

/* ---- JSON ---- */

static void json_string(struct out *o, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    put_char(o, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            put_char(o, '\\');
            put_char(o, (char)c);
        } else if (c < 0x20 || c >= 0x7f) {
            /* also bytes outside ASCII: valid JSON whatever a file held */
            put_str(o, "\\u00");
            put_char(o, hex[c >> 4]);
            put_char(o, hex[c & 15]);
        } else {
            put_char(o, (char)c);
        }
    }
    put_char(o, '"');
}

static void json_key(struct out *o, const char *indent, const char *key)
{
    put_str(o, indent);
    json_string(o, key);
    put_str(o, ": ");
}

static void json_fields(struct out *o, const char *indent, const void *base,
                        const struct field *f, size_t n, int trailing_comma)
{
    for (size_t i = 0; i < n; i++) {
        json_key(o, indent, f[i].name);
        put_u64(o, field_value(base, &f[i]));
        if (i + 1 < n || trailing_comma)
            put_char(o, ',');
        end_line(o);
    }
}

/* config_only: the header fields and the configuration (--config --json). */
static void emit_json(struct out *o, const struct xalloc_stats *s,
                      const struct xa_report_info *info, bool config_only)
{
    char b[32];
    put_char(o, '{');
    end_line(o);
    if (info->pid) {
        json_key(o, "  ", "pid");
        put_i64(o, info->pid);
        put_char(o, ',');
        end_line(o);
    }
    if (info->program) {
        json_key(o, "  ", "program");
        json_string(o, info->program);
        put_char(o, ',');
        end_line(o);
    }
    if (info->service && info->service[0]) {
        json_key(o, "  ", "service");
        json_string(o, info->service);
        put_char(o, ',');
        end_line(o);
    }
    if (info->library_version && info->library_version[0]) {
        json_key(o, "  ", "xalloc_version");
        json_string(o, info->library_version);
        put_char(o, ',');
        end_line(o);
    }
    json_key(o, "  ", "stats_version");
    put_char(o, '"');
    put_u64(o, s->version_major);
    put_char(o, '.');
    put_u64(o, s->version_minor);
    put_str(o, "\",");
    end_line(o);
    json_key(o, "  ", "timestamp_ns");
    put_u64(o, s->timestamp_ns);
    put_char(o, ',');
    end_line(o);
    if (info->age_ns != UINT64_MAX) {
        json_key(o, "  ", "age_ns");
        put_u64(o, info->age_ns);
        put_char(o, ',');
        end_line(o);
    }
    if (info->uptime_ns) {
        json_key(o, "  ", "uptime_ns");
        put_u64(o, info->uptime_ns);
        put_char(o, ',');
        end_line(o);
    }
    if (info->has_requests) {
        json_key(o, "  ", "requests");
        put_str(o, "{\"served\": ");
        put_u64(o, info->requests_served);
        put_str(o, ", \"ignored\": ");
        put_u64(o, info->requests_ignored);
        put_str(o, "},");
        end_line(o);
    }
    if (!config_only) {
    json_key(o, "  ", "totals");
        put_char(o, '{');
        end_line(o);
        json_fields(o, "    ", s, total_fields, NFIELDS(total_fields), 0);
        put_str(o, "  },");
        end_line(o);
        const struct xa_report_kernel *k = info->kernel;
        if (k && k->valid) {
            json_key(o, "  ", "kernel");
            put_str(o, "{\"scope\": ");
            json_string(o, k->scope);
            static const char *const names[] = {"mappings", "size", "rss", "anon_huge", "swap"};
            uint64_t vals[] = {k->mappings, k->size, k->rss, k->anon_huge, k->swap};
            for (size_t i = 0; i < NFIELDS(names); i++) {
                put_str(o, ", ");
                json_string(o, names[i]);
                put_str(o, ": ");
                put_u64(o, vals[i]);
            }
            put_str(o, "},");
            end_line(o);
        }
        unsigned na = clamp_arenas(s);
        json_key(o, "  ", "arenas");
        put_char(o, '[');
        end_line(o);
        for (unsigned a = 0; a < na; a++) {
            put_str(o, "    {\"arena\": ");
            put_u64(o, a);
            for (size_t i = 0; i < NFIELDS(arena_fields); i++) {
                put_str(o, ", ");
                json_string(o, arena_fields[i].name);
                put_str(o, ": ");
                put_u64(o, field_value(&s->arenas[a], &arena_fields[i]));
            }
            put_str(o, a + 1 < na ? "}," : "}");
            end_line(o);
        }
        put_str(o, "  ],");
        end_line(o);
        struct node_sum nodes[MAX_REPORT_NODES];
        unsigned nn = node_sums(s, nodes);
        if (nn) {
            json_key(o, "  ", "nodes");
            put_char(o, '[');
            end_line(o);
            for (unsigned j = 0; j < nn; j++) {
                put_str(o, "    {\"node\": ");
                put_u64(o, nodes[j].node);
                for (size_t i = 0; i < NFIELDS(node_fields); i++) {
                    put_str(o, ", ");
                    json_string(o, node_fields[i].name);
                    put_str(o, ": ");
                    put_u64(o, field_value(&nodes[j], &node_fields[i]));
                }
                put_str(o, j + 1 < nn ? "}," : "}");
                end_line(o);
            }
            put_str(o, "  ],");
            end_line(o);
        }
        unsigned nc = clamp_classes(s);
        json_key(o, "  ", "classes");
        put_char(o, '[');
        end_line(o);
        for (unsigned c = 0; c < nc; c++) {
            const struct xalloc_stats_class *cl = &s->classes[c];
            put_str(o, "    {\"class\": ");
            put_u64(o, c);
            for (size_t i = 0; i < NFIELDS(class_fields); i++) {
                put_str(o, ", ");
                json_string(o, class_fields[i].name);
                put_str(o, ": ");
                put_u64(o, field_value(cl, &class_fields[i]));
            }
            /* utilisation as a fraction with three decimals, computed in
             * integers so this file needs no floating-point formatting */
            put_str(o, ", \"utilisation\": ");
            uint64_t pm = cl->capacity ? cl->live * 1000 / cl->capacity : 0;
            put_u64(o, pm / 1000);
            put_char(o, '.');
            b[0] = (char)('0' + pm / 100 % 10);
            b[1] = (char)('0' + pm / 10 % 10);
            b[2] = (char)('0' + pm % 10);
            b[3] = '\0';
            put_str(o, b);
            put_str(o, c + 1 < nc ? "}," : "}");
            end_line(o);
        }
        put_str(o, "  ],");
        end_line(o);
    }
    json_key(o, "  ", "config");
    put_char(o, '[');
    end_line(o);
    for (unsigned i = 0; i < info->config_count; i++) {
        const struct xalloc_stats_file_config *c = &info->config[i];
        put_str(o, "    {\"name\": ");
        json_string(o, c->name);
        put_str(o, ", \"value\": ");
        json_string(o, c->value);
        put_str(o, ", \"source\": ");
        json_string(o, c->source);
        put_str(o, i + 1 < info->config_count ? "}," : "}");
        end_line(o);
    }
    put_str(o, "  ]");
    end_line(o);
    put_char(o, '}');
    end_line(o);
}

/* ---- Prometheus text exposition ---- */

static void prom_label_value(struct out *o, const char *s)
{
    put_char(o, '"');
    for (; *s; s++) {
        if (*s == '\\' || *s == '"') {
            put_char(o, '\\');
            put_char(o, *s);
        } else if (*s == '\n') {
            put_str(o, "\\n");
        } else {
            put_char(o, *s);
        }
    }
    put_char(o, '"');
}

static void prom_name(struct out *o, const char *scope, const struct field *f)
{
    put_str(o, "xalloc_");
    put_str(o, scope);
    /* "_count" is reserved for histograms and summaries in Prometheus
     * (promtool check metrics rejects it): large_count -> large_blocks. */
    size_t n = str_len(f->name);
    if (n > 6 && str_eq(f->name + n - 6, "_count")) {
        for (size_t i = 0; i + 6 < n; i++)
            put_char(o, f->name[i]);
        put_str(o, "_blocks");
    } else {
        put_str(o, f->name);
    }
    if (is_bytes(f))
        put_str(o, "_bytes");
    if (is_counter(f->name))
        put_str(o, "_total");
}

static void prom_family(struct out *o, const char *scope, const struct field *f)
{
    put_str(o, "# HELP ");
    prom_name(o, scope, f);
    put_char(o, ' ');
    put_str(o, f->doc);
    end_line(o);
    put_str(o, "# TYPE ");
    prom_name(o, scope, f);
    put_str(o, is_counter(f->name) ? " counter" : " gauge");
    end_line(o);
}

static void prom_labels(struct out *o, const struct xa_report_info *info)
{
    put_str(o, "{pid=\"");
    put_i64(o, info->pid);
    put_str(o, "\",program=");
    prom_label_value(o, program_of(info));
    if (info->service && info->service[0]) {
        put_str(o, ",service=");
        prom_label_value(o, info->service);
    }
}

/* config_only: xalloc_info and xalloc_config_info (--config --prometheus). */
static void emit_prometheus(struct out *o, const struct xalloc_stats *s,
                            const struct xa_report_info *info, bool config_only)
{
    put_str(o, "# HELP xalloc_info xalloc library and statistics format in use");
    end_line(o);
    put_str(o, "# TYPE xalloc_info gauge");
    end_line(o);
    put_str(o, "xalloc_info");
    prom_labels(o, info);
    put_str(o, ",version=");
    prom_label_value(o, info->library_version ? info->library_version : "");
    put_str(o, ",stats_version=\"");
    put_u64(o, s->version_major);
    put_char(o, '.');
    put_u64(o, s->version_minor);
    put_str(o, "\"} 1");
    end_line(o);
    if (!config_only) {
    for (size_t i = 0; i < NFIELDS(total_fields); i++) {
            prom_family(o, "", &total_fields[i]);
            prom_name(o, "", &total_fields[i]);
            prom_labels(o, info);
            put_str(o, "} ");
            put_u64(o, field_value(s, &total_fields[i]));
            end_line(o);
        }
        const struct xa_report_kernel *k = info->kernel;
        if (k && k->valid) {
            static const struct field kf[] = {
                {"kernel_resident", "bytes", "Rss of the heap by the kernel's accounting (smaps)", 0},
                {"kernel_huge_pages", "bytes", "AnonHugePages: bytes backed by transparent huge pages", 0},
            };
            uint64_t kv[] = {k->rss, k->anon_huge};
            for (size_t i = 0; i < NFIELDS(kf); i++) {
                prom_family(o, "", &kf[i]);
                prom_name(o, "", &kf[i]);
                prom_labels(o, info);
                put_str(o, ",scope=");
                prom_label_value(o, k->scope);
                put_str(o, "} ");
                put_u64(o, kv[i]);
                end_line(o);
            }
        }
        unsigned na = clamp_arenas(s);
        for (size_t i = 0; na && i < NFIELDS(arena_fields); i++) {
            prom_family(o, "arena_", &arena_fields[i]);
            for (unsigned a = 0; a < na; a++) {
                prom_name(o, "arena_", &arena_fields[i]);
                prom_labels(o, info);
                put_str(o, ",arena=\"");
                put_u64(o, a);
                put_str(o, "\"} ");
                put_u64(o, field_value(&s->arenas[a], &arena_fields[i]));
                end_line(o);
            }
        }
        struct node_sum nodes[MAX_REPORT_NODES];
        unsigned nn = node_sums(s, nodes);
        for (size_t i = 0; nn && i < NFIELDS(node_fields); i++) {
            prom_family(o, "node_", &node_fields[i]);
            for (unsigned j = 0; j < nn; j++) {
                prom_name(o, "node_", &node_fields[i]);
                prom_labels(o, info);
                put_str(o, ",node=\"");
                put_u64(o, nodes[j].node);
                put_str(o, "\"} ");
                put_u64(o, field_value(&nodes[j], &node_fields[i]));
                end_line(o);
            }
        }
        unsigned nc = clamp_classes(s);
        for (size_t i = 0; nc && i < NFIELDS(class_fields); i++) {
            if (str_eq(class_fields[i].name, "size"))
                continue; /* a label of every class sample */
            prom_family(o, "class_", &class_fields[i]);
            for (unsigned c = 0; c < nc; c++) {
                if (!class_in_use(&s->classes[c]))
                    continue;
                prom_name(o, "class_", &class_fields[i]);
                prom_labels(o, info);
                put_str(o, ",class=\"");
                put_u64(o, c);
                put_str(o, "\",size=\"");
                put_u64(o, s->classes[c].size);
                put_str(o, "\"} ");
                put_u64(o, field_value(&s->classes[c], &class_fields[i]));
                end_line(o);
            }
        }
        if (info->has_requests) {
            put_str(o, "# HELP xalloc_stats_requests_total requests sent through xalloc-stat, by outcome");
            end_line(o);
            put_str(o, "# TYPE xalloc_stats_requests_total counter");
            end_line(o);
            for (int i = 0; i < 2; i++) {
                put_str(o, "xalloc_stats_requests_total");
                prom_labels(o, info);
                put_str(o, i ? ",result=\"ignored\"} " : ",result=\"served\"} ");
                put_u64(o, i ? info->requests_ignored : info->requests_served);
                end_line(o);
            }
        }
    }
    if (info->config_count) {
        put_str(o, "# HELP xalloc_config_info effective configuration: option, value and source");
        end_line(o);
        put_str(o, "# TYPE xalloc_config_info gauge");
        end_line(o);
        for (unsigned i = 0; i < info->config_count; i++) {
            put_str(o, "xalloc_config_info");
            prom_labels(o, info);
            put_str(o, ",option=");
            prom_label_value(o, info->config[i].name);
            put_str(o, ",value=");
            prom_label_value(o, info->config[i].value);
            put_str(o, ",source=");
            prom_label_value(o, info->config[i].source);
            put_str(o, "} 1");
            end_line(o);
        }
    }
}

/* ---- entry point ---- */

void xa_stats_report_emit(const struct xalloc_stats *s,
                          const struct xa_report_info *info,
                          enum xa_report_format fmt, xa_report_write_fn write,
                          void *arg)
{
    struct out o;
    o.write = write;
    o.arg = arg;
    o.len = 0;
    switch (fmt) {
    case XA_REPORT_TEXT:
        emit_text(&o, s, info);
        break;
    case XA_REPORT_JSON:
        emit_json(&o, s, info, false);
        break;
    case XA_REPORT_PROMETHEUS:
        emit_prometheus(&o, s, info, false);
        break;
    case XA_REPORT_CONFIG_JSON:
        emit_json(&o, s, info, true);
        break;
    case XA_REPORT_CONFIG_PROMETHEUS:
        emit_prometheus(&o, s, info, true);
        break;
    case XA_REPORT_CONFIG:
        emit_config(&o, info);
        break;
    case XA_REPORT_SUMMARY:
        emit_summary(&o, s, info);
        break;
    }
}
