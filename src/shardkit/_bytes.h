/* Byte-order helpers shared by shardkit's C accelerators (setup.py puts src/shardkit on their
 * include path). */
#ifndef SHARDKIT_BYTES_H
#define SHARDKIT_BYTES_H

#include <stdint.h>
#include <string.h>

/* The little-endian uint64 at p (any alignment). */
static inline uint64_t le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Store v at p as a little-endian uint64 (any alignment). */
static inline void put_le64(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}

#endif /* SHARDKIT_BYTES_H */
