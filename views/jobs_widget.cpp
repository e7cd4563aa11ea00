#include "jobs_widget.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QToolButton>

#include "job_runner.h"

namespace kiln::studio {

JobsWidget::JobsWidget(JobRunner* runner, QWidget* parent)
    : QWidget(parent),
      m_runner(runner),
      m_label(new QLabel(this)),
      m_bar(new QProgressBar(this)),
      m_cancel(new QToolButton(this)) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_label);
  layout->addWidget(m_bar);
  layout->addWidget(m_cancel);
  m_bar->setFixedWidth(160);
  m_bar->setTextVisible(false);
  m_cancel->setText(tr("Cancel"));
  m_cancel->setToolTip(tr("Cancel the newest running job"));
  connect(m_cancel, &QToolButton::clicked, this, [this] {
    if (!m_entries.empty()) m_runner->cancel(m_entries.rbegin()->first);
  });
  connect(m_runner, &JobRunner::jobStarted, this, [this](int id, const QString& title) {
    m_entries[id].title = title;
    refresh();
  });
  connect(m_runner, &JobRunner::jobProgress, this,
          [this](int id, double fraction, const QString& phase) {
            auto it = m_entries.find(id);
            if (it == m_entries.end()) return;
            it->second.fraction = fraction;
            it->second.phase = phase;
            refresh();
          });
  connect(m_runner, &JobRunner::jobFinished, this, [this](int id) {
    m_entries.erase(id);
    refresh();
  });
  refresh();
}

QString JobsWidget::text() const {
  return m_label->text();
}

void JobsWidget::refresh() {
  setVisible(!m_entries.empty());
  if (m_entries.empty()) return;
  const Entry& newest = m_entries.rbegin()->second;
  QString text = newest.title;
  if (!newest.phase.isEmpty()) text += ": " + newest.phase;
  if (m_entries.size() > 1) text += tr("  (+%1 more)").arg(m_entries.size() - 1);
  m_label->setText(text);
  if (newest.fraction < 0) {
    m_bar->setRange(0, 0);  // busy indicator
  } else {
    m_bar->setRange(0, 1000);
    m_bar->setValue(static_cast<int>(newest.fraction * 1000));
  }
}

}  // namespace kiln::studio
