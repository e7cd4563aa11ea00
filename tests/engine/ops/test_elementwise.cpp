// Tests for the elementwise op family: see tests/support/op_test.h.
#include "support/op_test.h"
