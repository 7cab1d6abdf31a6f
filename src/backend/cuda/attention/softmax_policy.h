// Forwarding header: SoftmaxPolicy lives in dispatch/softmax_policy.h (CUDA-free, an input
// of the attention plans). The kernel headers that include this path also get the unified
// softmax's range (dispatch/softmax_range.h) from it, as before.
#pragma once

#include "dispatch/softmax_range.h"
#include "dispatch/softmax_policy.h"
