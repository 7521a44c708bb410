// The compat headers compile as C++ (no CUDA needed): the C compile test, as a C++ unit.
#include "compat_c.c"
