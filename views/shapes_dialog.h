// ShapesDialog: shown before the first build of a model with dynamic inputs, so no
// dynamic dimension is built at 1 without the user seeing it (issue 26 item 7). It
// holds a ProfilesEditor pre-filled with the proposal (shape_proposal.h: the model's
// test data, its symbol names, the inputs' layouts), says where each input's shape
// came from, and marks guesses. Value inputs (input_values.h: silero's `sr`) get a line
// edit each, pre-filled from the test data: a value given freezes the input to it in
// the engine, an empty one keeps it an input. Build accepts with the edited profiles
// and values (enabled only while both are valid); Cancel builds nothing.
#pragma once

#include <QDialog>
#include <map>
#include <string>
#include <vector>

#include "kiln/builder_config.h"
#include "kiln/graph.h"
#include "shape_proposal.h"

class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;

namespace kiln::studio {

class ProfilesEditor;

class ShapesDialog : public QDialog {
  Q_OBJECT
 public:
  ShapesDialog(const Network& network, const QString& modelName, const ShapeProposal& proposal,
               QWidget* parent = nullptr);

  // The profiles as edited; meaningful when editor()->isValid().
  std::vector<OptimizationProfile> profiles() const;
  ProfilesEditor* editor() const { return m_editor; }
  // The values given for value inputs (empty edits left out); meaningful when
  // valuesProblem() is empty.
  std::map<std::string, Tensor> values() const;
  // Why a value does not parse ("input 'sr' holds 1 integer, not 2"), "" when all do.
  QString valuesProblem() const;
  // The edit of value input `name`; nullptr when it has none.
  QLineEdit* valueEdit(const QString& name) const;
  // "x: test data (test_data_set_0/input_0.pb)" lines, as shown.
  QString sourcesText() const;

 private:
  QWidget* makeValuesBox(const Network& network, const ShapeProposal& proposal);
  void updateBuildEnabled();

  ProfilesEditor* m_editor;
  std::vector<std::pair<ValueInfo, QLineEdit*>> m_valueEdits;
  QLabel* m_valuesProblem = nullptr;
  QLabel* m_sources;
  QPushButton* m_build;
};

}  // namespace kiln::studio
