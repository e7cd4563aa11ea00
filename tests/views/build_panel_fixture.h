// A build panel over its own document and job runner, with a model open: the
// fixture of the studio tests that drive builds (test_panels, test_dynamic_shapes).
#pragma once

#include <QString>
#include <memory>

#include "build_panel.h"
#include "job_runner.h"
#include "studio_document.h"

namespace kiln::test {

struct BuildPanelStudio {
  studio::StudioDocument document;
  studio::JobRunner jobs;
  std::unique_ptr<studio::BuildPanel> panel;
  BuildPanelStudio(const QString& path, std::shared_ptr<const Network> network) {
    document.setModel(path, std::move(network));
    panel = std::make_unique<studio::BuildPanel>(&document, &jobs);
    jobs.waitForIdle(10000);  // the CUDA probe
  }
};

}  // namespace kiln::test
