/*
 * Built as "libc.so" (and, empty, libm.so / libdl.so / liblog.so), the names the Android build of
 * the library has as NEEDED: with them on LD_LIBRARY_PATH a glibc program can dlopen it. Each
 * shim depends on glibc's real libraries, so the Android build's other undefined symbols resolve
 * to glibc. This file gives what glibc lacks or names differently (found from the .so's undefined
 * symbols, `nm -D --undefined-only`, and the libc crate's Android definitions):
 *   __errno               bionic's name of glibc's __errno_location
 *   __system_property_get Android's system properties: none are set here (returns 0, "")
 *   sysconf               bionic numbers its _SC_* names differently from glibc
 *   strerror_r            bionic's is the POSIX one (int), glibc's is the GNU one (char *)
 * Every other symbol the .so uses has the same C ABI in glibc and bionic on these 64-bit Linux
 * ABIs (kernel-defined struct stat, dirent, open/mmap/dlopen flags, errno values; pthread_attr_t
 * is 56 bytes in bionic and glibc's pthread_attr_init writes 56 of it). The loader opens the .so
 * with RTLD_DEEPBIND, so these definitions come before glibc's for the .so only.
 */
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <unistd.h>

int * __errno(void) { return __errno_location(); }

int __system_property_get(const char * name, char * value) {
    (void) name;
    value[0] = '\0';
    return 0;
}

/* glibc's own, under names that do not clash with the definitions below */
extern long __sysconf(int name);
extern int __xpg_strerror_r(int errnum, char * buf, size_t len);

/* bionic's <bits/sysconf.h> numbers (the libc crate's Android module) to glibc's; a name not
   listed is reported, so a new use shows up instead of silently asking glibc something else */
long sysconf(int name) {
    static const struct { int bionic, glibc; } map[] = {
        {0x0006, _SC_CLK_TCK},          {0x0027, _SC_PAGESIZE},         {0x0028, _SC_PAGESIZE},
        {0x0048, _SC_GETPW_R_SIZE_MAX}, {0x004c, _SC_THREAD_STACK_MIN}, {0x0060, _SC_NPROCESSORS_CONF},
        {0x0061, _SC_NPROCESSORS_ONLN}, {0x0062, _SC_PHYS_PAGES},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (map[i].bionic == name) return __sysconf(map[i].glibc);
    fprintf(stderr, "bionic shim: sysconf(0x%x) has no translation\n", name);
    errno = EINVAL;
    return -1;
}

/* (by its symbol name: glibc's <string.h> maps the C name strerror_r to __xpg_strerror_r) */
int bionic_strerror_r(int errnum, char * buf, size_t len) __asm__("strerror_r");
int bionic_strerror_r(int errnum, char * buf, size_t len) { return __xpg_strerror_r(errnum, buf, len); }
