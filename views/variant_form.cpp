#include "variant_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QStringList>

namespace kiln::studio {

VariantForm::VariantForm(QWidget* parent)
    : QGroupBox(tr("Build B: the current configuration with edits"), parent) {
  m_fp16 = new QCheckBox(QStringLiteral("fp16"), this);
  m_bf16 = new QCheckBox(QStringLiteral("bf16"), this);
  m_mode = new QComboBox(this);
  for (ConstraintMode mode :
       {ConstraintMode::kNone, ConstraintMode::kPrefer, ConstraintMode::kObey})
    m_mode->addItem(QString::fromLatin1(constraintModeName(mode)), static_cast<int>(mode));
  m_layerPrecisions = new QLineEdit(this);
  m_layerPrecisions->setPlaceholderText(QStringLiteral("*:fp16,Conv_3:fp32 (empty: keep)"));
  m_tacticSources = new QLineEdit(this);
  m_tacticSources->setPlaceholderText(QStringLiteral("-blas,+kiln (empty: keep)"));
  m_disabledPasses = new QLineEdit(this);
  m_disabledPasses->setPlaceholderText(QStringLiteral("fuse_conv_bias_activation,..."));
  auto* build = new QPushButton(tr("Build B"), this);
  auto* flags = new QHBoxLayout;
  flags->addWidget(m_fp16);
  flags->addWidget(m_bf16);
  flags->addStretch();
  auto* form = new QFormLayout(this);
  form->addRow(tr("Precisions"), flags);
  form->addRow(tr("Constraints"), m_mode);
  form->addRow(tr("Layer precisions"), m_layerPrecisions);
  form->addRow(tr("Tactic sources"), m_tacticSources);
  form->addRow(tr("Disable passes"), m_disabledPasses);
  form->addRow(build);
  connect(build, &QPushButton::clicked, this, &VariantForm::buildRequested);
}

Result<BuilderConfig> VariantForm::config(const BuilderConfig& base) const {
  BuilderConfig config = base;
  config.fp16 = base.fp16 || m_fp16->isChecked();
  config.bf16 = base.bf16 || m_bf16->isChecked();
  config.precisionConstraints = static_cast<ConstraintMode>(m_mode->currentData().toInt());
  const std::string spec = m_layerPrecisions->text().trimmed().toStdString();
  if (!spec.empty()) {
    auto rules = parseLayerPrecisionSpec(spec);
    if (!rules.isOk()) return rules.status().withContext("layer precisions");
    config.layerPrecisions = rules.value();
  }
  const std::string sources = m_tacticSources->text().trimmed().toStdString();
  if (!sources.empty()) {
    auto parsed = parseTacticSources(sources, base.tacticSources);
    if (!parsed.isOk()) return parsed.status().withContext("tactic sources");
    config.tacticSources = parsed.value();
  }
  for (const QString& pass : m_disabledPasses->text().split(',', Qt::SkipEmptyParts))
    config.disabledPasses.push_back(pass.trimmed().toStdString());
  return config;
}

void VariantForm::setFp16(bool on) {
  m_fp16->setChecked(on);
}
void VariantForm::setLayerPrecisions(const QString& spec) {
  m_layerPrecisions->setText(spec);
}
void VariantForm::setConstraintMode(ConstraintMode mode) {
  m_mode->setCurrentIndex(m_mode->findData(static_cast<int>(mode)));
}
void VariantForm::setTacticSources(const QString& spec) {
  m_tacticSources->setText(spec);
}
void VariantForm::setDisabledPasses(const QString& names) {
  m_disabledPasses->setText(names);
}

}  // namespace kiln::studio
