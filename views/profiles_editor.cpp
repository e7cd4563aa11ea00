#include "profiles_editor.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <set>

namespace kiln::studio {
namespace {

const char* kColumnNames[] = {"min", "opt", "max"};

// The proposal for a dimension: its value when fixed, else 1.
Shape proposedShape(const SymbolicShape& declared) {
  Shape out;
  for (const DimExpr& d : declared) out.push_back(d.isConst() ? d.constValue() : 1);
  return out;
}

bool fitsInputs(const OptimizationProfile& profile, const std::set<std::string>& names) {
  if (profile.inputs.size() != names.size()) return false;
  for (const auto& [name, range] : profile.inputs)
    if (!names.count(name)) return false;
  return true;
}

}  // namespace

QString shapeToText(const Shape& shape) {
  QStringList dims;
  for (int64_t d : shape) dims << QString::number(d);
  return dims.join('x');
}

bool parseShapeText(const QString& text, Shape* out) {
  out->clear();
  const QString trimmed = text.trimmed();
  if (trimmed.isEmpty()) return false;
  for (const QString& part : trimmed.split('x')) {
    bool ok = false;
    const qlonglong value = part.trimmed().toLongLong(&ok);
    if (!ok || value < 0) return false;
    out->push_back(value);
  }
  return true;
}

ProfilesEditor::ProfilesEditor(QWidget* parent)
    : QWidget(parent),
      m_tabs(new QTabWidget(this)),
      m_message(new QLabel(this)),
      m_add(new QPushButton(tr("Add profile"), this)),
      m_remove(new QPushButton(tr("Remove profile"), this)) {
  m_message->setWordWrap(true);
  m_message->setObjectName("profileMessage");
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_add);
  buttons->addWidget(m_remove);
  buttons->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_tabs, 1);
  layout->addLayout(buttons);
  layout->addWidget(m_message);
  connect(m_add, &QPushButton::clicked, this, &ProfilesEditor::addProfile);
  connect(m_remove, &QPushButton::clicked, this, [this] { removeProfile(m_tabs->currentIndex()); });
  setNetwork(nullptr, {});
}

void ProfilesEditor::setNetwork(const Network* network,
                                const std::vector<OptimizationProfile>& profiles,
                                const OptimizationProfile& proposed) {
  m_inputs.clear();
  m_proposal = proposed;
  std::set<std::string> names;
  if (network) {
    for (const ValueInfo& input : network->graph.inputs) {
      bool dynamic = false;
      for (const DimExpr& d : input.shape) dynamic = dynamic || !d.isConst();
      if (!input.hasShape || !dynamic) continue;
      m_inputs.push_back({QString::fromStdString(input.name), input.shape});
      names.insert(input.name);
    }
  }
  while (m_tabs->count() > 0) {
    QWidget* page = m_tabs->widget(0);
    m_tabs->removeTab(0);
    delete page;
  }
  bool fit = !profiles.empty();
  for (const OptimizationProfile& p : profiles) fit = fit && fitsInputs(p, names);
  if (fit) {
    for (const OptimizationProfile& p : profiles) addProfileTab(p);
  } else if (!m_inputs.empty()) {
    addProfileTab(proposal());
  }
  m_add->setEnabled(!m_inputs.empty());
  validate();
}

OptimizationProfile ProfilesEditor::proposal() const {
  OptimizationProfile out;
  for (const DynamicInput& input : m_inputs) {
    const std::string name = input.name.toStdString();
    auto proposed = m_proposal.inputs.find(name);
    if (proposed != m_proposal.inputs.end() && checkRange(input, proposed->second).isEmpty()) {
      out.inputs[name] = proposed->second;
      continue;
    }
    const Shape shape = proposedShape(input.declared);
    out.inputs[name] = {shape, shape, shape};
  }
  return out;
}

QTableWidget* ProfilesEditor::addProfileTab(const OptimizationProfile& profile) {
  auto* table = new QTableWidget(static_cast<int>(m_inputs.size()), kColumnCount);
  table->setHorizontalHeaderLabels({tr("Input"), tr("Declared"), tr("Min"), tr("Opt"), tr("Max")});
  table->verticalHeader()->hide();
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  {
    QSignalBlocker block(table);
    for (size_t row = 0; row < m_inputs.size(); ++row) {
      auto it = profile.inputs.find(m_inputs[row].name.toStdString());
      const ShapeRange range = it != profile.inputs.end() ? it->second : ShapeRange{};
      fillRow(table, static_cast<int>(row), m_inputs[row], range);
    }
  }
  connect(table, &QTableWidget::itemChanged, this, [this] {
    validate();
    emit profilesEdited();
  });
  m_tabs->addTab(table, QString());
  renumberTabs();
  return table;
}

void ProfilesEditor::fillRow(QTableWidget* table, int row, const DynamicInput& input,
                             const ShapeRange& range) {
  auto fixed = [](const QString& text) {
    auto* item = new QTableWidgetItem(text);
    item->setFlags(item->flags() & ~Qt::ItemIsEditable);
    return item;
  };
  table->setItem(row, kInput, fixed(input.name));
  table->setItem(row, kDeclared,
                 fixed(QString::fromStdString(symbolicShapeToString(input.declared))));
  table->setItem(row, kMin, new QTableWidgetItem(shapeToText(range.min)));
  table->setItem(row, kOpt, new QTableWidgetItem(shapeToText(range.opt)));
  table->setItem(row, kMax, new QTableWidgetItem(shapeToText(range.max)));
}

