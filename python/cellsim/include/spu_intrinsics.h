/* spu_intrinsics.h for cellsim: the SPU's vector types and a core set of its
 * intrinsics, written for cellsim from the public "C/C++ Language Extensions for
 * the Cell Broadband Engine Architecture". The SPU program runs as host code, so
 * the vectors are the host compiler's vectors; the values are the SPU's:
 *
 *  - element i of a vector is the i-th in memory, as on the SPU (its element 0 is
 *    the leftmost, most significant, of the register);
 *  - the byte-level operations (spu_shuffle, quadword shifts and rotates) number
 *    the bytes of the register big-endian as the SPU does, so a pattern written for
 *    the SPU selects the same elements here; data in memory keeps the host's byte
 *    order, like the rest of the C program's data.
 *
 * Built with `cellsim cc --count-intrinsics`, each intrinsic adds its issue cost
 * to its pipeline's count (even: arithmetic, logic, compares, selects, element
 * shifts and rotates, floating point; odd: shuffles, quadword shifts and rotates,
 * element insert/extract); the C thread is charged max(even, odd) SPU cycles at
 * its next call into the simulator (dual issue, latencies hidden). Double-precision
 * operations cost 7 cycles of issue (the SPU stalls 6 cycles after each). */
#ifndef CELLSIM_SPU_INTRINSICS_H
#define CELLSIM_SPU_INTRINSICS_H

#include <stdint.h>
#include <string.h>

#include "cellsim_rt.h"

typedef unsigned char vec_uchar16 __attribute__((vector_size(16)));
typedef signed char vec_char16 __attribute__((vector_size(16)));
typedef unsigned short vec_ushort8 __attribute__((vector_size(16)));
typedef signed short vec_short8 __attribute__((vector_size(16)));
typedef unsigned int vec_uint4 __attribute__((vector_size(16)));
typedef signed int vec_int4 __attribute__((vector_size(16)));
typedef unsigned long long vec_ullong2 __attribute__((vector_size(16)));
typedef signed long long vec_llong2 __attribute__((vector_size(16)));
typedef float vec_float4 __attribute__((vector_size(16)));
typedef double vec_double2 __attribute__((vector_size(16)));
typedef vec_uint4 qword;
/* the SPU language's `vector bool T`: masks, the unsigned vectors of the same width */
typedef vec_uchar16 vec_bchar16;
typedef vec_ushort8 vec_bshort8;
typedef vec_uint4 vec_bint4;
typedef vec_ullong2 vec_bllong2;

#ifdef CELLSIM_COUNT_INTRINSICS
#define __CS_EVEN(n) (cellsim_even_cycles += (n))
#define __CS_ODD(n) (cellsim_odd_cycles += (n))
#else
#define __CS_EVEN(n) ((void)0)
#define __CS_ODD(n) ((void)0)
#endif
/* Issue cost on the even pipe: 7 for double precision, 1 otherwise. */
#define __CS_FP(v) __CS_EVEN(__builtin_types_compatible_p(__typeof__(v), vec_double2) ? 7 : 1)

#define __CS_N(v) ((int)(sizeof(v) / sizeof((v)[0])))

/* -- construction and elements --------------------------------------------------------- */

/* The vector type whose elements have the type of scalar x. */
#define __CS_VEC_OF(x)                                                                       \
    __typeof__(_Generic((x),                                                                 \
        unsigned char: (vec_uchar16){0}, signed char: (vec_char16){0}, char: (vec_char16){0}, \
        unsigned short: (vec_ushort8){0}, short: (vec_short8){0},                             \
        unsigned int: (vec_uint4){0}, int: (vec_int4){0},                                     \
        unsigned long: (vec_ullong2){0}, long: (vec_llong2){0},                               \
        unsigned long long: (vec_ullong2){0}, long long: (vec_llong2){0},                     \
        float: (vec_float4){0}, double: (vec_double2){0}))
