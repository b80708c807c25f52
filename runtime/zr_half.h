/* zr_half.h — placeholder; its owner replaces it. */
#ifndef ZR_HALF_H
#define ZR_HALF_H
#endif
