#include "plugins_panel.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "kiln/plugin_registry.h"
#include "studio_document.h"

namespace kiln::studio {

namespace {

QString fieldText(const PluginFieldInfo& field) {
  return QStringLiteral("%1: %2%3")
      .arg(QString::fromStdString(field.name), QString::fromStdString(field.type),
           field.length >= 0 ? QStringLiteral("[%1]").arg(field.length) : QString());
}

}  // namespace

PluginsPanel::PluginsPanel(StudioDocument* document, QWidget* parent)
    : QWidget(parent), m_document(document) {
  auto* layout = new QVBoxLayout(this);
  auto* load = new QPushButton(tr("Load plugin library..."), this);
  load->setObjectName("loadPluginLibrary");
  load->setToolTip(tr("Same as: kiln --plugins LIB.so plugins"));
  m_tree = new QTreeWidget(this);
  m_tree->setColumnCount(2);
  m_tree->setHeaderLabels({tr("Library / plugin / field"), tr("Details")});
  m_tree->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  m_status = new QLabel(this);
  m_status->setWordWrap(true);
  layout->addWidget(load);
  layout->addWidget(m_tree, 1);
  layout->addWidget(m_status);
  connect(load, &QPushButton::clicked, this, &PluginsPanel::chooseAndLoad);
  refresh();
}

QTreeWidgetItem* PluginsPanel::creatorItem(const PluginCreatorInfo& creator) {
  auto* item = new QTreeWidgetItem({QString::fromStdString(creator.name),
                                    tr("version %1, namespace '%2'")
                                        .arg(QString::fromStdString(creator.version),
                                             QString::fromStdString(creator.pluginNamespace))});
  for (const PluginFieldInfo& field : creator.fields)
    item->addChild(new QTreeWidgetItem({fieldText(field), tr("field")}));
  return item;
}

void PluginsPanel::refresh() {
  m_tree->clear();
  const std::vector<PluginCreatorInfo> creators = registeredPlugins();
  for (const PluginLibraryInfo& library : loadedPluginLibraries()) {
    const QString path = QString::fromStdString(library.path);
    auto* top = new QTreeWidgetItem({QFileInfo(path).fileName(), path});
    top->setToolTip(0, path);
    for (const PluginCreatorInfo& creator : creators)
      if (creator.library == library.path) top->addChild(creatorItem(creator));
    m_tree->addTopLevelItem(top);
  }
  QTreeWidgetItem* statics = nullptr;
  for (const PluginCreatorInfo& creator : creators) {
    if (!creator.library.empty()) continue;
    if (!statics) {
      statics = new QTreeWidgetItem({tr("statically registered"), tr("linked into the program")});
      m_tree->addTopLevelItem(statics);
    }
    statics->addChild(creatorItem(creator));
  }
  m_tree->expandAll();
  if (m_status->text().isEmpty() || creators.empty())
    m_status->setText(creators.empty() ? tr("No plugin loaded.")
                                       : tr("%n plugin creator(s).", "", int(creators.size())));
}

bool PluginsPanel::loadLibrary(const QString& path) {
  m_document->clearIssues(QStringLiteral("plugins"));
  const Status loaded = loadPluginLibrary(path.toStdString());
  if (!loaded.isOk()) {
    const QString message = QString::fromStdString(loaded.message());
    m_status->setText(message);
    m_document->addIssue({IssueSeverity::kError, QStringLiteral("plugins"), message, QString()});
    return false;
  }
  m_status->setText(tr("Loaded %1.").arg(QFileInfo(path).fileName()));
  refresh();
  emit pluginsChanged();
  return true;
}

void PluginsPanel::chooseAndLoad() {
  QSettings settings("Kiln", "kiln-studio");
  const QString path = QFileDialog::getOpenFileName(this, tr("Load plugin library"),
                                                    settings.value("lastPluginDir").toString(),
                                                    tr("Plugin libraries (*.so);;All files (*)"));
  if (path.isEmpty()) return;
  settings.setValue("lastPluginDir", QFileInfo(path).absolutePath());
  loadLibrary(path);
}

QStringList PluginsPanel::topLevelTexts() const {
  QStringList out;
  for (int i = 0; i < m_tree->topLevelItemCount(); ++i) out << m_tree->topLevelItem(i)->text(0);
  return out;
}

QStringList PluginsPanel::childTexts(int row) const {
  QStringList out;
  QTreeWidgetItem* top = m_tree->topLevelItem(row);
  if (!top) return out;
  for (int i = 0; i < top->childCount(); ++i) {
    QTreeWidgetItem* creator = top->child(i);
    out << creator->text(0) + QStringLiteral(" ") + creator->text(1);
    for (int j = 0; j < creator->childCount(); ++j)
      out << QStringLiteral("  ") + creator->child(j)->text(0);
  }
  return out;
}

QString PluginsPanel::statusText() const {
  return m_status->text();
}

}  // namespace kiln::studio
