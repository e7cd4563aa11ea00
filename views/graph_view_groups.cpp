// GraphView: grouping by name scope (which box shows which node, opening and closing
// groups), search over every node (closed groups included) and programmatic selection
// through the groups.
#include <QMouseEvent>

#include "graph_view.h"

namespace kiln::studio {

void GraphView::setGrouping(bool on) {
  if (m_group->isChecked() != on) return m_group->setChecked(on);  // comes back here
  if (m_grouping == on) return;
  m_grouping = on;
  relayout();
}

bool GraphView::setGroupExpanded(const QString& path, bool expanded) {
  if (!m_tree || m_tree->find(path) < 0) return false;
  if (expanded) {
    m_expanded.insert(path);
  } else {  // its inner groups close with it
    for (auto it = m_expanded.begin(); it != m_expanded.end();)
      it = *it == path || it->startsWith(path + QLatin1Char('/')) ? m_expanded.erase(it)
                                                                  : std::next(it);
  }
  m_focus = QStringLiteral("group:") + path;
  relayout();
  return true;
}

QStringList GraphView::memberIds(int sceneIndex) const {
  QStringList ids;
  if (m_flat && sceneIndex >= 0 && sceneIndex < static_cast<int>(m_members.size())) {
    for (int n : m_members[sceneIndex]) ids << m_flat->graph.nodes[n].id;
    return ids;
  }
  if (GraphNodeItem* item = m_scene->nodeItem(sceneIndex)) ids << item->id();
  return ids;
}

std::vector<int> GraphView::searchFlat(const QString& text) const {
  return searchLowered(m_flatSearch, text);
}

void GraphView::goToMatch() {
  m_matchLabel->setText(searchStatus());
  if (m_matchPos < 0 || !m_flat) return;
  const int node = m_matches[m_matchPos];
  const int box = node < static_cast<int>(m_visibleOf.size()) ? m_visibleOf[node] : -1;
  if (box >= 0 && m_members[box].size() == 1 && m_members[box].front() == node) {
    selectAndZoom(box);
    emit selectionActivated({box});
    return;
  }
  // Inside a closed group: open every group holding it, then zoom to it once laid out.
  if (!m_tree) return;
  for (int g : m_tree->chainOf(node)) m_expanded.insert(m_tree->group(g).path);
  m_focus = QStringLiteral("node:") + m_flat->graph.nodes[node].id;
  relayout();
}

void GraphView::focusAfterLayout() {
  const QString focus = m_focus;
  m_focus.clear();
  if (focus.startsWith(QLatin1String("node:"))) {
    const int node = m_flatIndex.value(focus.mid(5), -1);
    if (node < 0 || node >= static_cast<int>(m_visibleOf.size())) return;
    selectAndZoom(m_visibleOf[node]);
    emit selectionActivated({m_visibleOf[node]});
  } else if (focus.startsWith(QLatin1String("group:"))) {
    const QString path = focus.mid(6);
    if (const SceneGraph* graph = m_scene->graph())
      for (const SceneGraph::GroupFrame& frame : graph->frames)
        if (frame.path == path) return centerOn(frame.rect.center());
    if (GraphNodeItem* block = m_scene->nodeItem(m_scene->indexOf(kGroupIdPrefix + path)))
      centerOn(block);
  }
}

void GraphView::highlight(const QStringList& ids, bool centre) {
  // A node inside a closed group is shown by the group's box.
  QStringList shown;
  for (const QString& id : ids) {
    const int node = m_flatIndex.value(id, -1);
    const int box =
        node >= 0 && node < static_cast<int>(m_visibleOf.size()) ? m_visibleOf[node] : -1;
    const QString boxId = box >= 0 && m_scene->nodeItem(box) ? m_scene->nodeItem(box)->id() : id;
    if (!shown.contains(boxId)) shown << boxId;
  }
  m_scene->selectIds(shown);
  if (!centre || shown.isEmpty()) return;
  GraphNodeItem* item = m_scene->nodeItem(m_scene->indexOf(shown.front()));
  if (!item) return;
  const QRectF visible = mapToScene(viewport()->rect()).boundingRect();
  if (!visible.contains(item->sceneBoundingRect())) centerOn(item);
}

void GraphView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    GraphNodeItem* node = nodeAt(event->pos());
    if (node && node->id().startsWith(kGroupIdPrefix)) {
      setGroupExpanded(node->id().mid(kGroupIdPrefix.size()), true);
      event->accept();
      return;
    }
    const QString frame = node ? QString() : m_scene->frameAt(mapToScene(event->pos()));
    if (!frame.isEmpty()) {
      setGroupExpanded(frame, false);
      event->accept();
      return;
    }
  }
  QGraphicsView::mouseDoubleClickEvent(event);
}

}  // namespace kiln::studio
