// Tests for the misc_ops op family: see tests/support/op_test.h.
#include "support/op_test.h"
