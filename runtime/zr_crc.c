/*
** zr_crc.c — CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of checkpoint shards
** and of swap-file stripes (zr_nvme_sum_*).
** Chosen over a 64-bit hash because x86 computes it in hardware (SSE4.2 crc32, 8 bytes per
** instruction) and its test vectors are standard (RFC 3720). The table version (slicing by 8) is
** the fallback and the test oracle. Convention as in iSCSI: initial value ~0, final xor ~0, and
** the public functions take and return the finished value so calls chain.
*/
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "zr_crc.h"
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#define POLY 0x82F63B78u

static uint32_t tab[8][256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void make_tables(void)
{
    uint32_t i, k;
    for (i = 0; i < 256; i++) {
        uint32_t c = i;
        for (k = 0; k < 8; k++) c = (c >> 1) ^ (POLY & (0u - (c & 1)));
        tab[0][i] = c;
    }
    for (i = 0; i < 256; i++)
        for (k = 1; k < 8; k++) tab[k][i] = (tab[k - 1][i] >> 8) ^ tab[0][tab[k - 1][i] & 0xff];
}

uint32_t zr_crc32c_sw(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    uint32_t c = ~crc;
    pthread_once(&tab_once, make_tables);
    while (n && ((uintptr_t)p & 7)) { c = (c >> 8) ^ tab[0][(c ^ *p++) & 0xff]; n--; }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= c;
        c = tab[7][w & 0xff] ^ tab[6][(w >> 8) & 0xff] ^ tab[5][(w >> 16) & 0xff] ^
            tab[4][(w >> 24) & 0xff] ^ tab[3][(w >> 32) & 0xff] ^ tab[2][(w >> 40) & 0xff] ^
            tab[1][(w >> 48) & 0xff] ^ tab[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ tab[0][(c ^ *p++) & 0xff];
    return ~c;
}

#if defined(__x86_64__)
/* Three lanes: the crc32 instruction takes 3 cycles but a new one can start every cycle, so three
** independent streams over the thirds of a block run about three times as fast as one. The lanes'
** registers are joined by the CRC's linearity: after A|B|C from state s, the register is
** R(s,A)·x^(16L) + R(0,B)·x^(8L) + R(0,C) in GF(2)[x] mod P; multiplying by the fixed x^(8L), x^(16L)
** goes through byte tables built once (the swap-file checksums run this on every byte swapped). */
#define LANE_LONG 8192
#define LANE_SHORT 256
static uint32_t shift_tab[4][4][256];  /* by x^(8L): LONG, 2 LONG, SHORT, 2 SHORT; [byte][value] */
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static uint32_t gf_mul(uint32_t a, uint32_t b)    /* reflected: bit 31 is x^0 */
{
    uint32_t p = 0;
    for (int i = 0; i < 32; i++) {
        if (a & 0x80000000u) p ^= b;
        a <<= 1;
        b = (b >> 1) ^ (POLY & (0u - (b & 1)));
    }
    return p;
}

static void make_shift_tabs(void)
{
    static const int bytes[4] = {LANE_LONG, 2 * LANE_LONG, LANE_SHORT, 2 * LANE_SHORT};
    for (int w = 0; w < 4; w++) {
        uint32_t k = 0x80000000u;                 /* x^0, then times x, 8 x bytes[w] times */
        for (long i = 0; i < 8L * bytes[w]; i++) k = (k >> 1) ^ (POLY & (0u - (k & 1)));
        for (int j = 0; j < 4; j++)
            for (uint32_t v = 0; v < 256; v++) shift_tab[w][j][v] = gf_mul(v << (8 * j), k);
    }
}

static uint32_t shift(int w, uint32_t c)
{
    return shift_tab[w][0][c & 0xff] ^ shift_tab[w][1][(c >> 8) & 0xff] ^ shift_tab[w][2][(c >> 16) & 0xff] ^
           shift_tab[w][3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint64_t lanes(uint64_t c, const uint8_t **pp, size_t *np,
                                                        size_t len, int w)
{
    const uint8_t *p = *pp;
    while (*np >= 3 * len) {
        uint64_t a = c, b = 0, d = 0, x, y, z;
        for (size_t i = 0; i < len; i += 8) {
            memcpy(&x, p + i, 8);
            memcpy(&y, p + len + i, 8);
            memcpy(&z, p + 2 * len + i, 8);
            a = _mm_crc32_u64(a, x);
            b = _mm_crc32_u64(b, y);
            d = _mm_crc32_u64(d, z);
        }
        c = shift(w + 1, (uint32_t)a) ^ shift(w, (uint32_t)b) ^ (uint32_t)d;
        p += 3 * len;
        *np -= 3 * len;
    }
    *pp = p;
    return c;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) { c = _mm_crc32_u8((uint32_t)c, *p++); n--; }
    if (n >= 3 * LANE_SHORT) {
        pthread_once(&shift_once, make_shift_tabs);
        c = lanes(c, &p, &n, LANE_LONG, 0);
        c = lanes(c, &p, &n, LANE_SHORT, 2);
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif

uint32_t zr_crc32c(uint32_t crc, const void *data, size_t n)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) return crc_hw(crc, data, n);
#endif
    return zr_crc32c_sw(crc, data, n);
}