void ProfilesEditor::renumberTabs() {
  for (int i = 0; i < m_tabs->count(); ++i) m_tabs->setTabText(i, tr("Profile %1").arg(i));
  m_remove->setEnabled(m_tabs->count() > 1);
}

int ProfilesEditor::profileCount() const {
  return m_tabs->count();
}

void ProfilesEditor::addProfile() {
  if (m_inputs.empty()) return;
  OptimizationProfile copy;
  const int current = m_tabs->currentIndex();
  const bool valid = current >= 0 && checkProfile(current, &copy).isEmpty();
  addProfileTab(valid ? copy : proposal());
  m_tabs->setCurrentIndex(m_tabs->count() - 1);
  validate();
  emit profilesEdited();
}

void ProfilesEditor::removeProfile(int index) {
  if (m_tabs->count() <= 1 || index < 0 || index >= m_tabs->count()) return;
  QWidget* page = m_tabs->widget(index);
  m_tabs->removeTab(index);
  delete page;
  renumberTabs();
  validate();
  emit profilesEdited();
}

bool ProfilesEditor::setShape(int profile, const QString& input, Column column,
                              const QString& shape) {
  if (profile < 0 || profile >= m_tabs->count() || column < kMin || column > kMax) return false;
  auto* table = static_cast<QTableWidget*>(m_tabs->widget(profile));
  for (int row = 0; row < table->rowCount(); ++row) {
    if (table->item(row, kInput)->text() != input) continue;
    table->item(row, column)->setText(shape);  // itemChanged validates and notifies
    return true;
  }
  return false;
}

QString ProfilesEditor::checkRange(const DynamicInput& input, const ShapeRange& range) const {
  const Shape* shapes[] = {&range.min, &range.opt, &range.max};
  for (int i = 0; i < 3; ++i) {
    if (shapes[i]->size() != input.declared.size())
      return tr("%1 has rank %2, the model declares %3 (%4)")
          .arg(kColumnNames[i])
          .arg(shapes[i]->size())
          .arg(input.declared.size())
          .arg(QString::fromStdString(symbolicShapeToString(input.declared)));
    for (size_t d = 0; d < input.declared.size(); ++d) {
      const DimExpr& declared = input.declared[d];
      if (declared.isConst() && (*shapes[i])[d] != declared.constValue())
        return tr("%1 dimension %2 is %3 but the model fixes it at %4")
            .arg(kColumnNames[i])
            .arg(d)
            .arg((*shapes[i])[d])
            .arg(declared.constValue());
    }
  }
  for (size_t d = 0; d < range.opt.size(); ++d) {
    if (range.min[d] > range.opt[d] || range.opt[d] > range.max[d])
      return tr("dimension %1 needs min <= opt <= max (%2, %3, %4)")
          .arg(d)
          .arg(range.min[d])
          .arg(range.opt[d])
          .arg(range.max[d]);
  }
  return QString();
}

QString ProfilesEditor::checkProfile(int index, OptimizationProfile* out) const {
  auto* table = static_cast<QTableWidget*>(m_tabs->widget(index));
  for (int row = 0; row < table->rowCount(); ++row) {
    const DynamicInput& input = m_inputs[row];
    const QString where = tr("profile %1, input '%2': ").arg(index).arg(input.name);
    ShapeRange range;
    Shape* shapes[] = {&range.min, &range.opt, &range.max};
    for (int i = 0; i < 3; ++i) {
      const QString text = table->item(row, kMin + i)->text();
      if (!parseShapeText(text, shapes[i]))
        return where + tr("%1 shape '%2' is not a shape like 1x128").arg(kColumnNames[i]).arg(text);
    }
    const QString problem = checkRange(input, range);
    if (!problem.isEmpty()) return where + problem;
    out->inputs[input.name.toStdString()] = range;
  }
  return QString();
}

std::vector<OptimizationProfile> ProfilesEditor::profiles() const {
  std::vector<OptimizationProfile> out;
  for (int i = 0; i < m_tabs->count(); ++i) {
    OptimizationProfile profile;
    if (checkProfile(i, &profile).isEmpty()) out.push_back(profile);
  }
  return out;
}

void ProfilesEditor::validate() {
  m_problem.clear();
  for (int i = 0; i < m_tabs->count() && m_problem.isEmpty(); ++i) {
    OptimizationProfile ignored;
    m_problem = checkProfile(i, &ignored);
  }
  if (m_inputs.empty())
    m_message->setText(tr("Every input has a fixed shape: no profile is needed."));
  else if (m_problem.isEmpty())
    m_message->setText(
        (m_tabs->count() == 1 ? tr("1 profile") : tr("%1 profiles").arg(m_tabs->count())) +
        tr("; tactics are timed at profile 0's opt shapes."));
  else
    m_message->setText(m_problem);
  m_message->setStyleSheet(m_problem.isEmpty() ? QString() : QStringLiteral("color: #c0392b"));
}

}  // namespace kiln::studio
