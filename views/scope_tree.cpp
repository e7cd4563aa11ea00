#include "scope_tree.h"

#include <QHash>
#include <QLocale>
#include <QStringList>
#include <algorithm>

namespace kiln::studio {

QString nameScope(const QString& name) {
  const int slash = name.lastIndexOf(QLatin1Char('/'));
  return slash <= 0 ? QString() : name.left(slash);
}

QString commonScope(const std::vector<QString>& names) {
  if (names.empty()) return QString();
  QString common = nameScope(names.front());
  for (size_t i = 1; i < names.size() && !common.isEmpty(); ++i) {
    const QString scope = nameScope(names[i]);
    // Shorten `common` to a whole-component prefix of `scope`.
    while (!common.isEmpty() && scope != common && !scope.startsWith(common + QLatin1Char('/')))
      common = nameScope(common);
  }
  return common;
}

namespace {

// The group paths of `scope`, outermost first: "/a/b/c" -> "/a", "/a/b", "/a/b/c".
std::vector<QString> prefixes(const QString& scope) {
  std::vector<QString> out;
  if (scope.isEmpty()) return out;
  for (int at = scope.indexOf(QLatin1Char('/'), 1); at > 0;
       at = scope.indexOf(QLatin1Char('/'), at + 1))
    if (!scope.left(at).endsWith(QLatin1Char('/'))) out.push_back(scope.left(at));
  out.push_back(scope);
  return out;
}

}  // namespace

ScopeTree::ScopeTree(const std::vector<NodeScope>& scopes) {
  QHash<QString, int> count;
  std::vector<std::vector<QString>> paths(scopes.size());
  for (size_t n = 0; n < scopes.size(); ++n) {
    paths[n] = prefixes(scopes[n].path);
    for (const QString& p : paths[n]) ++count[p];
  }
  QHash<QString, int> index;
  m_chains.resize(scopes.size());
  for (size_t n = 0; n < scopes.size(); ++n) {
    int parent = -1;
    for (const QString& p : paths[n]) {
      if (count.value(p) < 2) break;  // an inner scope never holds more than its outer one
      auto it = index.find(p);
      if (it == index.end()) {
        Group g;
        g.path = p;
        g.title = p.mid(p.lastIndexOf(QLatin1Char('/')) + 1);
        if (g.title.isEmpty()) g.title = p;
        g.parent = parent;
        g.depth = parent < 0 ? 0 : m_groups[parent].depth + 1;
        it = index.insert(p, static_cast<int>(m_groups.size()));
        if (parent >= 0) m_groups[parent].children.push_back(*it);
        m_groups.push_back(g);
      }
      parent = *it;
      m_chains[n].push_back(parent);
    }
    if (parent < 0)
      ++m_topNodes;
    else
      ++m_groups[parent].directNodes;
    const NodeScope& s = scopes[n];
    for (int g : m_chains[n]) {
      Group& group = m_groups[g];
      group.nodes.push_back(static_cast<int>(n));
      if (!s.layer) continue;
      ++group.layers;
      if (s.milliseconds >= 0)
        group.milliseconds = std::max(0.0, group.milliseconds) + s.milliseconds;
      if (s.percentage >= 0) group.percentage = std::max(0.0, group.percentage) + s.percentage;
      if (!s.precision.isEmpty()) ++group.precisions[s.precision];
    }
  }
}

int ScopeTree::find(const QString& path) const {
  for (size_t g = 0; g < m_groups.size(); ++g)
    if (m_groups[g].path == path) return static_cast<int>(g);
  return -1;
}

std::set<QString> ScopeTree::initialExpansion(int budget) const {
  std::set<QString> expanded;
  std::vector<int> frontier;
  for (size_t g = 0; g < m_groups.size(); ++g)
    if (m_groups[g].parent < 0) frontier.push_back(static_cast<int>(g));
  int visible = m_topNodes + static_cast<int>(frontier.size());
  while (!frontier.empty()) {
    int opened = visible - static_cast<int>(frontier.size());
    std::vector<int> next;
    for (int g : frontier) {
      opened += m_groups[g].directNodes + static_cast<int>(m_groups[g].children.size());
      next.insert(next.end(), m_groups[g].children.begin(), m_groups[g].children.end());
    }
    // One block alone says nothing: open it whatever it holds.
    if (opened > budget && visible > 1) break;
    for (int g : frontier) expanded.insert(m_groups[g].path);
    visible = opened;
    frontier = std::move(next);
  }
  return expanded;
}

QString ScopeTree::sizeText(int index) const {
  const Group& g = m_groups[index];
  const QLocale locale;
  if (g.layers == 0) return QStringLiteral("%1 nodes").arg(locale.toString(int(g.nodes.size())));
  QString text = QStringLiteral("%1 layers").arg(locale.toString(g.layers));
  if (g.milliseconds >= 0) text += QStringLiteral(" · %1 ms").arg(g.milliseconds, 0, 'f', 3);
  if (g.percentage >= 0) text += QStringLiteral(" · %1 %").arg(g.percentage, 0, 'f', 1);
  return text;
}

QString ScopeTree::precisionText(int index) const {
  std::vector<std::pair<int, QString>> mix;
  for (const auto& [precision, n] : m_groups[index].precisions) mix.push_back({-n, precision});
  std::sort(mix.begin(), mix.end());
  QStringList parts;
  for (const auto& [negative, precision] : mix)
    parts << QStringLiteral("%1 %2").arg(precision).arg(-negative);
  return parts.join(QStringLiteral(" · "));
}

}  // namespace kiln::studio
