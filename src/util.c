/* util.c: allocation-free formatting and messages. Layer: bottom; calls only
 * the os layer. Used on the init path and in fatal-error reports, where
 * stdio (which may allocate or hold locks) must not be used. */
#include "util.h"

#include <stdarg.h>

#include "common.h"
#include "os.h"

size_t xa_strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

int xa_strcmp(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return (unsigned char)*a - (unsigned char)*b;
}

int xa_strncmp(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i] || !a[i])
            return (unsigned char)a[i] - (unsigned char)b[i];
    }
    return 0;
}

void xa_strlcpy(char *dst, const char *src, size_t len)
{
    if (len == 0)
        return;
    size_t i = 0;
    for (; i + 1 < len && src[i]; i++)
        dst[i] = src[i];
    dst[i] = 0;
}

/* ---- formatting ---- */

struct out {
    char *buf;
    size_t len, pos;
};

static void put(struct out *o, char c)
{
    if (o->pos + 1 < o->len)
        o->buf[o->pos] = c;
    o->pos++;
}

static void put_padded(struct out *o, const char *s, size_t n, int width,
                       bool left, char pad)
{
    int fill = width > (int)n ? width - (int)n : 0;
    if (!left)
        while (fill-- > 0)
            put(o, pad);
    for (size_t i = 0; i < n; i++)
        put(o, s[i]);
    if (left)
        while (fill-- > 0)
            put(o, ' ');
}

static size_t utoa(char *tmp, unsigned long long v, unsigned base)
{
    size_t n = 0;
    do {
        unsigned d = (unsigned)(v % base);
        tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v);
    for (size_t i = 0; i < n / 2; i++) {
        char t = tmp[i];
        tmp[i] = tmp[n - 1 - i];
        tmp[n - 1 - i] = t;
    }
    return n;
}

size_t xa_vsnprintf(char *buf, size_t len, const char *fmt, va_list ap)
{
    struct out o = {buf, len, 0};
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            put(&o, *f);
            continue;
        }
        f++;
        bool left = false;
        char pad = ' ';
        int width = 0;
        for (;; f++) {
            if (*f == '-')
                left = true;
            else if (*f == '0')
                pad = '0';
            else
                break;
        }
        while (*f >= '0' && *f <= '9')
            width = width * 10 + (*f++ - '0');
        int lng = 0;
        bool size_mod = false;
        while (*f == 'l') {
            lng++;
            f++;
        }
        if (*f == 'z') {
            size_mod = true;
            f++;
        }
        char tmp[32];
        switch (*f) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s)
                s = "(null)";
            put_padded(&o, s, xa_strlen(s), width, left, ' ');
            break;
        }
        case 'c':
            tmp[0] = (char)va_arg(ap, int);
            put_padded(&o, tmp, 1, width, left, ' ');
            break;
        case 'd':
        case 'i': {
            long long v = size_mod ? (long long)va_arg(ap, ssize_t)
                          : lng >= 2 ? va_arg(ap, long long)
                          : lng == 1 ? va_arg(ap, long)
                                     : va_arg(ap, int);
            unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v
                                         : (unsigned long long)v;
            size_t n = 0;
            if (v < 0)
                tmp[n++] = '-';
            n += utoa(tmp + n, u, 10);
            put_padded(&o, tmp, n, width, left, pad);
            break;
        }
        case 'u':
        case 'x': {
            unsigned long long v = size_mod   ? va_arg(ap, size_t)
                                   : lng >= 2 ? va_arg(ap, unsigned long long)
                                   : lng == 1 ? va_arg(ap, unsigned long)
                                              : va_arg(ap, unsigned);
            size_t n = utoa(tmp, v, *f == 'x' ? 16 : 10);
            put_padded(&o, tmp, n, width, left, pad);
            break;
        }
        case 'p': {
            uintptr_t v = (uintptr_t)va_arg(ap, void *);
            tmp[0] = '0';
            tmp[1] = 'x';
            size_t n = 2 + utoa(tmp + 2, v, 16);
            put_padded(&o, tmp, n, width, left, ' ');
            break;
        }
        case '%':
            put(&o, '%');
            break;
        case 0:
            f--;
            break;
        default:
            put(&o, '%');
            put(&o, *f);
        }
    }
    if (len)
        buf[o.pos < len ? o.pos : len - 1] = 0;
    return o.pos;
}

size_t xa_snprintf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = xa_vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return n;
}

static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
    char line[1024];
    size_t n = xa_snprintf(line, sizeof line, "%s", prefix);
    n += xa_vsnprintf(line + n, sizeof line - n, fmt, ap);
    if (n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    xa_os_write_stderr(line, n);
}

void xa_message(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage("xalloc: ", fmt, ap);
    va_end(ap);
}

void xa_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage("xalloc: fatal: ", fmt, ap);
    va_end(ap);
    xa_os_abort();
}

const char *xa_format_bytes(char *buf, size_t len, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    unsigned u = 0;
    uint64_t whole = bytes, frac = 0;
    while (whole >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        frac = (whole % 1024) * 10 / 1024;
        whole /= 1024;
        u++;
    }
    if (u == 0)
        xa_snprintf(buf, len, "%llu B", (unsigned long long)whole);
    else
        xa_snprintf(buf, len, "%llu.%llu %s", (unsigned long long)whole,
                    (unsigned long long)frac, units[u]);
    return buf;
}