#define spu_splats(x)                                                  \
    ({                                                                 \
        __CS_VEC_OF(x) __v;                                            \
        __CS_ODD(1);                                                   \
        for (int __i = 0; __i < __CS_N(__v); __i++) __v[__i] = (x);   \
        __v;                                                           \
    })

#define spu_extract(v, i) ({ __CS_ODD(1); (v)[(i) & (__CS_N(v) - 1)]; })
#define spu_insert(x, v, i)                    \
    ({                                         \
        __typeof__(v) __r = (v);               \
        __CS_ODD(1);                           \
        __r[(i) & (__CS_N(__r) - 1)] = (x);    \
        __r;                                   \
    })
#define spu_promote(x, i) ({ __CS_VEC_OF(x) __r = {0}; __r[(i) & (__CS_N(__r) - 1)] = (x); __r; })

/* -- arithmetic ------------------------------------------------------------------------ */

/* b may be a vector of a's type or a scalar (the immediate forms). */
#define spu_add(a, b) ({ __CS_FP(a); (__typeof__(a))((a) + (b)); })
#define spu_sub(a, b) ({ __CS_FP(a); (__typeof__(a))((a) - (b)); })
#define spu_mul(a, b) ({ __CS_FP(a); (__typeof__(a))((a) * (b)); })
#define spu_madd(a, b, c) ({ __CS_FP(a); (__typeof__(a))((a) * (b) + (c)); })
#define spu_msub(a, b, c) ({ __CS_FP(a); (__typeof__(a))((a) * (b) - (c)); })
#define spu_nmadd(a, b, c) ({ __CS_FP(a); (__typeof__(a))(-((a) * (b) + (c))); })
#define spu_nmsub(a, b, c) ({ __CS_FP(a); (__typeof__(a))((c) - (a) * (b)); })
/* Reciprocal and reciprocal-square-root estimates (the SPU's are 12-bit accurate;
 * these are exact, which a program refining them with Newton steps does not notice). */
#define spu_re(a) ({ __CS_EVEN(1); (vec_float4)(1.0f / (a)); })
#define spu_rsqrte(a)                                                             \
    ({                                                                            \
        vec_float4 __r;                                                           \
        __CS_EVEN(1);                                                             \
        for (int __i = 0; __i < 4; __i++) __r[__i] = 1.0f / __builtin_sqrtf((a)[__i]); \
        __r;                                                                      \
    })

/* -- logic, compares, select ------------------------------------------------------------ */

#define spu_and(a, b) ({ __CS_EVEN(1); (__typeof__(a))((a) & (b)); })
#define spu_or(a, b) ({ __CS_EVEN(1); (__typeof__(a))((a) | (b)); })
#define spu_xor(a, b) ({ __CS_EVEN(1); (__typeof__(a))((a) ^ (b)); })
#define spu_andc(a, b) ({ __CS_EVEN(1); (__typeof__(a))((a) & ~(b)); })
#define spu_orc(a, b) ({ __CS_EVEN(1); (__typeof__(a))((a) | ~(b)); })
#define spu_nand(a, b) ({ __CS_EVEN(1); (__typeof__(a))(~((a) & (b))); })
#define spu_nor(a, b) ({ __CS_EVEN(1); (__typeof__(a))(~((a) | (b))); })
#define spu_eqv(a, b) ({ __CS_EVEN(1); (__typeof__(a))(~((a) ^ (b))); })

/* Compares give a mask vector: unsigned elements of the operands' width, all ones where true. */
#define __CS_MASK_T(v)                                      \
    __typeof__(_Generic((v),                                \
        vec_uchar16: (vec_uchar16){0}, vec_char16: (vec_uchar16){0},   \
        vec_ushort8: (vec_ushort8){0}, vec_short8: (vec_ushort8){0},   \
        vec_uint4: (vec_uint4){0}, vec_int4: (vec_uint4){0},           \
        vec_float4: (vec_uint4){0},                                    \
        vec_ullong2: (vec_ullong2){0}, vec_llong2: (vec_ullong2){0},   \
        vec_double2: (vec_ullong2){0}))
