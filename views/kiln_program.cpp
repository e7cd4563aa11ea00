#include "kiln_program.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QStandardPaths>

namespace kiln::studio {

QString kilnProgram() {
  const QString fromEnvironment = qEnvironmentVariable("KILN_PROGRAM");
  if (!fromEnvironment.isEmpty()) return fromEnvironment;
  const QFileInfo beside(QCoreApplication::applicationDirPath() + "/kiln");
  if (beside.isFile() && beside.isExecutable()) return beside.absoluteFilePath();
  const QString onPath = QStandardPaths::findExecutable("kiln");
  return onPath.isEmpty() ? QStringLiteral("kiln") : onPath;
}

}  // namespace kiln::studio
