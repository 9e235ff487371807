#pragma once
#include <stddef.h>
int fe_placeholder(void);