#define spu_cmpeq(a, b) ({ __CS_EVEN(1); (__CS_MASK_T(a))((a) == (b)); })
#define spu_cmpgt(a, b) ({ __CS_EVEN(1); (__CS_MASK_T(a))((a) > (b)); })
#define spu_sel(a, b, m)                                                          \
    ({                                                                            \
        __typeof__(a) __a = (a), __b = (b);                                       \
        __CS_MASK_T(a) __m = (__CS_MASK_T(a))(m), __ra, __rb;                      \
        __CS_EVEN(1);                                                             \
        memcpy(&__ra, &__a, 16);                                                  \
        memcpy(&__rb, &__b, 16);                                                  \
        __ra = (__ra & ~__m) | (__rb & __m);                                      \
        memcpy(&__a, &__ra, 16);                                                  \
        __a;                                                                      \
    })

/* -- element shifts and rotates (count per element, or one count for all) ----------- */

#define __CS_UNSIGNED_T(v) __CS_MASK_T(v)
#define __CS_BITS(v) ((int)(8 * sizeof((v)[0])))
#define spu_rl(a, c)                                                                        \
    ({                                                                                      \
        __typeof__(a) __a = (a), __r;                                                       \
        __CS_UNSIGNED_T(a) __u, __o;                                                        \
        __CS_UNSIGNED_T(a) __c = (__CS_UNSIGNED_T(a))((__typeof__(a)){0} + (c));           \
        memcpy(&__u, &__a, 16);                                                             \
        for (int __i = 0; __i < __CS_N(__u); __i++) {                                       \
            int __s = __c[__i] & (__CS_BITS(__u) - 1);                                      \
            __o[__i] = __s ? (__u[__i] << __s) | (__u[__i] >> (__CS_BITS(__u) - __s)) : __u[__i]; \
        }                                                                                   \
        __CS_EVEN(1);                                                                       \
        memcpy(&__r, &__o, 16);                                                             \
        __r;                                                                                \
    })
/* spu_sl: shift left, counts of the element's width or more give 0. */
#define spu_sl(a, c)                                                                \
    ({                                                                              \
        __typeof__(a) __a = (a), __r;                                               \
        __CS_UNSIGNED_T(a) __u, __o;                                                \
        __CS_UNSIGNED_T(a) __c = (__CS_UNSIGNED_T(a))((__typeof__(a)){0} + (c));   \
        memcpy(&__u, &__a, 16);                                                     \
        for (int __i = 0; __i < __CS_N(__u); __i++) {                               \
            unsigned __s = __c[__i] & (2 * __CS_BITS(__u) - 1);                     \
            __o[__i] = __s >= (unsigned)__CS_BITS(__u) ? 0 : __u[__i] << __s;       \
        }                                                                           \
        __CS_EVEN(1);                                                               \
        memcpy(&__r, &__o, 16);                                                     \
        __r;                                                                        \
    })
/* spu_rlmask: logical shift right by -c (c is 0 or negative, as in the SPU's rotmi). */
#define spu_rlmask(a, c)                                                            \
    ({                                                                              \
        __typeof__(a) __a = (a), __r;                                               \
        __CS_UNSIGNED_T(a) __u, __o;                                                \
        __CS_UNSIGNED_T(a) __c = (__CS_UNSIGNED_T(a))((__typeof__(a)){0} + (c));   \
        memcpy(&__u, &__a, 16);                                                     \
        for (int __i = 0; __i < __CS_N(__u); __i++) {                               \
            unsigned __s = (0u - (unsigned)__c[__i]) & (2 * __CS_BITS(__u) - 1);    \
            __o[__i] = __s >= (unsigned)__CS_BITS(__u) ? 0 : __u[__i] >> __s;       \
        }                                                                           \
        __CS_EVEN(1);                                                               \
        memcpy(&__r, &__o, 16);                                                     \
        __r;                                                                        \
    })

/* -- byte-level: the register's bytes numbered big-endian -------------------------------- */

