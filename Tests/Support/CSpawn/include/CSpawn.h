#pragma once
// Starting a test's child process (FaceGateTestSupport's ChildProcess) with posix_spawn, so that the tests never depend
// on Foundation's Process noticing a child's end.
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

// Starts `file` (looked up on PATH when it has no slash) with `argv` and `envp` (both NULL-terminated), its standard
// input, output and error on `input`, `output` and `error`, and no other descriptor of this process: a long-lived child
// must not keep a test's sockets or pipes open. Returns the child's pid, or −errno.
pid_t fg_spawn(const char *file, char *const argv[], char *const envp[], int input, int output, int error);

#ifdef __cplusplus
}
#endif
