// Pictures of the whole main window for the documentation (docs/screenshots/), at the two
// screens the studio must fit (issue 26): a full-HD monitor and a small laptop.
#pragma once

#include <QSize>
#include <QString>
#include <QtTest>

#include "main_window.h"

namespace kiln::test {

// Saves `window` filling a 1920 x 1080 screen as DIR/STEM.png and a 1366 x 768 one as
// DIR/STEM-1366x768.png (DIR: KILN_SCREENSHOT_DIR; run under Xvfb with QT_QPA_PLATFORM=xcb).
inline void saveWindowAtScreenSizes(kiln::studio::MainWindow& window, const QString& stem) {
  const QString dir = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
  if (dir.isEmpty()) return;
  for (const QSize size : {QSize(1920, 1080), QSize(1366, 768)}) {
    window.resize(size);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTest::qWait(500);
    const QString name = size.width() == 1920 ? stem : stem + "-1366x768";
    QVERIFY(window.grab().save(dir + "/" + name + ".png"));
  }
}

}  // namespace kiln::test