static inline void __cs_to_be(const void *v, int width, unsigned char out[16]) {
    const unsigned char *b = (const unsigned char *)v;
    for (int e = 0; e < 16; e += width)
        for (int k = 0; k < width; k++)
            out[e + k] = b[e + width - 1 - k];
}
#define __cs_from_be(in, width, v) __cs_to_be((in), (width), (unsigned char *)(v))

static inline void __cs_shuffle(const void *a, const void *b, const void *pattern, void *r, int width) {
    unsigned char ab[32], out[16], p[16];
    __cs_to_be(a, width, ab);
    __cs_to_be(b, width, ab + 16);
    memcpy(p, pattern, 16);
    for (int i = 0; i < 16; i++) {
        unsigned char c = p[i];
        out[i] = (c & 0xC0) == 0x80 ? 0x00 : (c & 0xE0) == 0xC0 ? 0xFF : (c & 0xE0) == 0xE0 ? 0x80 : ab[c & 31];
    }
    __cs_from_be(out, width, r);
}

#define spu_shuffle(a, b, pattern)                                          \
    ({                                                                      \
        __typeof__(a) __a = (a), __b = (b), __r;                            \
        vec_uchar16 __p = (vec_uchar16)(pattern);                           \
        __CS_ODD(1);                                                        \
        __cs_shuffle(&__a, &__b, &__p, &__r, (int)sizeof(__a[0]));          \
        __r;                                                                \
    })

static inline void __cs_qw_bytes(const void *a, void *r, int width, int shift, int rotate) {
    unsigned char in[16], out[16];
    __cs_to_be(a, width, in);
    for (int i = 0; i < 16; i++) {
        int j = i + shift;
        out[i] = rotate ? in[j & 15] : (j >= 0 && j < 16 ? in[j] : 0);
    }
    __cs_from_be(out, width, r);
}
/* Quadword byte shifts/rotates: left by n bytes (toward byte 0); spu_rlmaskqwbyte shifts right by -n. */
#define __CS_QW(a, n, shift, rotate)                                                   \
    ({                                                                                 \
        __typeof__(a) __a = (a), __r;                                                  \
        __CS_ODD(1);                                                                   \
        __cs_qw_bytes(&__a, &__r, (int)sizeof(__a[0]), (shift), (rotate));             \
        __r;                                                                           \
    })
#define spu_slqwbyte(a, n) __CS_QW(a, n, ((n)&31) > 15 ? 16 : ((n)&31), 0)
#define spu_rlqwbyte(a, n) __CS_QW(a, n, (n)&15, 1)
#define spu_rlmaskqwbyte(a, n) __CS_QW(a, n, -((0 - (n)) & 31) < -15 ? -16 : -((0 - (n)) & 31), 0)

/* -- conversions ------------------------------------------------------------------------- */

/* Integer to float, divided by 2^scale; float to saturated integer, times 2^scale. */
#define spu_convtf(a, scale)                                                           \
    ({                                                                                 \
        vec_float4 __r;                                                                \
        __CS_EVEN(1);                                                                  \
        for (int __i = 0; __i < 4; __i++) __r[__i] = (float)(a)[__i] / (float)(1u << (scale)); \
        __r;                                                                           \
    })
static inline int __cs_sat_s32(double x) { return x >= 2147483647.0 ? 2147483647 : x <= -2147483648.0 ? (-2147483647 - 1) : (int)x; }
#define spu_convts(a, scale)                                                               \
    ({                                                                                     \
        vec_int4 __r;                                                                      \
        __CS_EVEN(1);                                                                      \
        for (int __i = 0; __i < 4; __i++) __r[__i] = __cs_sat_s32((double)(a)[__i] * (double)(1u << (scale))); \
        __r;                                                                               \
    })

static inline unsigned int __cs_sat_u32(double x) { return x >= 4294967295.0 ? 4294967295u : x <= 0 ? 0u : (unsigned int)x; }
#define spu_convtu(a, scale)                                                               \
    ({                                                                                     \
        vec_uint4 __r;                                                                     \
        __CS_EVEN(1);                                                                      \
        for (int __i = 0; __i < 4; __i++) __r[__i] = __cs_sat_u32((double)(a)[__i] * (double)(1u << (scale))); \
        __r;                                                                               \
    })

