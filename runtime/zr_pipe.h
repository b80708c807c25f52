/* zr_pipe.h — placeholder; its owner replaces it. */
#ifndef ZR_PIPE_H
#define ZR_PIPE_H
#endif
