/* zr_nvme.h — placeholder; its owner replaces it. */
#ifndef ZR_NVME_H
#define ZR_NVME_H
#endif