/* -- ordering: each SDK call is already in program order with the MFC, so these only keep
 * the compiler from moving memory accesses across them -------------------------------- */
#define spu_sync() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define spu_dsync() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define spu_sync_c() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* -- more arithmetic: multiplies of halfwords, byte sums and averages ------------------ */

/* 16 x 16 -> 32-bit products of the even (0, 2, 4, 6) or odd halfwords. */
#define __CS_MUL_HALVES(a, b, first)                                                        \
    ({                                                                                      \
        __typeof__(a) __a = (a), __b = (b);                                                 \
        __typeof__(_Generic((a), vec_ushort8: (vec_uint4){0}, vec_short8: (vec_int4){0})) __r; \
        __CS_EVEN(1);                                                                       \
        for (int __i = 0; __i < 4; __i++) __r[__i] = __a[2 * __i + (first)] * __b[2 * __i + (first)]; \
        __r;                                                                                \
    })
#define spu_mule(a, b) __CS_MUL_HALVES(a, b, 0)
#define spu_mulo(a, b) __CS_MUL_HALVES(a, b, 1)

static inline vec_uchar16 __cs_cntb(vec_uchar16 a) {
    vec_uchar16 r;
    for (int i = 0; i < 16; i++) r[i] = (unsigned char)__builtin_popcount(a[i]);
    return r;
}
#define spu_cntb(a) ({ __CS_EVEN(1); (__typeof__(a))__cs_cntb((vec_uchar16)(a)); })

/* Leading zeros of each word (32 for a zero word). */
static inline vec_uint4 __cs_cntlz(vec_uint4 a) {
    vec_uint4 r;
    for (int i = 0; i < 4; i++) r[i] = a[i] ? (unsigned int)__builtin_clz(a[i]) : 32u;
    return r;
}
#define spu_cntlz(a) ({ __CS_EVEN(1); __cs_cntlz((vec_uint4)(a)); })

static inline vec_uchar16 __cs_absd(vec_uchar16 a, vec_uchar16 b) {
    vec_uchar16 r;
    for (int i = 0; i < 16; i++) r[i] = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    return r;
}
static inline vec_uchar16 __cs_avg(vec_uchar16 a, vec_uchar16 b) {
    vec_uchar16 r;
    for (int i = 0; i < 16; i++) r[i] = (unsigned char)((a[i] + b[i] + 1) >> 1);
    return r;
}
/* Each word: halfword 0 the sum of b's four bytes, halfword 1 the sum of a's. */
static inline vec_ushort8 __cs_sumb(vec_uchar16 a, vec_uchar16 b) {
    vec_ushort8 r;
    for (int w = 0; w < 4; w++) {
        r[2 * w] = (unsigned short)(b[4 * w] + b[4 * w + 1] + b[4 * w + 2] + b[4 * w + 3]);
        r[2 * w + 1] = (unsigned short)(a[4 * w] + a[4 * w + 1] + a[4 * w + 2] + a[4 * w + 3]);
    }
    return r;
}
#define spu_absd(a, b) ({ __CS_EVEN(1); __cs_absd((a), (b)); })
#define spu_avg(a, b) ({ __CS_EVEN(1); __cs_avg((a), (b)); })
#define spu_sumb(a, b) ({ __CS_EVEN(1); __cs_sumb((a), (b)); })

/* |a| > |b|, |a| == |b| (floats). */
#define spu_cmpabsgt(a, b) ({ __CS_EVEN(1); (vec_uint4)(__cs_fabs4(a) > __cs_fabs4(b)); })
#define spu_cmpabseq(a, b) ({ __CS_EVEN(1); (vec_uint4)(__cs_fabs4(a) == __cs_fabs4(b)); })
static inline vec_float4 __cs_fabs4(vec_float4 a) {
    vec_uint4 u;
    memcpy(&u, &a, 16);
    u &= 0x7fffffffu;
    memcpy(&a, &u, 16);
    return a;
}

