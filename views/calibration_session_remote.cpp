// CalibrationSession: calibration on a remote target. `kiln calibrate MODEL --data DIR -o
// CACHE` (with the session's method, percentile, batch and preprocessing) runs there
// through `kiln --remote` (remote_run.h) as a JobRunner job; the data folder goes up once
// per content, the cache comes back and fills the range table as a loaded cache does. The
// histograms stay on the target: the table shows the chosen ranges without them.
#include <QFileInfo>
#include <QPointer>
#include <QTemporaryDir>
#include <memory>

#include "calibration_session.h"
#include "job_runner.h"
#include "remote_run.h"
#include "remote_targets.h"
#include "studio_document.h"

namespace kiln::studio {

void CalibrationSession::setTargets(TargetList* targets) {
  m_targets = targets;
}

bool CalibrationSession::calibrateRemotely() {
  if (!m_targets || !m_targets->current()) return false;
  const RemoteTarget target = *m_targets->current();
  const QString model = m_document->modelPath();
  auto folder = std::make_shared<QTemporaryDir>();
  const QString spec = folder->filePath("preprocess.txt");
  QString why;
  if (m_folder.isEmpty())
    why = tr("calibration: load a data folder first");
  else if (!model.endsWith(".onnx") || !QFileInfo(model).isFile())
    why = tr("calibration on %1: the open model is not an ONNX file").arg(target.address);
  else if (const Status saved = savePreprocessSpec(m_spec, spec.toStdString()); !saved.isOk())
    why = QString::fromStdString(saved.message());
  if (!why.isEmpty()) {
    fail("calibration", why);
    emit calibrated(false, why);
    return true;
  }
  const QString cache = folder->filePath("calibration.cache");
  QStringList args = {"calibrate",    model,
                      "--data",       m_folder,
                      "-o",           cache,
                      "--preprocess", spec,
                      "--method",     calibrationMethodName(m_method),
                      "--batch",      QString::number(m_batchSize)};
  if (m_method == CalibrationMethod::kPercentile)
    args << "--percentile" << QString::number(m_percentile, 'g', 10);
  auto run = std::make_shared<RemoteRun>();
  QPointer<CalibrationSession> self(this);
  m_job = m_jobs->start(
      tr("Calibrate on %1").arg(target.address),
      [target, args, run](JobContext& context) { *run = runRemoteKiln(target, args, context); },
      [self, run, cache, folder, target](const JobContext& context) {
        if (!self) return;
        self->m_job = -1;
        emit self->busyChanged(false);
        QString message = context.failed() ? context.failure() : run->error;
        if (run->cancelled && message.isEmpty()) message = tr("calibration cancelled");
        if (message.isEmpty()) {
          self->m_rows.clear();
          self->m_histograms = {};
          const Status loaded = self->loadCache(cache);
          if (!loaded.isOk()) message = QString::fromStdString(loaded.message());
        }
        if (!message.isEmpty()) {
          if (!run->cancelled) self->fail("calibration", message);
          emit self->calibrated(false, message);
          return;
        }
        emit self->calibrated(true, tr("calibrated on %1: %2 tensor ranges (the histograms stay "
                                       "on the target)")
                                        .arg(target.address)
                                        .arg(self->m_rows.size()));
      });
  emit busyChanged(true);
  return true;
}

}  // namespace kiln::studio
