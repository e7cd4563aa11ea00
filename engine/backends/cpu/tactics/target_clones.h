// KILN_TACTIC_CLONES: compiles a hot loop of the CPU tactics once per x86-64
// ISA level and picks the version when the library loads (GCC target_clones,
// an ifunc). The engine's baseline build targets plain x86-64 (SSE2), which
// would leave AVX2 and AVX-512 unused. Elsewhere it expands to nothing.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define KILN_TACTIC_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KILN_TACTIC_CLONES
#endif
