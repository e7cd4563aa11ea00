// View: one page of the studio's central area (model graph, engine graph, layer
// table, charts). The main window registers every view in one block and shows
// them as tabs; a view may bring its own toolbar.
#pragma once

#include <QString>

class QToolBar;
class QWidget;

namespace kiln::studio {

class View {
 public:
  virtual ~View() = default;
  virtual QString id() const = 0;     // stable key for settings ("graph", "layers", ...)
  virtual QString title() const = 0;  // tab title
  virtual QWidget* widget() = 0;
  virtual QToolBar* toolBar() { return nullptr; }  // shown above the view when it is current
};

}  // namespace kiln::studio
