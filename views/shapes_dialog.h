// ShapesDialog: shown before the first build of a model with dynamic inputs, so no
// dynamic dimension is built at 1 without the user seeing it (issue 26 item 7). It
// holds a ProfilesEditor pre-filled with the proposal (shape_proposal.h: the model's
// test data, its symbol names, the inputs' layouts), says where each input's shape
// came from, and marks guesses. Build accepts with the edited profiles; Cancel builds
// nothing.
#pragma once

#include <QDialog>
#include <vector>

#include "kiln/builder_config.h"
#include "kiln/graph.h"
#include "shape_proposal.h"

class QLabel;
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
  // "x: test data (test_data_set_0/input_0.pb)" lines, as shown.
  QString sourcesText() const;

 private:
  ProfilesEditor* m_editor;
  QLabel* m_sources;
  QPushButton* m_build;
};

}  // namespace kiln::studio
