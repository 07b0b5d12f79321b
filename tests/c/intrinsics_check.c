/* Every intrinsic of cellsim's spu_intrinsics.h against a scalar reference written
 * from the SPU's definitions (registers as big-endian bytes). Prints one line per
 * failure and "N checks, F failures" at the end; tests/c/test_c_programs.py runs it. */
#include <spu_intrinsics.h>
#include <stdio.h>
#include <string.h>

static int checks, failures;
#define CHECK(cond, ...)                        \
    do {                                        \
        checks++;                               \
        if (!(cond)) {                          \
            failures++;                         \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                \
            printf("\n");                       \
        }                                       \
    } while (0)

/* The register's byte i (big-endian numbering) of a vector with elements of w bytes. */
static unsigned char reg_byte(const void *v, int w, int i) {
    const unsigned char *b = v;
    return b[(i / w) * w + (w - 1 - i % w)];
}

int main(void) {
    vec_int4 a = {1, -2, 3, 0x7fffffff}, b = {10, 20, -30, 1};
    vec_float4 f = {1.5f, -2.0f, 3.25f, 0.0f}, g = {2.0f, 0.5f, -1.0f, 7.0f}, h = {0.25f, 1.0f, 2.0f, -3.0f};
    vec_double2 d = {1.5, -2.0}, e = {4.0, 0.25};
    vec_ushort8 s = {1, 2, 3, 0x8000, 0xffff, 6, 7, 8};
    vec_uchar16 u;
    for (int i = 0; i < 16; i++)
        u[i] = (unsigned char)(i * 17);

    /* splats, extract, insert, promote */
    vec_int4 sp = spu_splats(-7);
    for (int i = 0; i < 4; i++) CHECK(sp[i] == -7, "splats int element %d", i);
    vec_double2 spd = spu_splats(2.5);
    CHECK(spd[0] == 2.5 && spd[1] == 2.5, "splats double");
    vec_uchar16 spc = spu_splats((unsigned char)200);
    CHECK(spc[15] == 200, "splats uchar");
    for (int i = 0; i < 4; i++) CHECK(spu_extract(a, i) == ((int[]){1, -2, 3, 0x7fffffff})[i], "extract %d", i);
    CHECK(spu_extract(a, 5) == -2, "extract index modulo the element count");
    vec_int4 ins = spu_insert(99, a, 2);
    CHECK(ins[2] == 99 && ins[0] == 1 && ins[3] == 0x7fffffff, "insert");
    vec_float4 pr = spu_promote(3.0f, 1);
    CHECK(pr[1] == 3.0f, "promote");

    /* arithmetic, element by element */
    vec_int4 sum = spu_add(a, b), dif = spu_sub(a, b), add1 = spu_add(a, 5);
    for (int i = 0; i < 4; i++) {
        CHECK(sum[i] == (int)((unsigned)a[i] + (unsigned)b[i]), "add %d (wraps)", i);
        CHECK(dif[i] == (int)((unsigned)a[i] - (unsigned)b[i]), "sub %d", i);
        CHECK(add1[i] == (int)((unsigned)a[i] + 5u), "add immediate %d", i);
    }
    vec_float4 ma = spu_madd(f, g, h), ms = spu_msub(f, g, h), nms = spu_nmsub(f, g, h), nma = spu_nmadd(f, g, h);
    vec_float4 mu = spu_mul(f, g);
    for (int i = 0; i < 4; i++) {
        CHECK(ma[i] == f[i] * g[i] + h[i], "madd %d", i);
        CHECK(ms[i] == f[i] * g[i] - h[i], "msub %d", i);
        CHECK(nms[i] == h[i] - f[i] * g[i], "nmsub %d", i);
        CHECK(nma[i] == -(f[i] * g[i] + h[i]), "nmadd %d", i);
        CHECK(mu[i] == f[i] * g[i], "mul %d", i);
    }
    vec_double2 dm = spu_madd(d, e, d);
    CHECK(dm[0] == 1.5 * 4.0 + 1.5 && dm[1] == -2.0 * 0.25 - 2.0, "madd double");
    vec_float4 re = spu_re(g);
    CHECK(re[1] == 2.0f, "re");
    vec_float4 rs = spu_rsqrte(spu_splats(4.0f));
    CHECK(rs[0] == 0.5f, "rsqrte");

    /* logic, compares, select */
    vec_int4 an = spu_and(a, b), o = spu_or(a, b), x = spu_xor(a, b), ac = spu_andc(a, b), oc = spu_orc(a, b);
    vec_int4 na = spu_nand(a, b), no = spu_nor(a, b);
    for (int i = 0; i < 4; i++) {
        CHECK(an[i] == (a[i] & b[i]) && o[i] == (a[i] | b[i]) && x[i] == (a[i] ^ b[i]), "and/or/xor %d", i);
        CHECK(ac[i] == (a[i] & ~b[i]) && oc[i] == (a[i] | ~b[i]), "andc/orc %d", i);
        CHECK(na[i] == ~(a[i] & b[i]) && no[i] == ~(a[i] | b[i]), "nand/nor %d", i);
    }
    vec_uint4 eq = spu_cmpeq(a, spu_splats(3)), gt = spu_cmpgt(a, b);
    for (int i = 0; i < 4; i++) {
        CHECK(eq[i] == (a[i] == 3 ? 0xffffffffu : 0), "cmpeq %d", i);
        CHECK(gt[i] == (a[i] > b[i] ? 0xffffffffu : 0), "cmpgt %d (signed)", i);
    }
    vec_uint4 fgt = spu_cmpgt(f, g);
    for (int i = 0; i < 4; i++) CHECK(fgt[i] == (f[i] > g[i] ? 0xffffffffu : 0), "cmpgt float %d", i);
    vec_int4 sel = spu_sel(a, b, gt);
    for (int i = 0; i < 4; i++) CHECK(sel[i] == (a[i] > b[i] ? b[i] : a[i]), "sel %d", i);
    vec_float4 fsel = spu_sel(f, g, fgt);
    for (int i = 0; i < 4; i++) CHECK(fsel[i] == (f[i] > g[i] ? g[i] : f[i]), "sel float %d", i);

    /* element shifts and rotates */
    vec_uint4 w = {0x80000001u, 0x12345678u, 1, 0xffffffffu};
    vec_uint4 rl = spu_rl(w, 4), sl = spu_sl(w, 4), rm = spu_rlmask(w, -4), sl40 = spu_sl(w, 40);
    for (int i = 0; i < 4; i++) {
        CHECK(rl[i] == ((w[i] << 4) | (w[i] >> 28)), "rl %d", i);
        CHECK(sl[i] == (w[i] << 4), "sl %d", i);
        CHECK(rm[i] == (w[i] >> 4), "rlmask %d", i);
        CHECK(sl40[i] == 0, "sl by 40 gives 0 (%d)", i);
    }
    vec_ushort8 rls = spu_rl(s, 1);
    for (int i = 0; i < 8; i++) CHECK(rls[i] == (unsigned short)((s[i] << 1) | (s[i] >> 15)), "rl halfword %d", i);

    /* shuffle: bytes of the register, big-endian */
    vec_uchar16 swap_words = {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11};
    vec_int4 sw = spu_shuffle(a, b, swap_words);
    CHECK(sw[0] == a[1] && sw[1] == a[0] && sw[2] == a[3] && sw[3] == a[2], "shuffle swaps words");
    vec_uchar16 from_b = {16, 17, 18, 19, 0x80, 0x80, 0x80, 0x80, 0xC0, 0xC0, 0xC0, 0xC0, 0xE0, 0xE0, 0xE0, 0xE0};
    vec_int4 sb = spu_shuffle(a, b, from_b);
    CHECK(sb[0] == b[0] && sb[1] == 0 && sb[2] == -1 && (unsigned)sb[3] == 0x80808080u, "shuffle specials");
    vec_uchar16 pat;
    for (int i = 0; i < 16; i++) pat[i] = (unsigned char)((i * 7 + 3) & 31);
    vec_ushort8 ss = spu_shuffle(s, s, pat);
    for (int i = 0; i < 16; i++) {
        int src = pat[i] & 15;
        CHECK(reg_byte(&ss, 2, i) == reg_byte(&s, 2, src), "shuffle halfwords byte %d", i);
    }
    vec_uchar16 us = spu_shuffle(u, u, pat);
    for (int i = 0; i < 16; i++) CHECK(us[i] == u[pat[i] & 15], "shuffle bytes %d", i);

    /* quadword byte shifts and rotates */
    vec_uint4 q = {0x00010203u, 0x04050607u, 0x08090a0bu, 0x0c0d0e0fu};
    vec_uint4 sq = spu_slqwbyte(q, 4), rq = spu_rlqwbyte(q, 5), mq = spu_rlmaskqwbyte(q, -4);
    CHECK(sq[0] == q[1] && sq[1] == q[2] && sq[2] == q[3] && sq[3] == 0, "slqwbyte 4");
    for (int i = 0; i < 16; i++) CHECK(reg_byte(&rq, 4, i) == (i + 5) % 16, "rlqwbyte 5 byte %d", i);
    CHECK(mq[0] == 0 && mq[1] == q[0] && mq[2] == q[1] && mq[3] == q[2], "rlmaskqwbyte -4");
    vec_uint4 s16 = spu_slqwbyte(q, 16);
    CHECK(s16[0] == 0 && s16[3] == 0, "slqwbyte 16 gives 0");

    /* conversions */
    vec_float4 cf = spu_convtf(a, 1);
    CHECK(cf[0] == 0.5f && cf[1] == -1.0f, "convtf");
    vec_int4 ci = spu_convts(spu_splats(3e9f), 0), cj = spu_convts(f, 2);
    CHECK(ci[0] == 0x7fffffff && cj[0] == 6 && cj[1] == -8, "convts saturates and scales");


    /* halfword multiplies, byte counts, sums and averages */
    vec_short8 ha = {1, -2, 3, -4, 300, 6, -7, 8}, hb = {10, 20, 30, 40, 500, 60, 70, 80};
    vec_int4 me = spu_mule(ha, hb), mo = spu_mulo(ha, hb);
    for (int i = 0; i < 4; i++) {
        CHECK(me[i] == ha[2 * i] * hb[2 * i], "mule %d", i);
        CHECK(mo[i] == ha[2 * i + 1] * hb[2 * i + 1], "mulo %d", i);
    }
    vec_uchar16 cb = spu_cntb(u), ad = spu_absd(u, spu_splats((unsigned char)100)), av = spu_avg(u, cb);
    for (int i = 0; i < 16; i++) {
        int bits = 0;
        for (int k = 0; k < 8; k++) bits += (u[i] >> k) & 1;
        CHECK(cb[i] == bits, "cntb %d", i);
        CHECK(ad[i] == (u[i] > 100 ? u[i] - 100 : 100 - u[i]), "absd %d", i);
        CHECK(av[i] == (u[i] + cb[i] + 1) / 2, "avg %d", i);
    }
    vec_ushort8 sb8 = spu_sumb(u, cb);
    for (int w2 = 0; w2 < 4; w2++) {
        CHECK(sb8[2 * w2] == cb[4 * w2] + cb[4 * w2 + 1] + cb[4 * w2 + 2] + cb[4 * w2 + 3], "sumb b word %d", w2);
        CHECK(sb8[2 * w2 + 1] == u[4 * w2] + u[4 * w2 + 1] + u[4 * w2 + 2] + u[4 * w2 + 3], "sumb a word %d", w2);
    }
    vec_uint4 cag = spu_cmpabsgt(f, g), cae = spu_cmpabseq(f, spu_splats(-1.5f));
    for (int i = 0; i < 4; i++) {
        float fa = f[i] < 0 ? -f[i] : f[i], ga = g[i] < 0 ? -g[i] : g[i];
        CHECK(cag[i] == (fa > ga ? 0xffffffffu : 0), "cmpabsgt %d", i);
        CHECK(cae[i] == (fa == 1.5f ? 0xffffffffu : 0), "cmpabseq %d", i);
    }

    /* gather, masks, or across */
    vec_uint4 gw = spu_gather(w);
    CHECK(gw[0] == ((w[0] & 1) << 3 | (w[1] & 1) << 2 | (w[2] & 1) << 1 | (w[3] & 1)) && gw[1] == 0, "gather words");
    vec_uint4 gb = spu_gather(u);
    unsigned int want_gb = 0;
    for (int i = 0; i < 16; i++) want_gb = (want_gb << 1) | (u[i] & 1);
    CHECK(gb[0] == want_gb, "gather bytes");
    vec_uchar16 mb = spu_maskb(0x8001);
    CHECK(mb[0] == 0xFF && mb[15] == 0xFF && mb[1] == 0 && mb[14] == 0, "maskb");
    vec_ushort8 mh = spu_maskh(0x81);
    CHECK(mh[0] == 0xFFFF && mh[7] == 0xFFFF && mh[1] == 0, "maskh");
    vec_uint4 mw = spu_maskw(0x5);
    CHECK(mw[0] == 0 && mw[1] == 0xFFFFFFFFu && mw[2] == 0 && mw[3] == 0xFFFFFFFFu, "maskw");
    vec_uint4 ox = spu_orx(w);
    CHECK(ox[0] == (w[0] | w[1] | w[2] | w[3]) && ox[1] == 0 && ox[3] == 0, "orx");

    /* widening and narrowing */
    vec_int4 ex = spu_extend(ha);
    for (int i = 0; i < 4; i++) CHECK(ex[i] == ha[2 * i + 1], "extend halfwords %d", i);
    vec_char16 c8 = {0, -1, 0, 2, 0, -128, 0, 127, 0, 5, 0, -5, 0, 1, 0, -2};
    vec_short8 e8 = spu_extend(c8);
    for (int i = 0; i < 8; i++) CHECK(e8[i] == c8[2 * i + 1], "extend bytes %d", i);
    vec_double2 ed = spu_extend(f);
    CHECK(ed[0] == (double)f[0] && ed[1] == (double)f[2], "extend floats (elements 0 and 2)");
    vec_float4 rt = spu_roundtf(d);
    CHECK(rt[0] == 1.5f && rt[1] == 0 && rt[2] == -2.0f && rt[3] == 0, "roundtf");

    /* eqv, leading zeros, unsigned conversion, ordering */
    vec_uint4 ev = spu_eqv(w, spu_splats(0x0F0F0F0Fu));
    for (int i = 0; i < 4; i++) CHECK(ev[i] == ~(w[i] ^ 0x0F0F0F0Fu), "eqv %d", i);
    vec_uint4 lz = spu_cntlz(((vec_uint4){0, 1, 0x80000000u, 0x00010000u}));
    CHECK(lz[0] == 32 && lz[1] == 31 && lz[2] == 0 && lz[3] == 15, "cntlz");
    vec_uint4 cu = spu_convtu(((vec_float4){-1.0f, 2.5f, 5e9f, 3.0f}), 1);
    CHECK(cu[0] == 0 && cu[1] == 5 && cu[2] == 4294967295u && cu[3] == 6, "convtu saturates");
    spu_sync();
    spu_dsync();

    printf("%d checks, %d failures\n", checks, failures);
    return failures != 0;
}
