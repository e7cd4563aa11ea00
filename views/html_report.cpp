#include "html_report.h"

#include <QDateTime>
#include <algorithm>

#include "advisor.h"

namespace kiln::studio {

namespace {

QString esc(const std::string& text) {
  return QString::fromStdString(text).toHtmlEscaped();
}

QString milliseconds(double ms) {
  return ms < 0 ? QString("-") : QString::number(ms, 'f', 4);
}

QString bytes(int64_t n) {
  if (n < 0) return "-";
  if (n >= (1LL << 20)) return QString::number(n / double(1 << 20), 'f', 2) + " MiB";
  if (n >= 1024) return QString::number(n / 1024.0, 'f', 1) + " KiB";
  return QString::number(n) + " B";
}

// The SVG element alone: QSvgGenerator writes an XML prolog that must not appear
// inside HTML.
QString inlineSvg(const QByteArray& svg) {
  QString text = QString::fromUtf8(svg);
  const qsizetype start = text.indexOf("<svg");
  return start < 0 ? QString() : text.mid(start);
}

QString layerTable(const inspector::EngineReport& report) {
  QString html =
      "<table><tr><th>#</th><th>Layer</th><th>Type</th><th>Precision</th><th>Tactic</th>"
      "<th>Time (ms)</th><th>%</th><th>Workspace</th><th>Source nodes</th></tr>\n";
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const auto& layer = report.layers[i];
    QStringList sources;
    for (const auto& node : layer.sourceNodes) sources << esc(node);
    html += QString(
                "<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td class=n>%6</td>"
                "<td class=n>%7</td><td class=n>%8</td><td>%9</td></tr>\n")
                .arg(i)
                .arg(esc(layer.name), esc(layer.layerType), esc(layer.precision), esc(layer.tactic),
                     milliseconds(layer.milliseconds),
                     layer.percentage < 0 ? "-" : QString::number(layer.percentage, 'f', 1),
                     bytes(layer.workspaceBytes), sources.join(", "));
  }
  return html + "</table>\n";
}

QString candidateTables(const inspector::EngineReport& report) {
  QString html;
  for (const auto& layer : report.layers) {
    if (layer.candidates.size() < 2) continue;
    html += "<details><summary>" + esc(layer.name) + " &mdash; " +
            QString::number(layer.candidates.size()) +
            " candidates</summary><table>"
            "<tr><th>Tactic</th><th>Source</th><th>Precision</th><th>Time (ms)</th><th>Choice</th>"
            "<th>Note</th></tr>";
    for (const auto& c : layer.candidates) {
      const bool winner = c.tactic == layer.tactic && c.rejected.empty() &&
                          (layer.choice.empty() || c.choice == layer.choice);
      html += QString(
                  "<tr%1><td>%2</td><td>%3</td><td>%4</td><td class=n>%5</td><td>%6</td>"
                  "<td>%7</td></tr>")
                  .arg(winner ? " class=win" : "", esc(c.tactic), esc(c.source), esc(c.precision),
                       milliseconds(c.milliseconds), esc(c.choice),
                       c.rejected.empty() ? esc(c.detail) : "rejected: " + esc(c.rejected));
    }
    html += "</table></details>\n";
  }
  return html;
}

// The advisor's findings (inspector/advisor.h): rule, severity, message, cost, layers, fix.
QString adviceSection(const inspector::EngineReport& report) {
  const std::vector<inspector::Finding> findings = inspector::adviseEngine(report);
  QString html = "<h2>Advisor</h2>\n";
  if (findings.empty()) return html + "<p>No findings.</p>\n";
  html +=
      "<table><tr><th>severity</th><th>rule</th><th>finding</th><th>cost ms</th>"
      "<th>layers</th><th>fix</th></tr>\n";
  for (const inspector::Finding& f : findings) {
    QString layers;
    for (size_t i = 0; i < f.layers.size() && i < 8; ++i)
      layers += (i ? "<br>" : "") + esc(f.layers[i]);
    if (f.layers.size() > 8) layers += QString("<br>and %1 more").arg(f.layers.size() - 8);
    html += QString("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td></tr>\n")
                .arg(inspector::adviceSeverityName(f.severity), esc(f.rule), esc(f.message),
                     f.costMs >= 0 ? QString::number(f.costMs, 'f', 4) : QString("–"), layers,
                     esc(f.fix));
  }
  return html + "</table>\n";
}

}  // namespace

QString htmlReport(const inspector::EngineReport& report, const QString& modelName,
                   const std::vector<ReportFigure>& figures) {
  QString html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Kiln report: " +
      modelName.toHtmlEscaped() +
      "</title><style>body{font-family:sans-serif;margin:2em;color:#222}"
      "table{border-collapse:collapse;font-size:12px;margin:1em 0}"
      "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}td.n{text-align:right}"
      "tr.win{background:#e6f4e6}pre{background:#f6f6f6;padding:1em}"
      "figure{margin:1em 0;border:1px solid #ddd;padding:.5em;overflow:auto;max-height:900px}"
      "</style></head><body>\n";
  html += "<h1>Kiln engine report: " + modelName.toHtmlEscaped() + "</h1>\n";
  html += QString("<p>Engine: %1 (%2, backend %3), %4 layers. Written %5.</p>\n")
              .arg(esc(report.title), esc(report.origin), esc(report.backend))
              .arg(report.layers.size())
              .arg(QDateTime::currentDateTime().toString(Qt::ISODate));
  if (report.totalMs >= 0)
    html += QString("<p>Total layer time: %1 ms%2.</p>\n")
                .arg(report.totalMs, 0, 'f', 4)
                .arg(report.profileIterations > 0
                         ? QString(" (median over %1 profiled runs)").arg(report.profileIterations)
                         : QString(" (build-time tactic timings)"));
  if (!report.summary.empty())
    html += "<h2>Build summary</h2><pre>" + esc(report.summary) + "</pre>\n";
  for (const ReportFigure& figure : figures) {
    const QString svg = inlineSvg(figure.svg);
    if (svg.isEmpty()) continue;
    html += "<h2>" + figure.caption.toHtmlEscaped() + "</h2><figure>" + svg + "</figure>\n";
  }
  html += adviceSection(report);
  html += "<h2>Layers</h2>\n" + layerTable(report);
  const QString candidates = candidateTables(report);
  if (!candidates.isEmpty()) html += "<h2>Tactic candidates</h2>\n" + candidates;
  if (!report.warnings.empty()) {
    html += "<h2>Warnings</h2><ul>";
    for (const auto& w : report.warnings) html += "<li>" + esc(w) + "</li>";
    html += "</ul>\n";
  }
  return html + "</body></html>\n";
}

}  // namespace kiln::studio
