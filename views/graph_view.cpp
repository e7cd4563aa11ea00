#include "graph_view.h"

#include "graph_items.h"

#include <QAction>
#include <QApplication>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMouseEvent>
#include <QPointer>
#include <QScrollBar>
#include <QToolBar>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace kiln::studio {

namespace {

constexpr double kMaxZoom = 6;
constexpr double kButtonZoomStep = 1.25;
constexpr double kWheelZoomBase = 1.0015;  // per wheel angle unit (1/8 degree)
// Below this fit zoom the whole graph is unreadable: the first view shows its top at
// kReadableZoom instead (Fit shows all).
constexpr double kMinInitialFitZoom = 0.5;
constexpr double kReadableZoom = 0.9;
constexpr double kTopMargin = 90;  // pixels above the first box, below the notice
// A new graph opens its scope groups level by level while at most this many boxes show.
constexpr int kInitialBoxes = 60;

const char* kOverlayStyle =
    "QLabel { background: rgba(255, 255, 255, 225); border: 1px solid #b8b8c0;"
    " border-radius: 3px; padding: 4px; color: #202028; }";

QString count(int n) {
  return QLocale().toString(n);
}

}  // namespace

struct GraphView::Job {
  GraphBuilder builder;  // empty when `flat` is laid out again (a group opened or closed)
  std::shared_ptr<const GraphInput> flat;
  std::shared_ptr<const ScopeTree> tree;
  std::set<QString> expanded;
  bool grouping = true;
  bool firstExpansion = false;  // a new graph: choose the groups shown open
  bool keepView = false;        // the same graph again: keep the zoom
  int generation = 0;
  GroupedScene grouped;
  Status status;
};

GraphView::GraphView(JobRunner* jobs, QWidget* parent)
    : QGraphicsView(parent),
      m_jobs(jobs),
      m_scene(new GraphScene(this)),
      m_notice(new QLabel(this)),
      m_legend(new QLabel(this)),
      m_search(new QLineEdit(this)),
      m_matchLabel(new QLabel(this)) {
  setScene(m_scene);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setOptimizationFlags(QGraphicsView::DontAdjustForAntialiasing);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setBackgroundBrush(QColor(0xfa, 0xfa, 0xfb));
  for (QLabel* overlay : {m_notice, m_legend}) {
    overlay->setStyleSheet(kOverlayStyle);
    overlay->setAttribute(Qt::WA_TransparentForMouseEvents);
    overlay->hide();
  }
  // The legend takes clicks: one folds it to its title, the next unfolds it.
  m_legend->setAttribute(Qt::WA_TransparentForMouseEvents, false);
  m_legend->setCursor(Qt::PointingHandCursor);
  m_legend->setToolTip(tr("Click to fold or unfold the legend"));
  m_legend->installEventFilter(this);
  // The search box and count live in the owner's toolbar (addToolBarItems); until
  // then they stay hidden children of this view.
  m_search->setPlaceholderText(tr("Find node (name or op type)"));
  m_search->setClearButtonEnabled(true);
  m_search->setMaximumWidth(260);
  m_search->hide();
  m_matchLabel->setMinimumWidth(70);
  m_matchLabel->hide();
  connect(m_search, &QLineEdit::textChanged, this, [this](const QString& text) { search(text); });
  connect(m_search, &QLineEdit::returnPressed, this, [this] { nextMatch(); });
  connect(m_scene, &GraphScene::userSelectionChanged, this, [this] {
    const std::vector<int> indices = m_scene->selectedIndices();
    emit selectionActivated(QList<int>(indices.begin(), indices.end()));
  });
  createActions();
}

GraphView::~GraphView() {
  if (m_jobId != 0 && m_jobs) m_jobs->cancel(m_jobId);
  // The scene, a child, is deleted after this body: clearing it deselects its items,
  // and a selection signal must not reach a half-destroyed view (a crash at exit
  // when a node was selected, seen in offscreen `make run` sessions).
  disconnect(m_scene, nullptr, this, nullptr);
}

void GraphView::createActions() {
  auto make = [this](const QString& text, const QKeySequence& key, auto slot) {
    auto* action = new QAction(text, this);
    action->setShortcut(key);
    action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    action->setToolTip(QStringLiteral("%1 (%2)").arg(text, key.toString(QKeySequence::NativeText)));
    connect(action, &QAction::triggered, this, slot);
    addAction(action);
    return action;
  };
  m_fit = make(tr("Fit"), QKeySequence(Qt::CTRL | Qt::Key_0), [this] { fitAll(); });
  m_zoomIn = make(tr("Zoom in"), QKeySequence::ZoomIn, [this] { zoomBy(kButtonZoomStep); });
  m_zoomOut = make(tr("Zoom out"), QKeySequence::ZoomOut, [this] { zoomBy(1 / kButtonZoomStep); });
  m_group = new QAction(tr("Group"), this);
  m_group->setCheckable(true);
  m_group->setChecked(m_grouping);
  m_group->setToolTip(tr("Group nodes by name scope into blocks (double-click opens one)"));
  connect(m_group, &QAction::toggled, this, [this](bool on) { setGrouping(on); });
  m_find = make(tr("Find"), QKeySequence::Find, [this] {
    m_search->setFocus();
    m_search->selectAll();
  });
}

