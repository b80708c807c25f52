/*
** zg_ckpt.h — the `zgen ckpt` subcommand (ckpt.c): a trainer checkpoint inspected (--info) or
** consolidated into one safetensors (--export) without launching a job.
*/
#ifndef ZG_CKPT_H
#define ZG_CKPT_H
/* argv[0] is "ckpt"; returns the exit status (0 ok, 1 error, 2 usage). */
int zg_ckpt_main(int argc, char **argv);
#endif
