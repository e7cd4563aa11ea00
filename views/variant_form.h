// VariantForm: "build B from the current configuration with edits" in the Compare
// view: the document's build configuration with the precisions, per-layer rules,
// constraint mode, tactic sources and disabled passes edited here (trtexec / kiln
// build spellings). config() is the edited copy; errors name the field.
#pragma once

#include <QGroupBox>

#include "kiln/builder_config.h"
#include "kiln/status.h"

class QCheckBox;
class QComboBox;
class QLineEdit;

namespace kiln::studio {

class VariantForm : public QGroupBox {
  Q_OBJECT
 public:
  explicit VariantForm(QWidget* parent = nullptr);
  // `base` with this form's edits applied.
  Result<BuilderConfig> config(const BuilderConfig& base) const;
  void setFp16(bool on);
  void setLayerPrecisions(const QString& spec);
  void setConstraintMode(ConstraintMode mode);
  void setTacticSources(const QString& spec);
  void setDisabledPasses(const QString& names);

 signals:
  void buildRequested();

 private:
  QCheckBox *m_fp16, *m_bf16;
  QComboBox* m_mode;
  QLineEdit *m_layerPrecisions, *m_tacticSources, *m_disabledPasses;
};

}  // namespace kiln::studio
