#include "gpu/crash_backtrace.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace kiln::test {
namespace {

uintptr_t g_executableBase = 0;

// Async-signal-safe: a fixed buffer, write(2) and backtrace(3) (its first call, which may
// load libgcc, happens at installation).
void writeText(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void onCrash(int signal) {
  char line[96];
  std::snprintf(line, sizeof(line), "\n*** signal %d: stack (offsets into the executable):\n",
                signal);
  writeText(line);
  void* frames[64];
  const int count = backtrace(frames, 64);
  for (int i = 0; i < count; ++i) {
    const auto address = reinterpret_cast<uintptr_t>(frames[i]);
    std::snprintf(line, sizeof(line), "  #%d 0x%zx\n", i,
                  static_cast<size_t>(address - g_executableBase));
    writeText(line);
  }
  writeText("*** (addr2line -f -C -e BINARY OFFSET; frames outside it read as large offsets)\n");
  backtrace_symbols_fd(frames, count, STDERR_FILENO);
  ::signal(signal, SIG_DFL);
  raise(signal);
}

}  // namespace

void installCrashBacktrace() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&installCrashBacktrace), &info) != 0)
    g_executableBase = reinterpret_cast<uintptr_t>(info.dli_fbase);
  void* warm[1];
  backtrace(warm, 1);
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(signal, onCrash);
}

}  // namespace kiln::test