void GraphView::addToolBarItems(QToolBar* bar) {
  bar->addAction(m_fit);
  bar->addAction(m_zoomIn);
  bar->addAction(m_zoomOut);
  bar->addAction(m_group);
  bar->addSeparator();
  bar->addWidget(m_search)->setVisible(true);
  bar->addWidget(m_matchLabel)->setVisible(true);
}

void GraphView::showGraph(const QString& jobTitle, int nodeCount, GraphBuilder builder) {
  auto job = std::make_shared<Job>();
  job->builder = std::move(builder);
  job->grouping = m_grouping;
  job->firstExpansion = true;
  startJob(jobTitle, nodeCount, std::move(job));
}

void GraphView::startJob(const QString& title, int nodeCount, std::shared_ptr<Job> job) {
  if (m_jobId != 0 && m_jobs) m_jobs->cancel(m_jobId);
  job->generation = ++m_generation;
  setNotice(tr("Laying out %1 nodes…").arg(count(nodeCount)));
  if (!m_jobs) return;
  QPointer<GraphView> self(this);
  m_jobId = m_jobs->start(
      title, [job](JobContext& context) { runJob(*job, context); },
      [self, job](const JobContext& context) {
        if (context.failed()) job->status = internalError(context.failure().toStdString());
        if (self) self->finishJob(job, context.cancelled());
      });
}

void GraphView::runJob(Job& job, JobContext& context) {
  if (job.builder) {
    context.progress(-1, QStringLiteral("Building the graph"));
    Result<GraphInput> input = job.builder(context);
    if (!input.isOk()) {
      job.status = input.status();
      return;
    }
    job.flat = std::make_shared<const GraphInput>(std::move(input.value()));
    if (!job.flat->scopes.empty()) job.tree = std::make_shared<const ScopeTree>(job.flat->scopes);
    if (job.tree && job.firstExpansion) job.expanded = job.tree->initialExpansion(kInitialBoxes);
  }
  if (context.cancelled()) return;
  context.progress(-1, QStringLiteral("Laying out %1 nodes").arg(job.flat->graph.nodes.size()));
  LayoutOptions options;
  options.cancel = context.cancelFlag();
  Result<GroupedScene> laid =
      job.grouping && job.tree && !job.tree->empty()
          ? layoutGrouped(job.flat->graph, job.flat->looks, *job.tree, job.expanded, options)
          : layoutFlat(job.flat->graph, job.flat->looks, options);
  if (!laid.isOk()) {
    job.status = laid.status();
    return;
  }
  job.grouped = std::move(laid.value());
}

void GraphView::adoptGrouping(const Job& job) {
  if (job.flat != m_flat) {
    m_flat = job.flat;
    m_flatIndex.clear();
    m_flatSearch.clear();
    m_flatSearch.reserve(m_flat->graph.nodes.size());
    for (size_t n = 0; n < m_flat->graph.nodes.size(); ++n) {
      m_flatIndex.insert(m_flat->graph.nodes[n].id, static_cast<int>(n));
      m_flatSearch.push_back(n < m_flat->looks.size() ? m_flat->looks[n].searchText.toLower()
                                                      : QString());
    }
  }
  m_tree = job.tree;
  m_expanded = job.expanded;
  m_visibleOf = job.grouped.visibleOf;
  m_members = job.grouped.members;
}

void GraphView::relayout() {
  if (!m_flat) return;
  auto job = std::make_shared<Job>();
  job->flat = m_flat;
  job->tree = m_tree;
  job->expanded = m_expanded;
  job->grouping = m_grouping;
  job->keepView = true;
  startJob(tr("Graph layout"), static_cast<int>(m_flat->graph.nodes.size()), std::move(job));
}

void GraphView::finishJob(const std::shared_ptr<Job>& job, bool cancelled) {
  if (job->generation != m_generation) return;  // a newer graph replaced this one
  m_jobId = 0;
  if (cancelled || job->status.code() == StatusCode::kCancelled) {
    setNotice(tr("Layout cancelled"));
    return;
  }
  if (!job->status.isOk() || !job->grouped.scene) {
    const QString message = QString::fromStdString(job->status.message());
    setNotice(tr("Layout failed: %1").arg(message));
    emit graphFailed(message);
    return;
  }
  adoptGrouping(*job);
  showScene(job->grouped.scene, job->keepView);
}

