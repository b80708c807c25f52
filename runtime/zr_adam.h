/* zr_adam.h — placeholder; its owner replaces it. */
#ifndef ZR_ADAM_H
#define ZR_ADAM_H
#endif
