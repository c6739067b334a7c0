/*
 * fmuResourceLocation as a local path, for both FMI wrappers of the project (the Python
 * FMUs' flexcosim_fmi2.c and the C-source FMUs' fmi2_cs.c).  Plain C99, no POSIX.
 *
 * Accepted (RFC 8089): file:///abs, file:/abs, file://localhost/abs, percent-encoded; a
 * plain absolute path too.  A URI naming another host is refused, as is a relative path.
 * A Windows drive path (file:///C:/dir) loses its leading slash.  Query and fragment end
 * the path; trailing slashes are dropped.  Whether the folder exists is the caller's
 * business (it opens what it needs and reports what failed).
 */
#ifndef FLEXCOSIM_FMI_RESOURCES_H
#define FLEXCOSIM_FMI_RESOURCES_H

#include <stdio.h>
#include <string.h>

static int fc_hex_value(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* ASCII case-insensitive prefix test (strncasecmp is POSIX, not C99). */
static int fc_has_prefix_nocase(const char *s, const char *prefix, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) {
        char a = s[i], b = prefix[i];
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
        if (a != b || !a) return 0;
    }
    return 1;
}

/* The folder of `uri` into out[nout]; 1, or 0 with why[nwhy] saying what is wrong. */
static int fc_resource_path(const char *uri, char *out, size_t nout, char *why, size_t nwhy) {
    const char *path;
    size_t i, j = 0;
    if (!uri || !uri[0]) {
        snprintf(why, nwhy, "fmuResourceLocation is empty");
        return 0;
    }
    path = uri;
    if (fc_has_prefix_nocase(uri, "file:", 5)) {
        path = uri + 5;
        if (path[0] == '/' && path[1] == '/') {
            const char *authority = path + 2, *slash = strchr(authority, '/');
            size_t n = slash ? (size_t)(slash - authority) : strlen(authority);
            if (n && !(n == 9 && fc_has_prefix_nocase(authority, "localhost", 9))) {
                snprintf(why, nwhy, "fmuResourceLocation %s names host '%.*s': only local files "
                         "(file:///path or file://localhost/path) can be read", uri, (int)n,
                         authority);
                return 0;
            }
            path = slash ? slash : "/";
        }
    }
    if (path[0] != '/') {
        snprintf(why, nwhy, "fmuResourceLocation %s is not a file URI of an absolute path", uri);
        return 0;
    }
    for (i = 0; path[i] && path[i] != '?' && path[i] != '#'; ++i) {
        char ch = path[i];
        if (ch == '%') {
            int hi = fc_hex_value(path[i + 1]), lo = hi < 0 ? -1 : fc_hex_value(path[i + 2]);
            if (hi < 0 || lo < 0) {
                snprintf(why, nwhy, "fmuResourceLocation %s has a malformed %%-escape", uri);
                return 0;
            }
            ch = (char)(hi * 16 + lo);
            i += 2;
        }
        if (j + 1 >= nout) {
            snprintf(why, nwhy, "fmuResourceLocation %s is too long", uri);
            return 0;
        }
        out[j++] = ch;
    }
    while (j > 1 && out[j - 1] == '/') --j;
    out[j] = '\0';
    if (j >= 3 && out[0] == '/' && out[2] == ':' &&
        ((out[1] >= 'A' && out[1] <= 'Z') || (out[1] >= 'a' && out[1] <= 'z')))
        memmove(out, out + 1, j);                       /* /C:/dir -> C:/dir */
    return 1;
}

#endif
