// Pictures of a main window's dock for the documentation (docs/screenshots/).
#pragma once

#include <QDockWidget>
#include <QSize>
#include <QString>
#include <QtTest>

#include "main_window.h"

namespace kiln::test {

// With KILN_SCREENSHOT_DIR set (run under Xvfb with QT_QPA_PLATFORM=xcb), saves the
// dock "dock_`dockId`" of `window` there as NAME.png, floated at `size` so the picture
// does not depend on how the window shares its room; without it, does nothing.
inline void saveDockScreenshot(kiln::studio::MainWindow& window, const QString& dockId, QSize size,
                               const QString& name) {
  const QString dir = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
  if (dir.isEmpty()) return;
  auto* dock = window.findChild<QDockWidget*>("dock_" + dockId);
  QVERIFY(dock);
  window.resize(1500, 950);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  dock->setFloating(true);
  dock->resize(size);
  dock->show();
  QVERIFY(QTest::qWaitForWindowExposed(dock));
  QTest::qWait(200);
  QVERIFY(dock->grab().save(dir + "/" + name + ".png"));
}

}  // namespace kiln::test
