// PluginsPanel: the plugin libraries loaded in this process and every registered
// creator (name, version, namespace, library) with its typed fields, as a tree; a
// button (and the Plugins menu) loads a library. The CLI equivalent is
// `kiln --plugins LIB.so plugins`. A failed load becomes an Issues entry and the
// panel's status line; nothing here blocks (dlopen of one library is quick).
#pragma once

#include <QWidget>

#include "kiln/plugin_registry.h"

class QLabel;
class QTreeWidget;
class QTreeWidgetItem;

namespace kiln::studio {

class StudioDocument;

class PluginsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit PluginsPanel(StudioDocument* document, QWidget* parent = nullptr);

  // Loads `path` into the process registry; false (and an issue) when it fails.
  bool loadLibrary(const QString& path);
  // Asks for a file, then loadLibrary().
  void chooseAndLoad();
  // Re-reads the registry.
  void refresh();

  // For tests: top-level rows ("library path" or "statically registered"), the
  // rows under one, and the status line.
  QStringList topLevelTexts() const;
  QStringList childTexts(int topLevelRow) const;
  QString statusText() const;

 signals:
  // A library was loaded: creators may now resolve nodes of the open model.
  void pluginsChanged();

 private:
  QTreeWidgetItem* creatorItem(const PluginCreatorInfo& creator);

  StudioDocument* m_document;
  QTreeWidget* m_tree;
  QLabel* m_status;
};

}  // namespace kiln::studio
