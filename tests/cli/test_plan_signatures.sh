#!/usr/bin/env bash
# Signed plans through the CLI (docs/security.md): kiln keygen, kiln build --sign,
# --trust on the plan-loading commands. A plan that was changed after signing, signed
# by another key or carrying a stale signature is refused with one line.
# Usage: test_plan_signatures.sh KILN DATA_DIR
set -u
kiln="$1"; data="$2"
source "$(dirname "$0")/cli_test_support.sh"
model="$data/unsorted.onnx"

check "keygen writes a key pair" "$kiln" keygen -o "$work/alice"
check "a second key pair" "$kiln" keygen -o "$work/mallory"
mode=$(stat -c %a "$work/alice.key"); [[ "$mode" == "600" ]]
check_rc "the private key is mode 0600" $? "mode $mode"
expect_error "keygen never replaces a key" "alice.key: cannot create" \
  "$kiln" keygen -o "$work/alice"

check "build --sign writes the plan and its signature" \
  "$kiln" build "$model" -o "$work/p.kiln" --sign "$work/alice.key" --quiet
[[ -s "$work/p.kiln.sig" ]]; check_rc "signature file beside the plan" $? "no p.kiln.sig"
check "run with --trust: the signed plan runs" "$kiln" --trust "$work/alice.pub" run "$work/p.kiln"
check "inspect with --trust after the command" "$kiln" inspect "$work/p.kiln" --trust "$work/alice.pub"
expect_error "signed by a key that is not trusted" "which is not among the trusted keys" \
  "$kiln" --trust "$work/mallory.pub" run "$work/p.kiln"

cp "$work/p.kiln" "$work/edited.kiln"; cp "$work/p.kiln.sig" "$work/edited.kiln.sig"
printf 'X' | dd of="$work/edited.kiln" bs=1 seek=200 conv=notrunc status=none
expect_error "a plan changed after signing" "edited.kiln: the signature does not match the plan" \
  "$kiln" --trust "$work/alice.pub" run "$work/edited.kiln"
printf 'kiln-plan-signature 1\nkey zz\n' > "$work/p2.kiln.sig"; cp "$work/p.kiln" "$work/p2.kiln"
expect_error "a damaged signature file" "p2.kiln.sig: not a Kiln plan signature" \
  "$kiln" --trust "$work/alice.pub" inspect "$work/p2.kiln"
expect_error "a public key that is not one" "--trust: $work/alice.key: not an Ed25519 public key" \
  "$kiln" --trust "$work/alice.key" run "$work/p.kiln"
expect_error "--sign with a public key" "alice.pub: not an Ed25519 private key" \
  "$kiln" build "$model" -o "$work/q.kiln" --sign "$work/alice.pub" --quiet

# A CPU plan carries no generated code: unsigned, it still loads under --trust.
check "unsigned CPU plan without generated code loads" \
  "$kiln" build "$model" -o "$work/u.kiln" --quiet
check "... and runs under --trust" "$kiln" --trust "$work/alice.pub" run "$work/u.kiln"

finish
