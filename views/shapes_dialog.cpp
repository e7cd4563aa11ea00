#include "shapes_dialog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QVBoxLayout>

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
  connect(m_editor, &ProfilesEditor::profilesEdited, this,
          [this] { m_build->setEnabled(m_editor->isValid()); });
  m_build->setEnabled(m_editor->isValid());
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(intro);
  layout->addWidget(m_sources);
  layout->addWidget(m_editor, 1);
  layout->addWidget(buttons);
  resize(720, 420);
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
