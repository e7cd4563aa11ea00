// The New Sweep dialog: the options of `kiln sweep` (docs/sweep.md) as a form, the
// command line it makes shown live. sweepArguments is the one place the form's values
// become kiln's arguments (the view runs exactly that list; the test checks it).
#pragma once

#include <QDialog>
#include <QString>
#include <QStringList>

class QCheckBox;
class QComboBox;
class QFormLayout;
class QGroupBox;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;

namespace kiln::studio {

struct SweepOptions {
  QString model;
  QStringList axes;  // "NAME=V1,V2,..." each
  QString maxError;  // the gate, e.g. "cosine>=0.999"
  QString backend = "cpu";
  QString minShapes, optShapes, maxShapes;
  QString accuracyData, calibCache, calibData;
  int iterations = 20;
  QString dir;  // "" for kiln's default (MODEL.sweep)
  int jobs = 1;
  bool resume = false;       // --continue
  bool retryFailed = false;  // --retry-failed
  bool slurm = false;
  QString partition, gres, time;
  int arrayMax = 0;  // 0: none
};

// `kiln sweep ...` without the program name; empty fields are left out.
QStringList sweepArguments(const SweepOptions& options);
// The log the sweep writes: DIR/sweep.jsonl, DIR defaulting to MODEL.sweep beside the model
// (its extension dropped; SweepView passes that --dir, kiln's own default is the current
// directory).
QString sweepLogPath(const SweepOptions& options);

class SweepDialog : public QDialog {
  Q_OBJECT
 public:
  explicit SweepDialog(const SweepOptions& initial, QWidget* parent = nullptr);
  SweepOptions options() const;
  QString commandLine() const;  // shown under the form, shell-quoted

 private:
  void updateCommand();
  QLineEdit* addPath(QFormLayout* form, const QString& label, bool folder);

  QLineEdit *m_model, *m_maxError, *m_min, *m_opt, *m_max, *m_data, *m_cache, *m_calibData, *m_dir,
      *m_partition, *m_gres, *m_time, *m_command;
  QPlainTextEdit* m_axes;
  QComboBox* m_backend;
  QSpinBox *m_iterations, *m_jobs, *m_arrayMax;
  QCheckBox *m_resume, *m_retry;
  QGroupBox* m_slurm;
};

}  // namespace kiln::studio