/* -- gathering bits, masks from bits, or across ----------------------------------------- */

/* The rightmost bit of each element, gathered into element 0 (element 0's bit leftmost). */
#define spu_gather(a)                                                              \
    ({                                                                             \
        __typeof__(a) __a = (a);                                                   \
        __CS_MASK_T(a) __u;                                                        \
        memcpy(&__u, &__a, 16);                                                    \
        unsigned int __bits = 0;                                                   \
        for (int __i = 0; __i < __CS_N(__u); __i++) __bits = (__bits << 1) | (__u[__i] & 1); \
        __CS_ODD(1);                                                               \
        __typeof__(_Generic((a), vec_uchar16: (vec_uint4){0}, vec_char16: (vec_int4){0}, \
            vec_ushort8: (vec_uint4){0}, vec_short8: (vec_int4){0}, vec_uint4: (vec_uint4){0}, \
            vec_int4: (vec_int4){0}, vec_float4: (vec_uint4){0})) __g = {0};       \
        __g[0] = __bits;                                                           \
        __g;                                                                       \
    })
/* A mask per byte, halfword or word from the rightmost 16, 8 or 4 bits of x (its
 * leftmost bit for element 0). */
static inline vec_uchar16 __cs_maskb(unsigned int x) {
    vec_uchar16 r;
    for (int i = 0; i < 16; i++) r[i] = (x >> (15 - i)) & 1 ? 0xFF : 0;
    return r;
}
static inline vec_ushort8 __cs_maskh(unsigned int x) {
    vec_ushort8 r;
    for (int i = 0; i < 8; i++) r[i] = (x >> (7 - i)) & 1 ? 0xFFFF : 0;
    return r;
}
static inline vec_uint4 __cs_maskw(unsigned int x) {
    vec_uint4 r;
    for (int i = 0; i < 4; i++) r[i] = (x >> (3 - i)) & 1 ? 0xFFFFFFFFu : 0;
    return r;
}
#define spu_maskb(x) ({ __CS_ODD(1); __cs_maskb((unsigned int)(x)); })
#define spu_maskh(x) ({ __CS_ODD(1); __cs_maskh((unsigned int)(x)); })
#define spu_maskw(x) ({ __CS_ODD(1); __cs_maskw((unsigned int)(x)); })
/* The OR of the four words, in element 0. */
#define spu_orx(a)                                                   \
    ({                                                               \
        __typeof__(a) __a = (a), __r = {0};                          \
        __CS_ODD(1);                                                 \
        __r[0] = __a[0] | __a[1] | __a[2] | __a[3];                  \
        __r;                                                         \
    })

/* -- widening and narrowing -------------------------------------------------------------- */

/* Sign-extends the odd (right) half of each element pair; a float vector's even
 * elements become doubles. */
#define spu_extend(a)                                                                       \
    ({                                                                                      \
        __typeof__(a) __a = (a);                                                            \
        __typeof__(_Generic((a), vec_char16: (vec_short8){0}, vec_short8: (vec_int4){0},    \
            vec_int4: (vec_llong2){0}, vec_float4: (vec_double2){0})) __r;                  \
        const int __odd = !__builtin_types_compatible_p(__typeof__(a), vec_float4);         \
        __CS_EVEN(1);                                                                       \
        for (int __i = 0; __i < __CS_N(__r); __i++) __r[__i] = __a[2 * __i + __odd];        \
        __r;                                                                                \
    })
/* Doubles rounded to floats, in elements 0 and 2 (1 and 3 are zero). */
#define spu_roundtf(a)                                  \
    ({                                                  \
        vec_double2 __a = (a);                          \
        vec_float4 __r = {0};                           \
        __CS_EVEN(7);                                   \
        __r[0] = (float)__a[0];                         \
        __r[2] = (float)__a[1];                         \
        __r;                                            \
    })

#endif
