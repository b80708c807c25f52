/*
** zr_err.h — libzrt's error text: the message of the last failing call in this thread, the one
** place a caller reads why a call returned a negative errno (runtime/zr_err.c). Every module that
** explains a failure writes here; none prints it: the caller decides what the user sees.
*/
#ifndef ZR_ERR_H
#define ZR_ERR_H

/* The text of the last failing call of this thread ("" before any failure). */
const char *zr_train_error(void);
/* Formats the text and returns rc (a negative errno), for `return zr_train_fail(-EIO, ...)`. */
int zr_train_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
