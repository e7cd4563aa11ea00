#include "shapes_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QVBoxLayout>
#include <algorithm>

#include "input_values.h"
#include "profiles_editor.h"

namespace kiln::studio {

ShapesDialog::ShapesDialog(const Network& network, const QString& modelName,
                           const ShapeProposal& proposal, QWidget* parent)
    : QDialog(parent), m_editor(new ProfilesEditor(this)), m_sources(new QLabel(this)) {
  setObjectName("shapesDialog");
  setWindowTitle(tr("Shapes for %1").arg(modelName));
  auto* intro = new QLabel(
      tr("<b>%1</b> has inputs with dynamic dimensions. The engine is built for the shapes "
         "below (one optimization profile: min, opt, max; tactics are timed at opt). Check "
         "them before the build; they stay editable in the Build dock's Profiles.")
          .arg(modelName.toHtmlEscaped()),
      this);
  intro->setWordWrap(true);
  QStringList lines;
  for (const ProposedInput& input : proposal.inputs)
    lines << tr("%1<b>%2</b>: %3")
                 .arg(input.guessed ? QStringLiteral("<span style='color:#c0392b'>&#9888; ")
                                    : QString())
                 .arg(QString::fromStdString(input.name).toHtmlEscaped())
                 .arg(QString::fromStdString(input.source).toHtmlEscaped() +
                      (input.guessed ? QStringLiteral("</span>") : QString()));
  if (proposal.anyGuessed())
    lines << tr(
        "<span style='color:#c0392b'>Dimensions marked &#9888; had no clue in the "
        "model: 1 is a guess.</span>");
  m_sources->setObjectName("shapeSources");
  m_sources->setTextFormat(Qt::RichText);
  m_sources->setWordWrap(true);
  m_sources->setText(lines.join("<br>"));
  m_editor->setNetwork(&network, {}, proposal.profile);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
  m_build = buttons->addButton(tr("Build"), QDialogButtonBox::AcceptRole);
  m_build->setObjectName("shapesBuild");
  m_build->setDefault(true);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(m_editor, &ProfilesEditor::profilesEdited, this, [this] { updateBuildEnabled(); });
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(intro);
  layout->addWidget(m_sources);
  layout->addWidget(m_editor, 1);
  if (!proposal.values.empty()) layout->addWidget(makeValuesBox(network, proposal));
  layout->addWidget(buttons);
  updateBuildEnabled();
  resize(720, 420);
}

QWidget* ShapesDialog::makeValuesBox(const Network& network, const ShapeProposal& proposal) {
  auto* box = new QGroupBox(tr("Values of value inputs"), this);
  box->setObjectName("inputValues");
  auto* form = new QFormLayout(box);
  auto* why = new QLabel(tr("These inputs are numbers the model reads (a sample rate, a "
                            "shape), not data: a value given here is built into the "
                            "engine, which then no longer takes the input."),
                         box);
  why->setWordWrap(true);
  form->addRow(why);
  for (const ProposedValue& proposed : proposal.values) {
    auto input = std::find_if(network.graph.inputs.begin(), network.graph.inputs.end(),
                              [&proposed](const ValueInfo& i) { return i.name == proposed.name; });
    if (input == network.graph.inputs.end()) continue;
    const QString name = QString::fromStdString(proposed.name);
    auto* edit = new QLineEdit(QString::fromStdString(proposed.text), box);
    edit->setObjectName("value:" + name);
    edit->setPlaceholderText(tr("keep as an input"));
    edit->setToolTip(QString::fromStdString(proposed.source));
    const QString type = QString::fromStdString(dataTypeName(input->type));
    form->addRow(
        tr("%1 (%2%3)").arg(name, type, input->shape.empty() ? tr(" scalar") : tr(" vector")),
        edit);
    form->addRow(QString(), new QLabel(QString::fromStdString(proposed.source), box));
    m_valueEdits.emplace_back(*input, edit);
    connect(edit, &QLineEdit::textChanged, this, [this] { updateBuildEnabled(); });
  }
  m_valuesProblem = new QLabel(box);
  m_valuesProblem->setObjectName("valuesProblem");
  m_valuesProblem->setStyleSheet("color: #c0392b");
  form->addRow(m_valuesProblem);
  return box;
}

void ShapesDialog::updateBuildEnabled() {
  const QString problem = valuesProblem();
  if (m_valuesProblem) {
    m_valuesProblem->setText(problem);
    m_valuesProblem->setVisible(!problem.isEmpty());
  }
  m_build->setEnabled(m_editor->isValid() && problem.isEmpty());
}

std::map<std::string, Tensor> ShapesDialog::values() const {
  std::map<std::string, Tensor> out;
  for (const auto& [input, edit] : m_valueEdits) {
    if (edit->text().trimmed().isEmpty()) continue;
    auto value = parseInputValue(input, edit->text().trimmed().toStdString());
    if (value.isOk()) out[input.name] = value.value();
  }
  return out;
}

QString ShapesDialog::valuesProblem() const {
  for (const auto& [input, edit] : m_valueEdits) {
    if (edit->text().trimmed().isEmpty()) continue;
    auto value = parseInputValue(input, edit->text().trimmed().toStdString());
    if (!value.isOk()) return QString::fromStdString(value.status().message());
  }
  return QString();
}

QLineEdit* ShapesDialog::valueEdit(const QString& name) const {
  for (const auto& [input, edit] : m_valueEdits)
    if (QString::fromStdString(input.name) == name) return edit;
  return nullptr;
}

std::vector<OptimizationProfile> ShapesDialog::profiles() const {
  return m_editor->profiles();
}

QString ShapesDialog::sourcesText() const {
  QString text = m_sources->text();
  text.replace("<br>", "\n");
  return text.remove(QRegularExpression("<[^>]*>"));
}

}  // namespace kiln::studio
