/* The SPU side of cellsim's C runtime: tag-group management and the heap. The tag
 * table is a static, so each SPE has its own (statics live in the local store).
 * Written for cellsim. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "spu_mfcio.h"

static unsigned int reserved_tags;

unsigned int mfc_tag_reserve(void) {
    for (unsigned int t = 0; t < 32; t++)
        if (!(reserved_tags & (1u << t))) {
            reserved_tags |= 1u << t;
            return t;
        }
    return MFC_TAG_INVALID;
}

unsigned int mfc_tag_release(unsigned int tag) {
    if (tag >= 32 || !(reserved_tags & (1u << tag)))
        return MFC_TAG_INVALID;
    reserved_tags &= ~(1u << tag);
    return MFC_TAG_VALID;
}

unsigned int mfc_multi_tag_reserve(unsigned int n) {
    if (n == 0 || n > 32)
        return MFC_TAG_INVALID;
    for (unsigned int t = 0; t + n <= 32; t++) {
        unsigned int want = (n == 32 ? 0xFFFFFFFFu : ((1u << n) - 1)) << t;
        if (!(reserved_tags & want)) {
            reserved_tags |= want;
            return t;
        }
    }
    return MFC_TAG_INVALID;
}

unsigned int mfc_multi_tag_release(unsigned int tag, unsigned int n) {
    if (n == 0 || tag + n > 32)
        return MFC_TAG_INVALID;
    unsigned int want = (n == 32 ? 0xFFFFFFFFu : ((1u << n) - 1)) << tag;
    if ((reserved_tags & want) != want)
        return MFC_TAG_INVALID;
    reserved_tags &= ~want;
    return MFC_TAG_VALID;
}

/* -- the heap: the local store between the program's data and its stack ---------------
 * As on the SPU, malloc takes local-store memory, so a heap buffer is a DMA target. First
 * fit over blocks with a 16-byte header (the block's bytes and whether it is used), free
 * neighbours merged as the search passes them. The bounds are thread-local, not statics:
 * a DMA over the program's data must not lose the heap. The C library's own allocations
 * (stdio buffers) stay in the host's heap. */
typedef struct heap_block {
    uint64_t bytes, used;
} heap_block;

static __thread char *heap_lo, *heap_hi;

int cellsim_in_thread(void);
void *__real_malloc(size_t);
void __real_free(void *);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);
int __real_posix_memalign(void **, size_t, size_t);
void *__real_memalign(size_t, size_t);
void *__real_aligned_alloc(size_t, size_t);

void cellsim_heap_setup(char *lo, char *hi) {
    lo = (char *)(((uintptr_t)lo + 15) & ~(uintptr_t)15);
    if (hi - lo < (ptrdiff_t)(2 * sizeof(heap_block)))
        return;
    heap_lo = lo;
    heap_hi = hi;
    ((heap_block *)lo)->bytes = (uint64_t)(hi - lo);
    ((heap_block *)lo)->used = 0;
}

static int in_heap(const void *p) { return heap_lo && (const char *)p > heap_lo && (const char *)p < heap_hi; }
static int use_heap(void) { return heap_lo && cellsim_in_thread(); }

static void *heap_alloc(size_t size, size_t align) {
    if (align < 16)
        align = 16;
    if (align & (align - 1) || size > (size_t)(heap_hi - heap_lo)) {
        errno = align & (align - 1) ? EINVAL : ENOMEM;
        return 0;
    }
    size_t need = ((size + 15) & ~(size_t)15) + sizeof(heap_block);
    for (char *at = heap_lo; at < heap_hi; at += ((heap_block *)at)->bytes) {
        heap_block *b = (heap_block *)at;
        if (b->used)
            continue;
        for (char *next = at + b->bytes; next < heap_hi && !((heap_block *)next)->used;
             next = at + b->bytes)
            b->bytes += ((heap_block *)next)->bytes;
        uintptr_t payload = (uintptr_t)at + sizeof(heap_block);
        size_t pad = (size_t)((((payload + align - 1) & ~(uintptr_t)(align - 1))) - payload);
        if (pad + need > b->bytes)
            continue;
        if (pad) { /* a free block before the aligned one */
            heap_block *aligned = (heap_block *)(at + pad);
            aligned->bytes = b->bytes - pad;
            b->bytes = pad;
            b = aligned;
        }
        if (b->bytes >= need + 2 * sizeof(heap_block)) { /* the rest stays free */
            heap_block *rest = (heap_block *)((char *)b + need);
            rest->bytes = b->bytes - need;
            rest->used = 0;
            b->bytes = need;
        }
        b->used = 1;
        return (char *)b + sizeof(heap_block);
    }
    errno = ENOMEM;
    return 0;
}

static size_t heap_size(const void *p) { return ((const heap_block *)p - 1)->bytes - sizeof(heap_block); }

void *__wrap_malloc(size_t size) { return use_heap() ? heap_alloc(size, 16) : __real_malloc(size); }

void __wrap_free(void *p) {
    if (in_heap(p))
        ((heap_block *)p - 1)->used = 0;
    else
        __real_free(p);
}

void *__wrap_calloc(size_t n, size_t size) {
    if (!use_heap())
        return __real_calloc(n, size);
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return 0;
    }
    void *p = heap_alloc(n * size, 16);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *__wrap_realloc(void *p, size_t size) {
    if (!in_heap(p) && (p || !use_heap()))
        return __real_realloc(p, size);
    void *q = heap_alloc(size, 16);
    if (p && q) {
        size_t old = heap_size(p);
        memcpy(q, p, old < size ? old : size);
        __wrap_free(p);
    }
    return q;
}

int __wrap_posix_memalign(void **out, size_t align, size_t size) {
    if (!use_heap())
        return __real_posix_memalign(out, align, size);
    *out = heap_alloc(size, align);
    return *out ? 0 : errno;
}

void *__wrap_memalign(size_t align, size_t size) {
    return use_heap() ? heap_alloc(size, align) : __real_memalign(align, size);
}

void *__wrap_aligned_alloc(size_t align, size_t size) {
    return use_heap() ? heap_alloc(size, align) : __real_aligned_alloc(align, size);
}

/* libmisc's malloc_align(size, log2_align) and free_align. */
void *malloc_align(size_t size, unsigned int log2_align) {
    return log2_align < 32 ? __wrap_memalign((size_t)1 << log2_align, size) : 0;
}
void free_align(void *p) { __wrap_free(p); }