void GraphView::showScene(std::shared_ptr<const SceneGraph> graph, bool keepView) {
  const LayoutResult& layout = graph->layout;
  const int nodes = static_cast<int>(graph->graph.nodes.size());
  const bool grouped = m_tree && m_grouping && !m_tree->empty();
  const QString shown =
      grouped ? tr("%1 boxes for %2 nodes")
                    .arg(count(nodes), count(static_cast<int>(m_flat->graph.nodes.size())))
              : tr("%1 nodes").arg(count(nodes));
  m_summary = QStringLiteral("%1 layout, %2, %3 s")
                  .arg(QString::fromLatin1(layoutAlgorithmName(layout.algorithm)), shown)
                  .arg(layout.seconds, 0, 'f', 2);
  if (layout.algorithm == LayoutAlgorithm::kLayered && nodes >= kLargeGraphNodes)
    m_summary += tr(" (Graphviz dot is too slow from %1 nodes)").arg(count(kLargeGraphNodes));
  if (grouped) m_summary += tr(" (double-click a block to open it)");
  m_scene->populate(std::move(graph));
  setNotice(m_summary);
  if (!m_search->text().isEmpty()) {
    m_matches = searchFlat(m_search->text());
    m_matchPos =
        m_matches.empty() ? -1 : std::max(0, std::min(m_matchPos, int(m_matches.size()) - 1));
    m_matchLabel->setText(searchStatus());
  }
  if (keepView) {
    focusAfterLayout();
    emit graphShown();
    return;
  }
  resetTransform();
  const QRectF rect = m_scene->sceneRect();
  const QSizeF port = viewport()->size();
  const double fit = std::min(port.width() / rect.width(), port.height() / rect.height());
  if (fit >= 1) {  // small graph: natural size, centred
    centerOn(rect.center());
  } else if (fit >= kMinInitialFitZoom) {
    fitAll();
  } else {  // show the top of a big graph readably
    applyZoom(kReadableZoom);
    double top = rect.bottom(), x = rect.center().x();
    for (int i = 0; i < m_scene->nodeCount(); ++i) {
      const QPointF p = m_scene->nodeItem(i)->pos();
      if (p.y() < top) {
        top = p.y();
        x = p.x();
      }
    }
    centerOn(x, top + (port.height() / 2 - kTopMargin) / kReadableZoom);
  }
  focusAfterLayout();
  emit graphShown();
}

void GraphView::clearGraph(const QString& notice) {
  if (m_jobId != 0 && m_jobs) m_jobs->cancel(m_jobId);
  m_jobId = 0;
  ++m_generation;
  m_scene->clearGraph();
  m_flat.reset();
  m_tree.reset();
  m_expanded.clear();
  m_visibleOf.clear();
  m_members.clear();
  m_flatIndex.clear();
  m_flatSearch.clear();
  m_focus.clear();
  m_summary.clear();
  m_matches.clear();
  m_matchPos = -1;
  m_matchLabel->setText(searchStatus());
  setNotice(notice);
}

QString GraphView::notice() const {
  return m_notice->isVisible() ? m_notice->text() : QString();
}

void GraphView::setNotice(const QString& text) {
  m_notice->setText(text);
  m_notice->setVisible(!text.isEmpty());
  m_notice->adjustSize();
  placeOverlays();
}

void GraphView::setLegend(const QString& title, const std::vector<LegendEntry>& entries) {
  m_legendTitle = title.toHtmlEscaped();
  m_legendRows.clear();
  m_legendText = title;
  for (const LegendEntry& entry : entries) {
    m_legendRows +=
        QStringLiteral("<tr><td bgcolor=\"%1\" width=\"16\">&nbsp;</td><td>%2</td></tr>")
            .arg(entry.colour.name(), entry.text.toHtmlEscaped());
    m_legendText += QLatin1Char('\n') + entry.text;
  }
  m_legend->setVisible(!entries.empty());
  renderLegend();
}

void GraphView::renderLegend() {
  m_legend->setText(m_legendCollapsed
                        ? QStringLiteral("<b>%1</b> &#9656;").arg(m_legendTitle)
                        : QStringLiteral("<b>%1</b> &#9662;<table cellspacing=\"2\">%2</table>")
                              .arg(m_legendTitle, m_legendRows));
  m_legend->adjustSize();
  placeOverlays();
}

void GraphView::setLegendCollapsed(bool collapsed) {
  m_legendCollapsed = collapsed;
  renderLegend();
}

QWidget* GraphView::legendWidget() const {
  return m_legend;
}

bool GraphView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_legend && event->type() == QEvent::MouseButtonPress) {
    setLegendCollapsed(!m_legendCollapsed);
    return true;
  }
  return QGraphicsView::eventFilter(watched, event);
}

QString GraphView::legendText() const {
  return m_legendText;
}

