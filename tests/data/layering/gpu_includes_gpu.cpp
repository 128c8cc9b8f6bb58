// Compiled by ctest with only the include roots of wgfuse_gpu and the layers below it: must compile.
#include "gpu/context.h"
