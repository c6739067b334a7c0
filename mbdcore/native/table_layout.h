/*
 * Numeric tables declared once (mbdcore.native.TableLayout, docs/architecture.md,
 * "Compiled code"): a kernel's table is an X-macro list of its fields in order,
 *
 *   #define ARM_LAYOUT(X) X(INT, nm, 1) X(REAL, l1, 1) X(ARRAY, phi1, nq1 * nm) ...
 *
 * each X(kind, name, size): INT an integer stored as a double, REAL a number, ARRAY
 * `size` numbers, size an integer C expression of earlier INT fields (+, -, *, brackets).
 * A list may also declare a C struct that Python fills as a ctypes structure (its arrays
 * by address): there INT is an int, REAL a double, ARRAY a const double * to `size`
 * numbers, WORK a double * to `size` numbers the kernel writes (scratch), INTS a
 * const int * to `size` ints, IWORK an int * to `size` ints the kernel writes, ADDRESS a const void * (size 1: a context the kernel
 * hands on) and FN a function pointer whose C type is the third argument; a list with
 * one of these is a struct only, never a flat table.
 * The macros below turn the list into the struct members and the reader of the kernel;
 * mbdcore/cbuild.py reads the same list from the C source when it builds the kernel and
 * puts it into the extension module, from which Python packs a table by field name.
 * Both sides derive from the one list, so a field cannot be swapped, forgotten or
 * mis-sized on one side alone.
 */
#ifndef FLEXCOSIM_TABLE_LAYOUT_H
#define FLEXCOSIM_TABLE_LAYOUT_H

#include <stddef.h>

/* the struct members of a table's fields: TABLE(TABLE_MEMBER) inside a struct */
#define TABLE_MEMBER_INT(name, size) int name;
#define TABLE_MEMBER_REAL(name, size) double name;
#define TABLE_MEMBER_ARRAY(name, size) const double *name;
#define TABLE_MEMBER_WORK(name, size) double *name;
#define TABLE_MEMBER_INTS(name, size) const int *name;
#define TABLE_MEMBER_IWORK(name, size) int *name;
#define TABLE_MEMBER_ADDRESS(name, size) const void *name;
#define TABLE_MEMBER_FN(name, type) type name;
#define TABLE_MEMBER(kind, name, size) TABLE_MEMBER_##kind(name, size)

/* an INT field holds a whole number of at most this size (beyond, it is no count; a
   size, a product of up to three INT fields, stays within a long) */
#define TABLE_INT_LIMIT 1.0e6

/* Reading one field at tl_p into *tl_s: an INT field becomes a local of its name too,
   which later sizes use; a non-integer INT or a negative size makes the table invalid. */
#define TABLE_READ_INT(name, size)                                                         \
    if (!(*tl_p >= -TABLE_INT_LIMIT && *tl_p <= TABLE_INT_LIMIT)                           \
        || (double)(long)*tl_p != *tl_p)                                                    \
        return 0;                                                                          \
    const long name = (long)*tl_p++;                                                         \
    tl_s->name = (int)name;                                                                \
    (void)name;
#define TABLE_READ_REAL(name, size) tl_s->name = *tl_p++;
#define TABLE_READ_ARRAY(name, size)                                                       \
    if ((long)(size) < 0) return 0;                                                        \
    tl_s->name = tl_p;                                                                     \
    tl_p += (long)(size);
#define TABLE_READ(kind, name, size) TABLE_READ_##kind(name, size)

/* static long reader(const double *tab, Struct *s): points the struct's fields into the
   table; returns the table's length in doubles, or 0 if it cannot be read */
#define TABLE_READER(TABLE, Struct, reader)                                                \
    static long reader(const double *tl_tab, Struct *tl_s) {                               \
        const double *tl_p = tl_tab;                                                       \
        TABLE(TABLE_READ)                                                                  \
        return (long)(tl_p - tl_tab);                                                      \
    }

/* The indices of a table of scalar fields only (an ARRAY does not compile), for a
   kernel that writes its table or reads it in place: with
   #define DRIVE_INDEX(kind, name, size) TABLE_INDEX_##kind(DRIVE_##name)
   enum { DRIVE_LAYOUT(DRIVE_INDEX) DRIVE_N_PACKED } numbers DRIVE_resistance, ... */
#define TABLE_INDEX_INT(index) index,
#define TABLE_INDEX_REAL(index) index,

/* What a reader made of a table, field by field in order (the value of an INT or REAL
   field, the offset of an ARRAY field): the generated check of the Python layout
   against the C struct (mbdcore.cbuild). */
#define TABLE_ECHO_INT(name, size) *tl_out++ = (double)tl_s->name;
#define TABLE_ECHO_REAL(name, size) *tl_out++ = tl_s->name;
#define TABLE_ECHO_ARRAY(name, size) *tl_out++ = (double)(tl_s->name - tl_tab);
#define TABLE_ECHO(kind, name, size) TABLE_ECHO_##kind(name, size)

/* The offset of each member in the struct TABLE_STRUCT (defined where this is used): the
   generated check of the Python ctypes structure against the C struct (mbdcore.cbuild). */
#define TABLE_OFFSET(kind, name, size) *tl_out++ = (double)offsetof(TABLE_STRUCT, name);

#endif
