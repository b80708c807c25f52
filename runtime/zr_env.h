/* zr_env.h — placeholder; its owner replaces it. */
#ifndef ZR_ENV_H
#define ZR_ENV_H
#endif
