#define _GNU_SOURCE
#include "CSpawn.h"

#include <spawn.h>

pid_t fg_spawn(const char *file, char *const argv[], char *const envp[], int input, int output, int error) {
    posix_spawn_file_actions_t actions;
    int result = posix_spawn_file_actions_init(&actions);
    if (result != 0) return -result;
    const int sources[3] = {input, output, error};
    for (int target = 0; target < 3 && result == 0; target++) {
        result = posix_spawn_file_actions_adddup2(&actions, sources[target], target);
    }
    // glibc 2.34 and later; Debian 12 has 2.36.
    if (result == 0) result = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    pid_t pid = 0;
    if (result == 0) result = posix_spawnp(&pid, file, &actions, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    return result == 0 ? pid : -result;
}
