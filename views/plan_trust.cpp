#include "plan_trust.h"

#include <QFileInfo>
#include <QObject>
#include <QSettings>
#include <string>
#include <vector>

namespace kiln::studio {

namespace {
constexpr const char* kSettingsOrg = "Kiln";
constexpr const char* kSettingsApp = "kiln-studio";
}  // namespace

QStringList savedTrustedKeys() {
  return QSettings(kSettingsOrg, kSettingsApp).value(kTrustedKeysSetting).toStringList();
}

void saveTrustedKeys(const QStringList& keyFiles) {
  QSettings(kSettingsOrg, kSettingsApp).setValue(kTrustedKeysSetting, keyFiles);
}

Status applyTrustedKeys(const QStringList& keyFiles) {
  std::vector<std::string> files;
  for (const QString& file : keyFiles) files.push_back(file.toStdString());
  return requirePlanSignatures(files);  // builds the new list first: unchanged on error
}

QStringList splitTrustOption(const QString& value) {
  QStringList files;
  for (const QString& part : value.split(',', Qt::SkipEmptyParts))
    if (!part.trimmed().isEmpty()) files << part.trimmed();
  return files;
}

KeyFileState keyFileState(const QString& keyFile) {
  Result<std::string> id = publicKeyId(keyFile.toStdString());
  if (!id.isOk()) return {false, QString::fromStdString(id.status().message())};
  return {true, QObject::tr("Ed25519 key %1").arg(QString::fromStdString(id.value()))};
}

QString planTrustText(const PlanTrust& trust) {
  if (!trust.required) return QObject::tr("signatures not required");
  if (!trust.isSigned) return QObject::tr("unsigned");
  return QObject::tr("signed (verified against %1)")
      .arg(QFileInfo(QString::fromStdString(trust.keyFile)).fileName());
}

QString policyText(int keyCount) {
  if (keyCount == 0) return QObject::tr("Plan signatures: not required");
  return keyCount == 1 ? QObject::tr("Plan signatures: required (1 key)")
                       : QObject::tr("Plan signatures: required (%1 keys)").arg(keyCount);
}

}  // namespace kiln::studio
