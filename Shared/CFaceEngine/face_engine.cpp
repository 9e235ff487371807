#include "face_engine.h"
int fe_placeholder(void) { return 0; }
