#pragma once
int gallery_placeholder(void);
