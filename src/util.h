/* util.h: allocation-free formatting, parsing helpers and messages.
 * Layer: bottom (uses os only). Safe before the allocator is initialised
 * and inside signal-unsafe contexts: nothing here calls malloc or stdio. */
#ifndef XA_UTIL_H
#define XA_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* snprintf subset: %s %c %d %i %u %x %p %% with l, ll, z modifiers, width
 * and '0'/'-' flags. Always NUL-terminates when len > 0. Returns the length
 * the full output would have had. */
size_t xa_vsnprintf(char *buf, size_t len, const char *fmt, va_list ap);
__attribute__((format(printf, 3, 4))) size_t xa_snprintf(char *buf, size_t len,
                                                         const char *fmt, ...);
/* Writes "xalloc: <message>\n" to stderr in one write. */
__attribute__((format(printf, 1, 2))) void xa_message(const char *fmt, ...);
/* Formats a byte count in human units ("1.5 MiB"). */
const char *xa_format_bytes(char *buf, size_t len, uint64_t bytes);

size_t xa_strlen(const char *s);
int xa_strcmp(const char *a, const char *b);
int xa_strncmp(const char *a, const char *b, size_t n);
void xa_strlcpy(char *dst, const char *src, size_t len);

#endif /* XA_UTIL_H */
