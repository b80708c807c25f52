/* zr_mem.h — placeholder; its owner replaces it. */
#ifndef ZR_MEM_H
#define ZR_MEM_H
#endif
