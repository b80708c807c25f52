/* zr_coll.h — placeholder; its owner replaces it. */
#ifndef ZR_COLL_H
#define ZR_COLL_H
#endif
