// Tests for the nn op family: see tests/support/op_test.h.
#include "support/op_test.h"