void GraphView::placeOverlays() {
  const QRect port = viewport()->geometry();
  m_notice->move(port.topLeft() + QPoint(8, 8));
  m_legend->move(port.left() + 8, port.bottom() - m_legend->height() - 8);
  m_notice->raise();
  m_legend->raise();
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  placeOverlays();
}

QString GraphView::searchStatus() const {
  if (m_search->text().trimmed().isEmpty()) return QString();
  if (m_matches.empty()) return tr("no match");
  return tr("%1 of %2").arg(count(m_matchPos + 1), count(static_cast<int>(m_matches.size())));
}

void GraphView::search(const QString& text) {
  if (m_search->text() != text) {
    m_search->setText(text);  // comes back here through textChanged
    return;
  }
  m_matches = searchFlat(text);
  m_matchPos = m_matches.empty() ? -1 : 0;
  goToMatch();
}

void GraphView::nextMatch() {
  if (m_matches.empty()) return;
  m_matchPos = (m_matchPos + 1) % static_cast<int>(m_matches.size());
  goToMatch();
}

void GraphView::selectAndZoom(int box) {
  GraphNodeItem* item = m_scene->nodeItem(box);
  if (!item) return;
  m_scene->selectIds({item->id()});
  // A hit at an overview zoom is a dot: zoom in until it reads, then bring it to the centre.
  if (zoom() < kReadableZoom) zoomBy(kReadableZoom / zoom());
  centerOn(item);
}

double GraphView::zoom() const {
  return transform().m11();
}

double GraphView::minimumZoom() const {
  const QRectF rect = m_scene->sceneRect();
  if (rect.isEmpty()) return 0.1;
  const double fit =
      std::min(viewport()->width() / rect.width(), viewport()->height() / rect.height());
  return std::min(0.1, fit * 0.8);
}

void GraphView::applyZoom(double factor) {
  const double target = std::clamp(zoom() * factor, minimumZoom(), kMaxZoom);
  const double step = target / zoom();
  scale(step, step);
}

void GraphView::zoomBy(double factor) {
  const ViewportAnchor anchor = transformationAnchor();
  setTransformationAnchor(QGraphicsView::AnchorViewCenter);
  applyZoom(factor);
  setTransformationAnchor(anchor);
}

void GraphView::fitAll() {
  if (m_scene->sceneRect().isEmpty()) return;
  fitInView(m_scene->sceneRect(), Qt::KeepAspectRatio);
  if (zoom() > kMaxZoom) applyZoom(1);
}

void GraphView::wheelEvent(QWheelEvent* event) {
  // Zooms around the cursor (transformation anchor: under the mouse).
  applyZoom(std::pow(kWheelZoomBase, event->angleDelta().y()));
  event->accept();
}

GraphNodeItem* GraphView::nodeAt(const QPoint& pos) const {
  // Edges do not count: a long edge's bounding box covers much of the background.
  for (QGraphicsItem* item : items(pos))
    if (auto* node = dynamic_cast<GraphNodeItem*>(item)) return node;
  return nullptr;
}

void GraphView::mousePressEvent(QMouseEvent* event) {
  // A press on the background pans (and, if the mouse does not move, clears the
  // selection on release); a press on a box goes to the scene (selection).
  if (event->button() == Qt::LeftButton && !nodeAt(event->pos())) {
    m_panning = true;
    m_panStart = m_panLast = event->pos();
    viewport()->setCursor(Qt::ClosedHandCursor);
    event->accept();
    return;
  }
  QGraphicsView::mousePressEvent(event);
}

void GraphView::mouseMoveEvent(QMouseEvent* event) {
  if (!m_panning) {
    QGraphicsView::mouseMoveEvent(event);
    return;
  }
  const QPoint delta = event->pos() - m_panLast;
  m_panLast = event->pos();
  horizontalScrollBar()->setValue(horizontalScrollBar()->value() - delta.x());
  verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y());
  event->accept();
}

void GraphView::mouseReleaseEvent(QMouseEvent* event) {
  if (!m_panning) {
    QGraphicsView::mouseReleaseEvent(event);
    return;
  }
  m_panning = false;
  viewport()->unsetCursor();
  if ((event->pos() - m_panStart).manhattanLength() < QApplication::startDragDistance())
    m_scene->clearSelection();  // a click on the background: the user selects nothing
  event->accept();
}

int GraphInput::addBox(const QString& id, const QStringList& lines, const NodeLook& look) {
  LayoutNode node;
  node.id = id;
  node.lines = lines;
  const QSizeF size = GraphStyle::nodeSize(lines);
  node.width = size.width();
  node.height = size.height();
  graph.nodes.push_back(node);
  looks.push_back(look);
  return static_cast<int>(graph.nodes.size()) - 1;
}

}  // namespace kiln::studio
