// The studio's plan-signature policy (docs/security.md, "In the studio"): the trusted
// Ed25519 public key files, saved in QSettings under kTrustedKeysSetting and applied
// process-wide through requirePlanSignatures() (kiln/plan_signature.h). Plus the words
// the studio shows for a key file and for a loaded plan's trust state. No widgets.
#pragma once

#include <QString>
#include <QStringList>

#include "kiln/plan_signature.h"
#include "kiln/status.h"

namespace kiln::studio {

inline constexpr const char* kTrustedKeysSetting = "trust/publicKeys";

// The saved list (QSettings "Kiln"/"kiln-studio"), in order; empty when none.
QStringList savedTrustedKeys();
void saveTrustedKeys(const QStringList& keyFiles);

// requirePlanSignatures(keyFiles): every plan loaded from now on is checked against
// them; an empty list turns the requirement off. On error (the one-line message names
// the key file) the policy in force is unchanged.
Status applyTrustedKeys(const QStringList& keyFiles);

// "a.pub,b.pub" as kiln's --trust takes it -> {"a.pub", "b.pub"}; empty entries dropped.
QStringList splitTrustOption(const QString& value);

// One key file as the Plan Trust dialog lists it: ok and "Ed25519 key 0123456789abcdef"
// (the id refusals name), or not ok and the one-line error requirePlanSignatures gives.
struct KeyFileState {
  bool ok = false;
  QString text;
};
KeyFileState keyFileState(const QString& keyFile);

// A loaded plan's trust state: "signed (verified against a.pub)", "unsigned" or
// "signatures not required".
QString planTrustText(const PlanTrust& trust);
// The policy in force, for the status bar: "Plan signatures: required (2 keys)" or
// "Plan signatures: not required".
QString policyText(int keyCount);

}  // namespace kiln::studio
