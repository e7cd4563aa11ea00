// ProfilesEditor: the optimization profiles of a build. One tab per profile; in each,
// one row per dynamic input of the model (an input with a symbolic dimension) with
// its declared shape and editable min / opt / max shapes ("1x128"). Profiles can be
// added and removed; every edit is validated (shape syntax, rank and fixed dims as
// the model declares them, min <= opt <= max) and the first problem is shown in words.
#pragma once

#include <QString>
#include <QWidget>
#include <vector>

#include "kiln/builder_config.h"
#include "kiln/graph.h"

class QLabel;
class QPushButton;
class QTabWidget;
class QTableWidget;

namespace kiln::studio {

class ProfilesEditor : public QWidget {
  Q_OBJECT
 public:
  enum Column { kInput, kDeclared, kMin, kOpt, kMax, kColumnCount };

  explicit ProfilesEditor(QWidget* parent = nullptr);

  // The dynamic inputs of `network` become the rows. When `profiles` fit them (same
  // inputs) they are shown; otherwise one profile is proposed: `proposal`'s range for
  // the inputs it has (shape_proposal.h: test data, symbol names, layouts), else every
  // symbolic dimension at 1 for min, opt and max (what trtexec assumes without shapes).
  void setNetwork(const Network* network, const std::vector<OptimizationProfile>& profiles,
                  const OptimizationProfile& proposal = {});
  bool hasDynamicInputs() const { return !m_inputs.empty(); }

  // The profiles as edited; meaningful when isValid().
  std::vector<OptimizationProfile> profiles() const;
  bool isValid() const { return m_problem.isEmpty(); }
  // "" when valid, else e.g. "profile 1, input 'ids': min 4x8 exceeds opt 2x8".
  QString problem() const { return m_problem; }

  int profileCount() const;
  void addProfile();              // a copy of the current profile (or the proposal)
  void removeProfile(int index);  // the last profile cannot be removed
  // Sets one shape cell as text; false when the profile or input does not exist.
  bool setShape(int profile, const QString& input, Column column, const QString& shape);

 signals:
  void profilesEdited();

 private:
  struct DynamicInput {
    QString name;
    SymbolicShape declared;
  };
  OptimizationProfile proposal() const;  // m_proposal's ranges, else symbolic dims at 1
  QTableWidget* addProfileTab(const OptimizationProfile& profile);
  void fillRow(QTableWidget* table, int row, const DynamicInput& input, const ShapeRange& range);
  QString checkProfile(int index, OptimizationProfile* out) const;
  QString checkRange(const DynamicInput& input, const ShapeRange& range) const;
  void renumberTabs();
  void validate();

  std::vector<DynamicInput> m_inputs;
  OptimizationProfile m_proposal;
  QTabWidget* m_tabs;
  QLabel* m_message;
  QPushButton* m_add;
  QPushButton* m_remove;
  QString m_problem;
};

// "1x3x224x224" -> shape; false for anything else (negative dims included).
bool parseShapeText(const QString& text, Shape* out);
// shape -> "1x3x224x224", as the editor shows and parseShapeText reads it.
QString shapeToText(const Shape& shape);

}  // namespace kiln::studio
