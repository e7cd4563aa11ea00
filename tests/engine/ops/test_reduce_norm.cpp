// Tests for the reduce_norm op family: see tests/support/op_test.h.
#include "support/op_test.h"
