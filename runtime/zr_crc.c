/*
** zr_crc.c — CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of checkpoint shards.
** Chosen over a 64-bit hash because x86 computes it in hardware (SSE4.2 crc32, 8 bytes per
** instruction) and its test vectors are standard (RFC 3720). The table version (slicing by 8) is
** the fallback and the test oracle. Convention as in iSCSI: initial value ~0, final xor ~0, and
** the public functions take and return the finished value so calls chain.
*/
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "zr_ckpt.h"
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
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) { c = _mm_crc32_u8((uint32_t)c, *p++); n--; }
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
