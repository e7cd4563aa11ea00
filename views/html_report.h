// The studio's one-file report: an HTML document with the engine summary, the
// figures (inline SVG: graph and charts), the layer table and each layer's tactic
// candidates. Self-contained: no scripts, no external files, opens in any browser.
#pragma once

#include <QByteArray>
#include <QString>
#include <utility>
#include <vector>

#include "engine_report.h"

namespace kiln::studio {

struct ReportFigure {
  QString caption;
  QByteArray svg;  // a complete SVG document; its XML prolog is dropped when inlined
};

QString htmlReport(const inspector::EngineReport& report, const QString& modelName,
                   const std::vector<ReportFigure>& figures);

}  // namespace kiln::studio
