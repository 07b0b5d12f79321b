/* The SPU side of cellsim's C runtime: tag-group management. Its table is a
 * static, so each SPE has its own (statics live in the local store). Written for cellsim. */
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
