// The commit kiln.__version__ names. Alone in its file: the generated header changes at
// every commit, and only this source recompiles then.
#include <kiln_git_revision.h>

namespace kiln::python {

const char* gitRevision() {
  return KILN_GIT_REVISION;
}

}  // namespace kiln::python
