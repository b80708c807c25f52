/* zr_train.h — placeholder; its owner replaces it. */
#ifndef ZR_TRAIN_H
#define ZR_TRAIN_H
#endif
