/*
** zr_crc.h — CRC32C (Castagnoli), runtime/zr_crc.c: the checksum of checkpoint shards and of
** swap-file stripes. Its own module so that the checkpoint and NVMe code share it without either
** depending on the other.
*/
#ifndef ZR_CRC_H
#define ZR_CRC_H
#include <stddef.h>
#include <stdint.h>

/* SSE4.2 when the CPU has it, tables otherwise. crc = 0 to start; chain by passing the previous
** result. */
uint32_t zr_crc32c(uint32_t crc, const void *data, size_t n);
/* The portable table version (the oracle for the hardware path in tests). */
uint32_t zr_crc32c_sw(uint32_t crc, const void *data, size_t n);
#endif
