#include "gallery.h"
int gallery_placeholder(void) { return 0; }
