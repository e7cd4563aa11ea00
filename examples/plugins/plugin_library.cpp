// The example plugin library's entry points: `kiln --plugins
// libkiln_example_plugins.so ...` and the studio's Plugins panel load it, and its
// creators register under their own namespace (kiln.examples).
#include "copy_concat_plugin.h"
#include "quantized_pool_plugin.h"

KILN_PLUGIN_LIBRARY(registrar) {
  using kiln::plugin::staticCreator;
  const bool ok =
      registrar->registerCreator(staticCreator<kiln_examples::CopyConcatCreator>(), nullptr) &&
      registrar->registerCreator(staticCreator<kiln_examples::QuantizedPoolCreator>(), nullptr);
  return ok ? 0 : 1;
}
