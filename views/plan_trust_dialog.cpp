#include "plan_trust_dialog.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "plan_trust.h"

namespace kiln::studio {

namespace {

QLabel* wrappedLabel(const QString& text, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setWordWrap(true);
  label->setTextFormat(Qt::RichText);
  return label;
}

}  // namespace

PlanTrustDialog::PlanTrustDialog(const QStringList& keyFiles, const QStringList& sessionKeys,
                                 QWidget* parent)
    : QDialog(parent), m_list(new QTreeWidget(this)), m_policy(new QLabel(this)) {
  setObjectName("PlanTrustDialog");
  setWindowTitle(tr("Plan Trust"));
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(wrappedLabel(
      tr("A plan built for CUDA carries code that runs on the GPU (NVRTC cubins, cuDNN plans). "
         "Plans are checked against these Ed25519 public keys (<code>kiln keygen</code>; sign "
         "with <code>kiln build --sign KEY</code>). While any key is set, a plan whose "
         "signature (<code>PLAN.kiln.sig</code>) does not verify is refused, and so is an "
         "unsigned plan with generated GPU code; an unsigned CPU plan still loads. An empty "
         "list turns the requirement off."),
      this));
  if (!sessionKeys.isEmpty())
    layout->addWidget(wrappedLabel(
        tr("This session was started with <code>--trust %1</code>; OK replaces those keys "
           "with the list below and saves it.")
            .arg(sessionKeys.join(',').toHtmlEscaped()),
        this));
  m_list->setColumnCount(2);
  m_list->setHeaderLabels({tr("Public key file"), tr("State")});
  m_list->setRootIsDecorated(false);
  m_list->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_list->header()->setStretchLastSection(true);
  m_list->setColumnWidth(0, 340);
  layout->addWidget(m_list, 1);

  auto* buttons = new QHBoxLayout;
  QPushButton* add = new QPushButton(tr("&Add..."), this);
  QPushButton* remove = new QPushButton(tr("&Remove"), this);
  remove->setEnabled(false);
  buttons->addWidget(add);
  buttons->addWidget(remove);
  buttons->addStretch(1);
  layout->addLayout(buttons);
  m_policy->setWordWrap(true);
  layout->addWidget(m_policy);
  auto* box = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  layout->addWidget(box);

  connect(add, &QPushButton::clicked, this, [this] { chooseKeyFiles(); });
  connect(remove, &QPushButton::clicked, this, [this] { removeSelected(); });
  connect(m_list, &QTreeWidget::itemSelectionChanged, this,
          [this, remove] { remove->setEnabled(!m_list->selectedItems().isEmpty()); });
  connect(box, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(box, &QDialogButtonBox::rejected, this, &QDialog::reject);
  addKeyFiles(keyFiles);
  resize(820, 420);
}

QStringList PlanTrustDialog::keyFiles() const {
  QStringList files;
  for (int i = 0; i < m_list->topLevelItemCount(); ++i) files << m_list->topLevelItem(i)->text(0);
  return files;
}

void PlanTrustDialog::addKeyFiles(const QStringList& files) {
  QStringList listed = keyFiles();
  for (const QString& file : files) {
    if (listed.contains(file)) continue;
    listed << file;
    const KeyFileState state = keyFileState(file);
    // The row names the file already: the error without its "FILE: " prefix.
    const QString shown =
        state.text.startsWith(file + ": ") ? state.text.mid(file.size() + 2) : state.text;
    auto* item = new QTreeWidgetItem(m_list, {file, shown});
    item->setToolTip(0, file);
    item->setToolTip(1, state.text);
    if (!state.ok) item->setForeground(1, QColor(0xb0, 0x00, 0x20));
  }
  updatePolicyLine();
}

void PlanTrustDialog::removeSelected() {
  qDeleteAll(m_list->selectedItems());
  updatePolicyLine();
}

QStringList PlanTrustDialog::rowTexts() const {
  QStringList rows;
  for (int i = 0; i < m_list->topLevelItemCount(); ++i)
    rows << m_list->topLevelItem(i)->text(0) + "\t" + m_list->topLevelItem(i)->text(1);
  return rows;
}

void PlanTrustDialog::chooseKeyFiles() {
  const QString start = keyFiles().isEmpty() ? QString() : QFileInfo(keyFiles().last()).path();
  addKeyFiles(QFileDialog::getOpenFileNames(this, tr("Trusted public keys"), start,
                                            tr("Public keys (*.pub *.pem);;All files (*)")));
}

void PlanTrustDialog::updatePolicyLine() {
  const int count = m_list->topLevelItemCount();
  const QString keys = count == 1 ? tr("this key") : tr("one of these %1 keys").arg(count);
  m_policy->setText(
      count == 0 ? tr("With an empty list, plans load without signatures.")
                 : tr("Plans must be signed by %1 (unsigned CPU plans excepted).").arg(keys));
}

}  // namespace kiln::studio
